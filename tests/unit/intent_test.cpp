// Intents (docs/FORMAT.md "Intent"): a path lease of mode "intent" announces
// planned work. It is never refused for another holder's lease, it refuses
// nobody, the markers count it ("i"), no family holds it, it does not
// satisfy require_claim, and it expires like any lease. Expected values are
// written from each case's own steps.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/enforce.hpp"
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

gitlocks::Result<gitlocks::Candidate> intend(Store& s, const std::string& who, const std::string& path,
                                             std::int64_t ttl = 600'000) {
  return s.claim(who, path, ttl, "intent");
}

}  // namespace

TEST_CASE("intent: never refused for another holder's lease - and refuses no lock") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 600'000).ok());
  REQUIRE(s.claim("alice", "lib/", 600'000).ok());
  // Bob's intents on alice's file, under her directory and above her file.
  for (const auto& [path, key] : std::vector<std::pair<std::string, std::string>>{
           {"src/a.c", "path:src/a.c"}, {"lib/x/y.c", "path:lib/x/y.c"}, {"src/", "path:src"}}) {
    auto r = intend(s, "bob", path);
    REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
    CHECK(s.lease_of("bob", key)["mode"] == "intent");
  }
  // Locks after the intents: carol's exclusive claims over and under bob's
  // intents are admitted (alice's locks still refuse her).
  auto over = s.claim("carol", "docs/", 600'000);
  REQUIRE(over.ok());
  REQUIRE(intend(s, "bob", "docs/guide/intro.md").ok());
  auto under = s.claim("dave", "docs/guide/", 600'000);  // carol's docs/ refuses it, not bob's intent
  REQUIRE_FALSE(under.ok());
  CHECK(under.error().code == Errc::held_path);
  CHECK(under.error().fields.at("holder") == actor_hex("carol"));
  REQUIRE(s.claim("carol", "docs/guide/intro.md", 600'000).ok());  // her own directory, bob's intent on the file
  auto blocked = s.claim("carol", "src/a.c", 600'000);
  REQUIRE_FALSE(blocked.ok());
  CHECK(blocked.error().fields.at("holder") == actor_hex("alice"));
  // The markers on lib/ count bob's intent on lib/x/y.c below it.
  auto lib = s.record("path:lib");
  REQUIRE(lib);
  CHECK((*lib)["below"][actor_hex("bob")] ==
        json{{"i", 1}, {"iu", s.now + 600'000}, {"s", 0}, {"su", 0}, {"x", 0}, {"xu", 0}});
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("intent: a lock replaces its holder's own intent on the path - a second intent is already-held") {
  Store s;
  REQUIRE(intend(s, "alice", "src/parser/").ok());
  auto again = intend(s, "alice", "src/parser/");
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == Errc::already_held);
  REQUIRE(s.claim("alice", "src/parser/", 600'000).ok());
  auto rec = s.record("path:src/parser");
  REQUIRE(rec);
  REQUIRE((*rec)["leases"].size() == 1);
  CHECK((*rec)["leases"][0]["mode"] == "exclusive");
  CHECK((*rec)["leases"][0]["generation"] == 2);
  // The intent's marker on src/ went with it: only the exclusive count is left.
  CHECK((*s.record("path:src"))["below"][actor_hex("alice")] ==
        json{{"s", 0}, {"su", 0}, {"x", 1}, {"xu", s.now + 600'000}});
  CHECK(invalid_commits(s) == 0);
  // The timeline: the intent was released (replaced by its holder's lock), not reclaimed.
  auto t = gitlocks::lease_timeline(s.objects(), *s.tip(), {});
  REQUIRE(t.ok());
  REQUIRE(t->leases.size() == 2);
  CHECK(t->leases[0].mode == "intent");
  CHECK(t->leases[0].end_kind == std::optional<std::string>("release"));
  CHECK(t->leases[1].mode == "exclusive");
  CHECK_FALSE(t->leases[1].end_kind);
}

TEST_CASE("intent: no exclusive family holds it - a shared family admits it") {
  Store s(json{{"families",
                {{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/schema.sql", "db/migrations/"}}},
                 {{"name", "docs"}, {"policy", "shared"}, {"members", {"docs/"}}}}}});
  REQUIRE(intend(s, "bob", "db/migrations/1.sql").ok());
  REQUIRE(s.claim("alice", "db/schema.sql", 600'000).ok());  // bob's intent holds no family
  auto fam = s.record("family:db");
  REQUIRE(fam);
  CHECK((*fam)["holders"].size() == 1);
  CHECK((*fam)["holders"].contains(actor_hex("alice")));
  REQUIRE(intend(s, "carol", "docs/a.md").ok());
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("intent: it expires like a lease - sweep removes it and its marker") {
  Store s;
  REQUIRE(intend(s, "bob", "src/a.c", 5'000).ok());
  const json l = s.lease_of("bob", "path:src/a.c");
  s.now += 5'001;
  auto swept =
      s.op("carol", gitlocks::ops::sweep({{gitlocks::ops::Target::path("src/a.c"), l["id"].get<std::string>(),
                                           l["generation"].get<std::int64_t>(), l["expires_at"].get<std::int64_t>()}}));
  REQUIRE_MESSAGE(swept.ok(), gitlocks::test::why(swept));
  CHECK(s.lease_of("bob", "path:src/a.c").is_null());
  auto src = s.record("path:src");
  CHECK((!src || !(*src)["below"].contains(actor_hex("bob"))));
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("intent: others' live intents overlapping a path are listed - not one's own - not expired ones") {
  Store s;
  REQUIRE(intend(s, "bob", "src/parser/").ok());
  REQUIRE(intend(s, "carol", "src/parser/lexer.c", 5'000).ok());
  REQUIRE(intend(s, "alice", "src/").ok());
  auto snap = s.snapshot();
  gitlocks::StateReader reader(s.objects(), snap.state);
  auto names = [&](std::int64_t now, const std::string& path) {
    auto found = gitlocks::others_intents(reader, now, {gitlocks::parse_repo_path(path).value()}, actor_hex("alice"));
    REQUIRE(found.ok());
    std::vector<std::string> out;
    for (const auto& l : *found) out.push_back(l.lease.name + ":" + l.lease.path);
    return out;
  };
  CHECK(names(s.now, "src/parser/lexer.c") == std::vector<std::string>{"bob:src/parser/", "carol:src/parser/lexer.c"});
  CHECK(names(s.now, "src/") == std::vector<std::string>{"bob:src/parser/", "carol:src/parser/lexer.c"});
  CHECK(names(s.now + 5'001, "src/") == std::vector<std::string>{"bob:src/parser/"});  // carol's expired
  CHECK(names(s.now, "lib/x.c").empty());
  const auto bob = s.lease_of("bob", "path:src/parser");
  CHECK(gitlocks::intent_warning(gitlocks::Lease::of(bob), s.now)
            .rfind("bob (" + actor_hex("bob").substr(0, 12) + ") intends to change src/parser/ until ", 0) == 0);
}

TEST_CASE("intent: it does not satisfy require_claim") {
  Store s;
  json policy = gitlocks::StateReader(s.objects(), s.state()).policy().value();
  policy["require_claim"] = {{"paths", {"src/"}}};
  auto set = s.submit("owner", "policy set", gitlocks::ops::admin_policy_set(policy, s.snapshot().policy_hash));
  REQUIRE_MESSAGE(set.ok(), gitlocks::test::why(set));
  REQUIRE(intend(s, "alice", "src/a.c").ok());
  auto snap = s.snapshot();
  gitlocks::EnforcementView view;
  view.snap = &snap;
  view.now = s.now;
  auto r = gitlocks::path_refusals(s.objects(), view, actor_hex("alice"), {"src/a.c"});
  REQUIRE(r.ok());
  REQUIRE(r->front());
  CHECK(r->front()->reason() == "claim-required");
  REQUIRE(s.claim("alice", "src/a.c", 600'000).ok());  // the lock replaces the intent
  auto snap2 = s.snapshot();
  view.snap = &snap2;
  auto ok = gitlocks::path_refusals(s.objects(), view, actor_hex("alice"), {"src/a.c"});
  REQUIRE(ok.ok());
  CHECK_FALSE(ok->front());
}
