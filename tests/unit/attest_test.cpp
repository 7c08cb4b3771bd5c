// Trusted admission time in the core: activation, attested transitions and
// their verification, with an in-process notary whose clock the test sets.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/attest.hpp"
#include "gitlocks/replay.hpp"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::Store;

namespace {

struct Notary {
  gitlocks::KeyPair key = gitlocks::test::actor_key("notary-service");
  gitlocks::Pins pins{"locks.example", gitlocks::to_hex(key.public_key)};
  std::int64_t clock = 0;
  bool test_clock = false;
  std::vector<std::string> seen;  // requests, to check what the notary learns

  gitlocks::AdmitFn fn() {
    return [this](const std::string& stored) -> gitlocks::Result<std::string> {
      seen.push_back(stored);
      auto req = gitlocks::open_admission_request(stored);
      if (!req.ok()) return req.error();
      const json& iv = (*req)["interval"];
      if (clock < iv[0].get<std::int64_t>() || clock > iv[1].get<std::int64_t>())
        return gitlocks::make_error(Errc::guard_window, "T outside the interval");
      return gitlocks::make_attestation(*req, pins, clock, test_clock, key);
    };
  }
};

gitlocks::Result<gitlocks::Candidate> enable(Store& s, const std::string& who, const gitlocks::Pins& pins,
                                             std::string expected = "") {
  if (expected.empty()) expected = s.snapshot().policy_hash;
  return s.submit(who, "guard-time", json{{"admin", {{"op", "guard-time-enable"},
                                                      {"audience", pins.audience},
                                                      {"service_key", pins.service_key},
                                                      {"disclosure", "GUARD_WINDOW"},
                                                      {"expected_policy_hash", expected}}}});
}

std::vector<gitlocks::Verdict> verify(Store& s, const Oid& tip, gitlocks::ReplayOptions opt = {}) {
  std::vector<gitlocks::Verdict> out;
  auto r = gitlocks::replay_chain(s.objects(), tip, opt, [&](const gitlocks::Verdict& v) { out.push_back(v); });
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return out;
}

const gitlocks::Verdict* first_bad(const std::vector<gitlocks::Verdict>& vs) {
  for (const auto& v : vs)
    if (!v.ok) return &v;
  return nullptr;
}

}  // namespace

TEST_CASE("guard time: activation by the owner, then every commit is attested and verifies") {
  Store s;
  Notary n;
  REQUIRE(s.claim("alice", "before", 60'000).ok());  // a local-clock commit
  s.admit = n.fn();
  n.clock = s.now + 5;
  auto en = enable(s, "owner", n.pins);
  REQUIRE_MESSAGE(en.ok(), en.error().message);
  CHECK(en->attestation_stored);
  CHECK_FALSE(en->packet.contains("claimed_at_ms"));
  CHECK(en->admitted_at_ms == s.now + 5);
  CHECK(s.snapshot().guard_time == n.pins);
  n.clock = s.now + 10;
  auto c = s.claim("bob", "after", 60'000);
  REQUIRE(c.ok());
  CHECK(c->admitted_at_ms == s.now + 10);  // the notary's T, not the client's clock
  json l = s.lease_of("bob", "path:after");
  n.clock = s.now + 20;
  REQUIRE(s.op("bob", {{"op", "release"}, {"path", "after"}, {"lease", l["id"]}}).ok());  // time-free, attested too
  auto vs = verify(s, *s.tip());
  for (const auto& v : vs) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(vs.size() == 5);
  CHECK(vs[3].time == s.now + 10);
  // The notary saw bindings, digest and interval: never the body.
  for (const auto& r : n.seen) {
    CHECK(r.find("expires_at") == std::string::npos);
    CHECK(r.find("after") == std::string::npos);
  }
}

TEST_CASE("guard time: activation preconditions") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  CHECK(enable(s, "alice", n.pins).error().code == Errc::not_holder);            // not the owner
  CHECK(enable(s, "owner", n.pins, std::string(64, '0')).error().code == Errc::stale_generation);  // CAS
  json bad = {{"admin", {{"op", "guard-time-enable"}, {"audience", "a"}, {"service_key", n.pins.service_key},
                         {"disclosure", "NONE"}, {"expected_policy_hash", s.snapshot().policy_hash}}}};
  CHECK(s.submit("owner", "guard-time", bad).error().code == Errc::usage);       // no consent
  REQUIRE(enable(s, "owner", n.pins).ok());
  auto again = enable(s, "owner", n.pins);
  CHECK(again.error().code == Errc::usage);
  CHECK(again.error().message.rfind("ALREADY_ENABLED", 0) == 0);
  Notary other;
  other.key = gitlocks::test::actor_key("other-notary");
  other.pins = {"locks.example", gitlocks::to_hex(other.key.public_key)};
  CHECK(enable(s, "owner", other.pins).error().message.find("not supported") != std::string::npos);
}

TEST_CASE("guard time: no client clock fallback, the notary's T must lie in the interval") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  s.admit = nullptr;
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::usage);
  s.admit = n.fn();
  // TTL 60 s: interval [e - 3600000, e - 1000]. T = e - 1000 inclusive is admitted; e - 999 is not.
  const std::int64_t e = s.now + 60'000;
  n.clock = e - 999;
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::guard_window);
  n.clock = e - 1000;
  CHECK(s.claim("alice", "x", 60'000).ok());
}

TEST_CASE("guard time: a notary that signs a substituted or out-of-window attestation is rejected by the client") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  // A liar: signs T outside the interval.
  s.admit = [&](const std::string& stored) -> gitlocks::Result<std::string> {
    auto req = gitlocks::open_admission_request(stored);
    return gitlocks::make_attestation(*req, n.pins, 1, false, n.key);
  };
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::store_write);
  // Another key than the pinned one.
  Notary rogue;
  rogue.key = gitlocks::test::actor_key("rogue");
  rogue.pins = {n.pins.audience, gitlocks::to_hex(rogue.key.public_key)};
  rogue.clock = s.now;
  s.admit = rogue.fn();
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::store_write);
  // Another audience.
  Notary wrong_aud = n;
  wrong_aud.pins.audience = "elsewhere";
  s.admit = wrong_aud.fn();
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::store_write);
}

