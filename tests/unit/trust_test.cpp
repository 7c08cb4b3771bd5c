// Anchored trust (SPEC §7 "Acting on history"): verified_snapshot replays
// from a trusted anchor or the root with the verifier of `verify`, and hands
// a writer only facts of the verified chain. Forgeries are made in memory on
// top of honest histories.
#include "gitlocks/trust.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixture.h"
#include "gitlocks/attest.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/query.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::TrustOptions;
using gitlocks::test::Store;

namespace {

using gitlocks::test::TestNotary;

// A store under guard time (notary `n`, its clock at s.now) with alice's
// claim of "a" on top; returns that honest tip.
Oid guarded_claim(Store& s, TestNotary& n) {
  n.clock = s.now;
  s.admit = n.fn();
  auto enabled = gitlocks::test::enable_guard_time(s, "owner", n.pins);
  REQUIRE_MESSAGE(enabled.ok(), gitlocks::test::why(enabled));
  REQUIRE(s.claim("alice", "a", 60'000).ok());
  return *s.tip();
}

// bob's claim of "b" on the verified tip, planned, signed and attested by
// `n` but not published: the genuine transition the forgeries edit.
gitlocks::Candidate bobs_claim(Store& s, TestNotary& n) {
  auto snap = gitlocks::verified_snapshot(s.objects(), s.tip(), {});
  REQUIRE(snap.ok());
  json body = {{"created_at", s.now},
               {"name", "bob"},
               {"ops", {{{"op", "claim"}, {"path", "b"}, {"mode", "exclusive"}, {"expires_at", s.now + 60'000}}}}};
  auto cand = gitlocks::build_candidate(s.objects(), snap->snapshot, gitlocks::test::actor_key("bob"), "claim",
                                        std::string(64, '7'), body, s.now, n.fn(), false);
  REQUIRE(cand.ok());
  return *cand;
}

// A commit on top of the tip with `state` and the packet (and attestation)
// copied from commit `packet_from`: what anyone who can write the ref can make.
Oid forge(Store& s, const Oid& state, const Oid& packet_from) {
  auto tc = gitlocks::read_transition_commit(s.objects(), packet_from).value();
  auto c = gitlocks::write_transition_commit(s.objects(), s.tip(), state, tc.packet_stored, "forged\n", 0,
                                             tc.attestation_stored);
  REQUIRE(c.ok());
  REQUIRE(gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, *c).ok());
  return *c;
}

// The state `state` with policy.json replaced by `policy`.
Oid with_policy(Store& s, const Oid& state, const json& policy) {
  auto& o = s.objects();
  auto tree = o.read_tree(state).value();
  auto blob = o.write_blob(gitlocks::canon_dump(policy).value()).value();
  for (auto& e : tree)
    if (e.name == "policy.json") e.oid = blob;
  return o.write_tree(tree).value();
}

// Options with the anchor `t` and every other field at its default.
TrustOptions anchored_at(const gitlocks::TrustState& t) {
  TrustOptions o;
  o.anchor = t;
  return o;
}

gitlocks::Error refused(Store& s, const TrustOptions& o = {}) {
  auto r = gitlocks::verified_snapshot(s.objects(), s.tip(), o);
  REQUIRE_FALSE(r.ok());
  return r.error();
}

void check_invalid(const gitlocks::Error& e, const Oid& commit, const Oid& parent) {
  CHECK(e.code == Errc::invalid_history);
  CHECK(e.fields.at("commit") == commit.hex());
  CHECK(e.fields.at("last_valid") == parent.hex());
  CHECK_FALSE(e.fields.at("verdict").text().empty());
  CHECK(e.message.find(commit.hex()) != std::string::npos);
}

}  // namespace

TEST_CASE("trust: a valid chain gives the trust state of its history - and an anchor replays only what follows") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  s.now += 10;
  REQUIRE(s.claim("bob", "docs/", 60'000).ok());
  auto full = gitlocks::verified_snapshot(s.objects(), s.tip(), {});
  REQUIRE_MESSAGE(full.ok(), gitlocks::test::why(full));
  CHECK(full->replayed == 3);
  CHECK_FALSE(full->anchored);
  REQUIRE(full->trust);
  const auto& t = *full->trust;
  CHECK(t.commit == *s.tip());
  CHECK(t.store_id == std::string(64, 'a'));
  CHECK(t.policy_hash == s.snapshot().policy_hash);
  CHECK(t.last_time == s.now);
  CHECK_FALSE(t.guard_time);
  CHECK(t.epoch == 0);
  CHECK(full->snapshot.state == s.state());
  CHECK(gitlocks::parse_trust_state(gitlocks::trust_state_json(t)) == t);

  // At the anchor itself: nothing to replay.
  auto same = gitlocks::verified_snapshot(s.objects(), s.tip(), anchored_at(t));
  REQUIRE(same.ok());
  CHECK(same->replayed == 0);
  CHECK(same->anchored);

  // Two more commits: only they are replayed; one's own publication follows without replay.
  s.now += 10;
  auto c1 = s.claim("carol", "lib/", 60'000);
  REQUIRE(c1.ok());
  s.now += 10;
  auto c2 = s.claim("dave", "web/", 60'000);
  REQUIRE(c2.ok());
  auto next = gitlocks::verified_snapshot(s.objects(), s.tip(), anchored_at(t));
  REQUIRE(next.ok());
  CHECK(next->anchored);
  CHECK(next->replayed == 2);
  CHECK(next->trust->last_time == s.now);
  CHECK(gitlocks::trust_after(s.objects(), *c2).value() == *next->trust);

  // An anchor that disagrees with its commit is not trusted: replay from the root.
  auto bad = t;
  bad.last_time = gitlocks::kMaxSafeInteger;
  auto fallback = gitlocks::verified_snapshot(s.objects(), s.tip(), anchored_at(bad));
  REQUIRE(fallback.ok());
  CHECK_FALSE(fallback->anchored);
  CHECK(fallback->replayed == 5);
  CHECK(fallback->trust == next->trust);
}

// A Snapshot's pins and key epoch are its tip policy's (Snapshot::guard_time(),
// epoch()), stored nowhere else: a trust state that says otherwise does
// not describe that commit and yields no snapshot, never one with mixed facts.
TEST_CASE("trust: a trust state whose notary pins or key epoch differ from its commit's policy gives no snapshot") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  auto full = gitlocks::verified_snapshot(s.objects(), s.tip(), {});
  REQUIRE(full.ok());
  REQUIRE(full->trust);
  const gitlocks::TrustState t = *full->trust;
  auto at = gitlocks::snapshot_at(s.objects(), t);
  REQUIRE(at.ok());
  CHECK_FALSE(at->guard_time());
  CHECK(at->epoch() == 0);
  CHECK(at->state == s.state());

  auto epoch = t;
  epoch.epoch = 1;
  auto e1 = gitlocks::snapshot_at(s.objects(), epoch);
  REQUIRE_FALSE(e1.ok());
  CHECK(e1.error().code == Errc::store_read);
  CHECK(e1.error().message ==
        "the trusted state of " + t.commit.hex() + " disagrees with its policy (notary pins or key epoch)");

  auto pins = t;
  pins.guard_time = gitlocks::Pins{"notary.example", std::string(64, 'b')};
  auto e2 = gitlocks::snapshot_at(s.objects(), pins);
  REQUIRE_FALSE(e2.ok());
  CHECK(e2.error().code == Errc::store_read);
  CHECK(e2.error().message == e1.error().message);
}

TEST_CASE("trust: an unsigned commit deleting another holder's live lease is invalid history") {
  Store s;
  const Oid root_state = s.state();
  auto claimed = s.claim("alice", "src/a.c", 60'000);
  REQUIRE(claimed.ok());
  const Oid honest = *s.tip();
  // The state without alice's lease, under alice's own (old) packet.
  const Oid forged = forge(s, root_state, honest);
  check_invalid(refused(s), forged, honest);
  // With the anchor at the honest tip too: the forged commit is replayed.
  auto anchor = gitlocks::trust_after(s.objects(), *claimed).value();
  check_invalid(refused(s, anchored_at(anchor)), forged, honest);
  CHECK(*s.tip() == forged);  // verification never moves the ref
}

TEST_CASE("trust: a policy without guard time on a guarded store is invalid history - pins come from the chain") {
  Store s;
  TestNotary n;
  const Oid honest = guarded_claim(s, n);
  json policy = gitlocks::StateReader(s.objects(), s.state()).policy().value();
  REQUIRE(policy.contains("guard_time"));
  policy.erase("guard_time");
  // bob's own claim of b on the honest tip, planned and signed by him, its result without guard time,
  // carrying his clock's reading instead of an attestation: right in every respect but its result.
  auto cand = bobs_claim(s, n);
  auto forge_with = [&](const Oid& state) {
    json packet = cand.packet;
    packet["result"] = state;
    packet["claimed_at_ms"] = cand.admitted_at_ms;
    auto sealed = gitlocks::seal_packet(packet, gitlocks::test::actor_key("bob"));
    REQUIRE(sealed.ok());
    auto c = gitlocks::write_transition_commit(s.objects(), honest, state, *sealed, "claim\n", 0);
    REQUIRE(c.ok());
    REQUIRE(gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, *c).ok());
    return *c;
  };
  const Oid forged = forge_with(with_policy(s, cand.outcome.result_state, policy));
  // Read unverified, the tip says guard time is off: that is what a writer must never act on.
  CHECK_FALSE(gitlocks::detail::read_unverified_snapshot(s.objects(), s.tip()).value().guard_time());
  auto e = refused(s);
  check_invalid(e, forged, honest);
  CHECK(e.fields.at("verdict") == "result-mismatch");
  // The same forgery with the result its body gives is caught by the time source instead: the notary's T is missing.
  forge_with(cand.outcome.result_state);
  CHECK(refused(s).fields.at("verdict") == "time-source-mismatch");
}

TEST_CASE("trust: an attestation with T = 2^53-1 by a key the history never pinned is invalid history") {
  Store s;
  TestNotary n;
  const Oid honest = guarded_claim(s, n);
  // A correctly signed claim of bob's, attested by a notary nobody pinned at the end of time.
  auto cand = bobs_claim(s, n);
  const std::int64_t end_of_time = gitlocks::kMaxSafeInteger;
  TestNotary rogue("rogue", "locks.rogue");
  rogue.clock = end_of_time;
  rogue.check_interval = false;  // it signs whatever it is asked
  auto request = gitlocks::make_admission_request(cand.packet, cand.packet_stored, gitlocks::test::actor_key("bob"));
  REQUIRE(request.ok());
  auto att = rogue.fn()(*request);
  REQUIRE(att.ok());
  auto forged = gitlocks::write_transition_commit(s.objects(), honest, cand.outcome.result_state, cand.packet_stored,
                                                  "forged\n", 0, *att);
  REQUIRE(forged.ok());
  REQUIRE(gitlocks::memory_store_set_ref(s.objects(), gitlocks::kStateRef, *forged).ok());
  // Unverified, it would become the store's last T and block every writer.
  CHECK(gitlocks::detail::read_unverified_snapshot(s.objects(), s.tip()).value().last_time == end_of_time);
  auto e = refused(s);
  check_invalid(e, *forged, honest);
  CHECK(e.fields.at("verdict") == "attestation-mismatch");
}

TEST_CASE("trust: a tip that does not descend from the anchor is a rewrite") {
  Store s;
  auto c = s.claim("alice", "src/a.c", 60'000);
  REQUIRE(c.ok());
  auto anchor = gitlocks::trust_after(s.objects(), *c).value();
  // The same transitions under new commit ids (a faithful rewrite still is one).
  auto& o = s.objects();
  auto root = gitlocks::read_transition_commit(o, o.read_commit(*s.tip()).value().parents.front()).value();
  auto top = gitlocks::read_transition_commit(o, *s.tip()).value();
  auto r1 = gitlocks::write_transition_commit(o, std::nullopt, root.state, root.packet_stored, "re\n", 1, std::nullopt);
  REQUIRE(r1.ok());
  auto r2 = gitlocks::write_transition_commit(o, *r1, top.state, top.packet_stored, "re\n", 1, std::nullopt);
  REQUIRE(r2.ok());
  REQUIRE(gitlocks::memory_store_set_ref(o, gitlocks::kStateRef, *r2).ok());
  REQUIRE(gitlocks::verified_snapshot(o, s.tip(), {}).ok());  // valid on its own
  auto e = refused(s, anchored_at(anchor));
  CHECK(e.code == Errc::invalid_history);
  CHECK(e.fields.at("verdict") == "rewrite");
  CHECK(e.fields.at("commit") == r2->hex());
  CHECK(e.fields.at("last_valid") == anchor.commit.hex());
}

TEST_CASE("trust: a test-clock attestation is accepted only when the caller allows the test clock") {
  Store s;
  TestNotary n;
  n.clock = s.now;
  s.admit = n.fn();
  REQUIRE(gitlocks::test::enable_guard_time(s, "owner", n.pins).ok());
  n.test_clock = true;
  auto claimed = s.claim("alice", "a", 60'000);
  REQUIRE(claimed.ok());
  auto e = refused(s);
  check_invalid(e, claimed->commit, s.objects().read_commit(claimed->commit).value().parents.front());
  TrustOptions allow;
  allow.allow_test_clock = true;
  CHECK(gitlocks::verified_snapshot(s.objects(), s.tip(), allow).ok());
}

// The npm module's readState / readChanges read a commit through its
// verified view (commit_view): a forged commit gives no state to read, and a
// reader walking the history in order re-executes each commit once.
TEST_CASE("trust: a commit's view is that of its verified history - a forged commit gives none") {
  Store s;
  const Oid root = *s.tip();
  const Oid root_state = s.state();
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  const Oid first = *s.tip();
  REQUIRE(s.claim("bob", "docs/b.md", 60'000).ok());
  const Oid honest = *s.tip();
  auto& o = s.objects();
  // In order from the root, each view anchored on the one before.
  gitlocks::CommitViewOptions in_order;
  auto at_root = gitlocks::commit_view(o, root, in_order);
  REQUIRE_MESSAGE(at_root.ok(), gitlocks::test::why(at_root));
  CHECK(at_root->replayed == 1);
  in_order.anchors = {at_root->trust};
  auto at_first = gitlocks::commit_view(o, first, in_order);
  REQUIRE(at_first.ok());
  CHECK(at_first->replayed == 1);
  in_order.anchors = {at_first->trust};
  in_order.with_parent = true;
  auto at_honest = gitlocks::commit_view(o, honest, in_order);
  REQUIRE(at_honest.ok());
  CHECK(at_honest->replayed == 1);  // the parent was the anchor: only bob's claim re-executed
  CHECK(*at_honest->at.commit == honest);
  REQUIRE(at_honest->parent.has_value());
  CHECK(*at_honest->parent->commit == first);
  auto changes = gitlocks::commit_changes(o, *at_honest);
  REQUIRE(changes.ok());
  CHECK(changes->before.empty());  // neither docs/b.md nor docs had a record before bob's claim
  // bob's lease, and the intention marker of its ancestor (docs/FORMAT.md).
  REQUIRE(changes->after.size() == 2);
  CHECK(changes->after[0]["name"] == "docs/b.md");
  CHECK(changes->after[0]["leases"][0]["name"] == "bob");
  CHECK(changes->after[1]["name"] == "docs");
  CHECK(changes->after[1]["leases"].empty());
  // An anchor the commit does not descend from: replayed from the root.
  gitlocks::CommitViewOptions late;
  late.anchors = {at_honest->trust};
  auto back = gitlocks::commit_view(o, first, late);
  REQUIRE(back.ok());
  CHECK(back->replayed == 2);
  CHECK(back->at.state == at_first->at.state);
  // An anchor naming the commit itself: nothing re-executed, whatever came after it.
  gitlocks::CommitViewOptions named;
  named.anchors = {at_first->trust, at_honest->trust};
  named.with_parent = true;
  auto again = gitlocks::commit_view(o, honest, named);
  REQUIRE(again.ok());
  CHECK(again->replayed == 0);
  CHECK(again->parent->state == at_first->at.state);
  // The state without alice's and bob's leases under bob's packet: valid in
  // every respect but its link to the chain.
  const Oid forged = forge(s, root_state, honest);
  for (const auto& anchors : {std::vector<gitlocks::TrustState>(), std::vector{at_honest->trust}}) {
    gitlocks::CommitViewOptions o2;
    o2.anchors = anchors;
    auto refused_view = gitlocks::commit_view(o, forged, o2);
    REQUIRE_FALSE(refused_view.ok());
    check_invalid(refused_view.error(), forged, honest);
    // bob's packet names the state after alice's claim as its source.
    CHECK(refused_view.error().fields.at("verdict") == "source-mismatch");
  }
}

namespace {

// Three claims, the owner's checkpoint of the tip, two more claims.
struct CheckpointedHistory {
  Store s;
  Oid checkpoint;
  CheckpointedHistory() {
    REQUIRE(s.claim("alice", "a", 60'000).ok());
    REQUIRE(s.claim("bob", "b", 60'000).ok());
    REQUIRE(s.claim("carol", "c", 60'000).ok());
    auto cp =
        s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(s.tip()->hex(), s.snapshot().policy_hash));
    REQUIRE_MESSAGE(cp.ok(), gitlocks::test::why(cp));
    checkpoint = cp->commit;
    REQUIRE(s.claim("dave", "d", 60'000).ok());
    REQUIRE(s.claim("erin", "e", 60'000).ok());
  }
};

TrustOptions fresh_start(std::optional<std::string> owner = std::nullopt) {
  TrustOptions o;
  o.start_at_checkpoint = true;
  o.expected_owner = std::move(owner);
  return o;
}

}  // namespace

TEST_CASE("trust: a fresh start begins at the newest checkpoint - only what follows it is replayed") {
  CheckpointedHistory h;
  // From the root: creation, 3 claims, the checkpoint, 2 claims.
  auto full = gitlocks::verified_snapshot(h.s.objects(), h.s.tip(), {});
  REQUIRE_MESSAGE(full.ok(), gitlocks::test::why(full));
  CHECK(full->replayed == 7);
  CHECK_FALSE(full->from_checkpoint);
  // From the checkpoint: the 2 claims after it (the checkpoint itself was
  // re-executed from its parent to be started at).
  auto fresh = gitlocks::verified_snapshot(h.s.objects(), h.s.tip(), fresh_start());
  REQUIRE_MESSAGE(fresh.ok(), gitlocks::test::why(fresh));
  CHECK(fresh->replayed == 2);
  CHECK(fresh->from_checkpoint);
  CHECK(fresh->anchored);
  // The same trust state and snapshot as the replay from the root.
  REQUIRE(fresh->trust);
  CHECK(*fresh->trust == *full->trust);
  CHECK(fresh->snapshot.state == full->snapshot.state);
  // The checkpoint as the start: its trust state is the one the root replay
  // reaches at that commit.
  auto at = gitlocks::checkpoint_anchor(h.s.objects(), *h.s.tip(), {}, "");
  REQUIRE(at.ok());
  REQUIRE(*at);
  CHECK((*at)->commit == h.checkpoint);
  auto upto = gitlocks::verified_snapshot(h.s.objects(), h.checkpoint, {});
  REQUIRE(upto.ok());
  CHECK(**at == *upto->trust);
  // Out of reach (within 2 commits of the tip): none, so the root.
  auto none = gitlocks::checkpoint_anchor(h.s.objects(), *h.s.tip(), {}, "", 2);
  REQUIRE(none.ok());
  CHECK_FALSE(*none);
  CHECK(gitlocks::checkpoint_anchor(h.s.objects(), *h.s.tip(), {}, "", 3).value());
}

TEST_CASE("trust: a pinned owner starts only at that owner's checkpoint - another owner's store is refused") {
  CheckpointedHistory h;
  auto owners = gitlocks::verified_snapshot(h.s.objects(), h.s.tip(), fresh_start(gitlocks::test::actor_hex("owner")));
  REQUIRE_MESSAGE(owners.ok(), gitlocks::test::why(owners));
  CHECK(owners->from_checkpoint);
  CHECK(owners->replayed == 2);
  // Pinned to alice: the checkpoint is not hers, and neither is the store.
  gitlocks::ReplayOptions alices_store;
  alices_store.expected_owner = gitlocks::test::actor_hex("alice");
  CHECK_FALSE(gitlocks::checkpoint_anchor(h.s.objects(), *h.s.tip(), alices_store, "").value());
  auto alices = gitlocks::verified_snapshot(h.s.objects(), h.s.tip(), fresh_start(gitlocks::test::actor_hex("alice")));
  REQUIRE_FALSE(alices.ok());
  CHECK(alices.error().code == Errc::invalid_history);
  CHECK(alices.error().fields.at("verdict").text() == "owner-mismatch");
}

TEST_CASE(
    "trust: a history rewritten below a checkpoint breaks it - the fresh start replays from the root and refuses") {
  CheckpointedHistory h;
  // Every commit written again with another message: the same transitions,
  // each valid (verifiers ignore messages), but new commit ids, so the
  // checkpoint names a commit that is no longer its parent.
  auto& store = h.s.objects();
  const std::vector<Oid> chain = gitlocks::test::chain_of(store, *h.s.tip());
  std::optional<Oid> parent;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    auto tc = gitlocks::read_transition_commit(store, chain[i]).value();
    std::string message = store.read_commit(chain[i]).value().message;
    if (chain[i] != h.checkpoint) message += "rewritten\n";  // the checkpoint keeps its own
    parent = gitlocks::write_transition_commit(store, parent, tc.state, tc.packet_stored, message, tc.time_seconds,
                                               tc.attestation_stored)
                 .value();
  }
  REQUIRE(gitlocks::memory_store_set_ref(store, gitlocks::kStateRef, *parent).ok());
  // The rewritten checkpoint is still found by its message, and refused.
  auto rewritten = gitlocks::read_transition_commit(store, *parent).value().parents.front();
  rewritten = store.read_commit(rewritten).value().parents.front();
  CHECK(store.read_commit(rewritten).value().message.rfind("git-locks: checkpoint", 0) == 0);
  CHECK_FALSE(gitlocks::checkpoint_anchor(store, *parent, {}, "").value());
  auto fresh = gitlocks::verified_snapshot(store, *parent, fresh_start());
  REQUIRE_FALSE(fresh.ok());
  CHECK(fresh.error().code == Errc::invalid_history);
  CHECK(fresh.error().fields.at("verdict").text() == "checkpoint-mismatch");
}

TEST_CASE("trust: a commit whose message says checkpoint is not started at unless its verified action is one") {
  CheckpointedHistory h;
  // erin's claim (the tip) written again with a checkpoint's message: a valid
  // commit (verifiers ignore messages), and the newest hinted one.
  auto& store = h.s.objects();
  auto tc = gitlocks::read_transition_commit(store, *h.s.tip()).value();
  Oid lying = gitlocks::write_transition_commit(store, tc.parents.front(), tc.state, tc.packet_stored,
                                                "git-locks: checkpoint\n", tc.time_seconds, tc.attestation_stored)
                  .value();
  REQUIRE(gitlocks::memory_store_set_ref(store, gitlocks::kStateRef, lying).ok());
  CHECK_FALSE(gitlocks::checkpoint_anchor(store, lying, {}, "").value());
  auto fresh = gitlocks::verified_snapshot(store, lying, fresh_start());
  REQUIRE_MESSAGE(fresh.ok(), gitlocks::test::why(fresh));
  CHECK_FALSE(fresh->from_checkpoint);
  CHECK(fresh->replayed == 7);
}
