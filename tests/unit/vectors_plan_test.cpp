// Runs the shared planner vectors tests/vectors/plan/*.json (format in
// tests/vectors/README.md, section "Planner vectors") through the real core
// and an in-memory libgit2 store. The same files run natively and in WASM;
// successor state tree ids must match the recorded ones byte for byte, and
// the successor's records the expected ones (which tests/reference/
// golden_plan.py turns into the same tree ids with git plumbing).
//
// GITLOCKS_VECTORS_PRINT=1 prints the produced tree ids as JSON Lines instead
// of requiring them (used once to record golden ids; see gen_plan_vectors.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fixture.h"
#include "vectors.h"
#include "why.h"

namespace fs = std::filesystem;
using gitlocks::json;

namespace {

// "$K.J" names the J-th lease created by step K of the same case.
json resolve_refs(json v, const std::vector<json>& step_leases) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.size() > 1 && s[0] == '$') {
      auto dot = s.find('.');
      std::size_t k = std::stoul(s.substr(1, dot - 1));
      std::size_t j = std::stoul(s.substr(dot + 1));
      return step_leases.at(k).at(j)["lease"];
    }
    return v;
  }
  if (v.is_array() || v.is_object())
    for (auto& e : v) e = resolve_refs(e, step_leases);
  return v;
}

// Runs one case; returns "" or a description of the first difference.
std::string run_case(const json& c, bool print) {
  using namespace gitlocks;
  crypto_init();
  auto store = open_memory_store().value();
  json policy = default_policy(std::string(64, 'a'), test::actor_hex("owner"));
  if (c.contains("policy"))
    for (auto& [k, v] : c["policy"].items()) policy[k] = v;
  const std::string name = c["name"].get<std::string>();
  auto init = build_candidate(*store, Snapshot{}, test::actor_key("owner"), "init", sha256_hex(name + ":init"),
                              json{{"init", policy}}, 0);
  if (!init.ok()) return "init failed: " + init.error().message;
  (void)memory_store_set_ref(*store, kStateRef, init->commit);
  if (print) std::cout << json{{"case", name}, {"step", -1}, {"init", init->outcome.result_state}}.dump() << "\n";
  if (!print && c.value("init_state", "") != init->outcome.result_state.hex())
    return "init state " + init->outcome.result_state + " != recorded " + c.value("init_state", "(none)");

  std::vector<json> step_leases;
  for (std::size_t i = 0; i < c["steps"].size(); ++i) {
    const json& s = c["steps"][i];
    const json& expect = s["expect"];
    const std::string where = "step " + std::to_string(i) + ": ";
    const std::int64_t now = s["now"].get<std::int64_t>();
    json body = {{"created_at", now}, {"name", s["actor"]}, {"ops", resolve_refs(s["ops"], step_leases)}};
    auto tip = store->read_ref(kStateRef).value();
    auto snap = detail::read_unverified_snapshot(*store, tip);
    if (!snap.ok()) return where + snap.error().message;
    auto r = build_candidate(*store, *snap, test::actor_key(s["actor"].get<std::string>()), "vector",
                             sha256_hex(name + ":" + std::to_string(i)), body, now);
    if (!r.ok()) {
      step_leases.push_back(json::array());
      if (!expect.contains("error"))
        return where + "unexpected " + std::string(errc_name(r.error().code)) + ": " + r.error().message;
      if (errc_name(r.error().code) != expect["error"].get<std::string>())
        return where + "expected " + expect["error"].get<std::string>() + ", got " +
               std::string(errc_name(r.error().code)) + ": " + r.error().message;
      // Where the core gives a sub-code (docs/FORMAT.md), the vector may name it.
      if (expect.contains("reason") && r.error().reason() != expect["reason"].get<std::string>())
        return where + "expected reason " + expect["reason"].get<std::string>() + ", got " +
               std::string(r.error().reason()) + ": " + r.error().message;
      continue;
    }
    if (expect.contains("error")) return where + "expected " + expect["error"].get<std::string>() + ", got success";
    step_leases.push_back(r->outcome.leases);
    (void)memory_store_set_ref(*store, kStateRef, r->commit);
    if (gitlocks::action_name(r->outcome.action) != expect.value("action", ""))
      return where + "action " + gitlocks::action_name(r->outcome.action) + " != " + expect.value("action", "");
    json iv = json::array({r->outcome.interval.lo, r->outcome.interval.hi});
    if (iv != expect["interval"]) return where + "interval " + iv.dump() + " != " + expect["interval"].dump();
    if (expect.contains("generations")) {
      StateReader reader(*store, r->outcome.result_state);
      for (auto& [res, gen] : expect["generations"].items()) {
        auto rec = reader.record(res);
        if (!rec.ok() || !*rec || (**rec)["generation"] != gen)
          return where + "generation of " + res + " is not " + gen.dump();
      }
    }
    // The records are derived independently of the core (tests/reference/golden_store.py).
    if (!expect.contains("records")) return where + "no expected records";
    json records = json::array();
    StateReader reader(*store, r->outcome.result_state);
    auto walked = reader.for_each_record([&](const json& rec) {
      records.push_back(rec);
      return true;
    });
    if (!walked.ok()) return where + walked.error().message;
    auto key = [](const json& rec) { return rec["kind"].get<std::string>() + ":" + rec["name"].get<std::string>(); };
    std::sort(records.begin(), records.end(), [&](const json& a, const json& b) { return key(a) < key(b); });
    if (records != expect["records"]) return where + "records " + records.dump() + " != " + expect["records"].dump();
    if (print) {
      std::cout << json{{"case", name}, {"step", i}, {"state", r->outcome.result_state}}.dump() << "\n";
    } else if (expect.value("state", "") != r->outcome.result_state.hex()) {
      return where + "state " + r->outcome.result_state + " != recorded " + expect.value("state", "(none)");
    }
  }
  return "";
}

}  // namespace

TEST_CASE("vectors: planner scenarios give the recorded outcomes and tree ids") {
  const bool print = std::getenv("GITLOCKS_VECTORS_PRINT") != nullptr;
  std::size_t cases = 0;
  for (const auto& file : gitlocks::test::vector_files("plan")) {
    auto doc = gitlocks::canon_parse(gitlocks::test::read_bytes(file), gitlocks::CanonMode::lenient);
    REQUIRE_MESSAGE(doc.ok(), file.string() << ": " << gitlocks::test::why(doc));
    REQUIRE((*doc)["kind"] == "plan");
    for (const auto& c : (*doc)["cases"]) {
      ++cases;
      std::string diff = run_case(c, print);
      CHECK_MESSAGE(diff.empty(), file.filename().string() << " / " << c["name"].get<std::string>() << ": " << diff);
    }
  }
  CHECK(cases >= 40);
}
