// Planner behaviour on a real (in-memory libgit2) object store.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fixture.h"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::actor_hex;
using gitlocks::test::Store;

namespace {
constexpr std::int64_t kTtl = 60'000;

Errc code_of(const gitlocks::Result<gitlocks::Candidate>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error().code;
}
}  // namespace

TEST_CASE("claim: exclusive conflicts with exclusive and shared - shared + shared admitted") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", kTtl).ok());
  CHECK(code_of(s.claim("bob", "src/a.c", kTtl)) == Errc::held_path);
  CHECK(code_of(s.claim("bob", "src/a.c", kTtl, "shared")) == Errc::held_path);
  REQUIRE(s.claim("alice", "doc/", kTtl, "shared").ok());
  CHECK(s.claim("bob", "doc/", kTtl, "shared").ok());
  CHECK(code_of(s.claim("carol", "doc/", kTtl)) == Errc::held_path);
  CHECK(code_of(s.claim("carol", "doc/x.md", kTtl)) == Errc::held_path);
  CHECK(s.claim("carol", "doc/x.md", kTtl, "shared").ok());
}

TEST_CASE("claim: a directory covers the paths below it and vice versa") {
  Store s;
  REQUIRE(s.claim("alice", "src/", kTtl).ok());
  CHECK(code_of(s.claim("bob", "src/deep/file.c", kTtl)) == Errc::held_path);
  CHECK(s.claim("bob", "srcx/file.c", kTtl).ok());  // component-wise, not a string prefix
  Store t;
  REQUIRE(t.claim("alice", "src/deep/file.c", kTtl).ok());
  CHECK(code_of(t.claim("bob", "src/", kTtl)) == Errc::held_path);
  CHECK(code_of(t.claim("bob", "src/deep/", kTtl, "shared")) == Errc::held_path);
  CHECK(t.claim("bob", "src/other.c", kTtl).ok());
  CHECK(t.claim("alice", "src/deep/", kTtl).ok());  // the same holder never conflicts with itself
}

