// The typed model (gitlocks/model.hpp) and the op builders (gitlocks/ops.hpp).
#include "gitlocks/model.hpp"

#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/ops.hpp"

using gitlocks::json;
using gitlocks::Lease;
using gitlocks::RecordKind;
using gitlocks::Resource;

TEST_CASE("model: a resource key round-trips and unknown kinds are refused") {
  for (const char* key : {"path:src/a.c", "sem:ci", "family:db", "path:dir/with:colon"}) {
    auto r = Resource::parse(key);
    REQUIRE(r);
    CHECK(r->key() == key);
  }
  CHECK(Resource::parse("path:x")->kind == RecordKind::path);
  CHECK(Resource::parse("sem:x")->name == "x");
  CHECK_FALSE(Resource::parse("lock:x"));
  CHECK_FALSE(Resource::parse("no-colon"));
  CHECK_FALSE(gitlocks::parse_record_kind("Path"));
}

TEST_CASE("model: liveness is inclusive of expires_at and ends one millisecond after") {
  CHECK(gitlocks::live_until(1000, 999));
  CHECK(gitlocks::live_until(1000, 1000));
  CHECK_FALSE(gitlocks::live_until(1000, 1001));
}

TEST_CASE("model: leases of a record written by the planner read back typed") {
  gitlocks::test::Store s;
  REQUIRE(s.op("alice", gitlocks::ops::claim("src/", gitlocks::ops::Mode::shared, s.now + 60'000, "refactor")).ok());
  REQUIRE(s.op("bob", gitlocks::ops::sem_acquire("ci", 2, s.now + 30'000)).ok());
  auto path = s.record("path:src");
  REQUIRE(path);
  CHECK(Resource::of(*path) == Resource{RecordKind::path, "src"});
  auto leases = gitlocks::leases_of(*path);
  REQUIRE(leases.size() == 1);
  const Lease& l = leases[0];
  CHECK(l.holder == gitlocks::test::actor_hex("alice"));
  CHECK(l.mode == "shared");
  CHECK_FALSE(l.exclusive());
  CHECK(l.path == "src/");
  CHECK(l.generation == 1);
  CHECK(l.expires_at == s.now + 60'000);
  CHECK(l.created_at == s.now);
  REQUIRE(l.note);
  CHECK(*l.note == "refactor");
  CHECK(l.id == (*path)["leases"][0]["id"]);
  auto sem = s.record("sem:ci");
  REQUIRE(sem);
  auto slots = gitlocks::leases_of(*sem);
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].mode.empty());
  CHECK_FALSE(slots[0].note);
  CHECK(Resource::of(*sem).key() == "sem:ci");
}

TEST_CASE("ops: builders write the fields the planner reads") {
  namespace ops = gitlocks::ops;
  CHECK(ops::claim("a", ops::Mode::exclusive, 5) ==
        json{{"op", "claim"}, {"path", "a"}, {"mode", "exclusive"}, {"expires_at", 5}});
  CHECK(ops::sem_acquire("ci", 3, 7, "n") ==
        json{{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 3}, {"expires_at", 7}, {"note", "n"}});
  CHECK(ops::extend(ops::Target::path("a"), "L", 2) ==
        json{{"op", "extend"}, {"path", "a"}, {"lease", "L"}, {"generation", 2}});
  CHECK(ops::release(ops::Target::semaphore("ci"), "L") == json{{"op", "sem-release"}, {"sem", "ci"}, {"lease", "L"}});
  CHECK(ops::release(ops::Target::path("a"), "L") == json{{"op", "release"}, {"path", "a"}, {"lease", "L"}});
  CHECK(ops::sweep({{ops::Target::path("a"), "L", 1, 9}}) ==
        json{{"op", "sweep"}, {"leases", {{{"path", "a"}, {"lease", "L"}, {"generation", 1}, {"expires_at", 9}}}}});
  CHECK(ops::admin_rekey("h") == json{{"admin", {{"op", "rekey"}, {"expected_policy_hash", "h"}}}});
}
