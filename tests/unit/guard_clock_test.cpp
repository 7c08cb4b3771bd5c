// A writer refuses an attestation signed with a notary's test clock unless the
// host explicitly allows it (the CLI's --allow-test-clock), for the
// activation and for every later transition: the core, not the host, decides.
#include <doctest/doctest.h>

#include <string>

#include "fixture.h"
#include "gitlocks/attest.hpp"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::Store;

namespace {

struct ClockNotary {
  gitlocks::KeyPair key = gitlocks::test::actor_key("clock-notary");
  gitlocks::Pins pins{"locks.clock", gitlocks::to_hex(key.public_key)};
  std::int64_t clock = 0;
  bool test_clock = false;
  int signed_count = 0;

  gitlocks::AdmitFn fn() {
    return [this](const std::string& stored) -> gitlocks::Result<std::string> {
      auto req = gitlocks::open_admission_request(stored);
      if (!req.ok()) return req.error();
      ++signed_count;
      return gitlocks::make_attestation(*req, pins, clock, test_clock, key);
    };
  }
};

gitlocks::Result<gitlocks::Candidate> enable(Store& s, const gitlocks::Pins& pins) {
  return s.submit("owner", "guard-time",
                  json{{"admin",
                        {{"op", "guard-time-enable"},
                         {"audience", pins.audience},
                         {"service_key", pins.service_key},
                         {"disclosure", "GUARD_WINDOW"},
                         {"expected_policy_hash", s.snapshot().policy_hash}}}});
}

}  // namespace

TEST_CASE("guard clock: a test-clock attestation is refused unless allowed") {
  Store s;
  ClockNotary n;
  s.admit = n.fn();
  s.allow_test_clock = false;
  n.clock = s.now;
  n.test_clock = true;
  const auto before = s.tip();
  auto refused = enable(s, n.pins);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::store_write);
  CHECK(refused.error().message.find("test") != std::string::npos);
  CHECK(n.signed_count == 1);  // the notary was asked: the refusal is the writer's check
  CHECK(s.tip() == before);

  // The system clock is accepted without the allowance.
  n.test_clock = false;
  auto enabled = enable(s, n.pins);
  REQUIRE_MESSAGE(enabled.ok(), enabled.error().message);
  CHECK(enabled->admitted_at_ms == s.now);
  REQUIRE(s.claim("alice", "a", 5000).ok());

  // Later transitions too: a test-clock answer is refused, then allowed explicitly.
  n.test_clock = true;
  const auto tip = s.tip();
  auto claim = s.claim("alice", "b", 5000);
  REQUIRE_FALSE(claim.ok());
  CHECK(claim.error().code == Errc::store_write);
  CHECK(s.tip() == tip);
  s.allow_test_clock = true;
  auto allowed = s.claim("alice", "b", 5000);
  REQUIRE_MESSAGE(allowed.ok(), allowed.error().message);
  CHECK(json::parse(*allowed->attestation_stored)["attestation"]["clock"] == "test");
}
