// PRIVATE stores: sealed records and bodies, keyed names, epochs, membership,
// and verification at two honestly labelled levels.
#include <doctest/doctest.h>

#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "fixture.h"
#include "forgery.h"
#include "gitlocks/model.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/trust.hpp"
#include "gitlocks/vault.hpp"
#include "why.h"

using gitlocks::EpochKey;
using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::actor_hex;
using gitlocks::test::actor_key;

namespace {

EpochKey epoch_key(int n) {
  EpochKey k{};
  auto h = gitlocks::sha256("epoch-key:" + std::to_string(n));
  std::copy(h.begin(), h.end(), k.begin());
  return k;
}

std::array<std::uint8_t, 32> seed(const std::string& s) { return gitlocks::sha256("eph:" + s); }

json keyring_for(int epoch, const std::vector<std::string>& members) {
  json ring = json::object();
  for (const auto& m : members)
    ring[actor_hex(m)] =
        gitlocks::seal_epoch_key(epoch_key(epoch), actor_key(m).public_key, seed(m + std::to_string(epoch))).value();
  return json{{std::to_string(epoch), ring}};
}

json private_policy(const json& families = nullptr) {
  json pol = gitlocks::default_policy(std::string(64, 'b'), actor_hex("owner"));
  pol["format"] = gitlocks::kPrivatePolicyFormat;
  pol["visibility"] = "PRIVATE";
  pol["members"] = json::array({actor_hex("owner")});
  pol["epoch"] = 1;
  pol["keyring"] = keyring_for(1, {"owner"});
  pol.erase("families");
  if (!families.is_null())
    pol["families"] = json::parse(
        gitlocks::seal_document(families, epoch_key(1), 1, std::string(64, 'b'), "policy.json#families").value());
  return pol;
}

gitlocks::Vault vault_of(gitlocks::test::Store& s, const std::string& who) {
  gitlocks::StateReader r(s.objects(), s.state());
  return gitlocks::Vault::open(r.policy().value(), actor_key(who)).value();
}

gitlocks::Result<gitlocks::Candidate> membership_keyring(gitlocks::test::Store& s, const std::string& op,
                                                         const std::string& member,
                                                         const std::vector<std::string>& next) {
  gitlocks::StateReader r(s.objects(), s.state());
  auto pol = gitlocks::parse_policy(r.policy().value()).value();
  json ring = keyring_for(static_cast<int>(pol.epoch) + 1, next);
  return s.submit("owner", "member",
                  json{{"admin",
                        {{"op", op},
                         {"member", actor_hex(member)},
                         {"expected_policy_hash", s.snapshot().policy_hash},
                         {"keyring", ring}}}});
}

gitlocks::Result<gitlocks::Candidate> rekey(gitlocks::test::Store& s) {
  return s.submit("owner", "member",
                  json{{"admin", {{"op", "rekey"}, {"expected_policy_hash", s.snapshot().policy_hash}}}});
}

// Every object reachable from the ref, as raw bytes (commit messages, tree
// entry names, blobs).
std::string all_bytes(gitlocks::test::Store& s) {
  auto& store = s.objects();
  std::string out;
  std::set<Oid> seen;
  std::function<void(const Oid&)> tree = [&](const Oid& id) {
    if (!seen.insert(id).second) return;
    auto entries = store.read_tree(id).value();
    for (const auto& e : entries) {
      out += e.name + "\n";
      if (e.is_tree) tree(e.oid);
      else if (seen.insert(e.oid).second) out += store.read_blob(e.oid).value() + "\n";
    }
  };
  for (auto cur = s.tip(); cur;) {
    auto c = store.read_commit(*cur).value();
    out += c.message;
    tree(c.tree);
    if (c.parents.empty()) break;
    cur = c.parents.front();
  }
  return out;
}

std::vector<gitlocks::Verdict> verify(gitlocks::test::Store& s, const gitlocks::Vault* vault) {
  std::vector<gitlocks::Verdict> out;
  gitlocks::ReplayOptions opt;
  opt.vault = vault;
  auto r = gitlocks::replay_chain(s.objects(), *s.tip(), opt, [&](const gitlocks::Verdict& v) { out.push_back(v); });
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  return out;
}

struct World {
  gitlocks::test::Store s{json::object(), "owner",
                          private_policy(json::array({{{"name", "finance"},
                                                       {"policy", "exclusive"},
                                                       {"members", {"secret/q3-budget.xlsx", "secret/forecast/"}}}}))};
  gitlocks::Vault owner_vault;
  World() {
    owner_vault = vault_of(s, "owner");
    s.vault = &owner_vault;
    REQUIRE(membership_keyring(s, "member-add", "alice", {"owner", "alice"}).ok());
    owner_vault = vault_of(s, "owner");
    auto rk = rekey(s);
    REQUIRE_MESSAGE(rk.ok(), gitlocks::test::why(rk));
    owner_vault = vault_of(s, "owner");
    alice_vault = vault_of(s, "alice");
  }
  gitlocks::Vault alice_vault;  // alice's keys of epoch 2 (she is a member from there on)
  // Alice signs and seals.
  void as_alice() { s.vault = &alice_vault; }
  // The owner removes alice: the pending keyring, then the rekey (epoch 3).
  void remove_alice() {
    s.vault = &owner_vault;
    REQUIRE(membership_keyring(s, "member-remove", "alice", {"owner"}).ok());
    owner_vault = vault_of(s, "owner");
    REQUIRE(rekey(s).ok());
    owner_vault = vault_of(s, "owner");
  }
};

}  // namespace

