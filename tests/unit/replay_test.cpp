// Replay verification on in-memory histories, untouched and tampered.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/packet.hpp"
#include "gitlocks/replay.hpp"
#include "timeline.h"

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
  REQUIRE_MESSAGE(s.ok(), s.error().message);
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
  std::vector<Oid> chain;
  for (auto cur = s.tip(); cur;) {
    chain.insert(chain.begin(), *cur);
    auto c = store.read_commit(*cur).value();
    if (c.parents.empty()) break;
    cur = c.parents.front();
  }
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

TEST_CASE("replay: an untouched history verifies, with one verdict per commit") {
  Store s = history();
  Run r = verify(s.objects(), *s.tip());
  CHECK(r.summary.commits == 8);
  CHECK(r.summary.invalid == 0);
  for (const auto& v : r.verdicts) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(r.verdicts[4].action == "reclaim");
}

TEST_CASE("replay: a rewritten but identical history still verifies (the rewriter is faithful)") {
  Store s = history();
  Oid tip = rewrite(s, [](gitlocks::TransitionCommit&) {}, 3);
  CHECK(verify(s.objects(), tip).summary.invalid == 0);
}

TEST_CASE("replay: one changed byte in a record is flagged at that commit") {
  Store s = history();
  Oid tip = rewrite(s, [&](gitlocks::TransitionCommit& tc) {
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
  }, 2);
  Run r = verify(s.objects(), tip);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == r.verdicts[2].commit);
  CHECK(r.first_bad()->reason == "state-mismatch");
}

TEST_CASE("replay: a packet re-signed by another key is not the owner's creation / breaks bindings") {
  Store s = history();
  Oid tip = rewrite(s, [&](gitlocks::TransitionCommit& tc) {
    json doc = json::parse(tc.packet_stored);
    doc["packet"]["actor"] = gitlocks::test::actor_hex("mallory");
    tc.packet_stored = gitlocks::seal_packet(doc["packet"], gitlocks::test::actor_key("mallory")).value();
  }, 1);
  Run r = verify(s.objects(), tip);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == r.verdicts[1].commit);
  // The body was planned for alice: her lease would now belong to mallory.
  CHECK(r.first_bad()->reason == "result-mismatch");
}

TEST_CASE("replay: a changed generation in the body is flagged") {
  Store s = history();
  Oid tip = rewrite(s, [&](gitlocks::TransitionCommit& tc) {
    json doc = json::parse(tc.packet_stored);
    REQUIRE(doc["packet"]["action"] == "reclaim");
    doc["packet"]["body"]["ops"][0]["reclaims"][0]["generation"] = 5;
    tc.packet_stored = gitlocks::seal_packet(doc["packet"], gitlocks::test::actor_key("bob")).value();
  }, 4);
  Run r = verify(s.objects(), tip);
  REQUIRE(r.first_bad());
  CHECK(r.first_bad()->commit == r.verdicts[4].commit);
  CHECK(r.first_bad()->reason == "replay-refused");
}

TEST_CASE("replay: swapped packets, a stray file and an unsigned edit are each flagged") {
  Store s = history();
  std::string packet3 = gitlocks::read_transition_commit(s.objects(), [&] {
    std::vector<Oid> chain;
    for (auto cur = s.tip(); cur;) {
      chain.insert(chain.begin(), *cur);
      auto c = s.objects().read_commit(*cur).value();
      if (c.parents.empty()) break;
      cur = c.parents.front();
    }
    return chain[3];
  }()).value().packet_stored;
  Oid swapped = rewrite(s, [&](gitlocks::TransitionCommit& tc) { tc.packet_stored = packet3; }, 2);
  Run r1 = verify(s.objects(), swapped);
  REQUIRE(r1.first_bad());
  CHECK(r1.first_bad()->commit == r1.verdicts[2].commit);
  CHECK(r1.first_bad()->reason == "source-mismatch");

  Oid stray = rewrite(s, [&](gitlocks::TransitionCommit& tc) { tc.unexpected.push_back("notes.txt"); }, 5);
  Run r2 = verify(s.objects(), stray);
  REQUIRE(r2.first_bad());
  CHECK(r2.first_bad()->commit == r2.verdicts[5].commit);
  CHECK(r2.first_bad()->reason == "unexpected-entry");

  Oid unsigned_edit = rewrite(s, [&](gitlocks::TransitionCommit& tc) {
    json doc = json::parse(tc.packet_stored);
    doc["packet"]["claimed_at_ms"] = doc["packet"]["claimed_at_ms"].get<std::int64_t>() + 1;
    tc.packet_stored = doc.dump();
  }, 6);
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
