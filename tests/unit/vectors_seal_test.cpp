// Runs tests/vectors/seal/*.json: deterministic sealing of PRIVATE documents
// and keyed resource names must give the same bytes on every host.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "gitlocks/vault.hpp"
#include "vectors.h"
#include "why.h"

namespace fs = std::filesystem;
using gitlocks::json;

TEST_CASE("vectors: sealed documents and keyed names are identical on every host") {
  gitlocks::crypto_init();
  const bool print = std::getenv("GITLOCKS_VECTORS_PRINT") != nullptr;
  auto doc = gitlocks::canon_parse(gitlocks::test::read_bytes(gitlocks::test::vectors_dir() / "seal" / "cases.json"),
                                   gitlocks::CanonMode::lenient);
  REQUIRE_MESSAGE(doc.ok(), gitlocks::test::why(doc));
  std::size_t n = 0;
  for (const auto& c : (*doc)["cases"]) {
    ++n;
    gitlocks::EpochKey key{};
    auto h = gitlocks::sha256(c["key_seed"].get<std::string>());
    std::copy(h.begin(), h.end(), key.begin());
    auto sealed = gitlocks::seal_document(c["plaintext"], key, c["epoch"].get<std::int64_t>(),
                                          c["store"].get<std::string>(), c["location"].get<std::string>());
    REQUIRE(sealed.ok());
    auto name = gitlocks::private_resource_hash(key, c["resource"].get<std::string>());
    if (print) {
      std::cout << json{{"name", c["name"]}, {"sealed", *sealed}, {"resource_hash", name}}.dump() << "\n";
      continue;
    }
    INFO(c["name"].get<std::string>());
    CHECK(*sealed == c["sealed"].get<std::string>());
    CHECK(name == c["resource_hash"].get<std::string>());
    auto opened = gitlocks::open_document(json::parse(c["sealed"].get<std::string>()), key,
                                          c["store"].get<std::string>(), c["location"].get<std::string>());
    REQUIRE(opened.ok());
    CHECK(*opened == c["plaintext"]);
  }
  CHECK(n >= 4);
}
