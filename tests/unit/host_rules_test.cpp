// Rules that used to live in the CLI, now in the core for every host: the
// notary discovery check, a PRIVATE policy and its keyring, membership.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/attest.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/vault.hpp"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::actor_hex;
using gitlocks::test::actor_key;

namespace {

json discovery(const gitlocks::Pins& pins) {
  return {{"audience", pins.audience},
          {"service_key", pins.service_key},
          {"clock", "system"},
          {"profiles", {std::string(gitlocks::kProfileGuardTime), std::string(gitlocks::kProfileTimeAdd)}}};
}

std::string refusal(const gitlocks::Status& s) {
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == Errc::store_write);
  return s.error().message;
}

// Deterministic "randomness" for tests: 1, 2, 3, ... in the first byte.
gitlocks::SeedSource counting_seeds() {
  auto n = std::make_shared<std::uint8_t>(0);
  return [n] {
    std::array<std::uint8_t, 32> s{};
    s[0] = ++*n;
    return s;
  };
}

}  // namespace

TEST_CASE("discovery: the pinned notary with both profiles and a system clock is accepted") {
  gitlocks::Pins pins{"locks.example", actor_hex("notary")};
  CHECK(gitlocks::check_discovery_document(discovery(pins), pins, false).ok());
}

TEST_CASE("discovery: a substituted key or audience - a missing profile - a test clock are refused") {
  gitlocks::Pins pins{"locks.example", actor_hex("notary")};
  json d = discovery(pins);
  d["service_key"] = actor_hex("mallory");
  CHECK(refusal(gitlocks::check_discovery_document(d, pins, false, "notary http://n")) ==
        "notary service key " + actor_hex("mallory") + " is not the pinned " + pins.service_key);
  d = discovery(pins);
  d["audience"] = "locks.other";
  CHECK(refusal(gitlocks::check_discovery_document(d, pins, false)) ==
        "notary audience 'locks.other' is not the pinned 'locks.example'");
  d = discovery(pins);
  d["profiles"] = {std::string(gitlocks::kProfileGuardTime)};
  CHECK(refusal(gitlocks::check_discovery_document(d, pins, false, "notary http://n"))
            .rfind("notary http://n does not advertise both profiles", 0) == 0);
  d = discovery(pins);
  d.erase("profiles");
  CHECK_FALSE(gitlocks::check_discovery_document(d, pins, false).ok());
  d = discovery(pins);
  d["clock"] = "test";
  CHECK(refusal(gitlocks::check_discovery_document(d, pins, false)) ==
        "notary runs a 'test' clock: refused (tests only: --allow-test-clock)");
  CHECK(gitlocks::check_discovery_document(d, pins, true).ok());
  d["clock"] = "sundial";
  CHECK_FALSE(gitlocks::check_discovery_document(d, pins, true).ok());
  d = discovery(pins);
  d["service_key"] = 7;  // not a string: not the pinned key
  CHECK_FALSE(gitlocks::check_discovery_document(d, pins, false).ok());
  CHECK_FALSE(gitlocks::check_discovery_document(json::array(), pins, false).ok());
}

TEST_CASE("membership: adding a member twice or removing a stranger or the owner is a usage error") {
  const std::vector<std::string> m = {actor_hex("owner")};
  const std::string owner = actor_hex("owner");
  auto added = gitlocks::next_members(m, actor_hex("bob"), true, owner);
  REQUIRE(added.ok());
  CHECK(*added == std::vector<std::string>{actor_hex("owner"), actor_hex("bob")});
  auto twice = gitlocks::next_members(*added, actor_hex("bob"), true, owner);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().code == Errc::usage);
  CHECK(twice.error().message == "already a member: " + actor_hex("bob").substr(0, 12));
  auto removed = gitlocks::next_members(*added, actor_hex("bob"), false, owner);
  REQUIRE(removed.ok());
  CHECK(*removed == m);
  auto stranger = gitlocks::next_members(m, actor_hex("carol"), false, owner);
  REQUIRE_FALSE(stranger.ok());
  CHECK(stranger.error().message == "not a member: " + actor_hex("carol").substr(0, 12));
  auto owner_out = gitlocks::next_members(m, owner, false, owner);
  REQUIRE_FALSE(owner_out.ok());
  CHECK(owner_out.error().code == Errc::usage);
  CHECK(owner_out.error().message == "the owner cannot be removed");
}

TEST_CASE("private policy: the owner opens epoch 1 and the families are sealed under it") {
  gitlocks::crypto_init();
  json policy = gitlocks::default_policy(std::string(64, 'a'), actor_hex("owner"));
  policy["families"] = json::array({{{"name", "db"}, {"members", {"db/"}}, {"policy", "exclusive"}}});
  gitlocks::EpochKey key{};
  key[0] = 42;
  auto priv = gitlocks::make_private_policy(policy, key, counting_seeds());
  REQUIRE(priv.ok());
  CHECK((*priv)["visibility"] == "PRIVATE");
  CHECK((*priv)["members"] == json::array({actor_hex("owner")}));
  CHECK((*priv)["epoch"] == 1);
  auto vault = gitlocks::Vault::open(*priv, actor_key("owner"));
  REQUIRE(vault.ok());
  const gitlocks::EpochKey* k = vault->key(1);
  REQUIRE(k);
  CHECK(*k == key);  // the sealed box holds exactly the host's key
  auto families = gitlocks::open_document((*priv)["families"], key, std::string(64, 'a'), "policy.json#families");
  REQUIRE(families.ok());
  CHECK(*families == policy["families"]);
  CHECK_FALSE(gitlocks::Vault::open(*priv, actor_key("mallory")).ok());  // not a member
  // A keyring for a member that is not an actor key is refused.
  CHECK_FALSE(gitlocks::seal_keyring(key, 2, {"not-hex"}, counting_seeds()).ok());
}

TEST_CASE("private policy: made from a valid public policy only - its other members stay as they were") {
  gitlocks::crypto_init();
  json policy = gitlocks::default_policy(std::string(64, 'a'), actor_hex("owner"));
  policy["case_insensitive"] = false;
  policy["require_claim"] = {{"paths", {"src/"}}};
  policy["admins"] = json::array();
  gitlocks::EpochKey key{};
  key[0] = 7;
  auto priv = gitlocks::make_private_policy(policy, key, counting_seeds());
  REQUIRE(priv.ok());
  for (const auto& item : policy.items()) {
    const std::string k = item.key();
    const json& v = item.value();
    CAPTURE(k);
    if (k == "format" || k == "families") continue;
    REQUIRE(priv->contains(k));
    CHECK((*priv)[k] == v);
  }
  CHECK((*priv)["format"] == "gitlocks-policy-v3");
  CHECK_FALSE(priv->contains("families"));  // none declared: nothing sealed
  CHECK(gitlocks::parse_policy(*priv).ok());

  // A PRIVATE policy is not made PRIVATE again, and a document that is no
  // policy is refused with parse_policy's error, never an exception.
  auto again = gitlocks::make_private_policy(*priv, key, counting_seeds());
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == gitlocks::Errc::usage);
  CHECK(again.error().message == "the policy is PRIVATE already");
  json no_owner = policy;
  no_owner.erase("owner");
  auto bad = gitlocks::make_private_policy(no_owner, key, counting_seeds());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == gitlocks::Errc::bad_json);
}
