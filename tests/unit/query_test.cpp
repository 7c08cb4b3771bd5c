// The lease listing of `status` (gitlocks/query.hpp): with path filters it
// reads the index — the filter's record and its ancestors' — and falls back
// to reading every record only when the filter's markers say leases lie
// below it. Checked against the unfiltered listing filtered here by
// paths_overlap (an independent derivation), and by counting reads.
#include "gitlocks/query.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fixture.h"
#include "gitlocks/path.hpp"
#include "tree_edit.h"
#include "why.h"

using gitlocks::json;
using gitlocks::RepoPath;
using gitlocks::test::Store;

namespace {

// Passes everything through, counting reads.
class CountingStore final : public gitlocks::ObjectStore {
 public:
  explicit CountingStore(gitlocks::ObjectStore& s) : s_(s) {}
  gitlocks::Result<std::string> read_blob(const gitlocks::Oid& id) override {
    ++reads;
    return s_.read_blob(id);
  }
  gitlocks::Result<gitlocks::Tree> read_tree(const gitlocks::Oid& id) override {
    ++reads;
    return s_.read_tree(id);
  }
  gitlocks::Result<gitlocks::Commit> read_commit(const gitlocks::Oid& id) override { return s_.read_commit(id); }
  gitlocks::Result<std::string> read_commit_raw(const gitlocks::Oid& id) override { return s_.read_commit_raw(id); }
  gitlocks::Result<std::vector<std::string>> changed_paths(const gitlocks::Oid& id) override {
    return s_.changed_paths(id);
  }
  gitlocks::Result<gitlocks::Oid> write_blob(std::string_view d) override { return s_.write_blob(d); }
  gitlocks::Result<gitlocks::Oid> write_tree(const gitlocks::Tree& t) override { return s_.write_tree(t); }
  gitlocks::Result<gitlocks::Oid> write_commit(const gitlocks::Commit& c) override { return s_.write_commit(c); }
  gitlocks::Result<std::optional<gitlocks::Oid>> read_ref(std::string_view n) override { return s_.read_ref(n); }
  std::size_t objects_written() const override { return s_.objects_written(); }
  void set_hash_only(bool on) override { s_.set_hash_only(on); }
  std::size_t reads = 0;

 private:
  gitlocks::ObjectStore& s_;
};

RepoPath path(const std::string& p) { return gitlocks::parse_repo_path(p).value(); }

// The unfiltered listing, filtered by overlap with any of `filters`.
json expected(const json& all, const std::vector<RepoPath>& filters) {
  json out = json::array();
  for (const auto& row : all) {
    if (row["kind"] != "path") continue;
    const RepoPath lp = path(row["path"].get<std::string>());
    for (const auto& f : filters)
      if (gitlocks::paths_overlap(f, lp)) {
        out.push_back(row);
        break;
      }
  }
  return out;
}

}  // namespace

TEST_CASE("query: filtered listings equal the full listing filtered by overlap on random stores") {
  std::mt19937 rng(20261201);
  const std::vector<std::string> names = {"a", "b", "c"};
  auto random_path = [&](bool dir) {
    std::string p;
    const int depth = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < depth; ++i) p += (i ? "/" : "") + names[rng() % names.size()];
    return dir ? p + "/" : p;
  };
  for (int round = 0; round < 12; ++round) {
    Store s;
    for (int i = 0; i < 10; ++i) {
      s.now += 10;
      const std::string actor = "actor" + std::to_string(rng() % 4);
      (void)s.claim(actor, random_path(rng() % 3 == 0), 1000 + static_cast<std::int64_t>(rng() % 5) * 1000,
                    rng() % 2 ? "shared" : "exclusive");  // refusals are fine: some claims conflict
    }
    REQUIRE(
        s.op("actor0", {{"op", "sem-acquire"}, {"sem", "runners"}, {"limit", 2}, {"expires_at", s.now + 9000}}).ok());
    for (const std::int64_t now : {s.now, s.now + 2500}) {  // some leases expired at the later instant
      for (const bool all : {false, true}) {
        gitlocks::StateReader reader(s.objects(), s.state());
        const json full = gitlocks::list_leases(reader, now, {}, all, "actor1").value();
        // The streamed listing hands over the same rows in the same order.
        json streamed = json::array();
        std::size_t announced = 99999;
        gitlocks::StateReader again(s.objects(), s.state());
        REQUIRE(gitlocks::for_each_lease(
                    again, now, all, "actor1", [&](std::size_t n) { announced = n; },
                    [&](const json& row) {
                      streamed.push_back(row);
                      return true;
                    })
                    .ok());
        CHECK(announced == full.size());
        CHECK(streamed == full);
        for (int q = 0; q < 8; ++q) {
          std::vector<RepoPath> filters = {path(random_path(rng() % 2 == 0))};
          if (q % 3 == 0) filters.push_back(path(random_path(false)));
          gitlocks::StateReader fresh(s.objects(), s.state());
          const json got = gitlocks::list_leases(fresh, now, filters, all, "actor1").value();
          CHECK_MESSAGE(got == expected(full, filters), "round " << round << " filter " << filters[0].display());
        }
      }
    }
  }
}

