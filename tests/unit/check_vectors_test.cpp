// The claims-rule vectors (tests/vectors/check/, README "Check vectors"):
// a bundle made by gen.sh and, in cases.json, the verdict the rule must give
// each named commit, written by hand from the story in gen.sh. The same
// file runs in Node and Chromium (wasm/test/vectors.test.mjs,
// browser.test.mjs) through the npm module's Store.check.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/canon.hpp"
#include "gitlocks/enforce.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/store.hpp"
#include "snapshot.h"
#include "vectors.h"
#include "why.h"

using gitlocks::json;

TEST_CASE("check vectors: every named commit gets the verdict written in cases.json") {
  REQUIRE(gitlocks::crypto_init());
  const auto dir = gitlocks::test::vectors_dir() / "check";
  auto doc = gitlocks::canon_parse(gitlocks::test::read_bytes(dir / "cases.json"), gitlocks::CanonMode::lenient);
  REQUIRE_MESSAGE(doc.ok(), gitlocks::test::why(doc));
  REQUIRE(doc->value("kind", "") == "check");
  auto store = gitlocks::open_pack_store(gitlocks::test::read_bytes(dir / (*doc)["bundle"].get<std::string>()));
  REQUIRE_MESSAGE(store.ok(), gitlocks::test::why(store));
  auto tip = (*store)->read_ref((*doc)["state"].get<std::string>());
  REQUIRE(tip.ok());
  REQUIRE(tip->has_value());
  // Never act on unverified history: the store replays as valid first.
  std::size_t bad = 0;
  auto replay = gitlocks::replay_chain(**store, **tip, {}, [&](const gitlocks::Verdict& v) {
    if (!v.ok) ++bad;
  });
  REQUIRE_MESSAGE(replay.ok(), gitlocks::test::why(replay));
  REQUIRE(bad == 0);
  auto snap = gitlocks::detail::read_unverified_snapshot(**store, *tip);
  REQUIRE(snap.ok());
  gitlocks::EnforcementView view;
  view.snap = &*snap;
  view.now = gitlocks::check_instant(*snap, (*doc)["now_ms"].get<std::int64_t>());
  std::vector<gitlocks::Oid> ids;
  for (const auto& c : (*doc)["cases"]) {
    auto id = (*store)->read_ref("refs/vectors/" + c["commit"].get<std::string>());
    REQUIRE(id.ok());
    REQUIRE_MESSAGE(id->has_value(), c["commit"]);
    ids.push_back(**id);
  }
  auto checks = gitlocks::check_commits(**store, view, ids);
  REQUIRE_MESSAGE(checks.ok(), gitlocks::test::why(checks));
  REQUIRE(checks->size() == ids.size());
  std::size_t refused = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const json& c = (*doc)["cases"][i];
    const gitlocks::CommitCheck& got = (*checks)[i];
    CAPTURE(c["commit"].get<std::string>());
    CHECK(got.commit == ids[i]);
    if (c["signer"].is_null()) {
      CHECK_FALSE(got.signer.actor);
      CHECK(got.signer.signature == "unsigned");
    } else {
      REQUIRE(got.signer.actor);
      CHECK(*got.signer.actor == gitlocks::test::actor_hex(c["signer"].get<std::string>()));
      CHECK(got.signer.signature == "valid");
    }
    CHECK(got.paths == c["paths"].get<std::size_t>());
    REQUIRE(got.refused.size() == c["refused"].size());
    for (std::size_t j = 0; j < got.refused.size(); ++j) {
      const json& want = c["refused"][j];
      CHECK(got.refused[j].path == want["path"].get<std::string>());
      CHECK(gitlocks::errc_name(got.refused[j].refusal.code) == want["code"].get<std::string>());
      CHECK(got.refused[j].refusal.reason() == want["reason"].get<std::string>());
      CHECK(got.refused[j].refusal.fields.at("commit") == ids[i].hex());
    }
    refused += got.refused.empty() ? 0 : 1;
  }
  CHECK(ids.size() >= 14);
  CHECK(refused >= 7);
}
