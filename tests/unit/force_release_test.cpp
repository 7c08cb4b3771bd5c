// An admin's force-release (docs/FORMAT.md "force-release"): who may, what
// the record keeps, what the holder is told next, and what status and the
// timeline show. Expected values are written from each case's own steps.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::actor_hex;
using gitlocks::test::invalid_commits;
using gitlocks::test::Store;

namespace {

// A store whose policy names alice an admin; bob holds src/x.c.
struct BobHoldsX {
  Store s{json{{"admins", {actor_hex("alice")}}}};
  std::string lease;
  BobHoldsX() {
    REQUIRE(s.claim("bob", "src/x.c", 600'000).ok());
    lease = s.lease_of("bob", "path:src/x.c")["id"].get<std::string>();
  }
  gitlocks::Result<gitlocks::Candidate> force(const std::string& who, const std::string& why = "stuck for a day") {
    return s.op(who, gitlocks::ops::force_release("src/x.c", lease, why));
  }
};

}  // namespace

TEST_CASE("force-release: an admin and the owner may - anyone else is not-admin and nothing moves") {
  BobHoldsX h;
  const auto tip = h.s.tip();
  for (const char* who : {"carol", "bob"}) {  // bob holds it but is no admin: he may release, not force
    auto r = h.force(who);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::not_holder);
    CHECK(r.error().reason() == "not-admin");
    CHECK(h.s.tip() == tip);
  }
  auto r = h.force("alice");
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  CHECK(std::string(gitlocks::action_name(r->outcome.action)) == "force-release");
  CHECK(h.s.lease_of("bob", "path:src/x.c").is_null());
  auto rec = h.s.record("path:src/x.c");
  REQUIRE(rec);
  const json& gone = (*rec)["released"];
  CHECK(gone["by"] == actor_hex("alice"));
  CHECK(gone["by_name"] == "alice");
  CHECK(gone["reason"] == "stuck for a day");
  CHECK(gone["lease"]["id"] == h.lease);
  CHECK(gone["lease"]["holder"] == actor_hex("bob"));
  // The owner may as well (a new lease of carol's, then the owner).
  REQUIRE(h.s.claim("carol", "src/x.c", 600'000).ok());
  h.lease = h.s.lease_of("carol", "path:src/x.c")["id"].get<std::string>();
  REQUIRE(h.force("owner", "landed abc").ok());
  CHECK((*h.s.record("path:src/x.c"))["released"]["lease"]["holder"] == actor_hex("carol"));
  CHECK(invalid_commits(h.s) == 0);
}

TEST_CASE("force-release: the holder's next extend or release names who released it and why") {
  BobHoldsX h;
  REQUIRE(h.force("alice").ok());
  const auto tip = h.s.tip();
  for (json op : {json{{"op", "release"}, {"path", "src/x.c"}, {"lease", h.lease}, {"generation", 1}},
                  json{{"op", "release"}, {"path", "src/x.c"}, {"lease", ""}, {"generation", 1}},
                  json{{"op", "extend"},
                       {"path", "src/x.c"},
                       {"lease", h.lease},
                       {"generation", 1},
                       {"expires_at", h.s.now + 700'000}}}) {
    CAPTURE(op.dump());
    auto r = h.s.op("bob", op);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::not_holder);
    CHECK(r.error().reason() == "force-released");
    CHECK(r.error().fields.at("released_by") == actor_hex("alice"));
    CHECK(r.error().fields.at("released_by_name") == "alice");
    CHECK(r.error().fields.at("release_reason") == "stuck for a day");
    CHECK(r.error().message.find("force-released by alice: stuck for a day") != std::string::npos);
    CHECK(h.s.tip() == tip);
  }
  // Another actor asking about the same path is told the plain story.
  auto r = h.s.op("carol", {{"op", "release"}, {"path", "src/x.c"}, {"lease", h.lease}, {"generation", 1}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().reason() == "not-holder");
}

TEST_CASE("force-release: refused without a reason or with a bad one - for a stale generation - for no such lease") {
  BobHoldsX h;
  const auto tip = h.s.tip();
  const std::string long_reason(1025, 'r');
  for (const std::string& why : {std::string(), std::string("two\nlines"), long_reason}) {
    auto r = h.force("alice", why);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::usage);
    CHECK(h.s.tip() == tip);
  }
  CHECK(h.force("alice", std::string(1024, 'r')).ok());  // the bound itself
  REQUIRE(h.s.claim("bob", "src/x.c", 600'000).ok());
  const std::string second = h.s.lease_of("bob", "path:src/x.c")["id"].get<std::string>();
  json stale = gitlocks::ops::force_release("src/x.c", second, "why");
  stale["generation"] = 1;  // the lease is generation 2
  auto r = h.s.op("alice", stale);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::stale_generation);
  auto none = h.s.op("alice", gitlocks::ops::force_release("src/x.c", std::string(24, 'a'), "why"));
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == Errc::not_holder);
  auto sem = h.s.op("alice", {{"op", "force-release"}, {"sem", "ci"}, {"lease", second}, {"reason", "x"}});
  REQUIRE_FALSE(sem.ok());
  CHECK(sem.error().code == Errc::bad_json);
}

TEST_CASE("force-release: status with expired leases shows the released lease and the timeline says why") {
  BobHoldsX h;
  h.s.now += 1000;
  REQUIRE(h.force("alice").ok());
  gitlocks::StateReader reader(h.s.objects(), h.s.state());
  auto rows = gitlocks::list_leases(reader, h.s.now, {}, true, "").value();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["lease"] == h.lease);
  CHECK(rows[0]["live"] == false);
  CHECK(rows[0]["released_by"] == actor_hex("alice"));
  CHECK(rows[0]["released_by_name"] == "alice");
  CHECK(rows[0]["release_reason"] == "stuck for a day");
  CHECK(gitlocks::list_leases(reader, h.s.now, {}, false, "").value().empty());  // not live
  std::vector<gitlocks::Verdict> verdicts;
  REQUIRE(gitlocks::replay_chain(h.s.objects(), *h.s.tip(), {}, [&](const gitlocks::Verdict& v) {
            verdicts.push_back(v);
          }).ok());
  auto t = gitlocks::lease_timeline(h.s.objects(), *h.s.tip(), {}).value();
  REQUIRE(t.leases.size() == 1);
  CHECK(t.leases[0].end_kind == std::optional<std::string>("force-release"));
  CHECK(t.leases[0].released_by_name == std::optional<std::string>("alice"));
  CHECK(t.leases[0].release_reason == std::optional<std::string>("stuck for a day"));
  CHECK(t.leases[0].end == std::optional<std::int64_t>(h.s.now));
}
