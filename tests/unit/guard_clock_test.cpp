// A writer refuses an attestation signed with a notary's test clock unless the
// host explicitly allows it (the CLI's --allow-test-clock), for the
// activation and for every later transition: the core, not the host, decides.
#include <doctest/doctest.h>

#include <string>

#include "fixture.h"
#include "gitlocks/attest.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::Store;

namespace {

// The notary signs whatever it is asked: the checks under test are the writer's.
gitlocks::test::TestNotary clock_notary() {
  gitlocks::test::TestNotary n("clock-notary", "locks.clock");
  n.check_interval = false;
  return n;
}

gitlocks::Result<gitlocks::Candidate> enable(Store& s, const gitlocks::Pins& pins) {
  return gitlocks::test::enable_guard_time(s, "owner", pins);
}

}  // namespace

TEST_CASE("guard clock: a test-clock attestation is refused unless allowed") {
  Store s;
  auto n = clock_notary();
  s.admit = n.fn();
  s.allow_test_clock = false;
  n.clock = s.now;
  n.test_clock = true;
  const auto before = s.tip();
  auto refused = enable(s, n.pins);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::store_write);
  CHECK(refused.error().message.find("test") != std::string::npos);
  CHECK(n.seen.size() == 1);  // the notary was asked: the refusal is the writer's check
  CHECK(s.tip() == before);

  // The system clock is accepted without the allowance.
  n.test_clock = false;
  auto enabled = enable(s, n.pins);
  REQUIRE_MESSAGE(enabled.ok(), gitlocks::test::why(enabled));
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
  REQUIRE_MESSAGE(allowed.ok(), gitlocks::test::why(allowed));
  CHECK(json::parse(*allowed->attestation_stored)["attestation"]["clock"] == "test");
}
