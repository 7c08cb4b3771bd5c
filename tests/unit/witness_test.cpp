// Witnesses (docs/FORMAT.md "Witnesses"): a cosignature names a store and a
// checkpoint under the witness's key; every cosigned checkpoint must be on
// the chain a clone is shown (check_cosigned: else a split view); a fresh
// start may begin at a checkpoint the quorum of witnesses cosigned, whoever
// signed it. Expected values are derived from the histories built here.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixture.h"
#include "gitlocks/attest.hpp"
#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/hex.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/trust.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::actor_hex;
using gitlocks::test::actor_key;
using gitlocks::test::Store;

namespace {

const std::string kStore(64, 'a');
const std::string kCommit(40, 'b');

// The canonical stored form of {"cosignature":DOC,"sig":SIG}.
std::string stored(const json& doc, const std::string& sig) {
  return gitlocks::canon_dump(json{{"cosignature", doc}, {"sig", sig}}).value();
}

std::string sign(const json& doc, std::string_view domain, const std::string& who) {
  const std::string bytes = gitlocks::canon_dump(doc).value();
  return gitlocks::to_hex(gitlocks::sign_detached(domain, bytes, actor_key(who)));
}

}  // namespace

TEST_CASE("cosignature: made and opened - every field bound - forged - truncated - another domain or key refused") {
  const std::string text = gitlocks::make_cosignature(kStore, kCommit, actor_key("w1")).value();
  auto c = gitlocks::open_cosignature(text);
  REQUIRE_MESSAGE(c.ok(), gitlocks::test::why(c));
  CHECK(c->store == kStore);
  CHECK(c->checkpoint == kCommit);
  CHECK(c->witness == actor_hex("w1"));
  // The document as FORMAT.md writes it, signed independently here.
  const json doc = {
      {"format", "gitlocks-cosignature-v1"}, {"store", kStore}, {"checkpoint", kCommit}, {"witness", actor_hex("w1")}};
  const std::string domain("gitlocks/cosignature/v1\0", 24);
  CHECK(text == stored(doc, sign(doc, domain, "w1")));
  // Each member changed after signing: the signature no longer verifies.
  for (const char* k : {"store", "checkpoint"}) {
    json t = doc;
    t[k] = std::string(t[k].get<std::string>().size(), 'c');
    auto r = gitlocks::open_cosignature(stored(t, sign(doc, domain, "w1")));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_signature);
  }
  // Another witness named as the signer: its key does not verify w1's signature.
  {
    json t = doc;
    t["witness"] = actor_hex("w2");
    auto r = gitlocks::open_cosignature(stored(t, sign(doc, domain, "w1")));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_signature);
  }
  // Signed under another domain (an attestation's, a packet's): refused.
  for (std::string_view other : {gitlocks::kAttestationDomain, std::string_view("gitlocks/packet/v1\0", 19)}) {
    auto r = gitlocks::open_cosignature(stored(doc, sign(doc, other, "w1")));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_signature);
  }
  // Signature bytes flipped, truncated, extended.
  std::string sig = sign(doc, domain, "w1");
  std::string flipped = sig;
  flipped[10] = flipped[10] == '0' ? '1' : '0';
  CHECK(gitlocks::open_cosignature(stored(doc, flipped)).error().code == Errc::bad_signature);
  CHECK_FALSE(gitlocks::open_cosignature(stored(doc, sig.substr(0, 126))).ok());
  CHECK_FALSE(gitlocks::open_cosignature(stored(doc, sig + "00")).ok());
  // The text truncated, an unknown format, a member missing or extra, a
  // store or commit id of the wrong length (each validly signed).
  CHECK_FALSE(gitlocks::open_cosignature(text.substr(0, text.size() - 1)).ok());
  struct Case {
    std::function<void(json&)> edit;
    Errc code;
  };
  const Case cases[] = {
      {[](json& d) { d["format"] = "gitlocks-cosignature-v2"; }, Errc::unknown_format},
      {[](json& d) { d.erase("checkpoint"); }, Errc::bad_json},
      {[](json& d) { d["time"] = 1; }, Errc::bad_json},
      {[](json& d) { d["store"] = std::string(63, 'a'); }, Errc::bad_json},
      {[](json& d) { d["checkpoint"] = std::string(41, 'b'); }, Errc::bad_json},
      {[](json& d) { d["checkpoint"] = std::string(40, 'B'); }, Errc::bad_json},
  };
  for (const auto& k : cases) {
    json t = doc;
    k.edit(t);
    auto r = gitlocks::open_cosignature(stored(t, sign(t, domain, "w1")));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == k.code);
  }
  // Bad input to make_cosignature.
  CHECK(gitlocks::make_cosignature(kStore.substr(1), kCommit, actor_key("w1")).error().code == Errc::usage);
  CHECK(gitlocks::make_cosignature(kStore, kCommit + "0", actor_key("w1")).error().code == Errc::usage);
}

