// The owner's change of notary and switch-off of guard time (guard-time-set,
// seed 002: "plan an explicit supported migration before any signer
// change"): planned for the owner only, judged by the time source of its
// result, and replayed by every verifier; older commits keep the pins they
// were attested under.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/vault.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::Pins;
using gitlocks::test::actor_hex;
using gitlocks::test::actor_key;
using gitlocks::test::Store;
using Notary = gitlocks::test::TestNotary;

namespace {

json set_body(Store& s, const std::optional<Pins>& pins, const std::string& disclosure = "GUARD_WINDOW") {
  const json gt = pins ? gitlocks::ops::guard_time_pins(pins->audience, pins->service_key, disclosure) : json(nullptr);
  return gitlocks::ops::admin_guard_time_set(gt, s.snapshot().policy_hash);
}

// `who` points guard time at `pins` (nullopt: turns it off).
gitlocks::Result<gitlocks::Candidate> set_pins(Store& s, const std::string& who, const std::optional<Pins>& pins) {
  return s.submit(who, "guard-time", set_body(s, pins));
}

std::vector<gitlocks::Verdict> verify(Store& s, const Oid& tip, gitlocks::ReplayOptions opt = {}) {
  std::vector<gitlocks::Verdict> out;
  auto r = gitlocks::replay_chain(s.objects(), tip, opt, [&](const gitlocks::Verdict& v) { out.push_back(v); });
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  return out;
}

void all_valid(const std::vector<gitlocks::Verdict>& vs, const std::string& level = "full") {
  for (const auto& v : vs) {
    CHECK_MESSAGE(v.ok, v.commit << ": " << v.reason << ": " << v.detail);
    CHECK(std::string(gitlocks::level_name(v.level)) == level);
  }
}

// Every commit but the last is valid; the last is invalid for `reason`.
// Returns its detail.
std::string only_tip_invalid(const std::vector<gitlocks::Verdict>& vs, const std::string& reason) {
  REQUIRE_FALSE(vs.empty());
  for (std::size_t i = 0; i + 1 < vs.size(); ++i)
    CHECK_MESSAGE(vs[i].ok, i << ": " << vs[i].reason << ": " << vs[i].detail);
  CHECK_FALSE(vs.back().ok);
  CHECK(vs.back().reason == reason);
  return vs.back().detail;
}

// `actor`'s signature on `packet`, by hand: the planner would refuse the
// forgeries below.
std::string sign_as(json packet, const std::string& actor) {
  auto bytes = gitlocks::canon_dump(packet).value();
  auto sig = gitlocks::sign_detached(gitlocks::kPacketDomain, bytes, actor_key(actor));
  return gitlocks::canon_dump(json{{"packet", packet}, {"sig", gitlocks::to_hex(sig)}}).value();
}

// `n`'s genuine attestation at `t` of a packet signed by `actor`.
std::string attest(const Notary& n, const std::string& packet_stored, const std::string& actor, std::int64_t t) {
  json packet = json::parse(packet_stored)["packet"];
  auto req = gitlocks::make_admission_request(packet, packet_stored, actor_key(actor));
  REQUIRE(req.ok());
  auto att = gitlocks::make_attestation(gitlocks::open_admission_request(*req).value(), n.pins, t, false, n.key);
  REQUIRE(att.ok());
  return *att;
}

// The owner's guard-time-set on the current tip, planned and signed but not
// admitted (no notary asked).
gitlocks::Prepared prepare_set(Store& s, const std::optional<Pins>& pins) {
  auto p = gitlocks::prepare_candidate(s.objects(), s.snapshot(), actor_key("owner"), "guard-time",
                                       std::string(64, 'e'), set_body(s, pins), s.now);
  REQUIRE_MESSAGE(p.ok(), gitlocks::test::why(p));
  return *p;
}

// A commit on the tip with the given state, packet and attestation.
Oid commit_on_tip(Store& s, const Oid& state, const std::string& packet_stored,
                  const std::optional<std::string>& attestation) {
  return gitlocks::write_transition_commit(s.objects(), *s.tip(), state, packet_stored, "forged\n", 0, attestation)
      .value();
}

// Two notaries with their own keys and audiences, A in force.
struct Migrating {
  Store s;
  Notary a{"notary-a", "a.example"};
  Notary b{"notary-b", "b.example"};
  std::int64_t a_t = 0;  // the last T notary A attested