TEST_CASE("private: members plan on sealed records - nobody else sees paths - notes - names or expiries") {
  World w;
  auto& s = w.s;
  w.as_alice();
  auto c = s.op("alice", {{"op", "claim"},
                          {"path", "secret/q3-budget.xlsx"},
                          {"mode", "exclusive"},
                          {"expires_at", s.now + 777'777},
                          {"note", "merger-talks"}});
  REQUIRE_MESSAGE(c.ok(), gitlocks::test::why(c));
  CHECK(c->packet["body"].contains("sealed"));
  CHECK(c->packet["epoch"] == 2);
  // Family rules work on sealed families: the owner cannot take another member.
  s.vault = &w.owner_vault;
  CHECK(s.op("owner", {{"op", "claim"},
                       {"path", "secret/forecast/2027.csv"},
                       {"mode", "exclusive"},
                       {"expires_at", s.now + 60'000}})
            .error()
            .code == Errc::family_policy);
  std::string bytes = all_bytes(s);
  for (const std::string& secret : {std::string("q3-budget"), std::string("secret/"), std::string("forecast"),
                                    std::string("merger-talks"), std::string("alice"), std::to_string(s.now + 777'777)})
    CHECK_MESSAGE(bytes.find(secret) == std::string::npos, "found plaintext " << secret);
  // A member reads it back.
  gitlocks::StateReader r(s.objects(), s.state());
  auto codec = gitlocks::make_private_codec(w.alice_vault, std::string(64, 'b'), 2);
  REQUIRE(codec);
  r.set_codec(codec.get());
  auto rec = r.record("path:secret/q3-budget.xlsx").value();
  REQUIRE(rec);
  CHECK((*rec)["leases"][0]["note"] == "merger-talks");
  // Without a codec the record cannot be read at all.
  gitlocks::StateReader blind(s.objects(), s.state());
  CHECK(blind.record("path:secret/q3-budget.xlsx").error().code == Errc::not_member);
}

TEST_CASE("private: a non-member cannot plan - a pending transition blocks writers and guard time") {
  World w;
  auto& s = w.s;
  s.vault = nullptr;
  CHECK(s.claim("mallory", "x", 60'000).error().code == Errc::not_member);
  s.vault = &w.owner_vault;
  REQUIRE(membership_keyring(s, "member-add", "bob", {"owner", "alice", "bob"}).ok());
  CHECK(s.claim("owner", "x", 60'000).error().code == Errc::usage);  // pending
  auto gt = s.submit("owner", "guard-time",
                     json{{"admin",
                           {{"op", "guard-time-enable"},
                            {"audience", "a"},
                            {"service_key", actor_hex("notary")},
                            {"disclosure", "GUARD_WINDOW"},
                            {"expected_policy_hash", s.snapshot().policy_hash}}}});
  REQUIRE_FALSE(gt.ok());
  CHECK(gt.error().message.find("pending") != std::string::npos);
  w.owner_vault = vault_of(s, "owner");
  REQUIRE(rekey(s).ok());
  CHECK(s.claim("owner", "x", 60'000).ok());
}

TEST_CASE("private: removal starts a new epoch the removed member cannot open") {
  World w;
  auto& s = w.s;
  w.remove_alice();
  REQUIRE(s.claim("owner", "after-removal/plan.md", 60'000).ok());
  auto alice_after =
      gitlocks::Vault::open(gitlocks::StateReader(s.objects(), s.state()).policy().value(), actor_key("alice"));
  REQUIRE(alice_after.ok());  // she still opens the epochs she belonged to...
  CHECK(alice_after->key(2) != nullptr);
  CHECK(alice_after->key(3) == nullptr);  // ...but not the new one
  CHECK_FALSE(gitlocks::make_private_codec(*alice_after, std::string(64, 'b'), 3));
  // Her replay of the new commits is structural only.
  auto vs = verify(s, &*alice_after);
  CHECK(std::string(gitlocks::level_name(vs.back().level)) == "structural");
  CHECK(vs.back().ok);
}

TEST_CASE("private: state_codec is the one rule for which keys open a state") {
  World w;
  auto& s = w.s;
  REQUIRE(s.claim("owner", "epoch2/notes.md", 60'000).ok());  // alice is a member at epoch 2
  const Oid at2 = s.state();
  w.remove_alice();
  REQUIRE(s.claim("owner", "epoch3/notes.md", 60'000).ok());
  const Oid at3 = s.state();
  auto policy_at = [&](const Oid& state) {
    return gitlocks::parse_policy(gitlocks::StateReader(s.objects(), state).policy().value()).value();
  };
  const gitlocks::Policy p2 = policy_at(at2), p3 = policy_at(at3);
  // The typed keyrings, as the history made them: epoch 1 sealed to the
  // owner, epoch 2 to the owner and alice (added), epoch 3 to the owner.
  REQUIRE(p3.keyring.size() == 3);
  CHECK(p3.keyring.at(1).size() == 1);
  CHECK(p3.keyring.at(2).size() == 2);
  CHECK(p3.keyring.at(2).count(actor_hex("alice")) == 1);
  CHECK(p3.keyring.at(3).size() == 1);
  CHECK(p3.keyring.at(3).count(actor_hex("owner")) == 1);
  CHECK(p3.pending_keyring.empty());

  auto alice = gitlocks::Vault::open(p3, actor_key("alice"));  // the tip's keyring: epochs 2, not 3
  REQUIRE(alice.ok());
  auto refused = gitlocks::state_codec(p3, &*alice);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::not_member);
  CHECK(refused.error().message ==
        "this key cannot open epoch 3 of the PRIVATE store: only the keys of its members at that epoch do");
  auto keyless = gitlocks::state_codec(p2, nullptr);
  REQUIRE_FALSE(keyless.ok());
  CHECK(keyless.error().code == Errc::not_member);
  CHECK(keyless.error().message == "the store is PRIVATE: its records need a member's key");

  // Her key of epoch 2 opens the state of epoch 2: the owner's claim there.
  auto opened = gitlocks::state_codec(p2, &*alice);
  REQUIRE(opened.ok());
  REQUIRE(*opened != nullptr);
  gitlocks::StateReader r2(s.objects(), at2, opened->get());
  auto rec = r2.record(gitlocks::path_resource("epoch2/notes.md"));
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK(gitlocks::leases_of(**rec).front().holder == actor_hex("owner"));
  // The owner's opens epoch 3; a public policy needs no key (nullptr: in the clear).
  auto owner3 = gitlocks::state_codec(p3, &w.owner_vault);
  REQUIRE(owner3.ok());
  gitlocks::StateReader r3(s.objects(), at3, owner3->get());
  REQUIRE(r3.record(gitlocks::path_resource("epoch3/notes.md")).ok());
  auto pub = gitlocks::parse_policy(gitlocks::default_policy(std::string(64, 'c'), actor_hex("owner"))).value();
  auto plain = gitlocks::state_codec(pub, nullptr);
  REQUIRE(plain.ok());
  CHECK(*plain == nullptr);
}

TEST_CASE("private: verifier_keys asks for a key only for a PRIVATE store and names whose keys opened it") {
  World w;
  auto& s = w.s;
  const Oid tip = *s.tip();
  int asked = 0;
  auto keys_with = [&](const gitlocks::KeyPair* key) {
    return gitlocks::verifier_keys(s.objects(), tip, [&, key]() -> gitlocks::Result<const gitlocks::KeyPair*> {
      ++asked;
      return key;
    });
  };
  // A member: the tip's keyring opens her epoch keys, and she is the verifier.
  const gitlocks::KeyPair alice = actor_key("alice");
  auto member = keys_with(&alice);
  REQUIRE_MESSAGE(member.ok(), gitlocks::test::why(member));
  CHECK(asked == 1);
  CHECK(member->member.is_private);
  REQUIRE(member->vault() != nullptr);
  CHECK(member->vault()->key(2) != nullptr);
  CHECK(member->verifier == actor_hex("alice"));
  // Not a member, or no key: no vault and nobody's keys (structural).
  const gitlocks::KeyPair mallory = actor_key("mallory");
  auto outsider = keys_with(&mallory);
  REQUIRE(outsider.ok());
  CHECK(outsider->member.is_private);
  CHECK(outsider->vault() == nullptr);
  CHECK(outsider->verifier.empty());
  auto keyless = keys_with(nullptr);
  REQUIRE(keyless.ok());
  CHECK(keyless->vault() == nullptr);
  CHECK(keyless->verifier.empty());
  // The host's failure to load its key is the answer (verify and doctor
  // report a broken key file, not "no key").
  auto broken = gitlocks::verifier_keys(s.objects(), tip, []() -> gitlocks::Result<const gitlocks::KeyPair*> {
    return gitlocks::make_error(Errc::usage, "the key file is broken");
  });
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().code == Errc::usage);
  CHECK(broken.error().message == "the key file is broken");
  // A public store: the key is never asked for.
  gitlocks::test::Store pub;
  REQUIRE(pub.claim("owner", "a.txt", 60'000).ok());
  asked = 0;
  auto none = gitlocks::verifier_keys(pub.objects(), *pub.tip(), [&]() -> gitlocks::Result<const gitlocks::KeyPair*> {
    ++asked;
    return &alice;
  });
  REQUIRE(none.ok());
  CHECK(asked == 0);
  CHECK_FALSE(none->member.is_private);
  CHECK(none->vault() == nullptr);
  CHECK(none->verifier.empty());
}

TEST_CASE("private: a verified snapshot carries the member keys and the codec of its epoch") {
  World w;
  auto& s = w.s;
  REQUIRE(s.claim("owner", "epoch2/notes.md", 60'000).ok());
  auto snapshot_with = [&](const gitlocks::KeyPair* key) {
    const gitlocks::VerifierKeys keys = gitlocks::verifier_keys(s.objects(), *s.tip(), key);
    gitlocks::TrustOptions to;
    to.vault = keys.vault();
    to.verifier = keys.verifier;
    auto t = gitlocks::verified_snapshot(s.objects(), s.tip(), to);
    REQUIRE_MESSAGE(t.ok(), gitlocks::test::why(t));
    return std::move(t->snapshot);
  };
  auto holder_in = [](gitlocks::ObjectStore& store, const gitlocks::Snapshot& snap,
                      const std::string& path) -> gitlocks::Result<std::string> {
    gitlocks::StateReader r(store, snap.state, snap.codec());
    GITLOCKS_TRY(rec, r.record(gitlocks::path_resource(path)));
    if (!rec) return gitlocks::make_error(Errc::store_read, "no record");
    return gitlocks::leases_of(*rec).front().holder;
  };
  // A member: her vault from the tip's keyring, and the codec of epoch 2,
  // which reads the owner's sealed claim.
  const gitlocks::KeyPair alice = actor_key("alice");
  const gitlocks::Snapshot member = snapshot_with(&alice);
  REQUIRE(member.vault() != nullptr);
  CHECK(member.vault()->key(2) != nullptr);
  REQUIRE(member.codec() != nullptr);
  CHECK_FALSE(member.keys->codec_error.has_value());
  CHECK(holder_in(s.objects(), member, "epoch2/notes.md").value() == actor_hex("owner"));
  const gitlocks::Snapshot copy = member;  // copies share the keys
  CHECK(copy.codec() == member.codec());
  // No member key: no keys, and the records stay sealed.
  const gitlocks::KeyPair mallory = actor_key("mallory");
  for (const gitlocks::KeyPair* key : {static_cast<const gitlocks::KeyPair*>(nullptr), &mallory}) {
    const gitlocks::Snapshot keyless = snapshot_with(key);
    CHECK(keyless.keys == nullptr);
    CHECK(keyless.vault() == nullptr);
    CHECK(keyless.codec() == nullptr);
    auto sealed = holder_in(s.objects(), keyless, "epoch2/notes.md");
    REQUIRE_FALSE(sealed.ok());
    CHECK(sealed.error().code == Errc::not_member);
  }
  // Removed: her vault still opens epoch 2 but not the tip's epoch 3, and
  // the snapshot says why it has no codec.
  w.remove_alice();
  const gitlocks::Snapshot removed = snapshot_with(&alice);
  REQUIRE(removed.keys != nullptr);
  CHECK(removed.vault()->key(2) != nullptr);
  CHECK(removed.codec() == nullptr);
  REQUIRE(removed.keys->codec_error.has_value());
  CHECK(removed.keys->codec_error->code == Errc::not_member);
  CHECK(removed.keys->codec_error->message ==
        "this key cannot open epoch 3 of the PRIVATE store: only the keys of its members at that epoch do");
  // A public store needs no keys: a vault given is not attached.
  gitlocks::test::Store pub;
  REQUIRE(pub.claim("owner", "a.txt", 60'000).ok());
  gitlocks::TrustOptions to;
  to.vault = &w.owner_vault;
  auto t = gitlocks::verified_snapshot(pub.objects(), pub.tip(), to);
  REQUIRE(t.ok());
  CHECK(t->snapshot.keys == nullptr);
  auto plain = holder_in(pub.objects(), t->snapshot, "a.txt");
  REQUIRE_MESSAGE(plain.ok(), gitlocks::test::why(plain));
  CHECK(*plain == actor_hex("owner"));
}

TEST_CASE("private: the timeline reads each epoch with its own key across a rekey") {
  World w;
  auto& s = w.s;
  REQUIRE(s.claim("owner", "epoch2/a.md", 60'000).ok());
  REQUIRE(s.claim("owner", "epoch2/b.md", 60'000).ok());
  w.remove_alice();  // a new policy blob: epoch 3, sealed to the owner only
  REQUIRE(s.claim("owner", "epoch3/c.md", 60'000).ok());
  REQUIRE(s.claim("owner", "epoch3/d.md", 60'000).ok());
  // Each reader's timeline replays with that reader's keys (verifier_keys
  // of the tip: the rule of every host).
  auto timeline_of = [&](const std::string& who) {
    const gitlocks::KeyPair key = actor_key(who);
    const gitlocks::VerifierKeys keys = gitlocks::verifier_keys(s.objects(), *s.tip(), &key);
    gitlocks::ReplayOptions ro;
    ro.vault = keys.vault();
    auto t = gitlocks::lease_timeline(s.objects(), *s.tip(), ro);
    REQUIRE_MESSAGE(t.ok(), gitlocks::test::why(t));
    return std::move(t).value();
  };
  auto touched = [](const gitlocks::LeaseTimeline& t) {
    std::map<std::string, std::string> out;  // resource -> the error of the commit that touched it, or ""
    for (const auto& tr : t.transitions)
      for (const auto& r : tr.resources) out[r] = tr.state_error.value_or("");
    return out;
  };
  // The owner holds every epoch's key: all four claims, in the clear.
  const gitlocks::LeaseTimeline owner = timeline_of("owner");
  for (const auto& tr : owner.transitions) CHECK_MESSAGE(!tr.state_error, tr.commit.hex());
  const std::map<std::string, std::string> expected = {
      {"epoch2/a.md", ""}, {"epoch2/b.md", ""}, {"epoch3/c.md", ""}, {"epoch3/d.md", ""}};
  CHECK(touched(owner) == expected);
  // Alice kept epoch 2's key only: epoch 2's claims read, epoch 3's do not
  // (not-member), though her key opens the commits of epoch 2 before them.
  const gitlocks::LeaseTimeline alice = timeline_of("alice");
  const auto seen = touched(alice);
  CHECK(seen.count("epoch2/a.md") == 1);
  CHECK(seen.count("epoch2/b.md") == 1);
  CHECK(seen.count("epoch3/c.md") == 0);
  CHECK(seen.count("epoch3/d.md") == 0);
  // Her unreadable states: epoch 1's (init, the pending member-add: before
  // she joined) and epoch 3's (the rekey that removed her, both claims).
  REQUIRE(alice.transitions.size() == 9);
  std::vector<std::size_t> sealed;
  for (const auto& tr : alice.transitions)
    if (tr.state_error) {
      CHECK(*tr.state_error == "not-member");
      sealed.push_back(tr.index);
    }
  CHECK(sealed == std::vector<std::size_t>{0, 1, 6, 7, 8});
}

TEST_CASE("private: full and structural verification agree on everything structural") {
  World w;
  auto& s = w.s;
  w.as_alice();
  REQUIRE(s.claim("alice", "secret/forecast/a.csv", 60'000).ok());
  json l = s.lease_of("alice", "path:secret/forecast/a.csv");
  REQUIRE(s.op("alice", {{"op", "release"}, {"path", "secret/forecast/a.csv"}, {"lease", l["id"]}}).ok());
  auto full = verify(s, &w.owner_vault);
  auto structural = verify(s, nullptr);
  REQUIRE(full.size() == structural.size());
  for (std::size_t i = 0; i < full.size(); ++i) {
    CHECK(full[i].commit == structural[i].commit);
    CHECK(full[i].ok == structural[i].ok);
    CHECK(full[i].time == structural[i].time);
    CHECK(std::string(gitlocks::level_name(full[i].level)) == "full");
  }
  // Sealed transitions and the rekey need keys; creation and membership do not.
  CHECK(std::string(gitlocks::level_name(structural[0].level)) == "full");
  CHECK(std::string(gitlocks::level_name(structural[1].level)) == "full");
  CHECK(std::string(gitlocks::level_name(structural[2].level)) == "structural");  // rekey
  CHECK(std::string(gitlocks::level_name(structural[3].level)) == "structural");
}

TEST_CASE("private: tampered - swapped - wrong-epoch and replayed sealed data are rejected") {
  World w;
  auto& s = w.s;
  REQUIRE(s.claim("owner", "a", 60'000).ok());
  REQUIRE(s.claim("owner", "b", 60'000).ok());
  const std::string store_id(64, 'b');
  auto codec = gitlocks::make_private_codec(w.owner_vault, store_id, 2);
  auto loc_a = codec->location("path:a", 2);
  auto loc_b = codec->location("path:b", 2);
  gitlocks::StateReader r(s.objects(), s.state());
  std::string blob_a = s.objects().read_blob(*r.lookup(loc_a).value()).value();
  std::string blob_b = s.objects().read_blob(*r.lookup(loc_b).value()).value();
  CHECK(codec->decode(loc_a, blob_a).ok());
  // One flipped ciphertext byte.
  std::string t = blob_a;
  auto pos = t.find("\"ct\":\"") + 10;
  t[pos] = t[pos] == '0' ? '1' : '0';
  CHECK_FALSE(codec->decode(loc_a, t).ok());
  // Ciphertexts swapped between records: the location is bound.
  CHECK_FALSE(codec->decode(loc_a, blob_b).ok());
  // The same record under another epoch's key or store.
  auto old_codec = gitlocks::make_private_codec(w.owner_vault, store_id, 1);
  CHECK_FALSE(old_codec->decode(loc_a, blob_a).ok());
  auto other_store = gitlocks::make_private_codec(w.owner_vault, std::string(64, 'c'), 2);
  CHECK_FALSE(other_store->decode(loc_a, blob_a).ok());
  // A packet from before the rekey, replayed on top: its body is sealed under epoch 1.
  json body = json::parse(gitlocks::seal_document(json{{"created_at", s.now}, {"name", "x"}, {"ops", json::array()}},
                                                  epoch_key(1), 1, store_id, "txn/body/" + std::string(64, '1'))
                              .value());
  auto tc = gitlocks::read_transition_commit(s.objects(), *s.tip()).value();
  json packet = json::parse(tc.packet_stored)["packet"];
  packet["body"] = body;
  packet["instance"] = std::string(64, '1');
  packet["epoch"] = 1;
  packet["source"] = tc.state;
  auto stored = gitlocks::seal_packet(packet, actor_key("owner")).value();
  Oid forged = gitlocks::write_transition_commit(s.objects(), *s.tip(), tc.state, stored, "x\n", 0).value();
  (void)gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, forged);
  auto vs = verify(s, &w.owner_vault);
  CHECK_FALSE(vs.back().ok);
  CHECK(vs.back().reason == "wrong-epoch");
  // A flipped byte inside a sealed body fails authentication for members.
  packet["epoch"] = 2;
  json good_body =
      json::parse(gitlocks::seal_document(json{{"created_at", s.now}, {"name", "x"}, {"ops", json::array()}},
                                          epoch_key(2), 2, store_id, "txn/body/" + std::string(64, '1'))
                      .value());
  std::string ct = good_body["sealed"]["ct"];
  ct[4] = ct[4] == '0' ? '1' : '0';
  good_body["sealed"]["ct"] = ct;
  packet["body"] = good_body;
  auto stored2 = gitlocks::seal_packet(packet, actor_key("owner")).value();
  Oid forged2 = gitlocks::write_transition_commit(s.objects(), tc.parents[0].empty() ? *s.tip() : tc.commit, tc.state,
                                                  stored2, "x\n", 0)
                    .value();
  (void)gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, forged2);
  auto vs2 = verify(s, &w.owner_vault);
  CHECK(vs2.back().reason == "bad-sealed-body");
}

TEST_CASE("private: a sealed body that is not ops is bad-sealed-body - a checkpoint is read as stored") {
  World w;
  auto& s = w.s;
  REQUIRE(s.claim("owner", "a", 60'000).ok());
  const std::string store_id(64, 'b');
  // The owner's checkpoint, published as every writer does (plain): valid.
  const Oid tip = *s.tip();
  REQUIRE(s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(tip.hex(), s.snapshot().policy_hash)).ok());
  auto honest = verify(s, &w.owner_vault);
  for (const auto& v : honest) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(honest.back().action == "checkpoint");
  // The same checkpoint body sealed under the current epoch by the owner,
  // in a packet valid in every other respect: a keyless verifier could not
  // read its `prev`, so only ops are ever sealed.
  auto tc = gitlocks::read_transition_commit(s.objects(), *s.tip()).value();
  json packet = json::parse(tc.packet_stored)["packet"];
  const std::string instance = packet["instance"];
  packet["body"] = json::parse(
      gitlocks::seal_document(packet["body"], epoch_key(2), 2, store_id, gitlocks::sealed_body_location(instance))
          .value());
  auto stored = gitlocks::seal_packet(packet, actor_key("owner")).value();
  Oid forged = gitlocks::write_transition_commit(s.objects(), tip, tc.state, stored, "x\n", 0).value();
  (void)gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, forged);
  auto vs = verify(s, &w.owner_vault);
  REQUIRE(vs.size() == honest.size());
  CHECK_FALSE(vs.back().ok);
  CHECK(vs.back().reason == "bad-sealed-body");
  CHECK(vs.back().detail.find("a sealed body must hold ops") != std::string::npos);
}

TEST_CASE("private: sealing is deterministic - sealed epoch keys open only for their member") {
  auto k = epoch_key(7);
  auto a = gitlocks::seal_document(json{{"x", 1}}, k, 7, std::string(64, 'b'), "records/aa/bb/c.json");
  auto b = gitlocks::seal_document(json{{"x", 1}}, k, 7, std::string(64, 'b'), "records/aa/bb/c.json");
  auto c = gitlocks::seal_document(json{{"x", 2}}, k, 7, std::string(64, 'b'), "records/aa/bb/c.json");
  REQUIRE(a.ok());
  CHECK(*a == *b);
  CHECK(json::parse(*a)["sealed"]["nonce"] != json::parse(*c)["sealed"]["nonce"]);
  auto sealed = gitlocks::seal_epoch_key(k, actor_key("alice").public_key, seed("s")).value();
  CHECK(gitlocks::open_epoch_key(sealed, actor_key("alice")).value() == k);
  CHECK(gitlocks::open_epoch_key(sealed, actor_key("bob")).error().code == Errc::bad_signature);
  std::string flipped = sealed;
  flipped[70] = flipped[70] == '0' ? '1' : '0';
  CHECK_FALSE(gitlocks::open_epoch_key(flipped, actor_key("alice")).ok());
}

// The keyless rule of PRIVATE stores (docs/PRIVATE.md "Verification"): who may
// sign, and who may change the public policy. Full and structural replay give
// the same verdicts, with the same reasons.
namespace {

// Replaces the tip by a forgery of it: its packet changed by `edit`, signed
// by `signer`, over `state` (the honest result when empty).
Oid forge_tip(gitlocks::test::Store& s, const std::string& signer, const std::function<void(json&)>& edit,
              Oid state = {}) {
  auto tc = gitlocks::read_transition_commit(s.objects(), *s.tip()).value();
  json packet = json::parse(tc.packet_stored)["packet"];
  packet["actor"] = actor_hex(signer);
  if (!state.empty()) packet["result"] = state;
  edit(packet);
  auto stored = gitlocks::seal_packet(packet, actor_key(signer)).value();
  Oid forged = gitlocks::write_transition_commit(s.objects(), tc.parents.at(0),
                                                 *Oid::from_hex(packet["result"].get<std::string>()), stored,
                                                 "git-locks: forged\n", 0)
                   .value();
  REQUIRE(gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, forged).ok());
  return forged;
}

// The tip's state with policy.json replaced by `edit` of it.
Oid with_policy(gitlocks::test::Store& s, const std::function<void(json&)>& edit) {
  auto& st = s.objects();
  gitlocks::StateReader r(st, s.state());
  json pol = r.policy().value();
  edit(pol);
  Oid blob = st.write_blob(gitlocks::canon_dump(pol).value()).value();
  auto tree = st.read_tree(s.state()).value();
  for (auto& e : tree)
    if (e.name == "policy.json") e.oid = blob;
  return st.write_tree(tree).value();
}

// Full (the owner's keys) and structural (no key) replay both flag the tip
// alone, for `reason`; every commit before it is valid.
void only_tip_invalid(gitlocks::test::Store& s, const gitlocks::Vault& owner, const std::string& reason,
                      const std::string& level) {
  for (const gitlocks::Vault* vault : {&owner, static_cast<const gitlocks::Vault*>(nullptr)}) {
    auto vs = verify(s, vault);
    REQUIRE(vs.size() >= 2);
    for (std::size_t i = 0; i + 1 < vs.size(); ++i) CHECK_MESSAGE(vs[i].ok, i << ": " << vs[i].reason);
    CHECK_FALSE(vs.back().ok);
    CHECK_MESSAGE(vs.back().reason == reason, vs.back().reason << ": " << vs.back().detail);
    CHECK(std::string(gitlocks::level_name(vs.back().level)) == (vault ? "full" : level));
  }
}

}  // namespace

TEST_CASE("private rule: an honest history verifies structurally - every commit ok") {
  World w;
  auto& s = w.s;
  w.as_alice();
  REQUIRE(s.claim("alice", "secret/forecast/a.csv", 60'000).ok());
  w.remove_alice();
  REQUIRE(s.claim("owner", "b", 60'000).ok());
  for (const gitlocks::Vault* vault :
       {static_cast<const gitlocks::Vault*>(&w.owner_vault), static_cast<const gitlocks::Vault*>(nullptr)}) {
    auto vs = verify(s, vault);
    REQUIRE(vs.size() == 7);
    for (const auto& v : vs) CHECK_MESSAGE(v.ok, v.commit << ": " << v.reason << ": " << v.detail);
  }
}

TEST_CASE("private rule: a packet signed by a non-member or a removed member is not-member") {
  World w;
  auto& s = w.s;
  REQUIRE(s.claim("owner", "a", 60'000).ok());
  forge_tip(s, "mallory", [](json&) {});
  only_tip_invalid(s, w.owner_vault, "not-member", "structural");
  auto vs = verify(s, nullptr);
  CHECK(vs.back().detail.find(actor_hex("mallory")) != std::string::npos);
  // Alice, a member of epoch 2, removed at epoch 3: her signature on an
  // epoch-3 commit is no member's, though she signed epoch-2 ones.
  World v;
  v.as_alice();
  REQUIRE(v.s.claim("alice", "b", 60'000).ok());
  v.remove_alice();
  REQUIRE(v.s.claim("owner", "c", 60'000).ok());
  forge_tip(v.s, "alice", [](json&) {});
  only_tip_invalid(v.s, v.owner_vault, "not-member", "structural");
}

TEST_CASE("private rule: a sealed commit that changes any byte of the public policy is policy-changed") {
  struct Edit {
    const char* what;
    std::function<void(json&)> edit;
  };
  const std::vector<Edit> edits = {
      {"max_ttl_ms", [](json& p) { p["max_ttl_ms"] = 86'400'000; }},
      {"members",
       [](json& p) {
         p["members"].push_back(actor_hex("mallory"));
         p["keyring"]["2"][actor_hex("mallory")] = "00";
       }},
      {"guard_time",
       [](json& p) {
         p["guard_time"] = gitlocks::guard_time_doc({"a", actor_hex("notary")});
       }},
      {"families", [](json& p) { p.erase("families"); }},
  };
  for (const auto& e : edits) {
    CAPTURE(e.what);
    World w;
    auto& s = w.s;
    w.as_alice();
    REQUIRE(s.claim("alice", "secret/forecast/a.csv", 60'000).ok());
    const Oid forged_state = with_policy(s, e.edit);
    // Signed by a member (alice), and by the owner too: neither is an admin commit.
    for (const char* signer : {"alice", "owner"}) {
      CAPTURE(signer);
      forge_tip(
          s, signer, [](json&) {}, forged_state);
      only_tip_invalid(s, w.owner_vault, "policy-changed", "structural");
    }
  }
}

TEST_CASE("private rule: an admin commit or a policy change signed by a member who is not the owner is not-owner") {
  World w;
  auto& s = w.s;
  // The owner's member-add of bob, re-signed by alice as its actor.
  REQUIRE(membership_keyring(s, "member-add", "bob", {"owner", "alice", "bob"}).ok());
  forge_tip(s, "alice", [](json&) {});
  only_tip_invalid(s, w.owner_vault, "not-owner", "full");
  // The rekey that completes it, re-signed by alice: refused before any key
  // is needed, so "full" without keys too.
  World v;
  REQUIRE(membership_keyring(v.s, "member-add", "bob", {"owner", "alice", "bob"}).ok());
  v.owner_vault = vault_of(v.s, "owner");
  REQUIRE(rekey(v.s).ok());
  forge_tip(v.s, "alice", [](json&) {});
  only_tip_invalid(v.s, v.owner_vault, "not-owner", "full");
}

TEST_CASE("private rule: the keyless rule itself") {
  gitlocks::Policy p;
  p.is_private = true;
  p.owner = actor_hex("owner");
  p.members = {actor_hex("owner"), actor_hex("alice")};
  p.epoch = 2;
  const Oid a = *Oid::from_hex(std::string(40, 'a')), b = *Oid::from_hex(std::string(40, 'b'));
  using gitlocks::check_private_commit;
  CHECK_FALSE(check_private_commit(p, a, a, actor_hex("alice"), false));
  CHECK_FALSE(check_private_commit(p, a, b, actor_hex("owner"), true));
  CHECK_FALSE(check_private_commit(p, a, a, actor_hex("owner"), true));
  CHECK(check_private_commit(p, a, a, actor_hex("mallory"), false)->reason == "not-member");
  CHECK(check_private_commit(p, a, b, actor_hex("alice"), false)->reason == "policy-changed");
  CHECK(check_private_commit(p, a, std::nullopt, actor_hex("alice"), false)->reason == "policy-changed");
  CHECK(check_private_commit(p, a, b, actor_hex("owner"), false)->reason == "policy-changed");
  CHECK(check_private_commit(p, a, b, actor_hex("alice"), true)->reason == "not-owner");
  CHECK(check_private_commit(p, a, a, actor_hex("alice"), true)->reason == "not-owner");
  p.is_private = false;
  CHECK_FALSE(check_private_commit(p, a, b, actor_hex("mallory"), false));
}

TEST_CASE("forged membership bodies: every field of an add or remove or rekey dropped or retyped is refused") {
  World w;
  auto& s = w.s;
  s.vault = &w.owner_vault;
  std::size_t forgeries = 0, refused = 0;
  const std::string instance(64, 'c');
  auto change = [&](bool add, const char* member, const std::vector<std::string>& next) {
    return gitlocks::ops::admin_member(add, actor_hex(member), s.snapshot().policy_hash, keyring_for(3, next));
  };
  {
    const gitlocks::PlanContext ctx{actor_hex("owner"), instance, &w.owner_vault};
    gitlocks::test::replay_forgeries(s.objects(), s.state(), ctx, change(true, "bob", {"owner", "alice", "bob"}),
                                     forgeries, refused);
    gitlocks::test::replay_forgeries(s.objects(), s.state(), ctx, change(false, "alice", {"owner"}), forgeries,
                                     refused);
  }
  REQUIRE(membership_keyring(s, "member-add", "bob", {"owner", "alice", "bob"}).ok());
  w.owner_vault = vault_of(s, "owner");  // with the pending epoch's key
  const gitlocks::PlanContext ctx{actor_hex("owner"), instance, &w.owner_vault};
  gitlocks::test::replay_forgeries(s.objects(), s.state(), ctx, gitlocks::ops::admin_rekey(s.snapshot().policy_hash),
                                   forgeries, refused);
  MESSAGE(forgeries << " forged membership bodies, " << refused << " refused");
  CHECK(forgeries > 100);
  CHECK(refused == forgeries);  // every field of these bodies is required and typed
}

TEST_CASE(
    "a keyring entry that is not a sealed epoch key of exactly 80 bytes in lowercase hex is refused as malformed") {
  World w;
  auto& s = w.s;
  s.vault = &w.owner_vault;
  const json ring = keyring_for(3, {"owner", "alice", "bob"});
  const std::string sealed = ring["3"][actor_hex("bob")].get<std::string>();
  REQUIRE(sealed.size() == 160);
  auto with_bob = [&](const std::string& bob_sealed) {
    json r = ring;
    r["3"][actor_hex("bob")] = bob_sealed;
    const gitlocks::PlanContext ctx{actor_hex("owner"), std::string(64, 'c'), &w.owner_vault};
    return gitlocks::plan(s.objects(), s.state(), ctx,
                          gitlocks::ops::admin_member(true, actor_hex("bob"), s.snapshot().policy_hash, r));
  };
  CHECK(with_bob(sealed).ok());  // the control: the sealed key itself
  std::string upper = sealed;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& bad : {sealed.substr(0, 158), sealed.substr(0, 159), sealed + "0", sealed + "00", upper,
                                 sealed.substr(0, 159) + "g"}) {
    CAPTURE(bad.size());
    auto r = with_bob(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_json);
    CHECK(r.error().message == "pending keyring has a malformed entry");
  }
}
