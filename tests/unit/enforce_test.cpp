// The claims rule (enforce.hpp) and what it rests on: the planner's
// check-only mode, the paths a commit changes (ObjectStore::changed_paths),
// and the verdicts on commits in a memory store. Expected paths and
// verdicts are derived by hand from the commits each case builds.
#include "gitlocks/enforce.hpp"

#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/sshsig.hpp"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::actor_hex;
using gitlocks::test::Store;

namespace {
constexpr std::int64_t kTtl = 60'000;

// A nested tree from {"path": content} (content "" with mode x: executable).
struct File {
  std::string content;
  bool executable = false;
};
Oid write_tree(gitlocks::ObjectStore& s, const std::map<std::string, File>& files);

// Commits are written as raw objects through a blob round trip: the memory
// store writes commits in its own fixed form, which is enough here.
Oid commit(gitlocks::ObjectStore& s, const Oid& tree, std::vector<Oid> parents) {
  gitlocks::Commit c;
  c.tree = tree;
  c.parents = std::move(parents);
  c.message = "work\n";
  c.time_seconds = 1'700'000'000;
  return s.write_commit(c).value();
}

Oid write_tree(gitlocks::ObjectStore& s, const std::map<std::string, File>& files) {
  std::map<std::string, std::map<std::string, File>> dirs;
  gitlocks::Tree t;
  for (const auto& [path, f] : files) {
    auto slash = path.find('/');
    if (slash == std::string::npos) {
      REQUIRE_FALSE(f.executable);  // the memory store writes 100644 only
      t.push_back({path, false, s.write_blob(f.content).value()});
    } else {
      dirs[path.substr(0, slash)][path.substr(slash + 1)] = f;
    }
  }
  for (const auto& [name, sub] : dirs) t.push_back({name, true, write_tree(s, sub)});
  return s.write_tree(t).value();
}

std::vector<std::string> changed(gitlocks::ObjectStore& s, const Oid& c) { return s.changed_paths(c).value(); }

// A store where alice holds src/x.c exclusively, and the view the rule
// judges it on at the store's time.
struct AliceHoldsX {
  Store st;
  gitlocks::Snapshot snap;
  gitlocks::EnforcementView view;
  AliceHoldsX() {
    REQUIRE(st.claim("alice", "src/x.c", kTtl).ok());
    snap = st.snapshot();
    view.snap = &snap;
    view.now = st.now;
  }
  AliceHoldsX(const AliceHoldsX&) = delete;  // view points into it
  AliceHoldsX& operator=(const AliceHoldsX&) = delete;
};
}  // namespace

TEST_CASE("changed paths: root and edits and additions and deletions and a file replaced by a directory") {
  Store st;
  auto& s = st.objects();
  const Oid root = commit(s, write_tree(s, {{"a.txt", {"a\n"}}, {"src/x.c", {"x\n"}}, {"src/y.c", {"y\n"}}}), {});
  CHECK(changed(s, root) == std::vector<std::string>{"a.txt", "src/x.c", "src/y.c"});
  const Oid edit = commit(s, write_tree(s, {{"a.txt", {"a\n"}}, {"src/x.c", {"x2\n"}}, {"src/y.c", {"y\n"}}}), {root});
  CHECK(changed(s, edit) == std::vector<std::string>{"src/x.c"});
  const Oid moved = commit(s, write_tree(s, {{"a.txt/inner", {"a\n"}}, {"src/x.c", {"x2\n"}}}), {edit});
  // a.txt (a file) is gone, a.txt/inner is new, src/y.c was deleted.
  CHECK(changed(s, moved) == std::vector<std::string>{"a.txt", "a.txt/inner", "src/y.c"});
  const Oid same = commit(s, write_tree(s, {{"a.txt/inner", {"a\n"}}, {"src/x.c", {"x2\n"}}}), {moved});
  CHECK(changed(s, same).empty());
}