  Migrating() {
    REQUIRE(s.claim("alice", "before", 60'000).ok());  // a local-clock commit
    s.admit = a.fn();
    a.clock = s.now + 5;
    REQUIRE(gitlocks::test::enable_guard_time(s, "owner", a.pins).ok());
    a.clock = a_t = s.now + 10;
    REQUIRE(s.claim("alice", "under-a", 60'000).ok());
    b.clock = s.now + 20;
  }
};

}  // namespace

// Which pins a writer's transition is prepared under (the notary it asks, or
// the local clock): those of the policy in its result, as replay judges it.
std::optional<Pins> prepared_pins(Store& s, const json& body) {
  auto p = gitlocks::prepare_candidate(s.objects(), s.snapshot(), actor_key("owner"), "test", std::string(64, 'e'),
                                       body, s.now);
  REQUIRE_MESSAGE(p.ok(), gitlocks::test::why(p));
  return p->pins;
}

TEST_CASE("guard time: a writer's time source is its result's - as replay judges it") {
  Store s;
  const json claim =
      json{{"created_at", s.now},
           {"name", "owner"},
           {"ops", json::array({gitlocks::ops::claim("x", gitlocks::ops::Mode::exclusive, s.now + 60'000)})}};
  CHECK_FALSE(prepared_pins(s, claim).has_value());  // no guard time: the local clock
  Notary a{"notary-a", "a.example"};
  Notary b{"notary-b", "b.example"};
  const json enable = gitlocks::ops::admin_guard_time_enable(a.pins.audience, a.pins.service_key, "GUARD_WINDOW",
                                                             s.snapshot().policy_hash);
  CHECK(prepared_pins(s, enable) == std::optional<Pins>(a.pins));  // the activation is attested by its notary
  s.admit = a.fn();
  a.clock = s.now + 5;
  REQUIRE(gitlocks::test::enable_guard_time(s, "owner", a.pins).ok());
  CHECK(prepared_pins(s, claim) == std::optional<Pins>(a.pins));                // in force
  CHECK(prepared_pins(s, set_body(s, b.pins)) == std::optional<Pins>(b.pins));  // the notary it installs
  CHECK_FALSE(prepared_pins(s, set_body(s, std::nullopt)).has_value());         // turned off: the owner's clock
}

TEST_CASE("guard time migrate: the owner moves to another notary - old commits verify under the old pins") {
  Migrating m;
  auto& s = m.s;
  const std::size_t asked_a = m.a.seen.size();
  // Notary A is gone: only B answers, and B attests the migration itself.
  s.admit = m.b.fn();
  auto mig = set_pins(s, "owner", m.b.pins);
  REQUIRE_MESSAGE(mig.ok(), gitlocks::test::why(mig));
  CHECK(std::string(gitlocks::action_name(mig->outcome.action)) == "guard-time-set");
  CHECK(mig->attestation_stored);
  CHECK(gitlocks::open_attestation(*mig->attestation_stored).value().service_key == m.b.pins.service_key);
  CHECK(mig->admitted_at_ms == s.now + 20);
  CHECK(m.a.seen.size() == asked_a);
  CHECK(s.snapshot().guard_time() == m.b.pins);
  m.b.clock = s.now + 30;
  auto c = s.claim("bob", "under-b", 60'000);
  REQUIRE(c.ok());
  CHECK(c->admitted_at_ms == s.now + 30);
  // Notary A's answers are no longer accepted.
  s.admit = m.a.fn();
  m.a.clock = s.now + 40;
  CHECK(s.claim("bob", "again", 60'000).error().code == Errc::store_write);
  auto vs = verify(s, *s.tip());
  REQUIRE(vs.size() == 6);
  all_valid(vs);
  CHECK(vs[3].time == m.a_t);       // attested by A, under A's pins
  CHECK(vs[4].time == s.now + 20);  // the migration, attested by B
  // Expected pins judge the pins in force: B's; A's attestations are the
  // history's, no longer in force.
  gitlocks::ReplayOptions want_b;
  want_b.expected_pins = m.b.pins;
  all_valid(verify(s, *s.tip(), want_b));
  gitlocks::ReplayOptions want_a;
  want_a.expected_pins = m.a.pins;
  vs = verify(s, *s.tip(), want_a);
  // Expecting A's: only the tip says so (the pins in force there are B's).
  for (std::size_t i = 0; i < 5; ++i) CHECK_MESSAGE(vs[i].ok, i << ": " << vs[i].reason << ": " << vs[i].detail);
  CHECK(vs[5].reason == "pins-mismatch");
}

TEST_CASE("guard time migrate: a migration attested by the old notary is attestation-mismatch") {
  Migrating m;
  auto& s = m.s;
  // The writer refuses A's answer for a transition that installs B.
  s.admit = m.a.fn();
  m.a.clock = s.now + 20;
  auto refused = set_pins(s, "owner", m.b.pins);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::store_write);
  // The same signed packet committed with A's attestation: replay judges it
  // by the result's pins, B's.
  gitlocks::Prepared p = prepare_set(s, m.b.pins);
  CHECK(p.pins == m.b.pins);
  Oid forged =
      commit_on_tip(s, p.outcome.result_state, p.packet_stored, attest(m.a, p.packet_stored, "owner", s.now + 20));
  CHECK(only_tip_invalid(verify(s, forged), "attestation-mismatch") ==
        "audience: attested by audience \"a.example\", pinned \"b.example\"");
  // With B's attestation of that very packet it is valid.
  all_valid(verify(
      s, commit_on_tip(s, p.outcome.result_state, p.packet_stored, attest(m.b, p.packet_stored, "owner", s.now + 20))));
}

TEST_CASE("guard time migrate: only the owner changes the pins - the planner and replay refuse anyone else") {
  Migrating m;
  auto& s = m.s;
  s.admit = m.b.fn();
  for (const std::optional<Pins>& pins : {std::optional<Pins>(m.b.pins), std::optional<Pins>()}) {
    auto r = set_pins(s, "alice", pins);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::not_holder);
    CHECK(r.error().has_reason(gitlocks::reason::not_owner));
  }
  // The owner's migration re-signed by mallory, and attested by B for her:
  // every signature and binding holds, only the signer is not the owner.
  gitlocks::Prepared p = prepare_set(s, m.b.pins);
  json packet = p.packet;
  packet["actor"] = actor_hex("mallory");
  const std::string stored = sign_as(packet, "mallory");
  Oid forged = commit_on_tip(s, p.outcome.result_state, stored, attest(m.b, stored, "mallory", s.now + 20));
  const std::string detail = only_tip_invalid(verify(s, forged), "replay-refused");
  CHECK(detail.rfind("not-holder: only the store's owner", 0) == 0);
}

TEST_CASE("guard time disable: the owner turns guard time off - later commits use the local clock") {
  Migrating m;
  auto& s = m.s;
  s.admit = nullptr;  // no notary at all
  // The owner's clock is behind notary A's last T: the switch-off takes
  // that T, never an earlier one.
  s.now = m.a_t - 500;
  auto off = set_pins(s, "owner", std::nullopt);
  REQUIRE_MESSAGE(off.ok(), gitlocks::test::why(off));
  CHECK_FALSE(off->attestation_stored);
  CHECK(off->packet["claimed_at_ms"] == m.a_t);
  CHECK_FALSE(s.snapshot().guard_time());
  s.now = m.a_t + 1000;
  auto c = s.claim("bob", "local", 60'000);
  REQUIRE_MESSAGE(c.ok(), gitlocks::test::why(c));
  CHECK(c->packet["claimed_at_ms"] == m.a_t + 1000);
  CHECK_FALSE(c->attestation_stored);
  auto vs = verify(s, *s.tip());
  REQUIRE(vs.size() == 6);
  all_valid(vs);
  CHECK(vs[4].time == m.a_t);
  CHECK(vs[5].time == m.a_t + 1000);
  // Guard time can be enabled again, with any notary.
  s.admit = m.b.fn();
  m.b.clock = m.a_t + 2000;
  REQUIRE(gitlocks::test::enable_guard_time(s, "owner", m.b.pins).ok());
  all_valid(verify(s, *s.tip()));
}

TEST_CASE("guard time disable: a switch-off clock reading below the last attested T is time-decreased") {
  Migrating m;
  auto& s = m.s;
  s.now = m.a_t + 100;
  gitlocks::Prepared p = prepare_set(s, std::nullopt);
  CHECK_FALSE(p.pins);
  REQUIRE(p.packet["claimed_at_ms"] == m.a_t + 100);
  // The owner signs a clock reading 1 ms before notary A's last T.
  json packet = p.packet;
  packet["claimed_at_ms"] = m.a_t - 1;
  Oid forged = commit_on_tip(s, p.outcome.result_state, sign_as(packet, "owner"), std::nullopt);
  CHECK(only_tip_invalid(verify(s, forged), "time-decreased") ==
        "T = " + std::to_string(m.a_t - 1) + " is before the previous " + std::to_string(m.a_t));
  // Equal to it is fine.
  packet["claimed_at_ms"] = m.a_t;
  all_valid(verify(s, commit_on_tip(s, p.outcome.result_state, sign_as(packet, "owner"), std::nullopt)));
  // A switch-off that still carries an attestation has no time source for it.
  Oid attested =
      commit_on_tip(s, p.outcome.result_state, p.packet_stored, attest(m.a, p.packet_stored, "owner", m.a_t + 100));
  CHECK(only_tip_invalid(verify(s, attested), "unexpected-entry") ==
        "an attestation on a commit made without guard time");
}

TEST_CASE("guard time migrate: planner refusals") {
  Store s;
  Notary a{"notary-a", "a.example"};
  Notary b{"notary-b", "b.example"};
  s.admit = a.fn();
  a.clock = s.now;
  auto not_enabled = set_pins(s, "owner", b.pins);
  CHECK(not_enabled.error().code == Errc::usage);
  CHECK(not_enabled.error().message == "guard time is not enabled: turn it on with `git-locks guard-time enable`");
  CHECK(set_pins(s, "owner", std::nullopt).error().code == Errc::usage);
  REQUIRE(gitlocks::test::enable_guard_time(s, "owner", a.pins).ok());
  // Enabling other pins names the transition that replaces them.
  auto enable_other = gitlocks::test::enable_guard_time(s, "owner", b.pins);
  CHECK(enable_other.error().code == Errc::usage);
  CHECK(enable_other.error().message.find("git-locks guard-time migrate") != std::string::npos);
  auto same = set_pins(s, "owner", a.pins);
  CHECK(same.error().code == Errc::usage);
  CHECK(same.error().message == "guard time already uses these pins: nothing to change");
  s.admit = b.fn();
  b.clock = s.now;
  auto no_consent = s.submit("owner", "guard-time", set_body(s, b.pins, "NONE"));
  CHECK(no_consent.error().code == Errc::usage);
  CHECK(no_consent.error().message == "guard time needs explicit consent: --disclosure GUARD_WINDOW");
  auto stale = s.submit(
      "owner", "guard-time",
      gitlocks::ops::admin_guard_time_set(
          gitlocks::ops::guard_time_pins(b.pins.audience, b.pins.service_key, "GUARD_WINDOW"), std::string(64, '0')));
  CHECK(stale.error().code == Errc::stale_generation);
  CHECK(stale.error().has_reason(gitlocks::reason::policy_changed));
  json missing = set_body(s, b.pins);
  missing["admin"].erase("guard_time");
  auto no_pins = s.submit("owner", "guard-time", missing);
  CHECK(no_pins.error().code == Errc::bad_json);
  CHECK(no_pins.error().message == "guard-time-set needs 'guard_time': the new pins, or null to turn it off");
  json extra = set_body(s, b.pins);
  extra["admin"]["guard_time"]["scope"] = "ALL_COMMITS";
  CHECK(s.submit("owner", "guard-time", extra).error().code == Errc::bad_json);
  json bad_key = set_body(s, Pins{b.pins.audience, "xyz"});
  CHECK_FALSE(s.submit("owner", "guard-time", bad_key).ok());
  CHECK(set_pins(s, "owner", Pins{"", b.pins.service_key}).error().code == Errc::usage);
  // Nothing of that was published.
  CHECK(s.snapshot().guard_time() == a.pins);
  REQUIRE(set_pins(s, "owner", b.pins).ok());
  all_valid(verify(s, *s.tip()));
}

namespace {

// A PRIVATE store of the owner and member alice, as private_test.cpp builds
// it (epoch keys derived from their number).
gitlocks::EpochKey epoch_key(int n) {
  gitlocks::EpochKey k{};
  auto h = gitlocks::sha256("epoch-key:" + std::to_string(n));
  std::copy(h.begin(), h.end(), k.begin());
  return k;
}

json keyring_for(int epoch, const std::vector<std::string>& members) {
  json ring = json::object();
  for (const auto& m : members)
    ring[actor_hex(m)] =
        gitlocks::seal_epoch_key(epoch_key(epoch), actor_key(m).public_key, gitlocks::sha256("eph:" + m)).value();
  return json{{std::to_string(epoch), ring}};
}

json private_policy() {
  json pol = gitlocks::default_policy(std::string(64, 'b'), actor_hex("owner"));
  pol["format"] = gitlocks::kPrivatePolicyFormat;
  pol["visibility"] = "PRIVATE";
  pol["members"] = json::array({actor_hex("owner"), actor_hex("alice")});
  pol["epoch"] = 1;
  pol["keyring"] = keyring_for(1, {"owner", "alice"});
  pol.erase("families");
  return pol;
}

gitlocks::Vault vault_of(Store& s, const std::string& who) {
  gitlocks::StateReader r(s.objects(), s.state());
  return gitlocks::Vault::open(r.policy().value(), actor_key(who)).value();
}

}  // namespace

TEST_CASE("guard time migrate: a PRIVATE store migrates and turns guard time off - verified at both levels") {
  Store s(json::object(), "owner", private_policy());
  gitlocks::Vault owner_vault = vault_of(s, "owner");
  gitlocks::Vault alice_vault = vault_of(s, "alice");
  Notary a{"notary-a", "a.example"};
  Notary b{"notary-b", "b.example"};
  s.vault = &owner_vault;
  s.admit = a.fn();
  a.clock = s.now;
  REQUIRE(gitlocks::test::enable_guard_time(s, "owner", a.pins).ok());
  s.vault = &alice_vault;
  a.clock = s.now + 10;
  REQUIRE(s.claim("alice", "secret/a", 60'000).ok());
  // A pending keyring transition blocks the change of notary.
  s.vault = &owner_vault;
  a.clock = s.now + 20;
  auto add = s.submit("owner", "member",
                      gitlocks::ops::admin_member(true, actor_hex("bob"), s.snapshot().policy_hash,
                                                  keyring_for(2, {"owner", "alice", "bob"})));
  REQUIRE_MESSAGE(add.ok(), gitlocks::test::why(add));
  s.admit = b.fn();
  b.clock = s.now + 30;
  auto pending = set_pins(s, "owner", b.pins);
  CHECK(pending.error().code == Errc::usage);
  CHECK(pending.error().message.find("a keyring transition is pending") != std::string::npos);
  CHECK(set_pins(s, "owner", std::nullopt).error().code == Errc::usage);
  s.admit = a.fn();
  a.clock = s.now + 30;
  owner_vault = vault_of(s, "owner");
  auto rk = s.submit("owner", "member", gitlocks::ops::admin_rekey(s.snapshot().policy_hash));
  REQUIRE_MESSAGE(rk.ok(), gitlocks::test::why(rk));
  owner_vault = vault_of(s, "owner");
  alice_vault = vault_of(s, "alice");
  // Notary A is gone: the owner moves the store to B, which attests it.
  s.admit = b.fn();
  b.clock = s.now + 40;
  auto mig = set_pins(s, "owner", b.pins);
  REQUIRE_MESSAGE(mig.ok(), gitlocks::test::why(mig));
  CHECK(s.snapshot().guard_time() == b.pins);
  s.vault = &alice_vault;
  b.clock = s.now + 50;
  REQUIRE(s.claim("alice", "secret/b", 60'000).ok());
  // Then guard time off, and a claim on the local clock.
  s.vault = &owner_vault;
  s.admit = nullptr;
  s.now += 60;
  REQUIRE(set_pins(s, "owner", std::nullopt).ok());
  s.vault = &alice_vault;
  s.now += 10;
  REQUIRE(s.claim("alice", "secret/c", 60'000).ok());
  gitlocks::ReplayOptions with_keys;
  with_keys.vault = &owner_vault;
  auto full = verify(s, *s.tip(), with_keys);
  REQUIRE(full.size() == 9);
  all_valid(full, "full");
  auto structural = verify(s, *s.tip());
  for (std::size_t i = 0; i < structural.size(); ++i)
    CHECK_MESSAGE(structural[i].ok, i << ": " << structural[i].reason << ": " << structural[i].detail);
  // The migration re-signed by member alice, attested by B for her: the
  // keyless rule of PRIVATE stores already refuses it.
  Oid migration = mig->commit;
  auto tc = gitlocks::read_transition_commit(s.objects(), migration).value();
  json packet = json::parse(tc.packet_stored)["packet"];
  packet["actor"] = actor_hex("alice");
  const std::string stored = sign_as(packet, "alice");
  Oid forged = gitlocks::write_transition_commit(s.objects(), tc.parents[0], tc.state, stored, "forged\n", 0,
                                                 attest(b, stored, "alice", s.now))
                   .value();
  for (const gitlocks::Vault* keys :
       {static_cast<const gitlocks::Vault*>(&owner_vault), static_cast<const gitlocks::Vault*>(nullptr)}) {
    gitlocks::ReplayOptions o;
    o.vault = keys;
    CHECK(only_tip_invalid(verify(s, forged, o), "not-owner").find("not by the owner") != std::string::npos);
  }
}