TEST_CASE("guard time: replay flags attestations from another commit, a test clock, decreasing T") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  n.clock = s.now + 10;
  auto c1 = s.claim("alice", "a", 60'000);
  REQUIRE(c1.ok());
  n.clock = s.now + 20;
  auto c2 = s.claim("bob", "b", 60'000);
  REQUIRE(c2.ok());
  auto& store = s.objects();
  // Substitute c1's attestation into c2's commit.
  auto tc2 = gitlocks::read_transition_commit(store, c2->commit).value();
  Oid forged = gitlocks::write_transition_commit(store, tc2.parents[0], tc2.state, tc2.packet_stored, "x\n", 0,
                                                 c1->attestation_stored).value();
  auto v1 = verify(s, forged);
  REQUIRE(first_bad(v1));
  CHECK(first_bad(v1)->commit == forged);
  CHECK(first_bad(v1)->reason == "attestation-mismatch");
  CHECK(first_bad(v1)->detail.find("binding:") != std::string::npos);
  // Drop the attestation altogether.
  Oid bare = gitlocks::write_transition_commit(store, tc2.parents[0], tc2.state, tc2.packet_stored, "x\n", 0).value();
  CHECK(first_bad(verify(s, bare))->reason == "missing-attestation");
  // Pins other than the expected ones.
  gitlocks::ReplayOptions expect_other;
  expect_other.expected_pins = gitlocks::Pins{"someone-else", n.pins.service_key};
  CHECK(first_bad(verify(s, *s.tip(), expect_other))->reason == "pins-mismatch");
  // A test clock is refused unless allowed.
  Store t;
  Notary tn;
  tn.test_clock = true;
  t.admit = tn.fn();
  tn.clock = t.now;
  REQUIRE(enable(t, "owner", tn.pins).ok());
  CHECK(first_bad(verify(t, *t.tip()))->reason == "attestation-mismatch");
  gitlocks::ReplayOptions allow;
  allow.allow_test_clock = true;
  CHECK_FALSE(first_bad(verify(t, *t.tip(), allow)));
}

TEST_CASE("guard time: a store requiring an unknown profile is refused, never ignored") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  gitlocks::StateReader reader(s.objects(), s.state());
  json pol = reader.policy().value();
  pol["guard_time"]["profiles"].push_back("time-mul-guard-window-v9");
  auto parsed = gitlocks::parse_policy(pol);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().code == Errc::unknown_format);
}