namespace {

// Two claims, a checkpoint by `signer`, two claims (the policy names ci as a
// checkpoint signer).
struct History {
  Store s;
  Oid checkpoint;
  explicit History(const std::string& signer) {
    gitlocks::Policy p = gitlocks::parse_policy(gitlocks::StateReader(s.objects(), s.state()).policy().value()).value();
    json next = gitlocks::policy_document(p);
    next["checkpoint"] = {{"signers", {actor_hex("ci")}}};
    REQUIRE(s.submit("owner", "policy set", gitlocks::ops::admin_policy_set(next, s.snapshot().policy_hash)).ok());
    REQUIRE(s.claim("alice", "a", 60'000).ok());
    REQUIRE(s.claim("bob", "b", 60'000).ok());
    auto cp = s.submit(signer, "checkpoint", gitlocks::ops::admin_checkpoint(s.tip()->hex(), s.snapshot().policy_hash));
    REQUIRE_MESSAGE(cp.ok(), gitlocks::test::why(cp));
    checkpoint = cp->commit;
    REQUIRE(s.claim("carol", "c", 60'000).ok());
    REQUIRE(s.claim("dave", "d", 60'000).ok());
  }
};

}  // namespace

TEST_CASE("check_cosigned: a cosigned checkpoint on the chain passes - one off it is a split view naming both") {
  History h("owner");
  auto& store = h.s.objects();
  const Oid tip = *h.s.tip();
  CHECK(gitlocks::check_cosigned(store, tip, {}).ok());
  CHECK(gitlocks::check_cosigned(store, tip, {h.checkpoint}).ok());
  CHECK(gitlocks::check_cosigned(store, tip, {h.checkpoint, tip}).ok());
  // A commit of another history (another store's checkpoint), and one
  // above the tip (a later commit the clone is not shown): both off the chain.
  History other("ci");  // another history: the checkpoint is ci's there
  const Oid elsewhere = other.checkpoint;
  REQUIRE(elsewhere != h.checkpoint);
  auto r = gitlocks::check_cosigned(store, tip, {h.checkpoint, elsewhere});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::invalid_history);
  CHECK(r.error().fields.at("verdict").text() == "split-view");
  CHECK(r.error().fields.at("cosigned").text() == elsewhere.hex());
  CHECK(r.error().fields.at("commit").text() == tip.hex());
  CHECK(r.error().fields.count("archived") == 0);
  // The tip before the checkpoint (a rollback below what was cosigned).
  const Oid before = h.s.objects().read_commit(h.checkpoint).value().parents.at(0);
  auto rolled = gitlocks::check_cosigned(store, before, {h.checkpoint});
  REQUIRE_FALSE(rolled.ok());
  CHECK(rolled.error().fields.at("cosigned").text() == h.checkpoint.hex());
}

TEST_CASE("witnessed start: a signer's checkpoint the quorum cosigned is started at - below a quorum it is not") {
  History h("ci");
  auto& store = h.s.objects();
  const Oid tip = *h.s.tip();
  auto start = [&](std::vector<Oid> cosigned, std::size_t quorum) {
    gitlocks::TrustOptions o;
    o.start_at_checkpoint = true;
    o.cosigned = std::move(cosigned);
    o.cosign_quorum = quorum;
    auto t = gitlocks::verified_snapshot(store, tip, o);
    REQUIRE_MESSAGE(t.ok(), gitlocks::test::why(t));
    return t.value();
  };
  // No witnesses: ci is not pinned, so the root (7 commits: creation,
  // policy set, 2 claims, the checkpoint, 2 claims).
  CHECK(start({}, 0).replayed == 7);
  CHECK_FALSE(start({}, 0).from_checkpoint);
  // One witness cosigned it, one is required: started there (2 after it).
  auto one = start({h.checkpoint}, 1);
  CHECK(one.from_checkpoint);
  CHECK(one.replayed == 2);
  // A witness whose newest cosigned checkpoint is the tip vouches for it too
  // (the chain below it was verified up to there).
  CHECK(start({tip}, 1).from_checkpoint);
  // Two required, one cosigned: not started at.
  CHECK_FALSE(start({h.checkpoint}, 2).from_checkpoint);
  CHECK(start({h.checkpoint, tip}, 2).from_checkpoint);
  // A cosignature above the checkpoint counts; one below it does not.
  const Oid below = h.s.objects().read_commit(h.checkpoint).value().parents.at(0);
  CHECK_FALSE(start({below}, 1).from_checkpoint);
  // Whatever the witnesses say, the states agree with the replay from the root.
  CHECK(*one.trust == *start({}, 0).trust);
}
