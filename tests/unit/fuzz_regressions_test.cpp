// Replays every file of every fuzz regression folder
// (tests/fuzz/regressions/<target>/) and of the seed corpus
// (tests/fuzz/corpus/<target>/) through the property the fuzz target checks
// (tests/fuzz/properties.h, batch_property.h): the same function, natively
// and under WebAssembly (NODERAWFS gives the real file system). A regression
// folder holding nothing but .keep fails: every target keeps real inputs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../fuzz/batch_property.h"
#include "../fuzz/properties.h"
#include "vectors.h"

namespace fs = std::filesystem;

namespace {

const fs::path kFuzzDir = gitlocks::test::vectors_dir() / ".." / "fuzz";

// (name, bytes) of every regular file of `folder` except dot files, sorted.
std::vector<std::pair<std::string, std::string>> files_of(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file() || name[0] == '.') continue;
    std::ifstream f(it->path(), std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    out.emplace_back(name, ss.str());
  }
  REQUIRE_MESSAGE(!ec, "cannot list " << folder.string() << ": " << ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// Runs `property` over the regressions and the corpus of `target`; returns
// how many inputs it ran.
std::size_t replay(const std::string& target, const std::function<std::string(std::string_view)>& property) {
  auto regressions = files_of(kFuzzDir / "regressions" / target);
  REQUIRE_MESSAGE(!regressions.empty(), "tests/fuzz/regressions/" << target << " holds no regression input");
  auto corpus = files_of(kFuzzDir / "corpus" / target);
  REQUIRE_MESSAGE(!corpus.empty(), "tests/fuzz/corpus/" << target << " holds no seed");
  std::size_t n = 0;
  for (const auto& set : {regressions, corpus}) {
    for (const auto& input : set) {
      // A named copy: doctest's CAPTURE cannot take a structured binding in C++17.
      const auto& name = input.first;
      const auto& bytes = input.second;
      CAPTURE(name);
      CHECK(property(bytes) == "");
      ++n;
    }
  }
  return n;
}

const std::string kDeep = std::string(100000, '[') + std::string(100000, ']');

}  // namespace

TEST_CASE("fuzz regressions: canonical JSON") {
  CHECK(replay("canon", gitlocks::fuzz::canon_property) >= 20);
  CHECK(gitlocks::fuzz::canon_property(kDeep) == "");
  // The property can fail: a decoder that accepted unsorted keys strictly would
  // be caught.
  CHECK_FALSE(gitlocks::canon_parse("{\"b\":1,\"a\":2}", gitlocks::CanonMode::strict).ok());
}

TEST_CASE("fuzz regressions: packets - attestations - admission requests") {
  gitlocks::crypto_init();
  CHECK(replay("packet", gitlocks::fuzz::packet_property) >= 15);
  CHECK(gitlocks::fuzz::packet_property(kDeep) == "");
  // No regression input is a genuinely signed document; every seed is one.
  for (const auto& input : files_of(kFuzzDir / "regressions" / "packet")) {
    // Named copies: doctest's CAPTURE cannot take a structured binding in C++17.
    const auto& name = input.first;
    const auto& bytes = input.second;
    CAPTURE(name);
    CHECK_FALSE(gitlocks::open_packet(bytes).ok());
    CHECK_FALSE(gitlocks::open_attestation(bytes).ok());
    CHECK_FALSE(gitlocks::open_admission_request(bytes).ok());
  }
  for (const auto& input : files_of(kFuzzDir / "corpus" / "packet")) {
    // Named copies: doctest's CAPTURE cannot take a structured binding in C++17.
    const auto& name = input.first;
    const auto& bytes = input.second;
    CAPTURE(name);
    CHECK((gitlocks::open_packet(bytes).ok() || gitlocks::open_attestation(bytes).ok() ||
           gitlocks::open_admission_request(bytes).ok()));
  }
}

TEST_CASE("fuzz regressions: guard expressions against the brute-force oracle") {
  CHECK(replay("expr", gitlocks::fuzz::expr_property) >= 30);
  CHECK(gitlocks::fuzz::expr_property(kDeep) == "");
}

TEST_CASE("fuzz regressions: the expression oracle fails a wrong interval") {
  // The oracle is independent of derive_interval: check it against intervals
  // worked out by hand from SPEC §6, and that the comparison notices a
  // deliberately wrong bound.
  using gitlocks::json;
  const std::int64_t max = gitlocks::kMaxSafeInteger;
  auto lit = [](std::int64_t v) { return json{{"from", "literal"}, {"value", v}}; };
  const json t = {{"from", "time"}};
  auto add = [](json ts, json ms) { return json{{"from", "time_add"}, {"timestamp", ts}, {"milliseconds", ms}}; };
  auto cmp = [](const char* op, json l, json r) { return json{{"op", op}, {"left", l}, {"right", r}}; };
  // T + 1000 <= e and T + 60000 >= e with e = 2^53-1: T in [MAX-60000,
  // MAX-60000] (the seed's example).
  const json seed = json::array({cmp("lte", add(t, lit(1000)), lit(max)), cmp("gte", add(t, lit(60000)), lit(max))});
  gitlocks::fuzz::oracle::Guards g(seed, json::object());
  auto admitted = [&](std::int64_t at) {
    auto [s, holds] = g.at(at);
    return s == gitlocks::fuzz::oracle::ok && holds;
  };
  CHECK(admitted(max - 60000));
  CHECK_FALSE(admitted(max - 60001));
  CHECK_FALSE(admitted(max - 59999));  // T + 60000 leaves the safe domain
  CHECK(gitlocks::fuzz::interval_matches_oracle(seed, json::object(), {max - 60000, max - 59999, max - 60001}) == "");
  // gt 5 and lt 9 is [6, 8]; the oracle and the core agree on it...
  const json small = json::array({cmp("gt", t, lit(5)), cmp("lt", t, lit(9))});
  CHECK(gitlocks::fuzz::interval_matches_oracle(small, json::object(), gitlocks::fuzz::windows(20)) == "");
  CHECK(gitlocks::derive_interval(small, json::object()).value() == gitlocks::Interval{6, 8});
  // ...and any other answer is reported: one bound off by one, an empty
  // interval, an error where none is due.
  gitlocks::fuzz::oracle::Guards sg(small, json::object());
  using gitlocks::Interval;
  using gitlocks::Result;
  CHECK(gitlocks::fuzz::oracle_agrees(sg, Result<Interval>(Interval{6, 8}), {}) == "");
  for (const Interval& wrong : {Interval{5, 8}, Interval{7, 8}, Interval{6, 7}, Interval{6, 9}}) {
    CAPTURE(wrong.lo);
    CAPTURE(wrong.hi);
    CHECK(gitlocks::fuzz::oracle_agrees(sg, Result<Interval>(wrong), {}) != "");
  }
  CHECK(gitlocks::fuzz::oracle_agrees(sg, gitlocks::make_error(gitlocks::Errc::empty_interval, "x"),
                                      gitlocks::fuzz::windows(20)) != "");
  CHECK(gitlocks::fuzz::oracle_agrees(sg, gitlocks::make_error(gitlocks::Errc::arithmetic_overflow, "x"), {}) != "");
  // A time-free overflow is an error at every T, which an interval contradicts.
  const json overflow = json::array({cmp("lt", add(lit(max), lit(1)), lit(0)), cmp("gte", t, lit(0))});
  gitlocks::fuzz::oracle::Guards og(overflow, json::object());
  CHECK(og.at(5).first == gitlocks::fuzz::oracle::error_overflow);
  CHECK(gitlocks::fuzz::oracle_agrees(og, Result<Interval>(Interval{0, max}), {}) != "");
  CHECK(gitlocks::fuzz::interval_matches_oracle(overflow, json::object(), {}) == "");
}

TEST_CASE("fuzz regressions: repository paths") { CHECK(replay("path", gitlocks::fuzz::path_property) >= 20); }

TEST_CASE("fuzz regressions: batch input") { CHECK(replay("batch", gitlocks::fuzz::batch_property) >= 15); }