TEST_CASE("claim: a refusal through an intention marker or a family names the lease in the way") {
  Store t;
  REQUIRE(
      t.submit(
           "alice", "claim",
           {{"name", "alice-agent"},
            {"ops",
             {{{"op", "claim"}, {"path", "src/deep/file.c"}, {"mode", "exclusive"}, {"expires_at", t.now + kTtl}}}}})
          .ok());
  auto below = t.claim("bob", "src/", kTtl);
  REQUIRE(code_of(below) == Errc::held_path);
  CHECK(below.error().fields.at("holder") == actor_hex("alice"));
  CHECK(below.error().fields.at("holder_name") == "alice-agent");
  CHECK(below.error().fields.at("path") == "src/deep/file.c");
  CHECK(below.error().message.rfind("'src/deep/file.c' (below 'src/') is held exclusive by alice-agent (" +
                                        actor_hex("alice").substr(0, 12) + ")",
                                    0) == 0);

  json db = {{"families", {{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/a.sql", "db/b.sql"}}}}}};
  Store f(db);
  REQUIRE(f.submit("alice", "claim",
                   {{"name", "alice-agent"},
                    {"ops",
                     {{{"op", "claim"}, {"path", "db/a.sql"}, {"mode", "exclusive"}, {"expires_at", f.now + kTtl}}}}})
              .ok());
  auto family = f.claim("bob", "db/b.sql", kTtl);
  REQUIRE_FALSE(family.ok());
  CHECK(family.error().fields.at("holder_name") == "alice-agent");
  CHECK(family.error().fields.at("path") == "db/a.sql");
  CHECK(family.error().fields.at("family") == "db");
  CHECK(family.error().message.rfind(
            "family 'db' is held by alice-agent (" + actor_hex("alice").substr(0, 12) + "), through 'db/a.sql'", 0) ==
        0);
}

TEST_CASE("claim: the same holder claiming a live lease again is told to extend") {
  Store s;
  REQUIRE(s.claim("alice", "a", kTtl).ok());
  auto again = s.claim("alice", "a", kTtl);
  CHECK(code_of(again) == Errc::already_held);
  CHECK(again.error().reason() == "already-held");
  CHECK(again.error().fields.at("holder") == actor_hex("alice"));
}

TEST_CASE("batch: the failing op of several is named in fields - not only in the message") {
  Store s;
  REQUIRE(s.claim("alice", "b", kTtl).ok());
  auto r = s.submit("bob", "batch",
                    {{"ops",
                      {{{"op", "claim"}, {"path", "a"}, {"mode", "exclusive"}, {"expires_at", s.now + kTtl}},
                       {{"op", "claim"}, {"path", "b"}, {"mode", "exclusive"}, {"expires_at", s.now + kTtl}}}}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::held_path);
  CHECK(r.error().fields.at("op_index") == 1);
  CHECK(r.error().fields.at("op_kind") == "claim");
  auto one = s.claim("bob", "b", kTtl);  // one op: neither an index nor a prefix
  REQUIRE_FALSE(one.ok());
  CHECK(one.error().fields.count("op_index") == 0);
  CHECK(one.error().message.rfind("op ", 0) == std::string::npos);
}

TEST_CASE("claim: bad paths are refused - never rewritten") {
  Store s;
  for (const char* p : {"", "/abs", "a//b", "./a", "a/../b", "a\\b", ".."}) {
    INFO(p);
    CHECK(code_of(s.claim("alice", p, kTtl)) == Errc::bad_path);
  }
}

TEST_CASE("TTL window: both inclusive bounds admitted - the adjacent milliseconds refused") {
  Store s;  // defaults: MIN_TTL 1000, MAX_TTL 3600000
  CHECK(s.claim("a", "min", 1000).ok());
  // TTL 999: the interval [e-3600000, e-1000] is not empty but ends at now-1.
  CHECK(code_of(s.claim("a", "min-1", 999)) == Errc::guard_window);
  CHECK(s.claim("a", "max", 3'600'000).ok());
  CHECK(code_of(s.claim("a", "max+1", 3'600'001)) == Errc::guard_window);
}

TEST_CASE("the derived interval is exact and recorded in the packet") {
  Store s;
  auto c = s.claim("alice", "x", kTtl);
  REQUIRE(c.ok());
  const std::int64_t e = s.now + kTtl;
  CHECK(c->outcome.interval.lo == e - 3'600'000);
  CHECK(c->outcome.interval.hi == e - 1000);
  CHECK(c->packet["interval"] == json::array({e - 3'600'000, e - 1000}));
  CHECK(c->packet["claimed_at_ms"] == s.now);
}

TEST_CASE("reclaim: refused before and at expiry - admitted after with generation + 1") {
  Store s;
  REQUIRE(s.claim("alice", "f", 5000).ok());
  const std::int64_t expiry = s.now + 5000;
  s.now = expiry - 1;
  CHECK(code_of(s.claim("bob", "f", kTtl)) == Errc::held_path);
  s.now = expiry;
  CHECK(code_of(s.claim("bob", "f", kTtl)) == Errc::held_path);
  s.now = expiry + 1;
  auto c = s.claim("bob", "f", kTtl);
  REQUIRE(c.ok());
  CHECK(std::string(gitlocks::action_name(c->outcome.action)) == "reclaim");
  CHECK(c->outcome.interval.lo == expiry + 1);  // T > prev_expires_at
  auto rec = s.record("path:f");
  REQUIRE(rec);
  CHECK((*rec)["generation"] == 2);
  REQUIRE((*rec)["leases"].size() == 1);
  CHECK((*rec)["leases"][0]["holder"] == actor_hex("bob"));
  CHECK((*rec)["leases"][0]["generation"] == 2);
}

TEST_CASE("extend: renew before and at expiry - refused after it - when not increasing - by a non-holder") {
  Store s;
  REQUIRE(s.claim("alice", "f", 5000).ok());
  json lease = s.lease_of("alice", "path:f");
  const std::int64_t expiry = lease["expires_at"].get<std::int64_t>();
  auto extend = [&](const std::string& who, std::int64_t new_expiry) {
    return s.op(who, {{"op", "extend"}, {"path", "f"}, {"lease", lease["id"]}, {"expires_at", new_expiry}});
  };
  CHECK(code_of(extend("bob", expiry + 1000)) == Errc::not_holder);
  CHECK(code_of(extend("alice", expiry)) == Errc::guard_window);  // non-increasing
  s.now = expiry;                                                 // at expiry: still renewable
  auto c = extend("alice", expiry + 10'000);
  REQUIRE(c.ok());
  CHECK(c->outcome.interval.hi == expiry);  // T <= prev_expires_at
  CHECK(s.lease_of("alice", "path:f")["expires_at"] == expiry + 10'000);
  CHECK(s.lease_of("alice", "path:f")["generation"] == 1);  // extend keeps the generation
  s.now = expiry + 10'001;                                  // after expiry
  CHECK(code_of(extend("alice", expiry + 20'000)) == Errc::guard_window);
}

TEST_CASE("stale generation: an operation naming an old generation is refused") {
  Store s;
  REQUIRE(s.claim("alice", "f", 5000).ok());
  json old = s.lease_of("alice", "path:f");
  s.now += 5001;
  REQUIRE(s.claim("bob", "f", kTtl).ok());  // reclaim: generation 2
  auto r = s.op("alice", {{"op", "release"}, {"path", "f"}, {"lease", old["id"]}, {"generation", 1}});
  CHECK(code_of(r) == Errc::stale_generation);
  json cur = s.lease_of("bob", "path:f");
  auto r2 = s.op("bob", {{"op", "release"}, {"path", "f"}, {"lease", cur["id"]}, {"generation", 1}});
  CHECK(code_of(r2) == Errc::stale_generation);
  CHECK(s.op("bob", {{"op", "release"}, {"path", "f"}, {"lease", cur["id"]}, {"generation", 2}}).ok());
}

TEST_CASE("release: only by the holder - generations keep increasing across release") {
  Store s;
  REQUIRE(s.claim("alice", "f", kTtl).ok());
  json l = s.lease_of("alice", "path:f");
  CHECK(code_of(s.op("bob", {{"op", "release"}, {"path", "f"}, {"lease", l["id"]}})) == Errc::not_holder);
  REQUIRE(s.op("alice", {{"op", "release"}, {"path", "f"}, {"lease", l["id"]}}).ok());
  auto rec = s.record("path:f");
  REQUIRE(rec);
  CHECK((*rec)["leases"].empty());
  CHECK((*rec)["generation"] == 1);  // the record stays: generations never go back
  REQUIRE(s.claim("bob", "f", kTtl).ok());
  CHECK(s.lease_of("bob", "path:f")["generation"] == 2);
}

TEST_CASE("families: exclusive family blocks other holders on any member - shared family refuses exclusive") {
  json fams = {
      {"families", json::array({
                       {{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/schema.sql", "db/migrations/"}}},
                       {{"name", "docs"}, {"policy", "shared"}, {"members", {"docs/"}}},
                   })}};
  Store s(fams);
  REQUIRE(s.claim("alice", "db/schema.sql", kTtl).ok());
  CHECK(code_of(s.claim("bob", "db/migrations/001.sql", kTtl)) == Errc::family_policy);
  CHECK(code_of(s.claim("bob", "db/migrations/001.sql", kTtl, "shared")) == Errc::family_policy);
  CHECK(s.claim("alice", "db/migrations/001.sql", kTtl).ok());
  CHECK(code_of(s.claim("bob", "docs/a.md", kTtl)) == Errc::family_policy);
  CHECK(s.claim("bob", "docs/a.md", kTtl, "shared").ok());
  // Releasing every member frees the family.
  for (const char* p : {"db/schema.sql", "db/migrations/001.sql"}) {
    json l = s.lease_of("alice", std::string("path:") + p);
    REQUIRE(s.op("alice", {{"op", "release"}, {"path", p}, {"lease", l["id"]}}).ok());
  }
  CHECK_FALSE(s.record("family:db"));
  CHECK(s.claim("bob", "db/migrations/002.sql", kTtl).ok());
}

TEST_CASE("semaphores: full - mismatched limit - reclaim of an expired slot") {
  Store s;
  auto acquire = [&](const std::string& who, std::int64_t limit, std::int64_t ttl = kTtl) {
    return s.op(who, {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", limit}, {"expires_at", s.now + ttl}});
  };
  REQUIRE(acquire("a", 2).ok());
  CHECK(code_of(acquire("b", 3)) == Errc::limit_mismatch);
  REQUIRE(acquire("b", 2, 5000).ok());
  CHECK(code_of(acquire("c", 2)) == Errc::full_semaphore);
  CHECK(code_of(acquire("a", 2)) == Errc::already_held);  // a refusal (exit 1), not a usage error
  s.now += 5001;                                          // b's slot expired
  auto c = acquire("c", 2);
  REQUIRE(c.ok());
  auto rec = s.record("sem:ci");
  REQUIRE(rec);
  CHECK((*rec)["leases"].size() == 2);
  CHECK((*rec)["generation"] == 3);
}

TEST_CASE("batch: all or nothing") {
  Store s;
  REQUIRE(s.claim("bob", "taken", kTtl).ok());
  auto before = s.tip();
  json body = {
      {"ops",
       json::array({{{"op", "claim"}, {"path", "free"}, {"mode", "exclusive"}, {"expires_at", s.now + kTtl}},
                    {{"op", "claim"}, {"path", "taken"}, {"mode", "exclusive"}, {"expires_at", s.now + kTtl}}})}};
  auto r = s.submit("alice", "batch", body);
  CHECK(code_of(r) == Errc::held_path);
  CHECK(s.tip() == before);
  CHECK_FALSE(s.record("path:free"));
  body["ops"].erase(1);
  body["ops"].push_back({{"op", "sem-acquire"}, {"sem", "s"}, {"limit", 1}, {"expires_at", s.now + kTtl}});
  auto ok = s.submit("alice", "batch", body);
  REQUIRE(ok.ok());
  CHECK(std::string(gitlocks::action_name(ok->outcome.action)) == "batch");
  CHECK(s.record("path:free"));
  CHECK(s.record("sem:s"));
}

TEST_CASE("sweep removes only expired leases and records each guard") {
  Store s;
  REQUIRE(s.claim("alice", "old", 2000).ok());
  REQUIRE(s.claim("bob", "new", kTtl).ok());
  s.now += 2001;
  auto sweep = gitlocks::propose_sweep(s.objects(), s.state(), s.now);
  REQUIRE(sweep.ok());
  REQUIRE(sweep->has_value());
  CHECK((**sweep)["leases"].size() == 1);
  auto c = s.op("carol", **sweep);
  REQUIRE(c.ok());
  CHECK(s.lease_of("alice", "path:old").is_null());
  CHECK_FALSE(s.lease_of("bob", "path:new").is_null());
}

TEST_CASE("determinism: the same inputs give the same tree ids - replay reproduces the proposal") {
  auto run = [] {
    Store s;
    REQUIRE(s.claim("alice", "src/a.c", kTtl).ok());
    REQUIRE(s.claim("bob", "src/b.c", kTtl, "shared").ok());
    return s.state();
  };
  CHECK(run() == run());
  Store s;
  auto src = s.state();
  auto c = s.claim("alice", "src/deep/x", kTtl);
  REQUIRE(c.ok());
  gitlocks::PlanContext ctx{actor_hex("alice"), c->packet["instance"].get<std::string>()};
  auto replay = gitlocks::plan(s.objects(), src, ctx, c->packet["body"]);
  REQUIRE(replay.ok());
  CHECK(replay->result_state == c->outcome.result_state);
  CHECK(replay->interval == c->outcome.interval);
}

TEST_CASE("replay refuses a body whose declared reclaim does not match the state") {
  Store s;
  REQUIRE(s.claim("alice", "f", 2000).ok());
  auto src = s.state();
  s.now += 2001;
  auto c = s.claim("bob", "f", kTtl);
  REQUIRE(c.ok());
  json body = c->packet["body"];
  gitlocks::PlanContext ctx{actor_hex("bob"), c->packet["instance"].get<std::string>()};
  json no_after = body;
  no_after["ops"][0].erase("after");
  CHECK(gitlocks::plan(s.objects(), src, ctx, no_after).error().code == Errc::held_path);
  json early = body;
  early["ops"][0]["after"] = body["ops"][0]["after"].get<std::int64_t>() - 1;
  CHECK(gitlocks::plan(s.objects(), src, ctx, early).error().code == Errc::held_path);
  json wrong_gen = body;
  wrong_gen["ops"][0]["reclaims"][0]["generation"] = 7;
  CHECK(gitlocks::plan(s.objects(), src, ctx, wrong_gen).error().code == Errc::stale_generation);
}

TEST_CASE("path identity: an NFD twin of a path is refused bad_path in a packet - never a second lease") {
  Store s;
  REQUIRE(s.claim("alice", "docs/caf\xC3\xA9.md", kTtl).ok());
  auto twin = s.claim("bob", "docs/cafe\xCC\x81.md", kTtl);
  CHECK(code_of(twin) == Errc::bad_path);
  CHECK(twin.error().message.find("not in Unicode NFC") != std::string::npos);
  CHECK(code_of(s.claim("bob", "docs/caf\xC3\xA9.md", kTtl)) == Errc::held_path);
  // Extend and release name the path too.
  json l = s.lease_of("alice", "path:docs/caf\xC3\xA9.md");
  CHECK(s.op("alice", {{"op", "release"}, {"path", "docs/cafe\xCC\x81.md"}, {"lease", l["id"]}}).error().code ==
        Errc::bad_path);
  CHECK(s.op("alice", {{"op", "release"}, {"path", "docs/caf\xC3\xA9.md"}, {"lease", l["id"]}}).ok());
}

TEST_CASE("path identity: a case-insensitive store refuses case twins - a case-sensitive one admits them") {
  Store ci(json{{"case_insensitive", true}});
  REQUIRE(ci.claim("alice", "src/main.c", kTtl).ok());
  // The planner only takes the folded form: a host folds what users type.
  auto twin = ci.claim("bob", "Src/Main.c", kTtl);
  CHECK(code_of(twin) == Errc::bad_path);
  CHECK(twin.error().message.find("(write 'src/main.c')") != std::string::npos);
  CHECK(code_of(ci.claim("bob", "src/main.c", kTtl)) == Errc::held_path);
  CHECK(code_of(ci.claim("bob", "src/", kTtl)) == Errc::held_path);
  REQUIRE(ci.claim("carol", "lib/", kTtl).ok());
  CHECK(code_of(ci.claim("bob", "LIB/x.c", kTtl)) == Errc::bad_path);
  CHECK(code_of(ci.claim("bob", "lib/x.c", kTtl)) == Errc::held_path);

  Store cs;
  REQUIRE(cs.claim("alice", "src/main.c", kTtl).ok());
  CHECK(cs.claim("bob", "Src/Main.c", kTtl).ok());
  CHECK(cs.claim("bob", "SRC/", kTtl).ok());
}

TEST_CASE("path identity: families of a case-insensitive store compare folded") {
  // Two members that never overlap as paths: only the family rule can refuse (the core takes the
  // store's canonical, folded form; the CLI folds what the user typed: tests/cli/test_paths.py).
  json fams = {
      {"case_insensitive", true},
      {"families",
       json::array({{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/schema.sql", "migrations/"}}}})}};
  Store s(fams);
  REQUIRE(s.claim("alice", "db/schema.sql", kTtl).ok());
  CHECK(code_of(s.claim("bob", "migrations/001.sql", kTtl)) == Errc::family_policy);
  CHECK(s.claim("bob", "docs/readme.md", kTtl).ok());
  CHECK(s.claim("alice", "migrations/002.sql", kTtl).ok());  // the family's own holder
  // A member must itself be in the store's canonical form.
  json upper = {{"case_insensitive", true},
                {"families", json::array({{{"name", "db"}, {"policy", "exclusive"}, {"members", {"DB/schema.sql"}}}})}};
  json doc = gitlocks::default_policy(std::string(64, 'a'), actor_hex("owner"));
  for (auto& [k, v] : upper.items()) doc[k] = v;
  auto bad = gitlocks::parse_policy(doc);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::bad_path);
}

TEST_CASE("path identity: the policy member case_insensitive is a boolean") {
  json doc = gitlocks::default_policy(std::string(64, 'a'), actor_hex("owner"));
  CHECK_FALSE(gitlocks::parse_policy(doc)->case_insensitive);
  doc["case_insensitive"] = true;
  CHECK(gitlocks::parse_policy(doc)->case_insensitive);
  doc["case_insensitive"] = false;
  CHECK_FALSE(gitlocks::parse_policy(doc)->case_insensitive);
  for (const json& v : {json(1), json("true"), json(nullptr)}) {
    doc["case_insensitive"] = v;
    auto r = gitlocks::parse_policy(doc);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_json);
  }
}

TEST_CASE("stale generations say which one - superseded and expiry-changed and sweep-mismatch and not-expired") {
  Store s;
  auto first = s.claim("alice", "a", 1'000);
  REQUIRE(first.ok());
  const std::string old_id = first->outcome.leases[0].lease;
  s.now += 2'000;
  REQUIRE(s.claim("bob", "a", 60'000).ok());  // reclaims alice's expired lease: generation 2
  auto late = s.op("alice", {{"op", "release"}, {"path", "a"}, {"lease", old_id}, {"generation", 1}});
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == Errc::stale_generation);
  CHECK(late.error().reason() == "superseded");
  auto rec = s.record("path:a");
  REQUIRE(rec);
  const json l = (*rec)["leases"][0];
  auto moved = s.op("bob", {{"op", "extend"},
                            {"path", "a"},
                            {"lease", l["id"]},
                            {"prev_expires_at", l["expires_at"].get<std::int64_t>() - 1},
                            {"expires_at", s.now + 90'000}});
  REQUIRE_FALSE(moved.ok());
  CHECK(moved.error().reason() == "expiry-changed");
  json swept = {{"path", "a"}, {"lease", l["id"]}, {"generation", l["generation"]}, {"expires_at", l["expires_at"]}};
  auto early = s.op("carol", {{"op", "sweep"}, {"leases", {swept}}});
  REQUIRE_FALSE(early.ok());
  CHECK(early.error().code == Errc::held_path);
  CHECK(early.error().reason() == "not-expired");
  swept["generation"] = 1;
  auto wrong = s.op("carol", {{"op", "sweep"}, {"leases", {swept}}});
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().reason() == "sweep-mismatch");
}

// An op's fields are read once, as a typed op, before the op looks at the
// state (plan_read.cpp); the checks keep the order the planner has always
// had, so a body with several faults is refused for the same one in every
// version and every host. Each case carries two faults: the expected
// refusal is the first in the op's documented order (keys, target, expiry,
// lease, generation; a force-release's admin check before its lease).
TEST_CASE("plan: an op with several faults is refused for the first field checked") {
  Store st(json{{"admins", {actor_hex("alice")}}});
  REQUIRE(st.claim("alice", "src/a.c", kTtl).ok());
  auto& s = st.objects();
  auto plan_as = [&](const std::string& actor, json ops, std::optional<std::int64_t> now) {
    const json body = {{"created_at", st.now}, {"name", actor}, {"ops", std::move(ops)}};
    gitlocks::PlanContext ctx{actor_hex(actor), std::string(64, '1')};
    return gitlocks::plan(s, st.state(), ctx, body, now);
  };
  struct Case {
    const char* what;
    const char* actor;
    json op;
    bool replay;
    Errc code;
    std::string message;
  };
  const std::int64_t e = st.now + kTtl;
  const std::vector<Case> cases = {
      {"claim: a path that is not normalised before a bad mode",
       "bob",
       {{"op", "claim"}, {"path", "src/./a.c"}, {"mode", "sideways"}, {"expires_at", e}},
       false,
       Errc::bad_path,
       ""},
      {"claim: a bad mode before a negative expiry",
       "bob",
       {{"op", "claim"}, {"path", "src/b.c"}, {"mode", "sideways"}, {"expires_at", -1}},
       false,
       Errc::usage,
       "mode must be exclusive, shared or intent"},
      {"claim: a negative expiry before an overlong note",
       "bob",
       {{"op", "claim"}, {"path", "src/b.c"}, {"mode", "shared"}, {"expires_at", -1}, {"note", std::string(5000, 'n')}},
       false,
       Errc::usage,
       "expires_at must not be negative"},
      {"sem-acquire: a limit out of range before a negative expiry",
       "bob",
       {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 0}, {"expires_at", -1}},
       false,
       Errc::usage,
       ""},
      {"extend: two targets before a bad expiry",
       "alice",
       {{"op", "extend"}, {"path", "src/a.c"}, {"sem", "ci"}, {"lease", "x"}, {"expires_at", "soon"}},
       false,
       Errc::bad_json,
       "op needs exactly one of 'path' or 'sem'"},
      {"extend: a bad expiry before a missing lease",
       "alice",
       {{"op", "extend"}, {"path", "src/a.c"}, {"expires_at", "soon"}},
       false,
       Errc::bad_json,
       "field 'expires_at' must be an integer"},
      {"release: replayed without its generation, before the lease is looked up",
       "bob",
       {{"op", "release"}, {"path", "src/a.c"}, {"lease", "0123456789abcdef01234567"}},
       true,
       Errc::bad_json,
       "missing field 'generation'"},
      {"release: proposed without its generation, the lease is looked up",
       "bob",
       {{"op", "release"}, {"path", "src/a.c"}, {"lease", "0123456789abcdef01234567"}},
       false,
       Errc::not_holder,
       "no lease 0123456789abcdef01234567 on path:src/a.c"},
      {"force-release: who may before which lease",
       "bob",
       {{"op", "force-release"}, {"path", "src/a.c"}, {"reason", "stuck"}},
       false,
       Errc::not_holder,
       ""},
      {"force-release: an admin's op without a lease",
       "alice",
       {{"op", "force-release"}, {"path", "src/a.c"}, {"reason", "stuck"}},
       false,
       Errc::bad_json,
       "missing field 'lease'"},
      {"force-release: an empty reason before who may",
       "bob",
       {{"op", "force-release"}, {"path", "src/a.c"}, {"reason", ""}},
       false,
       Errc::usage,
       "a force-release needs a reason of 1-1024 bytes"},
      {"sweep: an empty list",
       "bob",
       {{"op", "sweep"}, {"leases", json::array()}},
       false,
       Errc::bad_json,
       "sweep needs a non-empty 'leases' array"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    auto r = plan_as(c.actor, json::array({c.op}), c.replay ? std::nullopt : std::optional<std::int64_t>(st.now));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == c.code);
    if (!c.message.empty()) CHECK(r.error().message == c.message);
  }
  // Who may force-release is decided before the lease is read: a non-admin
  // is told so (not-admin), whatever else is wrong with the op.
  auto bob = plan_as("bob", json::array({cases[8].op}), st.now);
  REQUIRE_FALSE(bob.ok());
  CHECK(bob.error().reason() == "not-admin");
  // Ops are read one by one: the first op's fault is the refusal, named
  // with the batch's "op N (kind): "; an unknown op is refused as it is.
  auto unknown = plan_as("bob", json::array({cases[1].op, {{"op", "frobnicate"}}}), st.now);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == Errc::usage);
  CHECK(unknown.error().message == "op 0 (claim): mode must be exclusive, shared or intent");
  auto unknown_first = plan_as("bob", json::array({{{"op", "frobnicate"}}, cases[1].op}), st.now);
  REQUIRE_FALSE(unknown_first.ok());
  CHECK(unknown_first.error().message == "unknown op 'frobnicate'");
  CHECK_FALSE(unknown_first.error().fields.count("op_index"));
}

TEST_CASE("replay refuses a semaphore reclaim entry that lacks a field - as a mismatch") {
  Store s;
  auto acquire = [&](const std::string& who, std::int64_t ttl) {
    return s.op(who, {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 1}, {"expires_at", s.now + ttl}});
  };
  REQUIRE(acquire("alice", 2000).ok());
  auto src = s.state();
  s.now += 2001;
  auto c = acquire("bob", kTtl);
  REQUIRE(c.ok());
  json body = c->packet["body"];
  REQUIRE(body["ops"][0]["reclaims"].size() == 1);
  gitlocks::PlanContext ctx{actor_hex("bob"), c->packet["instance"].get<std::string>()};
  REQUIRE(gitlocks::plan(s.objects(), src, ctx, body).ok());  // the body as proposed replays
  for (const char* field : {"lease", "generation", "expires_at"}) {
    CAPTURE(field);
    json forged = body;
    forged["ops"][0]["reclaims"][0].erase(field);
    auto r = gitlocks::plan(s.objects(), src, ctx, forged);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::stale_generation);
    CHECK(r.error().reason() == "reclaim-mismatch");
  }
  json extra = body;
  extra["ops"][0]["reclaims"][0]["holder"] = "x";
  auto r = gitlocks::plan(s.objects(), src, ctx, extra);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::bad_json);
  CHECK(r.error().message == "unknown field 'holder' in reclaim");
}

TEST_CASE("propose: the planner completes each op with what the state says - and changes nothing else") {
  // Each expected op is the op as given plus the fields the planner fills
  // in, with values taken from the steps before (not from the output).
  Store s(json{{"admins", {actor_hex("carol")}}});
  auto body_op = [](const gitlocks::Result<gitlocks::Candidate>& c) {
    REQUIRE_MESSAGE(c.ok(), gitlocks::test::why(c));
    return c->packet["body"]["ops"][0];
  };
  const json first = {{"op", "claim"}, {"path", "f"}, {"mode", "exclusive"}, {"expires_at", s.now + 2000}};
  CHECK(body_op(s.op("alice", first)) == first);  // nothing to fill in
  const std::string alice_lease = s.lease_of("alice", "path:f")["id"].get<std::string>();
  const std::int64_t alice_until = s.now + 2000;
  s.now += 2001;  // alice's lease expired
  json take = {{"op", "claim"}, {"path", "f"}, {"mode", "exclusive"}, {"expires_at", s.now + kTtl}, {"note", "n"}};
  json taken = take;
  taken["reclaims"] = json::array({{{"lease", alice_lease}, {"generation", 1}, {"expires_at", alice_until}}});
  taken["after"] = alice_until;
  CHECK(body_op(s.op("bob", take)) == taken);
  const std::string bob_lease = s.lease_of("bob", "path:f")["id"].get<std::string>();
  const std::int64_t bob_until = s.now + kTtl;
  json extend = {{"op", "extend"}, {"path", "f"}, {"lease", bob_lease}, {"expires_at", bob_until + 1000}};
  json extended = extend;
  extended["generation"] = 2;
  extended["prev_expires_at"] = bob_until;
  CHECK(body_op(s.op("bob", extend)) == extended);
  json force = {{"op", "force-release"}, {"path", "f"}, {"lease", bob_lease}, {"reason", "stuck"}};
  json forced = force;
  forced["generation"] = 2;
  CHECK(body_op(s.op("carol", force)) == forced);
  // A semaphore slot taken over, and released with its generation filled in.
  const json slot = {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 1}, {"expires_at", s.now + 1000}};
  CHECK(body_op(s.op("alice", slot)) == slot);
  const std::string slot_lease = s.lease_of("alice", "sem:ci")["id"].get<std::string>();
  const std::int64_t slot_until = s.now + 1000;
  s.now += 1001;
  json next_slot = {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 1}, {"expires_at", s.now + kTtl}};
  json next_taken = next_slot;
  next_taken["reclaims"] = json::array({{{"lease", slot_lease}, {"generation", 1}, {"expires_at", slot_until}}});
  next_taken["after"] = slot_until;
  CHECK(body_op(s.op("bob", next_slot)) == next_taken);
  json release = {{"op", "sem-release"}, {"sem", "ci"}, {"lease", s.lease_of("bob", "sem:ci")["id"]}};
  json released = release;
  released["generation"] = 2;
  CHECK(body_op(s.op("bob", release)) == released);
  // Declared fields a proposal does not need are decided again, not kept.
  json stale = {{"op", "claim"}, {"path", "g"}, {"mode", "exclusive"}, {"expires_at", s.now + kTtl}};
  stale["after"] = 5;
  stale["reclaims"] = json::array({{{"lease", "x"}, {"generation", 1}, {"expires_at", 2}}});
  json fresh = stale;
  fresh.erase("after");
  fresh.erase("reclaims");
  CHECK(body_op(s.op("alice", stale)) == fresh);
}

TEST_CASE("action: every planner action has its own name as docs/FORMAT.md spells it") {
  using gitlocks::Action;
  // docs/FORMAT.md, the packet's `action`, and the admin ops' names.
  const std::vector<std::pair<Action, std::string>> expected = {
      {Action::init, "init"},
      {Action::claim, "claim"},
      {Action::reclaim, "reclaim"},
      {Action::extend, "extend"},
      {Action::release, "release"},
      {Action::sweep, "sweep"},
      {Action::sem_acquire, "sem-acquire"},
      {Action::sem_release, "sem-release"},
      {Action::force_release, "force-release"},
      {Action::batch, "batch"},
      {Action::guard_time_enable, "guard-time-enable"},
      {Action::guard_time_set, "guard-time-set"},
      {Action::policy_set, "policy-set"},
      {Action::member_add, "member-add"},
      {Action::member_remove, "member-remove"},
      {Action::rekey, "rekey"},
      {Action::migrate, "migrate"},
      {Action::checkpoint, "checkpoint"},
  };
  std::set<std::string> names;
  for (const auto& [a, name] : expected) {
    CHECK(std::string(gitlocks::action_name(a)) == name);
    names.insert(gitlocks::action_name(a));
  }
  CHECK(names.size() == expected.size());
  // The last enumerator: a new action must be added to this list too.
  CHECK(static_cast<int>(Action::checkpoint) + 1 == static_cast<int>(expected.size()));
}
