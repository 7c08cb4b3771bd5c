// capabilities: the list every host reports (seed 002), and that each name
// is a feature this core really has.
#include "gitlocks/capabilities.hpp"

#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/vault.hpp"
#include "why.h"

using gitlocks::Capability;
using gitlocks::json;
using gitlocks::test::actor_hex;
using gitlocks::test::actor_key;

TEST_CASE(
    "capabilities: the report names owner_guard_time_enable - private_time_add_guard_windows - "
    "owner_guard_time_migrate - owner_checkpoint - policy_checkpoints - witness_cosignatures - lease_handoff - "
    "lease_intent and lease_queue") {
  CHECK(gitlocks::capabilities() ==
        std::vector<Capability>{Capability::owner_guard_time_enable, Capability::private_time_add_guard_windows,
                                Capability::owner_guard_time_migrate, Capability::owner_checkpoint,
                                Capability::policy_checkpoints, Capability::witness_cosignatures,
                                Capability::lease_handoff, Capability::lease_intent, Capability::lease_queue});
  CHECK(
      gitlocks::canon_dump(gitlocks::capabilities_json()).value() ==
      R"({"capabilities":["owner_guard_time_enable","private_time_add_guard_windows","owner_guard_time_migrate",)"
      R"("owner_checkpoint","policy_checkpoints","witness_cosignatures","lease_handoff","lease_intent","lease_queue"],)"
      R"("format":"gitlocks-capabilities-v1"})");
}

// The two features the names stand for, together: the owner of a PRIVATE
// store enables guard time, and a lease bounded by the time_add guards is
// admitted at the notary's T inside its guard window, which is all the
// notary learns.
TEST_CASE("capabilities: each named feature works - guard time enabled by the owner of a PRIVATE store") {
  gitlocks::crypto_init();
  const std::string store_id(64, 'c');
  gitlocks::EpochKey epoch{};
  json pol = gitlocks::default_policy(store_id, actor_hex("owner"));
  pol["format"] = gitlocks::kPrivatePolicyFormat;
  pol["visibility"] = "PRIVATE";
  pol["members"] = json::array({actor_hex("owner")});
  pol["epoch"] = 1;
  pol["keyring"] = {
      {"1",
       {{actor_hex("owner"),
         gitlocks::seal_epoch_key(epoch, actor_key("owner").public_key, gitlocks::sha256("capabilities")).value()}}}};
  pol.erase("families");
  gitlocks::test::Store s(json::object(), "owner", pol);
  auto vault =
      gitlocks::Vault::open(gitlocks::StateReader(s.objects(), s.state()).policy().value(), actor_key("owner")).value();
  s.vault = &vault;
  gitlocks::test::TestNotary notary;
  s.admit = notary.fn();
  notary.clock = s.now;

  // owner_guard_time_enable
  auto enabled = gitlocks::test::enable_guard_time(s, "owner", notary.pins);
  REQUIRE_MESSAGE(enabled.ok(), gitlocks::test::why(enabled));
  CHECK(s.snapshot().guard_time() == notary.pins);

  // private_time_add_guard_windows: a 60 s lease, the default bounds
  // 1 s <= expires_at - T <= 1 h, so the window is [e - 3600000, e - 1000].
  const std::int64_t e = s.now + 60'000;
  notary.seen.clear();
  auto claimed = s.claim("owner", "secret/plan.md", 60'000);
  REQUIRE_MESSAGE(claimed.ok(), gitlocks::test::why(claimed));
  CHECK(claimed->admitted_at_ms == notary.clock);
  CHECK(claimed->packet["interval"] == json::array({e - 3'600'000, e - 1000}));
  CHECK(claimed->packet["body"].contains("sealed"));
  REQUIRE(notary.seen.size() == 1);
  CHECK(notary.seen[0].find(std::to_string(e - 1000)) != std::string::npos);
  CHECK(notary.seen[0].find(std::to_string(e)) == std::string::npos);  // the sealed expiry itself
  CHECK(notary.seen[0].find("expires_at") == std::string::npos);
  CHECK(notary.seen[0].find("secret/plan.md") == std::string::npos);
  // T outside the window is refused.
  notary.clock = e - 999;
  CHECK(s.claim("owner", "secret/other.md", 60'000).error().code == gitlocks::Errc::guard_window);

  // owner_guard_time_migrate: another notary admits the change to itself.
  gitlocks::test::TestNotary next("next-notary", "next.example");
  next.clock = e - 1000;
  s.admit = next.fn();
  auto moved = s.submit("owner", "guard-time-migrate",
                        gitlocks::ops::admin_guard_time_set(
                            gitlocks::ops::guard_time_pins(next.pins.audience, next.pins.service_key, "GUARD_WINDOW"),
                            s.snapshot().policy_hash));
  REQUIRE_MESSAGE(moved.ok(), gitlocks::test::why(moved));
  CHECK(s.snapshot().guard_time() == next.pins);
  // owner_checkpoint: the owner's checkpoint of the tip, attested like any
  // transition, in a PRIVATE store: the state stays as it is.
  const gitlocks::Oid before = s.state();
  auto checkpointed =
      s.submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(s.tip()->hex(), s.snapshot().policy_hash));
  REQUIRE_MESSAGE(checkpointed.ok(), gitlocks::test::why(checkpointed));
  CHECK(s.state() == before);
  CHECK(checkpointed->packet["action"] == "checkpoint");
  gitlocks::ReplayOptions with_keys;
  with_keys.vault = &vault;
  std::size_t bad = 0;
  REQUIRE(gitlocks::replay_chain(s.objects(), *s.tip(), with_keys, [&](const gitlocks::Verdict& v) {
            if (!v.ok) ++bad;
          }).ok());
  CHECK(bad == 0);
}
