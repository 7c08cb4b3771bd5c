// A hand-off (docs/FORMAT.md "Hand-off"): one transition ends the actor's
// live lease and gives the resource to another key at the next generation.
// Expected values are written from each case's own steps: the generation
// is the record's last one + 1, the holder the key handed to.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::ops::Target;
using gitlocks::test::actor_hex;
using gitlocks::test::invalid_commits;
using gitlocks::test::Store;

namespace {

// alice holds src/x.c (generation 1).
struct AliceHoldsX {
  Store s;
  std::string lease;
  AliceHoldsX() {
    REQUIRE(s.claim("alice", "src/x.c", 600'000).ok());
    lease = s.lease_of("alice", "path:src/x.c")["id"].get<std::string>();
  }
  gitlocks::Result<gitlocks::Candidate> hand(const std::string& who, const std::string& to,
                                             std::int64_t ttl = 300'000) {
    return s.op(who, gitlocks::ops::handoff(Target::path("src/x.c"), lease, actor_hex(to), to, s.now + ttl));
  }
};

}  // namespace

TEST_CASE("handoff: the receiver holds the path at the next generation in the same transition") {
  AliceHoldsX h;
  auto r = h.hand("alice", "bob");
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  CHECK(std::string(gitlocks::action_name(r->outcome.action)) == "handoff");
  CHECK(h.s.lease_of("alice", "path:src/x.c").is_null());
  const json bob = h.s.lease_of("bob", "path:src/x.c");
  REQUIRE_FALSE(bob.is_null());
  CHECK(bob["generation"] == 2);
  CHECK(bob["name"] == "bob");
  CHECK(bob["mode"] == "exclusive");
  CHECK(bob["expires_at"] == h.s.now + 300'000);
  CHECK(bob["id"] != h.lease);
  // The signed body says what was handed on: the generation and expiry.
  const json& op = r->outcome.body["ops"][0];
  CHECK(op["generation"] == 1);
  CHECK(op["prev_expires_at"] == h.s.now + 600'000);
  // The markers moved with the lease: bob's on src/, none of alice's.
  auto src = h.s.record("path:src");
  REQUIRE(src);
  CHECK((*src)["below"].contains(actor_hex("bob")));
  CHECK_FALSE((*src)["below"].contains(actor_hex("alice")));
  // Bob holds it as if he had claimed it: a third writer is refused, bob
  // renews and releases it, alice cannot.
  auto carol = h.s.claim("carol", "src/x.c", 600'000);
  REQUIRE_FALSE(carol.ok());
  CHECK(carol.error().code == Errc::held_path);
  CHECK(carol.error().fields.at("holder") == actor_hex("bob"));
  const std::string bob_lease = bob["id"].get<std::string>();
  auto alice_release = h.s.op("alice", gitlocks::ops::release(Target::path("src/x.c"), h.lease));
  REQUIRE_FALSE(alice_release.ok());
  CHECK(alice_release.error().code == Errc::not_holder);
  REQUIRE(h.s.op("bob",
                 gitlocks::ops::extend_to(gitlocks::ops::extend(Target::path("src/x.c"), bob_lease), h.s.now + 900'000))
              .ok());
  REQUIRE(h.s.op("bob", gitlocks::ops::release(Target::path("src/x.c"), bob_lease)).ok());
  CHECK(invalid_commits(h.s) == 0);
  // The timeline: alice's lease ended handed to bob; bob's by his release.
  auto t = gitlocks::lease_timeline(h.s.objects(), *h.s.tip(), {});
  REQUIRE(t.ok());
  REQUIRE(t->leases.size() == 2);
  CHECK(t->leases[0].end_kind == std::optional<std::string>("handoff"));
  CHECK(t->leases[0].handed_to == std::optional<std::string>(actor_hex("bob")));
  CHECK(t->leases[0].handed_to_name == std::optional<std::string>("bob"));
  CHECK(t->leases[1].end_kind == std::optional<std::string>("release"));
}

TEST_CASE("handoff: refused for a lease the actor does not hold and nothing moves") {
  AliceHoldsX h;
  const auto tip = h.s.tip();
  auto r = h.hand("carol", "bob");  // carol does not hold it
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::not_holder);
  CHECK(h.s.tip() == tip);
  // Alice names a lease id that is not on the path.
  auto none = h.s.op("alice", gitlocks::ops::handoff(Target::path("src/x.c"), std::string(24, 'b'), actor_hex("bob"),
                                                     "bob", h.s.now + 300'000));
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == Errc::not_holder);
  // A stale generation.
  json stale = gitlocks::ops::handoff(Target::path("src/x.c"), h.lease, actor_hex("bob"), "bob", h.s.now + 300'000);
  stale["generation"] = 0;
  auto st = h.s.op("alice", stale);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == Errc::stale_generation);
  // To oneself.
  auto self = h.hand("alice", "alice");
  REQUIRE_FALSE(self.ok());
  CHECK(self.error().code == Errc::usage);
  CHECK(h.s.tip() == tip);
}

TEST_CASE("handoff: an expired lease cannot be handed on - the TTL bounds hold for the new lease") {
  AliceHoldsX h;
  const auto tip = h.s.tip();
  h.s.now += 600'001;  // one millisecond after alice's expiry
  auto late = h.hand("alice", "bob");
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == Errc::guard_window);
  CHECK(h.s.tip() == tip);
  h.s.now -= 1;  // at the expiry itself it is still alice's
  auto r = h.hand("alice", "bob");
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  // The admission interval: T <= alice's expiry and the TTL bounds of bob's
  // new lease (expiry now + 300000; MIN 1000, MAX 3600000).
  const std::int64_t e = h.s.now + 300'000;
  CHECK(r->outcome.interval.lo == e - 3'600'000);
  CHECK(r->outcome.interval.hi == h.s.now);  // min(alice's expiry = now, e - 1000)
  // A TTL above the store's max is refused.
  AliceHoldsX g;
  auto big = g.hand("alice", "bob", 3'600'001);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == Errc::guard_window);
}

TEST_CASE("handoff: refused when the receiver would conflict - its own lease - the giver's directory") {
  // Bob already holds the path shared with alice: the receiver already holds it.
  Store s;
  REQUIRE(s.claim("alice", "doc/a.md", 600'000, "shared").ok());
  REQUIRE(s.claim("bob", "doc/a.md", 600'000, "shared").ok());
  const std::string a = s.lease_of("alice", "path:doc/a.md")["id"].get<std::string>();
  const auto tip = s.tip();
  auto r = s.op("alice", gitlocks::ops::handoff(Target::path("doc/a.md"), a, actor_hex("bob"), "bob", s.now + 300'000));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::already_held);
  CHECK(r.error().message.find("bob (" + actor_hex("bob").substr(0, 12) + ") already holds") != std::string::npos);
  CHECK(s.tip() == tip);
  // Alice holds src/ and src/x.c: handing on only src/x.c would put bob's
  // lease under alice's exclusive directory.
  Store t;
  REQUIRE(t.claim("alice", "src/", 600'000).ok());
  REQUIRE(t.claim("alice", "src/x.c", 600'000).ok());
  const std::string x = t.lease_of("alice", "path:src/x.c")["id"].get<std::string>();
  auto under =
      t.op("alice", gitlocks::ops::handoff(Target::path("src/x.c"), x, actor_hex("bob"), "bob", t.now + 300'000));
  REQUIRE_FALSE(under.ok());
  CHECK(under.error().code == Errc::held_path);
  CHECK(under.error().fields.at("holder") == actor_hex("alice"));
}

TEST_CASE("handoff: a semaphore slot moves to the receiver - not to one holding a slot already") {
  Store s;
  auto acquire = [&](const std::string& who) {
    return s.op(who, gitlocks::ops::sem_acquire("ci", 2, s.now + 600'000));
  };
  REQUIRE(acquire("alice").ok());
  REQUIRE(acquire("carol").ok());
  const std::string a = s.lease_of("alice", "sem:ci")["id"].get<std::string>();
  auto to_carol =
      s.op("alice", gitlocks::ops::handoff(Target::semaphore("ci"), a, actor_hex("carol"), "carol", s.now + 300'000));
  REQUIRE_FALSE(to_carol.ok());
  CHECK(to_carol.error().code == Errc::already_held);
  auto r = s.op("alice", gitlocks::ops::handoff(Target::semaphore("ci"), a, actor_hex("bob"), "bob", s.now + 300'000));
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  CHECK(s.lease_of("alice", "sem:ci").is_null());
  CHECK(s.lease_of("bob", "sem:ci")["generation"] == 3);  // alice 1, carol 2
  auto rec = s.record("sem:ci");
  REQUIRE(rec);
  CHECK((*rec)["leases"].size() == 2);
  CHECK((*rec)["limit"] == 2);
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("handoff: a receiver that is not a key and an unknown field are refused") {
  AliceHoldsX h;
  json bad = gitlocks::ops::handoff(Target::path("src/x.c"), h.lease, "BOB", "bob", h.s.now + 300'000);
  auto r = h.s.op("alice", bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::usage);
  json extra = gitlocks::ops::handoff(Target::path("src/x.c"), h.lease, actor_hex("bob"), "bob", h.s.now + 300'000);
  extra["mode"] = "shared";
  auto e = h.s.op("alice", extra);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code == Errc::bad_json);
}

TEST_CASE("handoff: a body naming another expiry - a long receiver name - a semaphore declaring reclaims are refused") {
  AliceHoldsX h;
  const auto tip = h.s.tip();
  json moved = gitlocks::ops::handoff(Target::path("src/x.c"), h.lease, actor_hex("bob"), "bob", h.s.now + 300'000);
  moved["prev_expires_at"] = h.s.now + 600'001;  // alice's lease expires at now + 600000
  auto r = h.s.op("alice", moved);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::stale_generation);
  CHECK(r.error().reason() == "expiry-changed");
  auto long_name = h.s.op("alice", gitlocks::ops::handoff(Target::path("src/x.c"), h.lease, actor_hex("bob"),
                                                          std::string(257, 'b'), h.s.now + 300'000));
  REQUIRE_FALSE(long_name.ok());
  CHECK(long_name.error().code == Errc::usage);
  CHECK(h.s.tip() == tip);
  REQUIRE(h.s.op("alice", gitlocks::ops::handoff(Target::path("src/x.c"), h.lease, actor_hex("bob"),
                                                 std::string(256, 'b'), h.s.now + 300'000))
              .ok());  // the bound itself
  Store s;
  REQUIRE(s.op("alice", gitlocks::ops::sem_acquire("ci", 2, s.now + 600'000)).ok());
  const std::string a = s.lease_of("alice", "sem:ci")["id"].get<std::string>();
  json sem = gitlocks::ops::handoff(Target::semaphore("ci"), a, actor_hex("bob"), "bob", s.now + 300'000);
  sem["after"] = s.now;
  auto bad = s.op("alice", sem);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::bad_json);
}
