// The typed model (gitlocks/model.hpp) and the op builders (gitlocks/ops.hpp).
#include "gitlocks/model.hpp"

#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "records.h"

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

// docs/FORMAT.md "Records": a path record's "below" maps a holder to
// {"x": exclusive leases below, "xu": their latest expiry, "s", "su": the
// same for shared}; a family record's "holders" to {"n": leases on
// members, "until": their latest expiry}. The records here are written by
// the planner; the expected values follow from the claims made.
TEST_CASE("model: intention markers and family holders of records written by the planner read back typed") {
  gitlocks::test::Store s;
  const auto t = s.now;
  REQUIRE(s.op("alice", gitlocks::ops::claim("src/a/x.c", gitlocks::ops::Mode::exclusive, t + 60'000)).ok());
  REQUIRE(s.op("alice", gitlocks::ops::claim("src/b.c", gitlocks::ops::Mode::exclusive, t + 90'000)).ok());
  REQUIRE(s.op("alice", gitlocks::ops::claim("src/c.c", gitlocks::ops::Mode::shared, t + 30'000)).ok());
  REQUIRE(s.op("bob", gitlocks::ops::claim("src/c.c", gitlocks::ops::Mode::shared, t + 45'000)).ok());
  const std::string alice = gitlocks::test::actor_hex("alice");
  const std::string bob = gitlocks::test::actor_hex("bob");
  auto src = s.record("path:src");
  REQUIRE(src);
  auto markers = gitlocks::markers_of(*src);
  REQUIRE(markers.size() == 2);
  CHECK(markers[alice] == gitlocks::Marker{2, t + 90'000, 1, t + 30'000});
  CHECK(markers[bob] == gitlocks::Marker{0, 0, 1, t + 45'000});
  CHECK(markers[alice].count(true) == 2);
  CHECK(markers[alice].until(false) == t + 30'000);
  CHECK(gitlocks::marker_of(*src, bob).shared == 1);
  CHECK(gitlocks::marker_of(*src, "f00d").empty());
  // The marker of src/a covers x.c only; x.c itself has leases, no markers.
  CHECK(gitlocks::markers_of(*s.record("path:src/a"))[alice] == gitlocks::Marker{1, t + 60'000, 0, 0});
  CHECK(gitlocks::markers_of(*s.record("path:src/a/x.c")).empty());
  // Written back, a marker is the stored object.
  CHECK(markers[bob].to_json() == json{{"x", 0}, {"xu", 0}, {"s", 1}, {"su", t + 45'000}});
  // Releasing alice's shared lease drops that half of her marker (its bound with it).
  const std::string lease = s.lease_of("alice", "path:src/c.c")["id"];
  REQUIRE(s.op("alice", gitlocks::ops::release(gitlocks::ops::Target::path("src/c.c"), lease)).ok());
  CHECK(gitlocks::marker_of(*s.record("path:src"), alice) == gitlocks::Marker{2, t + 90'000, 0, 0});
}

TEST_CASE("model: family holders of a family record written by the planner read back typed") {
  gitlocks::test::Store s(
      json{{"families", json::array({{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/"}}}})}});
  const auto t = s.now;
  REQUIRE(s.op("alice", gitlocks::ops::claim("db/a.sql", gitlocks::ops::Mode::exclusive, t + 60'000)).ok());
  REQUIRE(s.op("alice", gitlocks::ops::claim("db/b.sql", gitlocks::ops::Mode::exclusive, t + 20'000)).ok());
  auto fam = s.record("family:db");
  REQUIRE(fam);
  auto holders = gitlocks::family_holders_of(*fam);
  REQUIRE(holders.size() == 1);
  const auto& e = holders[gitlocks::test::actor_hex("alice")];
  CHECK(e.leases == 2);
  CHECK(e.until == t + 60'000);
  CHECK(e.to_json() == json{{"n", 2}, {"until", t + 60'000}});
  CHECK(gitlocks::family_holders_of(*s.record("path:db")).empty());
  CHECK(gitlocks::markers_of(*fam).empty());
}

// docs/FORMAT.md "Records", written out by hand: the planner reads records
// as Record and writes them back with to_json, so a record must come back
// key for key (and byte for byte once encoded), whatever it holds.
TEST_CASE("model: a typed record re-encodes to the document it was read from") {
  const std::string a(64, 'a'), b(64, 'b'), admin(64, 'c');
  const json lease_a = {{"id", "0123456789abcdef01234567"},
                        {"holder", a},
                        {"name", "alice"},
                        {"mode", "exclusive"},
                        {"path", "src/"},
                        {"generation", 2},
                        {"expires_at", 1700000060000},
                        {"created_at", 1700000000000},
                        {"note", ""}};
  const json lease_b = {{"id", "89abcdef0123456789abcdef"},
                        {"holder", b},
                        {"name", ""},
                        {"mode", "shared"},
                        {"path", "src/"},
                        {"generation", 3},
                        {"expires_at", 0},
                        {"created_at", 0}};
  const json path = {{"kind", "path"},
                     {"name", "src"},
                     {"generation", 7},
                     {"leases", {lease_a, lease_b}},
                     {"below", {{a, {{"x", 1}, {"xu", 5}, {"s", 0}, {"su", 0}}}}},
                     {"released", {{"lease", lease_a}, {"by", admin}, {"by_name", ""}, {"reason", "stuck"}}}};
  const json bare = {
      {"kind", "path"}, {"name", "a.c"}, {"generation", 0}, {"leases", json::array()}, {"below", json::object()}};
  json slot = lease_b;
  slot.erase("mode");
  slot.erase("path");
  slot["note"] = "nightly";
  const json sem = {{"kind", "sem"}, {"name", "ci"}, {"limit", 3}, {"generation", 9}, {"leases", {slot}}};
  const json family = {{"kind", "family"}, {"name", "db"}, {"holders", {{b, {{"n", 2}, {"until", 44}}}}}};
  for (const json& doc : {path, bare, sem, family}) {
    const std::string res = doc["kind"].get<std::string>() + ":" + doc["name"].get<std::string>();
    CAPTURE(res);
    REQUIRE(gitlocks::records::validate(doc, res).ok());
    const gitlocks::Record rec = gitlocks::Record::of(doc);
    CHECK(rec.resource.key() == res);
    CHECK(rec.to_json() == doc);
    CHECK(*gitlocks::canon_dump(rec.to_json()) == *gitlocks::canon_dump(doc));
  }
  const gitlocks::Record p = gitlocks::Record::of(path);
  CHECK(p.generation == 7);
  REQUIRE(p.leases.size() == 2);
  REQUIRE(p.lease("89abcdef0123456789abcdef"));
  CHECK(p.lease("89abcdef0123456789abcdef")->mode == "shared");
  CHECK_FALSE(p.lease("89abcdef0123456789abcdee"));
  REQUIRE(p.leases[0].note);  // an empty note is a note
  CHECK(*p.leases[0].note == "");
  CHECK_FALSE(p.leases[1].note);
  CHECK(p.below.at(a) == gitlocks::Marker{1, 5, 0, 0});
  REQUIRE(p.released);
  CHECK(p.released->by == admin);
  CHECK(p.released->reason == "stuck");
  CHECK(p.released->lease.id == "0123456789abcdef01234567");
  const gitlocks::Record s = gitlocks::Record::of(sem);
  CHECK(s.limit == 3);
  REQUIRE(s.leases.size() == 1);
  CHECK(s.leases[0].path.empty());
  CHECK(gitlocks::Record::of(family).holders.at(b).leases == 2);
  // A fresh record is the empty document of its kind.
  CHECK(gitlocks::Record::path("a.c").to_json() == bare);
  CHECK(gitlocks::Record::sem("ci", 3).to_json() ==
        json{{"kind", "sem"}, {"name", "ci"}, {"limit", 3}, {"generation", 0}, {"leases", json::array()}});
  CHECK(gitlocks::Record::family("db").to_json() ==
        json{{"kind", "family"}, {"name", "db"}, {"holders", json::object()}});
}

// FORMAT.md: "A record with generation 0, no leases and no markers is
// removed"; a family record with no holders too. Each field alone keeps it.
TEST_CASE("model: a record that carries nothing is removed and any one field keeps it") {
  using gitlocks::Record;
  CHECK(Record::path("a").carries_nothing());
  CHECK(Record::sem("ci", 2).carries_nothing());
  CHECK(Record::family("db").carries_nothing());
  Record gen = Record::path("a");
  gen.generation = 1;
  CHECK_FALSE(gen.carries_nothing());
  Record leased = Record::sem("ci", 2);
  leased.leases.push_back(Lease{});
  CHECK_FALSE(leased.carries_nothing());
  Record marked = Record::path("a");
  marked.below["k"] = gitlocks::Marker{0, 0, 1, 1};
  CHECK_FALSE(marked.carries_nothing());
  Record held = Record::family("db");
  held.holders["k"] = gitlocks::FamilyHolder{1, 1};
  CHECK_FALSE(held.carries_nothing());
  CHECK(gitlocks::records::is_empty(nullptr));
  CHECK(gitlocks::records::is_empty(Record::path("a").to_json()));
  CHECK_FALSE(gitlocks::records::is_empty(gen.to_json()));
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