TEST_CASE("query: status of one path reads its records and not the other leases") {
  Store s;
  for (int i = 0; i < 300; ++i) REQUIRE(s.claim("bulk", "bulk/" + std::to_string(i) + ".txt", 60'000).ok());
  REQUIRE(s.claim("alice", "src/parser/lexer.c", 60'000).ok());
  REQUIRE(s.claim("bob", "src/", 60'000, "shared").ok() == false);  // alice's exclusive lease is below src/
  REQUIRE(s.claim("bob", "docs/", 60'000, "shared").ok());
  CountingStore counted(s.objects());
  gitlocks::StateReader reader(counted, s.state());
  const json rows =
      gitlocks::list_leases(reader, s.now, {path("src/parser/lexer.c")}, false, gitlocks::test::actor_hex("alice"))
          .value();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["path"] == "src/parser/lexer.c");
  CHECK(rows[0]["mine"] == true);
  const std::size_t indexed = counted.reads;
  // The whole listing reads every record (300 and more blobs).
  CountingStore all_counted(s.objects());
  gitlocks::StateReader all_reader(all_counted, s.state());
  CHECK(gitlocks::list_leases(all_reader, s.now, {}, false, "alice").value().size() == 302);
  CHECK(all_counted.reads > 300);
  CHECK(indexed < 30);
  // A directory with leases below it needs them all: the listing still finds them.
  gitlocks::StateReader below(s.objects(), s.state());
  const json under = gitlocks::list_leases(below, s.now, {path("bulk/")}, false, "").value();
  CHECK(under.size() == 300);
}

TEST_CASE("query: a lease id is found in the packets that issued or renewed it within the depth") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  REQUIRE(s.claim("bob", "docs/", 60'000, "shared").ok());
  // A batch: the second op's id is issued under op index 1.
  REQUIRE(
      s.submit("carol", "batch",
               json{{"ops",
                     json::array(
                         {{{"op", "claim"}, {"path", "x/1"}, {"mode", "exclusive"}, {"expires_at", s.now + 60'000}},
                          {{"op", "claim"}, {"path", "x/2"}, {"mode", "exclusive"}, {"expires_at", s.now + 60'000}}})}})
          .ok());
  REQUIRE(s.op("dave", {{"op", "sem-acquire"}, {"sem", "runners"}, {"limit", 2}, {"expires_at", s.now + 60'000}}).ok());
  // Every lease of the state, listed by a scan of its records (an independent
  // derivation of id -> resource), is found from history at its resource.
  gitlocks::StateReader reader(s.objects(), s.state());
  const json all = gitlocks::list_leases(reader, s.now, {}, true, "").value();
  REQUIRE(all.size() == 5);
  for (const auto& row : all) {
    auto got = gitlocks::lease_resource_in_history(s.objects(), *s.tip(), row["lease"].get<std::string>());
    REQUIRE(got.ok());
    CHECK_MESSAGE(got->value_or("none") == row["resource"].get<std::string>(), row.dump());
  }
  // No transition names an unknown id.
  CHECK(gitlocks::lease_resource_in_history(s.objects(), *s.tip(), "0123456789abcdef01234567").value() == std::nullopt);

  // The depth bound: alice's lease was issued four transitions ago.
  const std::string alice = s.lease_of("alice", "path:src/a.c")["id"].get<std::string>();
  CHECK(gitlocks::lease_resource_in_history(s.objects(), *s.tip(), alice, 3).value() == std::nullopt);
  CHECK(gitlocks::lease_resource_in_history(s.objects(), *s.tip(), alice, 4).value() == "path:src/a.c");
  // A renewal names it again: found within one transition.
  REQUIRE(
      s.op("alice", {{"op", "extend"}, {"path", "src/a.c"}, {"lease", alice}, {"expires_at", s.now + 90'000}}).ok());
  CHECK(gitlocks::lease_resource_in_history(s.objects(), *s.tip(), alice, 1).value() == "path:src/a.c");
  // A release names it too; the record then no longer holds it.
  REQUIRE(s.op("alice", {{"op", "release"}, {"path", "src/a.c"}, {"lease", alice}}).ok());
  CHECK(gitlocks::lease_resource_in_history(s.objects(), *s.tip(), alice, 1).value() == "path:src/a.c");
  CHECK(s.record("path:src/a.c").value()["leases"].empty());
}

namespace {

// Every record of a state, as canonical text.
std::vector<std::string> all_records(gitlocks::ObjectStore& store, const gitlocks::Oid& state) {
  std::vector<std::string> out;
  gitlocks::StateReader reader(store, state);
  REQUIRE(reader
              .for_each_record([&](const json& r) {
                out.push_back(gitlocks::canon_dump(r).value());
                return true;
              })
              .ok());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<std::string> texts(const std::vector<json>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(gitlocks::canon_dump(r).value());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("query: record_changes equals the difference of the two whole states at every commit") {
  Store s;
  std::mt19937 rng(7);
  std::vector<gitlocks::Oid> states;
  const std::vector<std::string> paths = {"src/a.c", "src/", "docs/x.md", "docs/", "lib/deep/er/f.h", "lib/"};
  const std::vector<std::string> actors = {"alice", "bob", "carol"};
  for (int i = 0; i < 60; ++i) {
    const std::string& who = actors[rng() % actors.size()];
    const std::string& p = paths[rng() % paths.size()];
    switch (rng() % 4) {
      case 0:
      case 1:
        (void)s.claim(who, p, 1000 + static_cast<std::int64_t>(rng() % 5000), rng() % 2 ? "shared" : "exclusive");
        break;
      case 2:
        (void)s.op(who, {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 2}, {"expires_at", s.now + 3000}});
        break;
      default:
        s.now += 2500;  // leases expire and get reclaimed
        break;
    }
    if (states.empty() || states.back() != s.state()) states.push_back(s.state());
  }
  REQUIRE(states.size() > 20);
  std::size_t changed = 0;
  for (std::size_t k = 0; k < states.size(); ++k) {
    const gitlocks::Oid before_state = k ? states[k - 1] : gitlocks::Oid();
    auto got = gitlocks::record_changes(s.objects(), before_state, states[k]);
    REQUIRE_MESSAGE(got.ok(), gitlocks::test::why(got));
    const auto old_all = k ? all_records(s.objects(), before_state) : std::vector<std::string>{};
    const auto new_all = all_records(s.objects(), states[k]);
    CHECK(texts(got->before) == minus(old_all, new_all));
    CHECK(texts(got->after) == minus(new_all, old_all));
    changed += got->after.size() + got->before.size();
  }
  CHECK(changed > 0);
  // A state compared with itself changed nothing.
  auto same = gitlocks::record_changes(s.objects(), states.back(), states.back());
  REQUIRE(same.ok());
  CHECK(same->before.empty());
  CHECK(same->after.empty());
}

// ---------------------------------------------------------------------------
// fence, status, timeline and the replay summary: the answers every host
// (CLI, WASM, page) takes from the core.

TEST_CASE("query: fence is live through expires_at inclusive and stale one millisecond later") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  const std::int64_t expires = s.now + 60'000;
  gitlocks::StateReader reader(s.objects(), s.state());
  auto live = gitlocks::fence(reader, "path:src/a.c", 1, expires);
  REQUIRE(live.ok());
  CHECK((*live)["live"] == true);
  CHECK((*live)["generation"] == 1);
  CHECK((*live)["holder"] == gitlocks::test::actor_hex("alice"));
  CHECK((*live)["expires_at"] == expires);
  auto late = gitlocks::fence(reader, "path:src/a.c", 1, expires + 1);
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == gitlocks::Errc::stale_generation);
  CHECK(late.error().fields.at("current_generation") == 1);
  auto other = gitlocks::fence(reader, "path:src/a.c", 2, s.now);  // a generation never issued
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().fields.at("generation") == 2);
  auto none = gitlocks::fence(reader, "path:elsewhere", 0, s.now);  // no record: generation 0 is not live
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().fields.at("current_generation") == 0);
}

TEST_CASE("query: resource_of names records as the state files them and refuses bad paths") {
  using gitlocks::PathCase;
  CHECK(gitlocks::resource_of("sem:ci", PathCase::sensitive).value() == "sem:ci");
  CHECK(gitlocks::resource_of("path:src/a.c", PathCase::sensitive).value() == "path:src/a.c");
  CHECK(gitlocks::resource_of("src/a.c", PathCase::sensitive).value() == "path:src/a.c");
  CHECK(gitlocks::resource_of("SRC/A.c", PathCase::insensitive).value() == "path:src/a.c");
  auto bad = gitlocks::resource_of("a/../b", PathCase::sensitive);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == gitlocks::Errc::bad_path);
}

TEST_CASE("query: status_document has the policy and the rows of list_leases") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  REQUIRE(s.claim("bob", "doc/", 30'000, "shared").ok());
  auto snap = s.snapshot();
  gitlocks::StateReader reader(s.objects(), snap.state);
  gitlocks::StatusQuery q;
  q.now = s.now;
  q.me = gitlocks::test::actor_hex("bob");
  auto doc = gitlocks::status_document(reader, snap, q);
  REQUIRE(doc.ok());
  CHECK((*doc)["commit"] == *snap.commit);
  CHECK((*doc)["store"] == snap.store_id);
  CHECK((*doc)["guard_time"] == json{{"enabled", false}});
  REQUIRE((*doc)["leases"].size() == 2);
  CHECK((*doc)["leases"][0]["resource"] == "path:doc");  // sorted by resource
  CHECK((*doc)["leases"][0]["mine"] == true);
  CHECK((*doc)["leases"][1]["expires_in_ms"] == 60'000);
  q.paths = gitlocks::path_filters({"src/"}, gitlocks::PathCase::sensitive).value();
  auto filtered = gitlocks::status_document(reader, snap, q);
  REQUIRE(filtered.ok());
  REQUIRE((*filtered)["leases"].size() == 1);
  CHECK((*filtered)["leases"][0]["path"] == "src/a.c");
  q.now = s.now + 30'001;  // bob's lease expired: shown only with include_expired
  q.paths.clear();
  CHECK(gitlocks::status_document(reader, snap, q).value()["leases"].size() == 1);
  q.include_expired = true;
  CHECK(gitlocks::status_document(reader, snap, q).value()["leases"].size() == 2);
}

TEST_CASE("query: the timeline says how each lease ended - release or expiry or reclaim") {
  Store s;
  auto a = s.claim("alice", "a", 10'000);  // released at +1s
  REQUIRE(a.ok());
  const std::string a_id = a->outcome.leases[0].lease;
  REQUIRE(s.claim("bob", "b", 10'000).ok());   // reclaimed by carol after expiry
  REQUIRE(s.claim("dave", "d", 10'000).ok());  // swept after expiry
  s.now += 1'000;
  REQUIRE(s.op("alice", {{"op", "release"}, {"path", "a"}, {"lease", a_id}}).ok());
  s.now += 20'000;
  REQUIRE(s.claim("carol", "b", 10'000).ok());
  auto d = s.record("path:d");
  REQUIRE(d);
  const json& dl = (*d)["leases"][0];
  REQUIRE(s.op("erin", {{"op", "sweep"},
                        {"leases",
                         {{{"path", "d"},
                           {"lease", dl["id"]},
                           {"generation", dl["generation"]},
                           {"expires_at", dl["expires_at"]}}}}})
              .ok());
  std::vector<gitlocks::Verdict> verdicts;
  auto summary =
      gitlocks::replay_chain(s.objects(), *s.tip(), {}, [&](const gitlocks::Verdict& v) { verdicts.push_back(v); });
  REQUIRE(summary.ok());
  REQUIRE(summary->invalid == 0);
  std::size_t calls = 0;
  gitlocks::ReplayOptions ro;
  ro.progress = [&](std::size_t done, std::size_t total) {
    ++calls;
    CHECK(done <= total);
  };
  auto t = gitlocks::lease_timeline(s.objects(), *s.tip(), ro);
  REQUIRE(t.ok());
  CHECK(calls == verdicts.size());
  // What hosts print: the text, with the members a host adds in key order.
  auto text = gitlocks::lease_timeline_text(*t, {{"verdicts", "[]"}, {"summary", "7"}});
  REQUIRE(text.ok());
  CHECK(text->rfind("{\"end_time\":", 0) == 0);
  CHECK(text->find(",\"summary\":7,\"tickets\":[],\"transitions\":[") != std::string::npos);
  CHECK(text->size() > 2);
  CHECK(text->substr(text->size() - 15) == ",\"verdicts\":[]}");
  const json doc = json::parse(*text);
  CHECK(gitlocks::canon_dump(doc).value() == *text);  // canonical as written
  CHECK(doc["transitions"].size() == verdicts.size());
  std::map<std::string, json> by_resource;
  for (const auto& l : doc["leases"])
    by_resource[l["resource"].get<std::string>() + "/" + l["holder"].get<std::string>()] = l;
  using gitlocks::test::actor_hex;
  const json& la = by_resource.at("a/" + actor_hex("alice"));
  CHECK(la["end_kind"] == "release");
  CHECK(la["end"] == la["start"].get<std::int64_t>() + 1'000);
  CHECK(by_resource.at("b/" + actor_hex("bob"))["end_kind"] == "reclaim");
  CHECK(by_resource.at("b/" + actor_hex("carol"))["end_kind"].is_null());  // still open
  CHECK(by_resource.at("d/" + actor_hex("dave"))["end_kind"] == "expired");
  // The reclaim is told on its transition, and the sweep's commit names d.
  const json& reclaim = doc["transitions"][verdicts.size() - 2];
  CHECK(reclaim["reclaims"] == json::array({"b"}));
  CHECK(reclaim["generations"] == json::array({1, 2}));
  CHECK(doc["transitions"].back()["resources"] == json::array({"d"}));
  CHECK(doc["end_time"] == s.now);
}

TEST_CASE("query: the replay summary carries the structural note exactly when a commit was not re-executed") {
  gitlocks::ReplaySummary sum;
  sum.commits = 3;
  gitlocks::MemberVault pub;
  CHECK_FALSE(gitlocks::replay_summary_json(sum, pub).contains("note"));
  sum.structural = 1;
  CHECK(gitlocks::replay_summary_json(sum, pub)["note"] == std::string(gitlocks::kStructuralNote));
  sum.structural = 0;
  gitlocks::MemberVault sealed;
  sealed.is_private = true;  // a PRIVATE store and no member's key
  auto j = gitlocks::replay_summary_json(sum, sealed);
  CHECK(j["note"] == std::string(gitlocks::kStructuralNote));
  CHECK(j["private"] == true);
  CHECK(j["member"] == false);
}

TEST_CASE("query: refusals that time clears and path conflicts are named once") {
  using gitlocks::Errc;
  for (Errc c : {Errc::held_path, Errc::full_semaphore, Errc::family_policy, Errc::stale_retries_exhausted})
    CHECK(gitlocks::clears_with_time(c));
  for (Errc c : {Errc::already_held, Errc::not_holder, Errc::stale_generation, Errc::usage, Errc::store_read})
    CHECK_FALSE(gitlocks::clears_with_time(c));
  CHECK(gitlocks::is_path_conflict(Errc::held_path));
  CHECK(gitlocks::is_path_conflict(Errc::family_policy));
  CHECK_FALSE(gitlocks::is_path_conflict(Errc::full_semaphore));
  CHECK_FALSE(gitlocks::is_path_conflict(Errc::already_held));
}

TEST_CASE("query: a lost lease says how it was lost - by an admin or expiry or another refusal") {
  using gitlocks::Errc;
  gitlocks::Error admin(
      Errc::not_holder, "lease L on path:f: force-released by root: landed (admin key 0123)",
      {{"lease", "L"}, {"released_by", "0123"}, {"released_by_name", "root"}, {"release_reason", "landed"}});
  admin.sub = "force-released";
  const auto by_admin = gitlocks::lease_lost_by_refusal("L", "path:f", 1'000, 5'000, admin);
  CHECK(by_admin.code == Errc::lease_lost);
  CHECK(by_admin.reason() == "force-released");
  CHECK(by_admin.fields.at("lease") == "L");
  CHECK(by_admin.fields.at("resource") == "path:f");
  CHECK(by_admin.fields.at("release_reason") == "landed");
  CHECK(by_admin.fields.count("refusal_code") == 0);

  gitlocks::Error superseded(Errc::stale_generation, "superseded", {{"current_generation", 3}});
  superseded.sub = "superseded";
  const auto refused = gitlocks::lease_lost_by_refusal("L", "sem:ci", 9'000, 5'000, superseded);
  CHECK(refused.reason() == "renewal-refused");
  CHECK(refused.fields.at("refusal_code") == "stale-generation");
  CHECK(refused.fields.at("refusal_reason") == "superseded");
  CHECK(refused.fields.at("current_generation") == 3);
  CHECK(refused.fields.at("resource") == "sem:ci");

  gitlocks::Error late(Errc::guard_window, "lease L expired");
  const auto too_late = gitlocks::lease_lost_by_refusal("L", "path:f", 5'000, 5'001, late);
  CHECK(too_late.reason() == "expired");
  CHECK(too_late.fields.at("expires_at_ms") == 5000);
  CHECK(gitlocks::lease_lost_by_refusal("L", "path:f", 5'000, 5'000, late).reason() == "renewal-refused");

  const auto expired = gitlocks::lease_lost_by_expiry("L", "path:f", 1'000, 3'000);
  CHECK(expired.code == Errc::lease_lost);
  CHECK(expired.reason() == "expired");
  CHECK(expired.fields.at("expires_at_ms") == 1000);
  CHECK(expired.fields.at("checked_at_ms") == 3000);
  CHECK(expired.message.find("2s ago") != std::string::npos);
}

// The waiting queue's rule (wants_conflict) is the planner's: for every pair
// of claims that each admits alone, bob's claim is refused as held-path or
// family-policy while alice holds hers exactly when wants_conflict says so.
// The planner is the independent authority here; the grid crosses
// directories, files below them, siblings, both modes, an exclusive family
// (any mode conflicts) and a shared one (shared claims only).
TEST_CASE("query: wants_conflict agrees with the planner on every pair of claims") {
  const json fams = {
      {"families", json::array({
                       {{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/schema.sql", "db/migrations/"}}},
                       {{"name", "docs"}, {"policy", "shared"}, {"members", {"docs/"}}},
                   })}};
  const std::vector<std::string> paths = {
      "db/schema.sql", "db/migrations/001.sql", "db/", "db/other.txt", "src/a.c", "src/", "docs/a.md", "x"};
  constexpr std::int64_t kTtl = 60'000;
  Store probe(fams);
  const gitlocks::Policy policy =
      gitlocks::parse_policy(gitlocks::StateReader(probe.objects(), probe.state()).policy().value()).value();
  int conflicting = 0, free = 0;
  for (const auto& pa : paths)
    for (const char* ma : {"exclusive", "shared"})
      for (const auto& pb : paths)
        for (const char* mb : {"exclusive", "shared"}) {
          CAPTURE(pa);
          CAPTURE(ma);
          CAPTURE(pb);
          CAPTURE(mb);
          Store alone(fams);
          if (!alone.claim("bob", pb, kTtl, mb).ok()) continue;  // refused by itself (a shared family)
          Store s(fams);
          if (!s.claim("alice", pa, kTtl, ma).ok()) continue;
          auto r = s.claim("bob", pb, kTtl, mb);
          const bool refused = !r.ok() && (r.error().code == gitlocks::Errc::held_path ||
                                           r.error().code == gitlocks::Errc::family_policy);
          REQUIRE((r.ok() || refused));
          gitlocks::Wanted a{gitlocks::parse_repo_path(pa).value(), std::string(ma) == "shared", ""};
          gitlocks::Wanted b{gitlocks::parse_repo_path(pb).value(), std::string(mb) == "shared", ""};
          CHECK(gitlocks::wants_conflict(policy, a, b) == refused);
          CHECK(gitlocks::wants_conflict(policy, b, a) == refused);  // symmetric
          (refused ? conflicting : free)++;
        }
  // The grid reaches both answers, through the family too.
  CHECK(conflicting > 20);
  CHECK(free > 20);
  gitlocks::Wanted schema{gitlocks::parse_repo_path("db/schema.sql").value(), true, ""};
  gitlocks::Wanted migration{gitlocks::parse_repo_path("db/migrations/001.sql").value(), true, ""};
  CHECK(gitlocks::wants_conflict(policy, schema, migration));  // only the family relates them
  CHECK_FALSE(gitlocks::wants_conflict(gitlocks::Policy{}, schema, migration));
}

TEST_CASE("query: wants_conflict on semaphores - the same name conflicts and a path never does") {
  const gitlocks::Policy none;
  const gitlocks::Wanted ci{std::nullopt, false, "ci"}, gpu{std::nullopt, false, "gpu"};
  const gitlocks::Wanted path{gitlocks::parse_repo_path("ci").value(), false, ""};
  CHECK(gitlocks::wants_conflict(none, ci, ci));
  CHECK_FALSE(gitlocks::wants_conflict(none, ci, gpu));
  CHECK_FALSE(gitlocks::wants_conflict(none, ci, path));
  CHECK_FALSE(gitlocks::wants_conflict(none, path, ci));
}

// The typed reads hosts act on (StateReader::valid_record,
// for_each_valid_record): a record the planner could have written comes
// back typed; one it could not have written is refused by both reads, and
// by the hosts that read through them (fence, status), while the document
// reads (doctor, the exclusion checker) still see it as it is.
TEST_CASE("state: hosts read records checked and typed - a malformed or misfiled record is refused") {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
  const gitlocks::Oid good = s.state();
  auto& store = s.objects();
  const auto loc = gitlocks::record_location("path:src/a.c");

  gitlocks::StateReader reader(store, good);
  auto rec = reader.valid_record("path:src/a.c");
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK((*rec)->resource.kind == gitlocks::RecordKind::path);
  CHECK((*rec)->generation == 1);  // the first claim of a path issues generation 1
  REQUIRE((*rec)->leases.size() == 1);
  CHECK((*rec)->leases[0].holder == gitlocks::test::actor_hex("alice"));
  CHECK((*rec)->leases[0].path == "src/a.c");
  auto none = reader.valid_record("path:elsewhere");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  // The claim files the lease's record and its ancestor's marker record.
  std::vector<std::string> seen;
  REQUIRE(reader
              .for_each_valid_record([&](const gitlocks::Record& r) {
                seen.push_back(r.resource.key());
                return true;
              })
              .ok());
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::string>{"path:src", "path:src/a.c"});

  auto put = [&](const gitlocks::Oid& state, const std::vector<std::string>& at, const json& doc) {
    auto blob = store.write_blob(gitlocks::canon_dump(doc).value()).value();
    return *gitlocks::detail::tree_apply(store, state, {{at, blob}}).value();
  };
  SUBCASE("a lease above the record's generation") {
    json bad = *s.record("path:src/a.c");
    bad["leases"][0]["generation"] = 2;  // canonical, well typed; the record is at 1
    const gitlocks::Oid st = put(good, loc, bad);
    const std::string why = "malformed record of path:src/a.c: lease generations out of order or above the record's";
    gitlocks::StateReader r(store, st);
    auto one = r.valid_record("path:src/a.c");
    REQUIRE_FALSE(one.ok());
    CHECK(one.error().code == gitlocks::Errc::store_read);
    CHECK(one.error().message == why);
    auto all = r.for_each_valid_record([](const gitlocks::Record&) { return true; });
    REQUIRE_FALSE(all.ok());
    CHECK(all.error().message == why);
    auto fenced = gitlocks::fence(r, "path:src/a.c", 2, s.now);
    REQUIRE_FALSE(fenced.ok());
    CHECK(fenced.error().code == gitlocks::Errc::store_read);
    CHECK(fenced.error().message == why);
    auto listed = gitlocks::list_leases(r, s.now, {}, false, "");
    REQUIRE_FALSE(listed.ok());
    CHECK(listed.error().message == why);
    auto doc = r.record("path:src/a.c");  // the document as stored
    REQUIRE(doc.ok());
    CHECK((**doc)["leases"][0]["generation"] == 2);
  }
  SUBCASE("a record filed at another name's location") {
    // A well-formed record of path:src/a.c, moved to where path:zzz is filed.
    const json moved = *s.record("path:src/a.c");
    const gitlocks::Oid st = put(*gitlocks::detail::tree_apply(store, good, {{loc, std::nullopt}}).value(),
                                 gitlocks::record_location("path:zzz"), moved);
    gitlocks::StateReader r(store, st);
    auto all = r.for_each_valid_record([](const gitlocks::Record&) { return true; });
    REQUIRE_FALSE(all.ok());
    CHECK(all.error().code == gitlocks::Errc::store_read);
    CHECK(all.error().message == "malformed record of path:src/a.c: not filed at its own location");
    auto zzz = r.valid_record("path:zzz");  // read by the name it is filed under
    REQUIRE_FALSE(zzz.ok());
    CHECK(zzz.error().message == "malformed record of path:zzz: record names 'path:src/a.c'");
  }
}