TEST_CASE("changed paths: a clean merge changes nothing of its own - a resolution changes what it resolves") {
  Store st;
  auto& s = st.objects();
  const std::string base_text = "1\n2\n3\n4\n5\n6\n7\n8\n";
  const Oid base = commit(s, write_tree(s, {{"f.txt", {base_text}}, {"g.txt", {"g\n"}}}), {});
  // ours edits line 1 of f.txt, theirs edits line 8 and g.txt.
  const Oid ours = commit(s, write_tree(s, {{"f.txt", {"1a\n2\n3\n4\n5\n6\n7\n8\n"}}, {"g.txt", {"g\n"}}}), {base});
  const Oid theirs = commit(s, write_tree(s, {{"f.txt", {"1\n2\n3\n4\n5\n6\n7\n8b\n"}}, {"g.txt", {"g2\n"}}}), {base});
  // The automatic merge: both edits, no change of the merge's own.
  const Oid clean =
      commit(s, write_tree(s, {{"f.txt", {"1a\n2\n3\n4\n5\n6\n7\n8b\n"}}, {"g.txt", {"g2\n"}}}), {ours, theirs});
  CHECK(changed(s, clean).empty());
  // An "evil" merge: f.txt also gets a line neither side wrote.
  const Oid evil =
      commit(s, write_tree(s, {{"f.txt", {"1a\n2\n3\nnew\n4\n5\n6\n7\n8b\n"}}, {"g.txt", {"g2\n"}}}), {ours, theirs});
  CHECK(changed(s, evil) == std::vector<std::string>{"f.txt"});
  // Taking one side's version of a file whole is no change of the merge.
  const Oid one_side =
      commit(s, write_tree(s, {{"f.txt", {"1a\n2\n3\n4\n5\n6\n7\n8\n"}}, {"g.txt", {"g2\n"}}}), {ours, theirs});
  CHECK(changed(s, one_side).empty());
  // A conflict (both edit line 1), resolved by hand.
  const Oid ours2 = commit(s, write_tree(s, {{"f.txt", {"1x\n2\n3\n4\n5\n6\n7\n8\n"}}, {"g.txt", {"g\n"}}}), {base});
  const Oid theirs2 = commit(s, write_tree(s, {{"f.txt", {"1y\n2\n3\n4\n5\n6\n7\n8\n"}}, {"g.txt", {"g\n"}}}), {base});
  const Oid resolved =
      commit(s, write_tree(s, {{"f.txt", {"1z\n2\n3\n4\n5\n6\n7\n8\n"}}, {"g.txt", {"g\n"}}}), {ours2, theirs2});
  CHECK(changed(s, resolved) == std::vector<std::string>{"f.txt"});
  // The same conflict resolved by taking the second parent's version whole:
  // the combined diff shows nothing (the result equals one parent).
  const Oid took_theirs =
      commit(s, write_tree(s, {{"f.txt", {"1y\n2\n3\n4\n5\n6\n7\n8\n"}}, {"g.txt", {"g\n"}}}), {ours2, theirs2});
  CHECK(changed(s, took_theirs).empty());
  // A deletion that neither side made.
  const Oid dropped = commit(s, write_tree(s, {{"f.txt", {"1a\n2\n3\n4\n5\n6\n7\n8b\n"}}}), {ours, theirs});
  CHECK(changed(s, dropped) == std::vector<std::string>{"g.txt"});
}

TEST_CASE("check-only plans refuse exactly as plans do - and write nothing") {
  Store st;
  REQUIRE(st.claim("alice", "src/", kTtl).ok());
  auto& s = st.objects();
  const json body = {
      {"created_at", st.now},
      {"name", "bob"},
      {"ops", json::array({gitlocks::ops::claim("src/x.c", gitlocks::ops::Mode::shared, st.now + kTtl)})}};
  gitlocks::PlanContext full{actor_hex("bob"), std::string(64, '1')};
  gitlocks::PlanContext only = full;
  only.check_only = true;
  auto a = gitlocks::plan(s, st.state(), full, body, st.now);
  const std::size_t written = s.objects_written();
  auto b = gitlocks::plan(s, st.state(), only, body, st.now);
  REQUIRE_FALSE(a.ok());
  REQUIRE_FALSE(b.ok());
  CHECK(a.error().code == Errc::held_path);
  CHECK(b.error().code == a.error().code);
  CHECK(b.error().message == a.error().message);
  CHECK(b.error().fields == a.error().fields);
  CHECK(s.objects_written() == written);
  // A free path: admitted, and still nothing written.
  const json free = {
      {"created_at", st.now},
      {"name", "bob"},
      {"ops", json::array({gitlocks::ops::claim("doc/y.md", gitlocks::ops::Mode::shared, st.now + kTtl)})}};
  auto c = gitlocks::plan(s, st.state(), only, free, st.now);
  REQUIRE(c.ok());
  CHECK(c->result_state.empty());
  CHECK(s.objects_written() == written);
  // Each op is judged on the source state: the same path twice is admitted
  // (a full plan refuses the second claim: the first one's lease is bob's).
  const json twice = {
      {"created_at", st.now},
      {"name", "bob"},
      {"ops", json::array({gitlocks::ops::claim("doc/y.md", gitlocks::ops::Mode::shared, st.now + kTtl),
                           gitlocks::ops::claim("doc/y.md", gitlocks::ops::Mode::shared, st.now + kTtl)})}};
  CHECK(gitlocks::plan(s, st.state(), only, twice, st.now).ok());
  auto full_twice = gitlocks::plan(s, st.state(), full, twice, st.now);
  REQUIRE_FALSE(full_twice.ok());
  CHECK(full_twice.error().code == Errc::already_held);
  // Other ops are not the rule's: refused.
  const json sweep = {
      {"created_at", st.now}, {"name", "bob"}, {"ops", json::array({{{"op", "sweep"}, {"leases", json::array()}}})}};
  auto d = gitlocks::plan(s, st.state(), only, sweep, st.now);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().code == Errc::usage);
}

