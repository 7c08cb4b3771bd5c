// doctor: diagnoses reservation data, repairs nothing.
#include "gitlocks/doctor.hpp"

#include <doctest/doctest.h>

#include "fixture.h"
#include "tree_edit.h"
#include "why.h"

using gitlocks::json;
using gitlocks::Oid;

namespace {

std::vector<std::string> codes(const std::vector<gitlocks::Finding>& fs, const std::string& severity = "error") {
  std::vector<std::string> out;
  for (const auto& f : fs)
    if (f.severity == severity) out.push_back(f.code);
  return out;
}

Oid put(gitlocks::ObjectStore& store, const Oid& state, const std::vector<std::string>& path,
        std::optional<std::string> bytes) {
  std::optional<Oid> blob;
  if (bytes) blob = store.write_blob(*bytes).value();
  return *gitlocks::detail::tree_apply(store, state, {{path, blob}}).value();
}

struct Fixture {
  gitlocks::test::Store s;
  Oid parent, state;
  json rec;
  std::vector<std::string> loc = gitlocks::record_location("path:src/a.c");
  Fixture() {
    REQUIRE(s.claim("alice", "src/a.c", 60'000).ok());
    parent = s.state();
    REQUIRE(s.claim("bob", "docs/x", 60'000).ok());
    state = s.state();
    rec = *s.record("path:src/a.c");
  }
  std::vector<gitlocks::Finding> diagnose(const Oid& st, std::int64_t now = 0) {
    auto r = gitlocks::diagnose(s.objects(), st, now ? now : s.now, parent);
    REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
    return *r;
  }
};

}  // namespace

TEST_CASE("doctor: a healthy store has no findings - expired leases are reported as info only") {
  Fixture f;
  CHECK(f.diagnose(f.state).empty());
  auto later = f.diagnose(f.state, f.s.now + 60'001);
  CHECK(codes(later).empty());
  CHECK(codes(later, "info") == std::vector<std::string>{"expired-lease", "expired-lease"});
}

TEST_CASE("doctor: each kind of damage is named") {
  Fixture f;
  auto& store = f.s.objects();
  SUBCASE("non-canonical record") {
    CHECK(codes(f.diagnose(put(store, f.state, f.loc, f.rec.dump(1)))) == std::vector<std::string>{"non-canonical"});
  }
  SUBCASE("malformed record") {
    CHECK(codes(f.diagnose(put(store, f.state, f.loc, "{\"kind\":"))) ==
          std::vector<std::string>{"malformed-record", "marker-mismatch"});
  }
  SUBCASE("record under another resource's name") {
    auto other = gitlocks::record_location("path:zzz");
    Oid st = put(store, put(store, f.state, f.loc, std::nullopt), other, f.rec.dump());
    auto c = codes(f.diagnose(st));
    CHECK(std::find(c.begin(), c.end(), "name-hash-mismatch") != c.end());
  }
  SUBCASE("record in the wrong shard") {
    auto wrong = f.loc;
    wrong[1] = wrong[1] == "00" ? "01" : "00";
    Oid st = put(store, put(store, f.state, f.loc, std::nullopt), wrong, f.rec.dump());
    CHECK(codes(f.diagnose(st)) == std::vector<std::string>{"wrong-shard"});
  }
  SUBCASE("intention markers that do not count the leases") {
    auto dir = *f.s.record("path:src");
    dir["below"].begin().value()["x"] = 2;
    Oid st = put(store, f.state, gitlocks::record_location("path:src"), dir.dump());
    CHECK(codes(f.diagnose(st)) == std::vector<std::string>{"marker-mismatch"});
  }
  SUBCASE("generation that went backwards since the parent") {
    json r = f.rec;
    r["generation"] = 0;
    r["leases"] = json::array();
    Oid st = put(store, f.state, f.loc, r.dump());
    auto c = codes(f.diagnose(st));
    CHECK(std::find(c.begin(), c.end(), "generation-regression") != c.end());
  }
  SUBCASE("unknown format") {
    Oid st = put(store, f.state, {"format.json"}, R"({"format":"gitlocks-state-v7"})");
    CHECK(codes(f.diagnose(st)) == std::vector<std::string>{"unknown-format"});
  }
  SUBCASE("stray entries") {
    Oid st = put(store, f.state, {"notes.txt"}, "hello");
    CHECK(codes(f.diagnose(st)) == std::vector<std::string>{"unexpected-entry"});
  }
}

TEST_CASE("doctor: a ref lock is graded by its age and names what the host saw") {
  gitlocks::RefLockObservation seen;
  seen.path = "/r/.git/refs/locks/state.lock";
  seen.scan = gitlocks::HolderScan::complete;
  SUBCASE("younger than kRefLockStaleMs is info - likely a publication in progress") {
    seen.age_ms = gitlocks::kRefLockStaleMs - 1;
    const auto f = gitlocks::ref_lock_finding(seen);
    CHECK(f.severity == "info");
    CHECK(f.fields["age_s"] == (gitlocks::kRefLockStaleMs - 1) / 1000);
    CHECK(f.detail.find("publication in progress") != std::string::npos);
  }
  SUBCASE("from kRefLockStaleMs on it is a warning with no holder found") {
    seen.age_ms = gitlocks::kRefLockStaleMs;
    const auto f = gitlocks::ref_lock_finding(seen);
    const json j = gitlocks::finding_json(f);
    CHECK(j == json{{"severity", "warning"},
                    {"code", "ref-lock"},
                    {"location", "refs/locks/state.lock"},
                    {"detail", f.detail},
                    {"path", seen.path},
                    {"age_s", gitlocks::kRefLockStaleMs / 1000},
                    {"held_by", json::array()},
                    {"holder_scan", "complete"}});
    CHECK(f.detail.find("none found among this machine's processes") != std::string::npos);
    CHECK(f.detail.find("another machine") != std::string::npos);
  }
  SUBCASE("holders are named and a partial scan says how many processes it could not read") {
    seen.age_ms = 3'600'000;
    seen.holders = {{42, "git"}};
    seen.scan = gitlocks::HolderScan::partial;
    seen.unreadable = 3;
    const auto f = gitlocks::ref_lock_finding(seen);
    CHECK(f.severity == "warning");
    CHECK(f.fields["held_by"] == json::array({{{"pid", 42}, {"command", "git"}}}));
    CHECK(f.fields["holder_scan"] == "partial");
    CHECK(f.fields["unreadable_processes"] == 3);
    CHECK(f.detail.find("held open by pid 42 (git)") != std::string::npos);
  }
  SUBCASE("a clock behind the file's mtime gives age 0, never negative") {
    seen.age_ms = -2'000;
    CHECK(gitlocks::ref_lock_finding(seen).fields["age_s"] == 0);
  }
}
