// Runs tests/vectors/key/*.json: actor keys (key files and bare seeds) as
// hosts pass them to the core (parse_actor_key) — the same cases the WASM
// API's keyActor runs in wasm/test/vectors.test.mjs.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "vectors.h"
#include "why.h"

using gitlocks::json;

TEST_CASE("vectors: actor keys parse to the same actor on every host - or are refused without quoting them") {
  REQUIRE(gitlocks::crypto_init());
  std::size_t n = 0;
  for (const auto& file : gitlocks::test::vector_files("key")) {
    auto doc = gitlocks::canon_parse(gitlocks::test::read_bytes(file), gitlocks::CanonMode::lenient);
    const std::string why = doc.ok() ? "" : file.string() + ": " + doc.error().message;
    REQUIRE_MESSAGE(doc.ok(), why);
    REQUIRE((*doc)["kind"] == "key");
    for (const auto& c : (*doc)["cases"]) {
      ++n;
      INFO(file.filename().string() << ": " << c["name"].get<std::string>());
      auto kp = gitlocks::parse_actor_key(c["text"].get<std::string>());
      const json& expect = c["expect"];
      if (expect.contains("actor")) {
        REQUIRE_MESSAGE(kp.ok(), gitlocks::test::why(kp));
        CHECK(gitlocks::to_hex(kp->public_key) == expect["actor"].get<std::string>());
        continue;
      }
      REQUIRE(!kp.ok());
      CHECK(gitlocks::errc_name(kp.error().code) == expect["error"].get<std::string>());
      CHECK(kp.error().message.find(expect["message"].get<std::string>()) != std::string::npos);
      if (c.contains("secret")) CHECK(kp.error().message.find(c["secret"].get<std::string>()) == std::string::npos);
    }
  }
  CHECK(n >= 15);
}
