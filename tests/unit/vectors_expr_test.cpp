// Runs the shared expression vectors tests/vectors/expr/*.json (format in
// tests/vectors/README.md, section "Expression vectors"). The same files run
// natively and under WebAssembly (NODERAWFS gives the real file system).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/expr.hpp"
#include "vectors.h"

namespace fs = std::filesystem;
using gitlocks::json;

namespace {

// Compares an outcome (ok, or an error) with a case's "expect". Returns an
// empty string on a match, otherwise what differed.
std::string compare_error(const gitlocks::Error& e, const json& expect) {
  if (!expect.contains("error"))
    return "unexpected error " + std::string(gitlocks::errc_name(e.code)) + ": " + e.message;
  std::string want_code = expect.value("error", "");
  std::string want_msg = expect.value("message", "");
  if (gitlocks::errc_name(e.code) != want_code)
    return "expected error " + want_code + ", got " + std::string(gitlocks::errc_name(e.code)) + ": " + e.message;
  if (e.message.find(want_msg) == std::string::npos)
    return "message \"" + e.message + "\" does not contain \"" + want_msg + "\"";
  return "";
}

std::string run_guard_case(const json& c) {
  const json& expect = c["expect"];
  json body = c.contains("body") ? c["body"] : json::object();
  auto r = gitlocks::derive_interval(c["guards"], body);
  if (!r.ok()) return compare_error(r.error(), expect);
  if (!expect.contains("interval"))
    return "expected error " + expect.value("error", "?") + ", got interval [" + std::to_string(r->lo) + ", " +
           std::to_string(r->hi) + "]";
  const json& want = expect["interval"];
  if (!want.is_array() || want.size() != 2 || !want[0].is_number_integer() || !want[1].is_number_integer())
    return "malformed expect.interval";
  gitlocks::Interval w{want[0].get<std::int64_t>(), want[1].get<std::int64_t>()};
  if (*r != w)
    return "expected [" + std::to_string(w.lo) + ", " + std::to_string(w.hi) + "], got [" + std::to_string(r->lo) +
           ", " + std::to_string(r->hi) + "]";
  return "";
}

std::string run_action_case(const json& c) {
  const json& expect = c["expect"];
  auto s = gitlocks::action_preflight(c["action"]);
  if (!s.ok()) return compare_error(s.error(), expect);
  if (expect.value("ok", false) != true) return "expected an error, action_preflight succeeded";
  return "";
}

}  // namespace

TEST_CASE("vectors: expr") {
  auto files = gitlocks::test::vector_files("expr");
  REQUIRE_MESSAGE(!files.empty(), "no vector files in " << gitlocks::test::vectors_dir().string() << "/expr");
  std::size_t total = 0;
  for (const auto& file : files) {
    auto parsed = gitlocks::canon_parse(gitlocks::test::read_bytes(file), gitlocks::CanonMode::lenient);
    if (!parsed.ok()) {
      FAIL_CHECK(file.filename().string() << ": " << parsed.error().message);
      continue;
    }
    const json& doc = *parsed;
    CHECK_MESSAGE(doc.value("kind", "") == "expr", file.filename().string() << ": kind must be \"expr\"");
    if (!doc.contains("cases") || !doc["cases"].is_array()) {
      FAIL_CHECK(file.filename().string() << ": missing \"cases\" array");
      continue;
    }
    for (const auto& c : doc["cases"]) {
      ++total;
      std::string name = file.filename().string() + ": " + c.value("name", "(unnamed)");
      if (!c.contains("expect") || !c["expect"].is_object() || (!c.contains("guards") && !c.contains("action"))) {
        FAIL_CHECK(name << ": a case needs \"expect\" and \"guards\" or \"action\"");
        continue;
      }
      std::string diff = c.contains("action") ? run_action_case(c) : run_guard_case(c);
      CHECK_MESSAGE(diff.empty(), name << ": " << diff);
    }
  }
  // A silently empty or missing directory must fail.
  CHECK(total >= 70);
}
