// Every field of every signed body, dropped or given another type, replayed
// against the state it was written for: the planner reads a forged body
// field by field, and a field that is missing or of the wrong type must be
// refused (or planned) as what it is, never read as if it were there. Under
// the sanitizer build (assertions on) a read of a missing key of a const
// json aborts; in a release build it is undefined behaviour. A sem-acquire
// reclaim entry without "generation" once did exactly that.
#include <doctest/doctest.h>

#include <functional>

#include "fixture.h"
#include "forgery.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/vault.hpp"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::actor_hex;
using gitlocks::test::Store;

namespace {

constexpr std::int64_t kTtl = 60'000;

// One transition as it was admitted: its source state, actor and body.
struct Admitted {
  std::string what;
  gitlocks::Oid source;
  std::string actor;
  std::string instance;
  json body;
};

}  // namespace

TEST_CASE("forged bodies: every field dropped or retyped is refused or planned - never read as present") {
  Store s(json{{"admins", {actor_hex("carol")}},
               {"families", {{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/a.sql", "db/b.sql"}}}}}});
  std::vector<Admitted> admitted;
  auto run = [&](const std::string& what, const std::string& actor, const json& body) {
    const gitlocks::Oid source = s.state();
    auto c = s.submit(actor, what, body);
    REQUIRE_MESSAGE(c.ok(), what << ": " << (c.ok() ? "" : c.error().message));
    admitted.push_back(
        {what, source, gitlocks::test::actor_hex(actor), c->packet["instance"].get<std::string>(), c->packet["body"]});
  };
  auto ops = [](json op) { return json{{"ops", json::array({std::move(op)})}}; };
  auto lease = [&](const std::string& who, const std::string& res) {
    return s.lease_of(who, res)["id"].get<std::string>();
  };
  run("claim", "alice", ops(gitlocks::ops::claim("f", gitlocks::ops::Mode::exclusive, s.now + 2000, "a note")));
  run("claim below", "alice", ops(gitlocks::ops::claim("d/x", gitlocks::ops::Mode::shared, s.now + 2000)));
  run("family", "alice", ops(gitlocks::ops::claim("db/a.sql", gitlocks::ops::Mode::exclusive, s.now + 2000)));
  run("slot", "alice", ops(gitlocks::ops::sem_acquire("ci", 1, s.now + 2000)));
  s.now += 2001;  // everything of alice's expired
  run("reclaim", "bob", ops(gitlocks::ops::claim("f", gitlocks::ops::Mode::exclusive, s.now + kTtl)));
  run("over below", "bob", ops(gitlocks::ops::claim("d/", gitlocks::ops::Mode::exclusive, s.now + kTtl)));
  run("family holder", "bob", ops(gitlocks::ops::claim("db/b.sql", gitlocks::ops::Mode::exclusive, s.now + kTtl)));
  run("slot reclaim", "bob", ops(gitlocks::ops::sem_acquire("ci", 1, s.now + kTtl)));
  run("extend", "bob",
      ops(gitlocks::ops::extend_to(gitlocks::ops::extend(gitlocks::ops::Target::path("f"), lease("bob", "path:f")),
                                   s.now + kTtl + 1000)));
  run("sem extend", "bob",
      ops(gitlocks::ops::extend_to(
          gitlocks::ops::extend(gitlocks::ops::Target::semaphore("ci"), lease("bob", "sem:ci")), s.now + kTtl + 1000)));
  run("force-release", "carol", ops(gitlocks::ops::force_release("f", lease("bob", "path:f"), "stuck")));
  run("release", "bob", ops(gitlocks::ops::release(gitlocks::ops::Target::path("d/"), lease("bob", "path:d"))));
  run("sem-release", "bob",
      ops(gitlocks::ops::release(gitlocks::ops::Target::semaphore("ci"), lease("bob", "sem:ci"))));
  run("batch", "carol",
      json{{"ops",
            {gitlocks::ops::claim("g", gitlocks::ops::Mode::exclusive, s.now + 1000),
             gitlocks::ops::sem_acquire("gpu", 2, s.now + 1000)}}});
  s.now += 1001;
  {
    auto sweep = gitlocks::propose_sweep(s.objects(), s.state(), s.now);
    REQUIRE(sweep.ok());
    REQUIRE(sweep->has_value());
    run("sweep", "dave", ops(**sweep));
  }
  {
    json next = gitlocks::StateReader(s.objects(), s.state()).policy().value();
    next["max_ttl_ms"] = 120'000;
    run("policy-set", "owner", gitlocks::ops::admin_policy_set(next, s.snapshot().policy_hash));
  }
  gitlocks::test::TestNotary notary;
  s.admit = notary.fn();
  notary.clock = s.now;
  run("guard-time-enable", "owner",
      gitlocks::ops::admin_guard_time_enable(notary.pins.audience, notary.pins.service_key, "GUARD_WINDOW",
                                             s.snapshot().policy_hash));
  // The owner moves the store to another notary (which attests the
  // change), then turns guard time off (the owner's clock).
  gitlocks::test::TestNotary other("notary-other", "other.example");
  s.admit = other.fn();
  other.clock = s.now + 10;
  run("guard-time-set", "owner",
      gitlocks::ops::admin_guard_time_set(
          gitlocks::ops::guard_time_pins(other.pins.audience, other.pins.service_key, "GUARD_WINDOW"),
          s.snapshot().policy_hash));
  s.admit = nullptr;
  s.now = other.clock + 10;
  run("guard-time-set off", "owner", gitlocks::ops::admin_guard_time_set(nullptr, s.snapshot().policy_hash));
  REQUIRE(admitted.size() == 19);

  std::size_t forgeries = 0, refused = 0;
  for (const Admitted& a : admitted) {
    CAPTURE(a.what);
    const gitlocks::PlanContext ctx{a.actor, a.instance};
    gitlocks::test::replay_forgeries(s.objects(), a.source, ctx, a.body, forgeries, refused);
  }
  MESSAGE(forgeries << " forged bodies, " << refused << " refused");
  CHECK(forgeries > 1000);
  CHECK(refused > forgeries / 2);
}

TEST_CASE(
    "forged creation bodies: every field of a public and a PRIVATE policy dropped or retyped is refused or planned") {
  gitlocks::crypto_init();
  auto objects = gitlocks::open_memory_store().value();
  json pub = gitlocks::default_policy(std::string(64, 'a'), actor_hex("owner"));
  pub["families"] = {{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/a.sql", "db/"}}}};
  pub["admins"] = {actor_hex("carol")};
  pub["require_claim"] = {{"paths", {"src/"}}};
  gitlocks::EpochKey key{};
  const auto h = gitlocks::sha256("epoch-key:1");
  std::copy(h.begin(), h.end(), key.begin());
  json priv = gitlocks::default_policy(std::string(64, 'b'), actor_hex("owner"));
  priv["format"] = gitlocks::kPrivatePolicyFormat;
  priv["visibility"] = "PRIVATE";
  priv["members"] = json::array({actor_hex("owner"), actor_hex("alice")});
  priv["epoch"] = 1;
  json ring = json::object();
  for (const char* m : {"owner", "alice"})
    ring[actor_hex(m)] = gitlocks::seal_epoch_key(key, gitlocks::test::actor_key(m).public_key,
                                                  gitlocks::sha256(std::string("eph:") + m))
                             .value();
  priv["keyring"] = {{"1", ring}};
  priv["families"] =
      json::parse(gitlocks::seal_document(json::array({{{"name", "f"}, {"policy", "shared"}, {"members", {"x/"}}}}),
                                          key, 1, std::string(64, 'b'), "policy.json#families")
                      .value());
  const gitlocks::PlanContext ctx{actor_hex("owner"), std::string(64, 'c')};
  std::size_t forgeries = 0, refused = 0;
  for (const json& policy : {pub, priv}) {
    const json body = {{"init", policy}};
    gitlocks::test::replay_forgeries(*objects, gitlocks::Oid{}, ctx, body, forgeries, refused);
  }
  MESSAGE(forgeries << " forged creation bodies, " << refused << " refused");
  CHECK(forgeries > 300);
  CHECK(refused > forgeries / 2);
}
