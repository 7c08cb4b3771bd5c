// Replay verification on in-memory histories, untouched and tampered.
#include "gitlocks/replay.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "fixture.h"
#include "forgery.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/state.hpp"
#include "timeline.h"
#include "why.h"

using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::Store;

namespace {

struct Run {
  gitlocks::ReplaySummary summary;
  std::vector<gitlocks::Verdict> verdicts;
  const gitlocks::Verdict* first_bad() const {
    for (const auto& v : verdicts)
      if (!v.ok) return &v;
    return nullptr;
  }
};

Run verify(gitlocks::ObjectStore& store, const Oid& tip) {
  Run r;
  auto s = gitlocks::replay_chain(store, tip, {}, [&](const gitlocks::Verdict& v) { r.verdicts.push_back(v); });
  REQUIRE_MESSAGE(s.ok(), gitlocks::test::why(s));
  r.summary = *s;
  return r;
}

// A history with claims, a shared pair, a reclaim, an extend, a semaphore and a release.
Store history() {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 5000).ok());
  REQUIRE(s.claim("bob", "docs/", 60'000, "shared").ok());
  REQUIRE(s.claim("carol", "docs/x.md", 60'000, "shared").ok());
  s.now += 5001;
  REQUIRE(s.claim("bob", "src/", 60'000).ok());  // reclaims alice's expired lease below
  json l = s.lease_of("bob", "path:src");
  REQUIRE(s.op("bob", {{"op", "extend"}, {"path", "src/"}, {"lease", l["id"]}, {"expires_at", s.now + 90'000}}).ok());
  REQUIRE(s.op("carol", {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 2}, {"expires_at", s.now + 10'000}}).ok());
  json c = s.lease_of("carol", "path:docs/x.md");
  REQUIRE(s.op("carol", {{"op", "release"}, {"path", "docs/x.md"}, {"lease", c["id"]}}).ok());
  return s;
}

// Rewrites commit `target` (and re-parents the commits above it) with `edit`
// applied to its (state, packet) pair. Returns the new tip.
Oid rewrite(Store& s, const std::function<void(gitlocks::TransitionCommit&)>& edit, std::size_t target_from_root) {
  auto& store = s.objects();
  const std::vector<Oid> chain = gitlocks::test::chain_of(store, *s.tip());
  std::optional<Oid> parent;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    auto tc = gitlocks::read_transition_commit(store, chain[i]).value();
    if (i == target_from_root) edit(tc);
    auto packet_blob = store.write_blob(tc.packet_stored).value();
    auto txn = store.write_tree({{"packet.json", false, packet_blob}}).value();
    gitlocks::Tree root = {{"state", true, tc.state}, {"txn", true, txn}};
    for (const auto& extra : tc.unexpected) root.push_back({extra, false, packet_blob});
    gitlocks::Commit c;
    c.tree = store.write_tree(root).value();
    if (parent) c.parents.push_back(*parent);
    c.message = "rewritten\n";
    parent = store.write_commit(c).value();
  }
  return *parent;
}

}  // namespace

TEST_CASE("replay: an untouched history verifies - with one verdict per commit") {
  Store s = history();
  Run r = verify(s.objects(), *s.tip());
  CHECK(r.summary.commits == 8);
  CHECK(r.summary.invalid == 0);
  for (const auto& v : r.verdicts) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(r.verdicts[4].action == "reclaim");
}

TEST_CASE("replay: a rewritten but identical history still verifies (the rewriter is faithful)") {
  Store s = history();
  Oid tip = rewrite(
      s, [](gitlocks::TransitionCommit&) {}, 3);
  CHECK(verify(s.objects(), tip).summary.invalid == 0);
}

TEST_CASE("replay: one changed byte in a record is flagged at that commit") {
  Store s = history();
  Oid tip = rewrite(
      s,
      [&](gitlocks::TransitionCommit& tc) {
        gitlocks::StateReader reader(s.objects(), tc.state);
        auto rec = reader.record("path:docs").value();
        REQUIRE(rec);
        std::string bytes = (*rec).dump();
        bytes[bytes.find("shared")] = 'S';  // one byte
        auto blob = s.objects().write_blob(bytes).value();
        auto loc = gitlocks::record_location("path:docs");
        // Rebuild the state tree with the changed blob.
        std::function<Oid(const Oid&, std::size_t)> put = [&](const Oid& tree, std::size_t depth) -> Oid {
          auto t = s.objects().read_tree(tree).value();
          for (auto& e : t)
            if (e.name == loc[depth]) e.oid = depth + 1 == loc.size() ? blob : put(e.oid, depth + 1);
          return s.objects().write_tree(t).value();
        };
        tc.state = put(tc.state, 0);
      },
      2);
  Run r = verify(s.objects(), tip);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == r.verdicts[2].commit);
  CHECK(r.first_bad()->reason == "state-mismatch");
}

// Every field of a recorded record (bob's shared lease on docs/, at the
// commit that made it), at any depth, dropped or given another type: the
// recorded state is the forger's, and both the re-plan comparison and the
// independent exclusion checker read it. The commit is invalid, the ones
// before it stay valid, and nothing throws or reads an absent member.
TEST_CASE("replay: every field of a recorded record dropped or retyped is flagged at its commit - never a throw") {
  Store s = history();
  const Oid genuine_state =
      gitlocks::read_transition_commit(s.objects(), verify(s.objects(), *s.tip()).verdicts[2].commit).value().state;
  const json record = gitlocks::StateReader(s.objects(), genuine_state).record("path:docs").value().value();
  const auto loc = gitlocks::record_location("path:docs");
  std::size_t forgeries = 0;
  gitlocks::test::for_each_forgery(record, [&](const std::string& how, const json& forged) {
    CAPTURE(how);
    auto bytes = gitlocks::canon_dump(forged);
    if (!bytes.ok()) return;  // not a document the core could have written or read back
    ++forgeries;
    const Oid blob = s.objects().write_blob(*bytes).value();
    std::function<Oid(const Oid&, std::size_t)> put = [&](const Oid& tree, std::size_t depth) -> Oid {
      auto t = s.objects().read_tree(tree).value();
      for (auto& e : t)
        if (e.name == loc[depth]) e.oid = depth + 1 == loc.size() ? blob : put(e.oid, depth + 1);
      return s.objects().write_tree(t).value();
    };
    const Oid tip = rewrite(
        s, [&](gitlocks::TransitionCommit& tc) { tc.state = put(tc.state, 0); }, 2);
    Run r;
    REQUIRE_NOTHROW(r = verify(s.objects(), tip));
    REQUIRE(r.first_bad());
    CHECK(r.first_bad()->commit == r.verdicts[2].commit);
    CHECK_FALSE(r.first_bad()->reason.empty());
  });
  MESSAGE(forgeries << " forged records");
  CHECK(forgeries > 40);
}

TEST_CASE("replay: a packet re-signed by another key is not the owner's creation / breaks bindings") {
  Store s = history();
  Oid tip = rewrite(
      s,
      [&](gitlocks::TransitionCommit& tc) {
        json doc = json::parse(tc.packet_stored);
        doc["packet"]["actor"] = gitlocks::test::actor_hex("mallory");
        tc.packet_stored = gitlocks::seal_packet(doc["packet"], gitlocks::test::actor_key("mallory")).value();
      },
      1);
  Run r = verify(s.objects(), tip);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == r.verdicts[1].commit);
  // The body was planned for alice: her lease would now belong to mallory.
  CHECK(r.first_bad()->reason == "result-mismatch");
}

TEST_CASE("replay: a changed generation in the body is flagged") {
  Store s = history();
  Oid tip = rewrite(
      s,
      [&](gitlocks::TransitionCommit& tc) {
        json doc = json::parse(tc.packet_stored);
        REQUIRE(doc["packet"]["action"] == "reclaim");
        doc["packet"]["body"]["ops"][0]["reclaims"][0]["generation"] = 5;
        tc.packet_stored = gitlocks::seal_packet(doc["packet"], gitlocks::test::actor_key("bob")).value();
      },
      4);
  Run r = verify(s.objects(), tip);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == r.verdicts[4].commit);
  CHECK(r.first_bad()->reason == "replay-refused");
}

TEST_CASE("replay: swapped packets - a stray file and an unsigned edit are each flagged") {
  Store s = history();
  std::string packet3 = gitlocks::read_transition_commit(s.objects(),
                                                         [&] {
                                                           std::vector<Oid> chain;
                                                           for (auto cur = s.tip(); cur;) {
                                                             chain.insert(chain.begin(), *cur);
                                                             auto c = s.objects().read_commit(*cur).value();
                                                             if (c.parents.empty()) break;
                                                             cur = c.parents.front();
                                                           }
                                                           return chain[3];
                                                         }())
                            .value()
                            .packet_stored;
  Oid swapped = rewrite(
      s, [&](gitlocks::TransitionCommit& tc) { tc.packet_stored = packet3; }, 2);
  Run r1 = verify(s.objects(), swapped);
  REQUIRE(r1.first_bad());
  CHECK(r1.first_bad()->commit == r1.verdicts[2].commit);
  CHECK(r1.first_bad()->reason == "source-mismatch");

  Oid stray = rewrite(
      s, [&](gitlocks::TransitionCommit& tc) { tc.unexpected.push_back("notes.txt"); }, 5);
  Run r2 = verify(s.objects(), stray);
  REQUIRE(r2.first_bad());
  CHECK(r2.first_bad()->commit == r2.verdicts[5].commit);
  CHECK(r2.first_bad()->reason == "unexpected-entry");

  Oid unsigned_edit = rewrite(
      s,
      [&](gitlocks::TransitionCommit& tc) {
        json doc = json::parse(tc.packet_stored);
        doc["packet"]["claimed_at_ms"] = doc["packet"]["claimed_at_ms"].get<std::int64_t>() + 1;
        tc.packet_stored = doc.dump();
      },
      6);
  Run r3 = verify(s.objects(), unsigned_edit);
  REQUIRE(r3.first_bad());
  CHECK(r3.first_bad()->reason == "bad-signature");
}

TEST_CASE("replay: a dropped commit breaks the chain at the commit after it") {
  Store s = history();
  // Rebuild without commit 3: commit 4's packet names commit 3's state as its source.
  auto& store = s.objects();
  std::vector<Oid> chain;
  for (auto cur = s.tip(); cur;) {
    chain.insert(chain.begin(), *cur);
    auto c = store.read_commit(*cur).value();
    if (c.parents.empty()) break;
    cur = c.parents.front();
  }
  std::optional<Oid> parent;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (i == 3) continue;
    auto c = store.read_commit(chain[i]).value();
    c.parents.clear();
    if (parent) c.parents.push_back(*parent);
    parent = store.write_commit(c).value();
  }
  Run r = verify(store, *parent);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == r.verdicts[3].commit);
  CHECK(r.first_bad()->reason == "source-mismatch");
}

TEST_CASE("replay: the independent checker catches a forged state that the packet also claims") {
  // A fully re-signed forgery: mallory writes a state where bob's exclusive
  // lease and a second exclusive lease coexist, and signs a packet naming it.
  Store s;
  REQUIRE(s.claim("bob", "f", 60'000).ok());
  auto& store = s.objects();
  auto tip = *s.tip();
  auto tc = gitlocks::read_transition_commit(store, tip).value();
  gitlocks::StateReader reader(store, tc.state);
  json rec = *reader.record("path:f").value();
  json forged = rec["leases"][0];
  forged["id"] = std::string(24, 'f');
  forged["holder"] = gitlocks::test::actor_hex("mallory");
  forged["generation"] = 2;
  rec["leases"].push_back(forged);
  rec["generation"] = 2;
  auto blob = store.write_blob(rec.dump()).value();
  auto loc = gitlocks::record_location("path:f");
  std::function<Oid(const Oid&, std::size_t)> put = [&](const Oid& tree, std::size_t depth) -> Oid {
    auto t = store.read_tree(tree).value();
    for (auto& e : t)
      if (e.name == loc[depth]) e.oid = depth + 1 == loc.size() ? blob : put(e.oid, depth + 1);
    return store.write_tree(t).value();
  };
  Oid state = put(tc.state, 0);
  json packet = json::parse(tc.packet_stored)["packet"];
  packet["actor"] = gitlocks::test::actor_hex("mallory");
  packet["source"] = tc.state;
  packet["result"] = state;
  packet["action"] = "claim";
  auto stored = gitlocks::seal_packet(packet, gitlocks::test::actor_key("mallory")).value();
  Oid c = gitlocks::write_transition_commit(store, tip, state, stored, "forged\n", 0).value();
  Run r = verify(store, c);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == c);
  CHECK(r.first_bad()->reason == "replay-refused");
  // The invariant checker alone, fed only the recorded states, flags it too.
  gitlocks::detail::Timeline timeline;
  REQUIRE(timeline.load(store, tc.state).ok());
  auto violations = timeline.apply(store, tc.state, state, s.now + 1, gitlocks::Policy{});
  REQUIRE(violations.ok());
  REQUIRE_FALSE(violations->empty());
  CHECK(violations->front().reason == "exclusion-violated");
  // ...and, after bob's lease expired, the same change is legal for it.
  gitlocks::detail::Timeline later;
  REQUIRE(later.load(store, tc.state).ok());
  auto ok = later.apply(store, tc.state, state, s.now + 60'001, gitlocks::Policy{});
  REQUIRE(ok.ok());
  CHECK(ok->empty());
}

namespace {

// Rewrites commit `index` of the chain with its packet edited and re-signed
// by `actor`: the signature is good, only what the edit changed is wrong.
Oid resign(Store& s, std::size_t index, const std::string& actor, const std::function<void(json&)>& edit) {
  return rewrite(
      s,
      [&](gitlocks::TransitionCommit& tc) {
        json packet = json::parse(tc.packet_stored)["packet"];
        edit(packet);
        // Signed by hand: seal_packet would refuse some of the forgeries.
        auto bytes = gitlocks::canon_dump(packet).value();
        auto sig = gitlocks::sign_detached(gitlocks::kPacketDomain, bytes, gitlocks::test::actor_key(actor));
        tc.packet_stored = gitlocks::canon_dump(json{{"packet", packet}, {"sig", gitlocks::to_hex(sig)}}).value();
      },
      index);
}

// Checks that exactly one commit, the one at `index`, is invalid, for
// `reason`; returns its detail.
std::string only_invalid(gitlocks::ObjectStore& store, const Oid& tip, std::size_t index, const std::string& reason) {
  Run r = verify(store, tip);
  REQUIRE(r.verdicts.size() > index);
  CHECK(r.summary.invalid == 1);
  for (std::size_t i = 0; i < r.verdicts.size(); ++i)
    if (i != index) CHECK_MESSAGE(r.verdicts[i].ok, i << ": " << r.verdicts[i].reason << ": " << r.verdicts[i].detail);
  CHECK_FALSE(r.verdicts[index].ok);
  CHECK(r.verdicts[index].reason == reason);
  return r.verdicts[index].detail;
}

void all_valid(gitlocks::ObjectStore& store, const Oid& tip) {
  Run r = verify(store, tip);
  CHECK(r.summary.invalid == 0);
  for (const auto& v : r.verdicts) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
}

// Init at t0, then alice claims "f" for the longest TTL at t0 + 10 s: by the
// seed's guards (T + 1000 <= e, T + 3600000 >= e, e = now + 3600000) the
// claim admits T in [now, now + 3599000], and T = now was used.
struct LongClaim {
  Store s;
  std::int64_t init_t = s.now;
  std::int64_t lo = 0, hi = 0;
  LongClaim() {
    s.now += 10'000;
    REQUIRE(s.claim("alice", "f", 3'600'000).ok());
    lo = s.now;
    hi = s.now + 3'599'000;
  }
};

}  // namespace

TEST_CASE(
    "replay: a local admission time outside the derived interval is time-outside-interval - its ends are inside") {
  LongClaim h;
  auto tip = gitlocks::read_transition_commit(h.s.objects(), *h.s.tip()).value();
  REQUIRE(json::parse(tip.packet_stored)["packet"]["interval"] == json::array({h.lo, h.hi}));
  REQUIRE(h.lo - 1 > h.init_t);  // so T = lo - 1 is no decrease
  for (std::int64_t t : {h.lo - 1, h.hi + 1}) {
    CAPTURE(t);
    Oid forged = resign(h.s, 1, "alice", [&](json& p) { p["claimed_at_ms"] = t; });
    CHECK(only_invalid(h.s.objects(), forged, 1, "time-outside-interval") ==
          "T = " + std::to_string(t) + " is outside [" + std::to_string(h.lo) + ", " + std::to_string(h.hi) + "]");
  }
  for (std::int64_t t : {h.lo, h.hi}) {
    CAPTURE(t);
    all_valid(h.s.objects(), resign(h.s, 1, "alice", [&](json& p) { p["claimed_at_ms"] = t; }));
  }
}

TEST_CASE("replay: a signed packet interval other than the derived one is interval-mismatch") {
  LongClaim h;
  const std::string want =
      "derived interval [" + std::to_string(h.lo) + ", " + std::to_string(h.hi) + "] differs from the packet's";
  // Narrower and wider by 1 ms, each still containing the T used.
  for (const json& iv : {json::array({h.lo, h.hi - 1}), json::array({h.lo - 1, h.hi})}) {
    CAPTURE(iv.dump());
    Oid forged = resign(h.s, 1, "alice", [&](json& p) { p["interval"] = iv; });
    CHECK(only_invalid(h.s.objects(), forged, 1, "interval-mismatch") == want);
  }
  all_valid(h.s.objects(), resign(h.s, 1, "alice", [&](json& p) { p["interval"] = json::array({h.lo, h.hi}); }));
}

TEST_CASE("replay: a local admission time before the previous one is time-decreased - an equal one is not") {
  LongClaim h;
  const std::int64_t alice_t = h.s.now;
  h.s.now += 5;
  REQUIRE(h.s.claim("bob", "g", 60'000).ok());
  all_valid(h.s.objects(), *h.s.tip());
  Oid forged = resign(h.s, 2, "bob", [&](json& p) { p["claimed_at_ms"] = alice_t - 1; });
  CHECK(only_invalid(h.s.objects(), forged, 2, "time-decreased") ==
        "T = " + std::to_string(alice_t - 1) + " is before the previous " + std::to_string(alice_t));
  all_valid(h.s.objects(), resign(h.s, 2, "bob", [&](json& p) { p["claimed_at_ms"] = alice_t; }));
}

TEST_CASE("replay: each signed-packet binding the chain fixes is checked") {
  LongClaim h;
  struct Forgery {
    const char* what;
    std::function<void(json&)> edit;
    const char* reason;
    std::string detail_prefix;
  };
  const std::vector<Forgery> forgeries = {
      {"no admission time", [](json& p) { p.erase("claimed_at_ms"); }, "missing-time",
       "packet carries no admission time"},
      {"another policy hash", [](json& p) { p["policy_hash"] = std::string(64, 'b'); }, "policy-mismatch",
       "policy_hash is not the policy in force at the source"},
      {"another store id", [](json& p) { p["store"] = std::string(64, 'b'); }, "store-mismatch",
       "packet names another store"},
      {"another action name", [](json& p) { p["action"] = "reclaim"; }, "action-mismatch",
       "re-planning gives action claim"},
      {"another epoch", [](json& p) { p["epoch"] = 1; }, "wrong-epoch", "packet epoch 1, the store is at epoch 0"},
      {"a sealed body in a public store",
       [](json& p) {
         p["body"] = json{{"sealed", "x"}};
       },
       "bad-packet", "a sealed body in a store that is not PRIVATE"},
      {"an unknown packet format", [](json& p) { p["format"] = "gitlocks-packet-v9"; }, "unknown-format",
       "unknown packet format"},
  };
  for (const auto& f : forgeries) {
    CAPTURE(f.what);
    Oid forged = resign(h.s, 1, "alice", f.edit);
    const std::string detail = only_invalid(h.s.objects(), forged, 1, f.reason);
    CHECK_MESSAGE(detail.rfind(f.detail_prefix, 0) == 0, detail);
  }
}

TEST_CASE("replay: the root must be the owner's creation with its own policy hash") {
  LongClaim h;
  // Mallory signs the creation as herself: the same policy, another creator.
  Oid by_mallory = resign(h.s, 0, "mallory", [](json& p) { p["actor"] = gitlocks::test::actor_hex("mallory"); });
  CHECK(only_invalid(h.s.objects(), by_mallory, 0, "not-owner") == "the store was not created by its owner");
  Oid other_hash = resign(h.s, 0, "owner", [](json& p) { p["policy_hash"] = std::string(64, 'b'); });
  // The next commit's policy_hash is the real policy's, which is still in force: only the root is wrong.
  CHECK(only_invalid(h.s.objects(), other_hash, 0, "policy-mismatch") == "policy_hash is not the creation policy's");
  Oid with_source = resign(h.s, 0, "owner", [&](json& p) { p["source"] = std::string(40, 'c'); });
  CHECK(only_invalid(h.s.objects(), with_source, 0, "bad-packet") == "the root commit must create the store");
}

// A forged root whose creation policy has an epoch that is not a number,
// under a packet epoch that is not 0: the epoch check of the packet reads
// the creation policy's epoch too, and must not throw on it. The root is
// refused for its policy (the first check that fails), and nothing built
// on it is valid.
TEST_CASE("replay: a root whose creation policy has a non-numeric epoch is refused - the verifier does not throw") {
  LongClaim h;
  for (const json& epoch : {json("one"), json::array({1}), json(nullptr), json(true)}) {
    CAPTURE(epoch.dump());
    Oid forged = resign(h.s, 0, "owner", [&](json& p) {
      p["epoch"] = 1;
      p["body"]["init"]["epoch"] = epoch;
    });
    Run r;
    REQUIRE_NOTHROW(r = verify(h.s.objects(), forged));
    REQUIRE_FALSE(r.verdicts.empty());
    CHECK_FALSE(r.verdicts[0].ok);
    CHECK(r.verdicts[0].reason == "bad-packet");
    CHECK(r.verdicts[0].detail.rfind("creation policy: ", 0) == 0);
    for (const auto& v : r.verdicts) CHECK_FALSE(v.ok);
  }
}

// A forged root whose body creates nothing ({}): the re-plan of a root
// reads the body's "init", which is not there. It is refused as what it is
// (the root must create the store), and the verifier reads nothing absent:
// under the sanitizer build such a read aborts.
TEST_CASE("replay: a root whose body creates nothing is refused - the re-plan reads no absent init") {
  LongClaim h;
  Oid forged = resign(h.s, 0, "owner", [](json& p) { p["body"] = json::object(); });
  Run r;
  REQUIRE_NOTHROW(r = verify(h.s.objects(), forged));
  REQUIRE_FALSE(r.verdicts.empty());
  CHECK_FALSE(r.verdicts[0].ok);
  CHECK(r.verdicts[0].reason == "bad-packet");
  CHECK(r.verdicts[0].detail == "the root commit must create the store");
  for (const auto& v : r.verdicts) CHECK_FALSE(v.ok);
}

TEST_CASE("replay: a merge commit and a commit without a packet are flagged") {
  LongClaim h;
  auto& store = h.s.objects();
  const Oid tip = *h.s.tip();
  auto c = store.read_commit(tip).value();
  REQUIRE(c.parents.size() == 1);
  c.parents.push_back(c.parents.front());
  Oid merge = store.write_commit(c).value();
  CHECK(only_invalid(store, merge, 1, "bad-parents") == "commit has 2 parents");
  auto tc = gitlocks::read_transition_commit(store, tip).value();
  gitlocks::Commit no_packet;
  no_packet.tree = store.write_tree({{"state", true, tc.state}}).value();
  no_packet.parents = {c.parents.front()};
  no_packet.message = "no packet\n";
  Oid bare = store.write_commit(no_packet).value();
  Run r = verify(store, bare);
  REQUIRE(r.verdicts.size() == 2);
  CHECK(r.verdicts[0].ok);
  CHECK(r.verdicts[1].reason == "bad-layout");
  CHECK(r.summary.invalid == 1);
}

TEST_CASE("replay: the independent checker flags a semaphore over its limit and a reissued generation") {
  // Forged successor states of a genuine sem-acquire, fed to the invariant
  // checker alone (the planner refuses them before it would run in replay).
  Store s;
  REQUIRE(s.op("carol", {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 2}, {"expires_at", s.now + 10'000}}).ok());
  auto& store = s.objects();
  const Oid before = s.state();
  gitlocks::StateReader reader(store, before);
  const json rec = *reader.record("sem:ci").value();
  REQUIRE(rec["leases"].size() == 1);
  REQUIRE(rec["leases"][0]["generation"] == 1);
  auto with_leases = [&](const std::vector<std::pair<std::string, std::int64_t>>& extra, bool drop_carol = false) {
    json r = rec;
    if (drop_carol) r["leases"] = json::array();
    for (const auto& [who, generation] : extra) {
      r["generation"] = std::max(r["generation"].get<std::int64_t>(), generation);
      json l = rec["leases"][0];
      l["id"] = std::string(24, who[0]);  // d, e: hex digits
      l["holder"] = gitlocks::test::actor_hex(who);
      l["generation"] = generation;
      r["leases"].push_back(l);
    }
    auto blob = store.write_blob(r.dump()).value();
    auto loc = gitlocks::record_location("sem:ci");
    std::function<Oid(const Oid&, std::size_t)> put = [&](const Oid& tree, std::size_t depth) -> Oid {
      auto t = store.read_tree(tree).value();
      for (auto& e : t)
        if (e.name == loc[depth]) e.oid = depth + 1 == loc.size() ? blob : put(e.oid, depth + 1);
      return store.write_tree(t).value();
    };
    return put(before, 0);
  };
  auto check = [&](const Oid& after) {
    gitlocks::detail::Timeline timeline;
    REQUIRE(timeline.load(store, before).ok());
    auto v = timeline.apply(store, before, after, s.now + 1, gitlocks::Policy{});
    REQUIRE(v.ok());
    return *v;
  };
  CHECK(check(with_leases({{"dave", 2}})).empty());  // two live holders, limit 2
  auto over = check(with_leases({{"dave", 2}, {"erin", 3}}));
  REQUIRE(over.size() == 1);
  CHECK(over[0].reason == "semaphore-over-limit");
  CHECK(over[0].detail == "semaphore ci has 3 live holders, limit 2");
  // Carol's lease gone and dave's issued with her generation again.
  CHECK(check(with_leases({{"dave", 2}}, true)).empty());
  auto reused = check(with_leases({{"dave", 1}}, true));
  REQUIRE(reused.size() == 1);
  CHECK(reused[0].reason == "generation-reused");
  CHECK(reused[0].detail == "generation 1 of sem:ci was issued before (highest 1)");
}

TEST_CASE("replay: a chain longer than two segments is replayed root first and in order") {
  // The replay keeps one id per 1,024 commits and re-reads each segment from
  // its mark: the verdicts must still name every commit once, root first.
  Store s;
  const std::size_t commits = 2 * 1024 + 3;  // init included: three segments, the oldest one short
  for (std::size_t n = 1; n < commits; ++n) {
    if (n % 2) {
      REQUIRE(s.claim("bob", "g", 60'000).ok());
    } else {
      json l = s.lease_of("bob", "path:g");
      REQUIRE(s.op("bob", {{"op", "release"}, {"path", "g"}, {"lease", l["id"]}}).ok());
    }
  }
  std::vector<Oid> expected;  // every commit, root first, from the parent links
  for (auto cur = s.tip(); cur;) {
    expected.insert(expected.begin(), *cur);
    auto c = s.objects().read_commit(*cur).value();
    if (c.parents.empty()) break;
    cur = c.parents.front();
  }
  REQUIRE(expected.size() == commits);
  Run r = verify(s.objects(), *s.tip());
  REQUIRE(r.verdicts.size() == commits);
  std::size_t misplaced = 0;
  for (std::size_t i = 0; i < commits; ++i) misplaced += r.verdicts[i].commit == expected[i] ? 0 : 1;
  CHECK(misplaced == 0);
  CHECK(r.summary.invalid == 0);
  // Resumed from a commit in the middle segment: the commits above it, in order.
  gitlocks::ReplayOptions from_middle;
  from_middle.from = expected[1500];
  std::vector<Oid> got;
  auto resumed = gitlocks::replay_chain(s.objects(), *s.tip(), from_middle,
                                        [&](const gitlocks::Verdict& v) { got.push_back(v.commit); });
  REQUIRE(resumed.ok());
  CHECK(got == std::vector<Oid>(expected.begin() + 1501, expected.end()));
}

namespace {

// The state `state` with the record of `resource` (which it holds) replaced by `rec`.
Oid with_record(gitlocks::ObjectStore& store, const Oid& state, const std::string& resource, const json& rec) {
  auto blob = store.write_blob(rec.dump()).value();
  auto loc = gitlocks::record_location(resource);
  std::function<Oid(const Oid&, std::size_t)> put = [&](const Oid& tree, std::size_t depth) -> Oid {
    auto t = store.read_tree(tree).value();
    bool found = false;
    for (auto& e : t)
      if (e.name == loc[depth]) {
        e.oid = depth + 1 == loc.size() ? blob : put(e.oid, depth + 1);
        found = true;
      }
    REQUIRE_MESSAGE(found, resource << " has no record to replace");
    return store.write_tree(t).value();
  };
  return put(state, 0);
}

// The violations the invariant checker finds in old -> new at t, with the
// model of every lease (full) or from the states' records and markers (lazy).
std::vector<gitlocks::detail::Violation> check_change(gitlocks::ObjectStore& store, const Oid& old_state,
                                                      const Oid& new_state, std::int64_t t, bool lazy) {
  gitlocks::detail::Timeline timeline;
  if (lazy) timeline.start_lazy();
  else REQUIRE(timeline.load(store, old_state).ok());
  auto v = timeline.apply(store, old_state, new_state, t, gitlocks::Policy{});
  REQUIRE_MESSAGE(v.ok(), gitlocks::test::why(v));
  return *v;
}

}  // namespace

TEST_CASE("replay: resumed from any commit the verdicts are those of the full replay") {
  Store s = history();
  Run full = verify(s.objects(), *s.tip());
  for (std::size_t from = 1; from + 1 < full.verdicts.size(); ++from) {
    gitlocks::ReplayOptions options;
    options.from = full.verdicts[from].commit;
    std::vector<gitlocks::Verdict> got;
    auto r =
        gitlocks::replay_chain(s.objects(), *s.tip(), options, [&](const gitlocks::Verdict& v) { got.push_back(v); });
    REQUIRE(r.ok());
    REQUIRE(got.size() == full.verdicts.size() - from - 1);
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].commit == full.verdicts[from + 1 + i].commit);
      CHECK_MESSAGE(got[i].ok, got[i].reason << ": " << got[i].detail);
    }
  }
}

TEST_CASE("replay: a forged lease above another holder's is caught from the markers when resumed") {
  Store s;
  REQUIRE(s.claim("bob", "a/b", 60'000).ok());
  auto& store = s.objects();
  const Oid p = s.state();
  json a = s.record("path:a").value();  // bob's marker for a/b
  REQUIRE(a["below"].contains(gitlocks::test::actor_hex("bob")));
  json forged = s.record("path:a/b").value()["leases"][0];
  forged["id"] = std::string(24, 'e');
  forged["holder"] = gitlocks::test::actor_hex("mallory");
  forged["path"] = "a";
  a["leases"].push_back(forged);
  a["generation"] = 1;
  const Oid n = with_record(store, p, "path:a", a);
  for (const bool lazy : {false, true}) {
    CAPTURE(lazy);
    auto live = check_change(store, p, n, s.now + 1, lazy);
    REQUIRE(live.size() == 1);
    CHECK(live[0].reason == "exclusion-violated");
    // After bob's lease expired the same change is legal (T > expires_at).
    CHECK(check_change(store, p, n, s.now + 60'001, lazy).empty());
    // Expired exactly at T is still in the way.
    CHECK(check_change(store, p, n, s.now + 60'000, lazy).size() == 1);
  }
}

TEST_CASE("replay: intention markers that do not follow the lease changes are marker-mismatch") {
  Store s;
  const Oid p = s.state();
  REQUIRE(s.claim("bob", "a/b", 60'000).ok());
  auto& store = s.objects();
  const Oid n = s.state();
  const std::string bob = gitlocks::test::actor_hex("bob");
  CHECK(check_change(store, p, n, s.now, false).empty());
  CHECK(check_change(store, p, n, s.now, true).empty());
  json a = s.record("path:a").value();
  const std::int64_t expires = s.record("path:a/b").value()["leases"][0]["expires_at"].get<std::int64_t>();
  REQUIRE(a["below"][bob]["x"] == 1);
  REQUIRE(a["below"][bob]["xu"] == expires);
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"count not bumped", [&](json& r) { r["below"][bob]["x"] = 0; },
       "counts 0 lease(s) below, the lease changes make 1"},
      {"count bumped twice", [&](json& r) { r["below"][bob]["x"] = 2; },
       "counts 2 lease(s) below, the lease changes make 1"},
      {"bound one below the expiry", [&](json& r) { r["below"][bob]["xu"] = expires - 1; },
       "bounds its leases at " + std::to_string(expires - 1) + ", below an expiry it must cover"},
      {"shared count invented", [&](json& r) { r["below"][bob]["s"] = 1; },
       "counts 1 lease(s) below, the lease changes make 0"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    json r = a;
    c.edit(r);
    const Oid forged = with_record(store, n, "path:a", r);
    for (const bool lazy : {false, true}) {
      auto v = check_change(store, p, forged, s.now, lazy);
      REQUIRE(v.size() == 1);
      CHECK(v[0].reason == "marker-mismatch");
      CHECK(v[0].detail.find(c.detail) != std::string::npos);
    }
  }
  // The bound exactly at the expiry is enough.
  json exact = a;
  exact["below"][bob]["xu"] = expires;
  CHECK(check_change(store, p, with_record(store, n, "path:a", exact), s.now, true).empty());
}

TEST_CASE("replay: resumed from a trusted state a generation issued again is generation-reused") {
  Store s;
  REQUIRE(s.claim("bob", "f", 60'000).ok());
  json l = s.lease_of("bob", "path:f");
  REQUIRE(s.op("bob", {{"op", "release"}, {"path", "f"}, {"lease", l["id"]}}).ok());
  auto& store = s.objects();
  const Oid p = s.state();
  json f = s.record("path:f").value();  // generation 1, no leases
  REQUIRE(f["generation"] == 1);
  json again = l;
  again["holder"] = gitlocks::test::actor_hex("carol");
  again["id"] = std::string(24, 'c');
  f["leases"].push_back(again);  // generation 1 again
  for (const bool lazy : {false, true}) {
    auto v = check_change(store, p, with_record(store, p, "path:f", f), s.now, lazy);
    REQUIRE(v.size() == 1);
    CHECK(v[0].reason == "generation-reused");
    CHECK(v[0].detail == "generation 1 of path:f was issued before (highest 1)");
  }
  // The record's generation lowered under the lease: refused when resumed (the
  // record check of the lease's generation refuses it first when read).
  json lowered = s.record("path:f").value();
  lowered["generation"] = 0;
  auto v = check_change(store, p, with_record(store, p, "path:f", lowered), s.now, true);
  REQUIRE(v.size() == 1);
  CHECK(v[0].reason == "generation-reused");
}

TEST_CASE("replay: a forged packet whose path is an NFD or case twin of a held path is invalid") {
  struct Twin {
    json policy;
    const char* held;
    const char* twin;
    const char* says;
  };
  for (const Twin& t : {Twin{json::object(), "caf\xC3\xA9", "cafe\xCC\x81", "not in Unicode NFC"},
                        Twin{json{{"case_insensitive", true}}, "src/a.c", "SRC/a.c", "canonical form"}}) {
    Store s(t.policy);
    REQUIRE(s.claim("alice", t.held, 60'000).ok());
    REQUIRE(s.claim("bob", "other", 60'000).ok());
    // bob's genuine packet, re-signed by bob with the twin as its path.
    Oid forged = resign(s, 2, "bob", [&](json& p) { p["body"]["ops"][0]["path"] = t.twin; });
    const std::string detail = only_invalid(s.objects(), forged, 2, "replay-refused");
    CHECK_MESSAGE(detail.find(t.says) != std::string::npos, detail);
  }
}

TEST_CASE("replay: the independent checker flags a lease whose path is not the store's canonical form") {
  Store s;  // case-sensitive: "Src/A.c" is a legal path here
  auto before = s.state();
  REQUIRE(s.claim("alice", "Src/A.c", 60'000).ok());
  auto after = s.state();
  gitlocks::Policy sensitive;
  gitlocks::detail::Timeline ok_model;
  REQUIRE(ok_model.load(s.objects(), before).ok());
  auto fine = ok_model.apply(s.objects(), before, after, s.now, sensitive);
  REQUIRE(fine.ok());
  CHECK(fine->empty());
  // The same states under a case-insensitive policy: "Src/A.c" is a second
  // spelling of "src/a.c", which the checker refuses on its own.
  gitlocks::Policy insensitive;
  insensitive.case_insensitive = true;
  gitlocks::detail::Timeline model;
  REQUIRE(model.load(s.objects(), before).ok());
  auto v = model.apply(s.objects(), before, after, s.now, insensitive);
  REQUIRE(v.ok());
  REQUIRE(v->size() == 1);
  CHECK(v->front().reason == "path-not-canonical");
}

TEST_CASE("replay: a policy-set signed by anyone but the owner is refused on replay") {
  Store s;
  REQUIRE(s.claim("alice", "a", 60'000).ok());
  json next = gitlocks::StateReader(s.objects(), s.state()).policy().value();
  next["max_ttl_ms"] = 120'000;
  next["admins"] = {gitlocks::test::actor_hex("mallory")};
  REQUIRE(s.submit("owner", "policy set", gitlocks::ops::admin_policy_set(next, s.snapshot().policy_hash)).ok());
  REQUIRE(s.claim("bob", "b", 100'000).ok());  // allowed only by the new bound
  all_valid(s.objects(), *s.tip());
  // The same transition (same state, same body) signed by mallory: every
  // binding holds, only the signer is not the owner.
  Oid forged = resign(s, 2, "mallory", [](json& p) { p["actor"] = gitlocks::test::actor_hex("mallory"); });
  Run r = verify(s.objects(), forged);
  REQUIRE(r.verdicts.size() == 4);
  CHECK(r.verdicts[0].ok);
  CHECK(r.verdicts[1].ok);
  REQUIRE_FALSE(r.verdicts[2].ok);
  CHECK(r.verdicts[2].reason == "replay-refused");
  CHECK(r.verdicts[2].detail.find("only the store's owner") != std::string::npos);
}

TEST_CASE("replay: a checkpoint changes nothing and must follow the commit it names - another is checkpoint-mismatch") {
  Store s;
  REQUIRE(s.claim("alice", "a", 60'000).ok());
  const Oid first = *s.tip();
  REQUIRE(s.claim("bob", "b", 60'000).ok());
  const Oid second = *s.tip();
  const Oid state = s.state();
  // The owner's checkpoint of the tip: the state stays, every verifier agrees.
  REQUIRE(
      s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(second.hex(), s.snapshot().policy_hash)).ok());
  CHECK(s.state() == state);
  Run honest = verify(s.objects(), *s.tip());
  REQUIRE(honest.verdicts.size() == 4);
  CHECK(honest.summary.invalid == 0);
  CHECK(honest.verdicts[3].action == "checkpoint");
  // The owner's checkpoint naming an earlier commit of this very chain: the
  // same state, a good signature and every binding of the packet hold (the
  // planner cannot see commits), only `prev` is not the parent.
  const Oid third = *s.tip();
  REQUIRE(s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(first.hex(), s.snapshot().policy_hash)).ok());
  const std::string detail = only_invalid(s.objects(), *s.tip(), 4, "checkpoint-mismatch");
  CHECK(detail.find(first.hex()) != std::string::npos);
  CHECK(detail.find(third.hex()) != std::string::npos);
}

TEST_CASE("checkpoint: the planner admits only the owner at the expected policy hash naming a commit id") {
  using gitlocks::Errc;
  Store s;
  REQUIRE(s.claim("alice", "a", 60'000).ok());
  const Oid tip = *s.tip();
  const std::string hash = s.snapshot().policy_hash;
  auto refused = [&](const gitlocks::Result<gitlocks::Candidate>& r, Errc code, const std::string& reason) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == code);
    CHECK(r.error().reason() == reason);
    CHECK(*s.tip() == tip);  // nothing published
  };
  // Another key than the owner's, an admin included.
  refused(s.submit("alice", "checkpoint", gitlocks::ops::admin_checkpoint(tip.hex(), hash)), Errc::not_holder,
          "not-owner");
  // A policy hash other than the one in force.
  refused(s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(tip.hex(), std::string(64, 'a'))),
          Errc::stale_generation, "policy-changed");
  // prev not a commit id: 39 or 41 digits, upper case, absent, a number.
  for (const json& prev : {json(tip.hex().substr(1)), json(tip.hex() + "0"), json(std::string(40, 'A')), json(7)}) {
    json body = gitlocks::ops::admin_checkpoint(tip.hex(), hash);
    body["admin"]["prev"] = prev;
    auto r = s.submit("owner", "checkpoint", body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_json);
    CHECK(*s.tip() == tip);
  }
  json missing = gitlocks::ops::admin_checkpoint(tip.hex(), hash);
  missing["admin"].erase("prev");
  CHECK_FALSE(s.submit("owner", "checkpoint", missing).ok());
  // A field the op does not name.
  json extra = gitlocks::ops::admin_checkpoint(tip.hex(), hash);
  extra["admin"]["state"] = s.state().hex();
  auto r = s.submit("owner", "checkpoint", extra);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("state") != std::string::npos);
  CHECK(*s.tip() == tip);
  // The owner, at the hash in force, naming the tip.
  auto ok = s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(tip.hex(), hash));
  REQUIRE_MESSAGE(ok.ok(), gitlocks::test::why(ok));
  CHECK(*s.tip() != tip);
}

TEST_CASE("replay: a checkpoint signed by anyone but the owner is refused on replay") {
  Store s;
  REQUIRE(s.claim("alice", "a", 60'000).ok());
  REQUIRE(
      s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(s.tip()->hex(), s.snapshot().policy_hash)).ok());
  all_valid(s.objects(), *s.tip());
  // The same transition signed by alice, as its actor, on the same parent:
  // only the signer differs.
  auto tc = gitlocks::read_transition_commit(s.objects(), *s.tip()).value();
  json packet = json::parse(tc.packet_stored)["packet"];
  packet["actor"] = gitlocks::test::actor_hex("alice");
  auto stored = gitlocks::seal_packet(packet, gitlocks::test::actor_key("alice")).value();
  Oid forged =
      gitlocks::write_transition_commit(s.objects(), tc.parents.front(), tc.state, stored, "x\n", tc.time_seconds)
          .value();
  CHECK(only_invalid(s.objects(), forged, 2, "replay-refused").find("only the store's owner") != std::string::npos);
}

TEST_CASE("replay: a force-release signed by a key that is not an admin is refused on replay") {
  Store s(json{{"admins", {gitlocks::test::actor_hex("alice")}}});
  REQUIRE(s.claim("bob", "a", 60'000).ok());
  const std::string id = s.lease_of("bob", "path:a")["id"].get<std::string>();
  REQUIRE(s.op("alice", gitlocks::ops::force_release("a", id, "stuck")).ok());
  all_valid(s.objects(), *s.tip());
  // The same transition signed by carol, as its actor: only the signer differs.
  Oid forged = resign(s, 2, "carol", [](json& p) { p["actor"] = gitlocks::test::actor_hex("carol"); });
  CHECK(only_invalid(s.objects(), forged, 2, "replay-refused").find("only the owner or an admin") != std::string::npos);
}

TEST_CASE("replay: an expected owner other than the store's is owner-mismatch at the root") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  auto run = [&](const gitlocks::ReplayOptions& o) {
    std::vector<gitlocks::Verdict> vs;
    auto sum = gitlocks::replay_chain(s.objects(), *s.tip(), o, [&](const gitlocks::Verdict& v) { vs.push_back(v); });
    REQUIRE_MESSAGE(sum.ok(), gitlocks::test::why(sum));
    REQUIRE(vs.size() == 2);
    return vs;
  };
  gitlocks::ReplayOptions right;
  right.expected_owner = gitlocks::test::actor_hex("owner");
  for (const auto& v : run(right)) CHECK_MESSAGE(v.ok, v.reason);
  gitlocks::ReplayOptions wrong;
  wrong.expected_owner = gitlocks::test::actor_hex("mallory");
  auto vs = run(wrong);
  CHECK_FALSE(vs[0].ok);
  CHECK(vs[0].reason == "owner-mismatch");
  CHECK(vs[0].detail == "the store's owner is " + gitlocks::test::actor_hex("owner") + ", expected " +
                            gitlocks::test::actor_hex("mallory"));
  CHECK(vs[1].ok);
  // From a trusted commit there is no root to flag: the replay fails.
  wrong.from = *s.tip();
  auto anchored = gitlocks::replay_chain(s.objects(), *s.tip(), wrong, [](const gitlocks::Verdict&) {});
  REQUIRE_FALSE(anchored.ok());
  CHECK(anchored.error().code == gitlocks::Errc::invalid);
}

TEST_CASE("replay: expected notary pins not in force at the tip are pins-mismatch there") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  const gitlocks::Pins want{"locks.example", std::string(64, 'a')};
  gitlocks::ReplayOptions o;
  o.expected_pins = want;
  std::vector<gitlocks::Verdict> vs;
  auto sum = gitlocks::replay_chain(s.objects(), *s.tip(), o, [&](const gitlocks::Verdict& v) { vs.push_back(v); });
  REQUIRE(sum.ok());
  REQUIRE(vs.size() == 2);
  CHECK(vs[0].ok);
  CHECK_FALSE(vs[1].ok);
  CHECK(vs[1].reason == "pins-mismatch");
  CHECK(vs[1].detail == "the expected notary pins (locks.example / " + std::string(64, 'a') +
                            ") are not in force: the store has no guard time");
  CHECK(sum->invalid == 1);
  // With guard time on under other pins: the tip says so.
  gitlocks::test::TestNotary n;
  n.clock = s.now;
  s.admit = n.fn();
  REQUIRE(gitlocks::test::enable_guard_time(s, "owner", n.pins).ok());
  vs.clear();
  sum = gitlocks::replay_chain(s.objects(), *s.tip(), o, [&](const gitlocks::Verdict& v) { vs.push_back(v); });
  REQUIRE(sum.ok());
  REQUIRE(vs.size() == 3);
  CHECK(vs[2].reason == "pins-mismatch");
  // The pins in force: all valid.
  o.expected_pins = n.pins;
  vs.clear();
  sum = gitlocks::replay_chain(s.objects(), *s.tip(), o, [&](const gitlocks::Verdict& v) { vs.push_back(v); });
  REQUIRE(sum.ok());
  CHECK(sum->invalid == 0);
  // Replayed from the tip itself (nothing after it): the pins are still checked.
  o.from = *s.tip();
  o.expected_pins = want;
  auto anchored = gitlocks::replay_chain(s.objects(), *s.tip(), o, [](const gitlocks::Verdict&) {});
  REQUIRE_FALSE(anchored.ok());
  CHECK(anchored.error().code == gitlocks::Errc::invalid);
  o.expected_pins = n.pins;
  CHECK(gitlocks::replay_chain(s.objects(), *s.tip(), o, [](const gitlocks::Verdict&) {}).ok());
}