TEST_CASE("the rule: another holder's live claim refuses - the holder's own signature and expiry do not") {
  AliceHoldsX fx;
  Store& st = fx.st;
  auto& s = st.objects();
  gitlocks::EnforcementView& view = fx.view;
  const std::vector<std::string> paths = {"src/x.c", "src/y.c"};
  auto unsigned_ = gitlocks::path_refusals(s, view, std::nullopt, paths).value();
  REQUIRE(unsigned_.size() == 2);
  REQUIRE(unsigned_[0]);
  CHECK(unsigned_[0]->code == Errc::held_path);
  CHECK(unsigned_[0]->fields.at("holder") == actor_hex("alice"));
  CHECK(unsigned_[0]->fields.at("claimed_path") == "src/x.c");
  CHECK(unsigned_[0]->fields.at("expires_at_ms") == st.now + kTtl);
  CHECK_FALSE(unsigned_[0]->fields.at("lease").text().empty());
  CHECK_FALSE(unsigned_[1]);
  auto bob = gitlocks::path_refusals(s, view, actor_hex("bob"), paths).value();
  CHECK(bob[0]);
  CHECK_FALSE(bob[1]);
  auto alice = gitlocks::path_refusals(s, view, actor_hex("alice"), paths).value();
  CHECK_FALSE(alice[0]);
  CHECK_FALSE(alice[1]);
  // Live up to and including expires_at; free one millisecond later.
  view.now = st.now + kTtl;
  CHECK(gitlocks::path_refusals(s, view, std::nullopt, paths).value()[0]);
  view.now = st.now + kTtl + 1;
  CHECK_FALSE(gitlocks::path_refusals(s, view, std::nullopt, paths).value()[0]);
  // A path no claim can name fails closed.
  view.now = st.now;
  auto odd = gitlocks::path_refusals(s, view, std::nullopt, {std::string("src/\xff.c")}).value();
  REQUIRE(odd[0]);
  CHECK(odd[0]->code == Errc::bad_path);
}

TEST_CASE("the rule over commits: the signer is the SSH signature's key - never the author") {
  AliceHoldsX fx;
  Store& st = fx.st;
  auto& s = st.objects();
  const gitlocks::Snapshot& snap = fx.snap;
  gitlocks::EnforcementView& view = fx.view;
  const Oid base = commit(s, write_tree(s, {{"src/x.c", {"x\n"}}, {"src/y.c", {"y\n"}}}), {});
  const Oid touch_x = commit(s, write_tree(s, {{"src/x.c", {"x2\n"}}, {"src/y.c", {"y\n"}}}), {base});
  const Oid touch_y = commit(s, write_tree(s, {{"src/x.c", {"x\n"}}, {"src/y.c", {"y2\n"}}}), {base});
  auto checks = gitlocks::check_commits(s, view, {touch_x, touch_y}).value();
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].signer.signature == "unsigned");
  CHECK_FALSE(checks[0].signer.actor);
  CHECK(checks[0].paths == 1);
  REQUIRE(checks[0].refused.size() == 1);
  CHECK(checks[0].refused[0].path == "src/x.c");
  CHECK(checks[0].refused[0].refusal.fields.at("commit") == touch_x.hex());
  CHECK(checks[0].refused[0].refusal.fields.at("signer").text().empty());
  CHECK(checks[1].ok());
  const json doc = gitlocks::check_report_json(snap, view.now, checks);
  CHECK(doc["checked"] == 2);
  CHECK(doc["refused"] == 1);
  CHECK(doc["commits"][0]["ok"] == false);
  CHECK(doc["commits"][0]["signer"].is_null());
}
