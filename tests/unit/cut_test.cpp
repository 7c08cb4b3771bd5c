// The cut (docs/FORMAT.md "The cut"): a checkpoint committed with no Git
// parent starts a new chain of refs/locks/state, so a fetch transfers only
// what follows it. Every verifier replays across it when the chain it
// continues (its `prev`, the archive) is in the store, and otherwise starts
// at it as its owner's checkpoint of its own state. The cuts here are made
// the way `checkpoint --cut` makes them: the owner's checkpoint of the tip,
// committed without a parent.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/trust.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::ObjectStore;
using gitlocks::Oid;
using gitlocks::TrustOptions;
using gitlocks::Verdict;
using gitlocks::test::Store;

namespace {

// The commit `c` written again without parents (the same tree, message and
// time): the same transition as the first commit of a new chain.
Oid without_parent(ObjectStore& store, const Oid& c) {
  auto tc = gitlocks::read_transition_commit(store, c).value();
  return gitlocks::write_transition_commit(store, std::nullopt, tc.state, tc.packet_stored,
                                           store.read_commit(c).value().message, tc.time_seconds, tc.attestation_stored)
      .value();
}

// Copies one object (and everything a tree holds) from `from` into `to`.
void copy_tree(ObjectStore& from, ObjectStore& to, const Oid& tree) {
  gitlocks::Tree t = from.read_tree(tree).value();
  for (const auto& e : t) {
    if (e.is_tree) copy_tree(from, to, e.oid);
    else REQUIRE(to.write_blob(from.read_blob(e.oid).value()).value() == e.oid);
  }
  REQUIRE(to.write_tree(t).value() == tree);
}

// A store holding only the Git chain ending at `tip` (its parents down to
// the first commit without one): what a fetch of refs/locks/state brings
// to a clone that has nothing yet.
std::unique_ptr<ObjectStore> fetched_alone(ObjectStore& from, const Oid& tip) {
  auto to = gitlocks::open_memory_store().value();
  for (const Oid& id : gitlocks::test::chain_of(from, tip)) {
    gitlocks::Commit c = from.read_commit(id).value();
    copy_tree(from, *to, c.tree);
    REQUIRE(to->write_commit(c).value() == id);
  }
  REQUIRE(gitlocks::memory_store_set_ref(*to, gitlocks::kStateRef, tip).ok());
  return to;
}

// Two claims; P, the tip; the owner's checkpoint of P committed as a cut C;
// then carol's claim on C.
struct CutHistory {
  Store s;
  Oid prev, cut, tip;
  CutHistory() {
    REQUIRE(s.claim("alice", "a", 60'000).ok());
    REQUIRE(s.claim("bob", "b", 60'000).ok());
    prev = *s.tip();
    auto cp = s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(prev.hex(), s.snapshot().policy_hash));
    REQUIRE_MESSAGE(cp.ok(), gitlocks::test::why(cp));
    cut = without_parent(s.objects(), cp->commit);
    REQUIRE(gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, cut).ok());
    REQUIRE(s.claim("carol", "c", 60'000).ok());
    tip = *s.tip();
  }
};

struct Run {
  gitlocks::ReplaySummary summary;
  std::vector<Verdict> verdicts;
};

Run replay(ObjectStore& store, const Oid& tip, const gitlocks::ReplayOptions& o = {}) {
  Run r;
  auto sum = gitlocks::replay_chain(store, tip, o, [&](const Verdict& v) { r.verdicts.push_back(v); });
  REQUIRE_MESSAGE(sum.ok(), gitlocks::test::why(sum));
  r.summary = *sum;
  return r;
}

// `packet` of the cut re-signed by `signer` after `edit`, with state
// `state`, committed without a parent: a forged cut.
Oid forged_cut(ObjectStore& store, const Oid& cut, const std::string& signer, const Oid& state,
               const std::function<void(json&)>& edit) {
  auto tc = gitlocks::read_transition_commit(store, cut).value();
  json packet = json::parse(tc.packet_stored)["packet"];
  edit(packet);
  auto stored = gitlocks::seal_packet(packet, gitlocks::test::actor_key(signer)).value();
  return gitlocks::write_transition_commit(store, std::nullopt, state, stored, "git-locks: checkpoint\n",
                                           tc.time_seconds)
      .value();
}

}  // namespace

TEST_CASE("cut: with the archive here every verifier replays across the cut from the root") {
  CutHistory h;
  auto& store = h.s.objects();
  CHECK(store.read_commit(h.cut).value().parents.empty());
  CHECK(gitlocks::cut_prev(store, h.cut) == h.prev);
  CHECK(gitlocks::chain_parent(store, h.cut, store.read_commit(h.cut).value()) == h.prev);
  // init, alice, bob (P), the cut, carol: 5 commits from the root.
  Run r = replay(store, h.tip);
  REQUIRE(r.verdicts.size() == 5);
  for (const auto& v : r.verdicts) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(r.verdicts[2].commit == h.prev);
  CHECK(r.verdicts[3].commit == h.cut);
  CHECK(r.verdicts[3].action == "checkpoint");
  CHECK_FALSE(r.summary.cut_start);
  CHECK(r.summary.checkpoints == 1);
  // A clone that trusted P continues across the cut: the cut and carol.
  auto at_prev = gitlocks::verified_snapshot(store, h.prev, {});
  REQUIRE(at_prev.ok());
  TrustOptions o;
  o.anchor = at_prev->trust;
  auto continued = gitlocks::verified_snapshot(store, h.tip, o);
  REQUIRE_MESSAGE(continued.ok(), gitlocks::test::why(continued));
  CHECK(continued->anchored);
  CHECK(continued->replayed == 2);
  // A fresh start begins at the cut, re-executed from P (here): carol only.
  TrustOptions fresh;
  fresh.start_at_checkpoint = true;
  auto started = gitlocks::verified_snapshot(store, h.tip, fresh);
  REQUIRE_MESSAGE(started.ok(), gitlocks::test::why(started));
  CHECK(started->from_checkpoint);
  CHECK(started->replayed == 1);
  auto from_root = gitlocks::verified_snapshot(store, h.tip, {});
  REQUIRE(from_root.ok());
  CHECK(from_root->replayed == 5);
  CHECK(*started->trust == *from_root->trust);
}

TEST_CASE("cut: a store that holds only the new chain starts at the cut - the owner's checkpoint of its own state") {
  CutHistory h;
  auto full = gitlocks::verified_snapshot(h.s.objects(), h.tip, {});
  REQUIRE(full.ok());
  auto alone = fetched_alone(h.s.objects(), h.tip);
  CHECK_FALSE(alone->read_commit(h.prev).ok());
  CHECK_FALSE(gitlocks::chain_parent(*alone, h.cut, alone->read_commit(h.cut).value()));
  Run r = replay(*alone, h.tip);
  REQUIRE(r.verdicts.size() == 2);
  for (const auto& v : r.verdicts) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(r.summary.cut_start == h.cut);
  CHECK(r.summary.checkpoints == 1);
  // The same trust state and state as the replay from the root; the leases
  // of before the cut are in force (bob's "b" is refused to dave).
  TrustOptions fresh;
  fresh.start_at_checkpoint = true;
  auto started = gitlocks::verified_snapshot(*alone, h.tip, fresh);
  REQUIRE_MESSAGE(started.ok(), gitlocks::test::why(started));
  CHECK(started->from_checkpoint);
  CHECK(started->replayed == 1);
  CHECK(*started->trust == *full->trust);
  CHECK(started->snapshot.state == full->snapshot.state);
  auto root_start = gitlocks::verified_snapshot(*alone, h.tip, {});
  REQUIRE_MESSAGE(root_start.ok(), gitlocks::test::why(root_start));
  CHECK(root_start->replayed == 2);
  CHECK(*root_start->trust == *full->trust);
  // A clone that trusted P but has not fetched the archive: the chain does
  // not reach P here, and the error names the archive to fetch.
  gitlocks::ReplayOptions ro;
  ro.from = h.prev;
  auto missing = gitlocks::replay_chain(*alone, h.tip, ro, {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().fields.at("archived").text() == h.prev.hex());
}

TEST_CASE("cut: at the start of a chain the cut is refused unless its owner signed it for its own state") {
  CutHistory h;
  auto& store = h.s.objects();
  const Oid state = gitlocks::read_transition_commit(store, h.cut).value().state;
  auto alone_with = [&](const Oid& cut) { return fetched_alone(store, cut); };
  auto first_verdict = [](ObjectStore& st, const Oid& tip, const gitlocks::ReplayOptions& o = {}) {
    Run r = replay(st, tip, o);
    REQUIRE(r.verdicts.size() == 1);
    return r.verdicts[0];
  };
  // Control: the owner's cut, re-signed unchanged, starts a chain.
  {
    const Oid same = forged_cut(store, h.cut, "owner", state, [](json&) {});
    CHECK(same == h.cut);
    auto st = alone_with(same);
    CHECK(first_verdict(*st, same).ok);
  }
  // Signed by alice, as its actor: only the signer is not the owner.
  {
    const Oid forged =
        forged_cut(store, h.cut, "alice", state, [](json& p) { p["actor"] = gitlocks::test::actor_hex("alice"); });
    auto st = alone_with(forged);
    Verdict v = first_verdict(*st, forged);
    CHECK_FALSE(v.ok);
    CHECK(v.reason == "replay-refused");
    CHECK(v.detail.find("only the store's owner") != std::string::npos);
  }
  // A state other than the one its packet names as its source (alice's
  // lease dropped: the state after bob's claim alone is not at hand, so the
  // root's state stands in), the owner's signature over the new result.
  {
    const Oid root_state =
        gitlocks::read_transition_commit(store, gitlocks::test::chain_of(store, h.prev)[0]).value().state;
    const Oid forged = forged_cut(store, h.cut, "owner", root_state, [&](json& p) { p["result"] = root_state.hex(); });
    auto st = alone_with(forged);
    Verdict v = first_verdict(*st, forged);
    CHECK_FALSE(v.ok);
    CHECK(v.reason == "source-mismatch");
  }
  // Pinned to another owner.
  {
    gitlocks::ReplayOptions o;
    o.expected_owner = gitlocks::test::actor_hex("alice");
    auto st = alone_with(h.cut);
    Verdict v = first_verdict(*st, h.cut, o);
    CHECK_FALSE(v.ok);
    CHECK(v.reason == "owner-mismatch");
  }
}

TEST_CASE("cut: the owner's cut of another state passes a clone that starts there but not the replay from the root") {
  // The trust a clone without the archive places in the owner (as in any
  // checkpoint it starts at): an owner who states another state at the cut
  // is believed there, and caught by every verifier that has the archive.
  CutHistory h;
  auto& store = h.s.objects();
  const Oid root_state =
      gitlocks::read_transition_commit(store, gitlocks::test::chain_of(store, h.prev)[0]).value().state;
  const Oid lying = forged_cut(store, h.cut, "owner", root_state, [&](json& p) {
    p["source"] = root_state.hex();
    p["result"] = root_state.hex();
  });
  auto alone = fetched_alone(store, lying);
  Run started = replay(*alone, lying);
  REQUIRE(started.verdicts.size() == 1);
  CHECK(started.verdicts[0].ok);
  Run full = replay(store, lying);
  REQUIRE(full.verdicts.size() == 4);
  CHECK(full.verdicts[2].ok);
  CHECK_FALSE(full.verdicts[3].ok);
  CHECK(full.verdicts[3].reason == "source-mismatch");
}

TEST_CASE("cut: a commit without a parent that is not a checkpoint is not a cut - the chain stops and refuses it") {
  CutHistory h;
  auto& store = h.s.objects();
  // carol's claim written without its parent: not a checkpoint, so nothing
  // links it to the store; it is judged as the root, which it is not.
  const Oid orphan = without_parent(store, h.tip);
  CHECK_FALSE(gitlocks::cut_prev(store, orphan));
  Run r = replay(store, orphan);
  REQUIRE(r.verdicts.size() == 1);
  CHECK_FALSE(r.verdicts[0].ok);
  CHECK(r.verdicts[0].reason == "bad-packet");
  CHECK_FALSE(r.summary.cut_start);
}

TEST_CASE("cut: an invalid cut names the commit it follows as the last valid one - where the owner resets to") {
  CutHistory h;
  auto& store = h.s.objects();
  const Oid state = gitlocks::read_transition_commit(store, h.cut).value().state;
  const Oid forged =
      forged_cut(store, h.cut, "alice", state, [](json& p) { p["actor"] = gitlocks::test::actor_hex("alice"); });
  auto refused = gitlocks::verified_snapshot(store, forged, {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::invalid_history);
  CHECK(refused.error().fields.at("commit").text() == forged.hex());
  CHECK(refused.error().fields.at("verdict").text() == "replay-refused");
  CHECK(refused.error().fields.at("last_valid").text() == h.prev.hex());
  CHECK(gitlocks::chain_predecessor(store, forged) == h.prev);
  CHECK(gitlocks::chain_predecessor(store, h.tip) == h.cut);
}
