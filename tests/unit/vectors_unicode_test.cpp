// Runs tests/vectors/unicode/*.json: NFC, case folding and the canonical
// path form of a store (path.hpp, unicode.hpp) — the same cases the WASM
// API's unicodeForms and normalizePath run in wasm/test/vectors.test.mjs.
#include <doctest/doctest.h>

#include <string>

#include "gitlocks/canon.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/unicode.hpp"
#include "vectors.h"
#include "why.h"

using gitlocks::json;

namespace {

void check_path(const gitlocks::Result<std::string>& got, const json& want) {
  if (want.is_string()) {
    REQUIRE_MESSAGE(got.ok(), gitlocks::test::why(got));
    CHECK(*got == want.get<std::string>());
    return;
  }
  REQUIRE_FALSE(got.ok());
  CHECK(gitlocks::errc_name(got.error().code) == want["error"].get<std::string>());
}

}  // namespace

TEST_CASE("vectors: unicode NFC - case folding and path forms are identical on every host") {
  std::size_t n = 0;
  for (const auto& file : gitlocks::test::vector_files("unicode")) {
    auto doc = gitlocks::canon_parse(gitlocks::test::read_bytes(file), gitlocks::CanonMode::lenient);
    const std::string why = doc.ok() ? "" : file.string() + ": " + doc.error().message;
    REQUIRE_MESSAGE(doc.ok(), why);
    REQUIRE((*doc)["kind"] == "unicode");
    CHECK((*doc)["unicode_version"] == std::string(gitlocks::unicode_version()));
    for (const auto& c : (*doc)["cases"]) {
      ++n;
      INFO(file.filename().string() << ": " << c["name"].get<std::string>());
      const std::string input = c["input"].get<std::string>();
      const json& expect = c["expect"];
      auto nfc = gitlocks::to_nfc(input);
      REQUIRE(nfc.ok());
      CHECK(*nfc == expect["nfc"].get<std::string>());
      auto fold = gitlocks::case_fold_nfc(input);
      REQUIRE(fold.ok());
      CHECK(*fold == expect["fold"].get<std::string>());
      check_path(gitlocks::normalize_path_input(input), expect["path"]);
      check_path(gitlocks::normalize_path_input(input, gitlocks::PathCase::insensitive), expect["path_ci"]);
    }
  }
  CHECK(n >= 15);
}
