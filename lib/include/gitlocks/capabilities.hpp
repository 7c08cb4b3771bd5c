// gitlocks/capabilities.hpp — what this core can do, by name (seed 002:
// "the native SDK exposes owner_guard_time_enable and
// private_time_add_guard_windows in its capabilities"). A client checks a
// capability explicitly; it never infers one from a version number or from
// an older feature (an older guard-time client cannot execute time_add).
// Every host reports this one list: `git-locks capabilities`, the npm
// module's capabilities().
#pragma once

#include <string_view>
#include <vector>

#include "gitlocks/canon.hpp"

namespace gitlocks {

// The format of the report capabilities_json() makes.
inline constexpr std::string_view kCapabilitiesFormat = "gitlocks-capabilities-v1";

enum class Capability {
  // The owner enables guard time: the owner-signed admin transition
  // {"admin":{"op":"guard-time-enable",...}} (plan.hpp; SPEC §6), which pins
  // a notary's audience and service key in the policy, with its replay.
  owner_guard_time_enable,
  // PRIVATE stores under guard time with the time-add-guard-window-v1
  // profile (kProfileTimeAdd): leases bounded by time_add guards over the
  // sealed expires_at, whose derived interval (the guard window) is the only
  // time disclosed to the notary (docs/PRIVATE.md).
  private_time_add_guard_windows,
  // The owner changes notary or turns guard time off: the owner-signed
  // admin transition {"admin":{"op":"guard-time-set",...}} (seed 002's
  // explicit migration before any signer change), attested by the notary
  // it installs, with its replay; older commits keep their pins.
  owner_guard_time_migrate,
  // The owner's checkpoint: the admin transition {"admin":{"op":
  // "checkpoint",...}} (plan.hpp checkpoint_of; docs/FORMAT.md
  // "Checkpoints"), which changes nothing and names the commit it follows,
  // with its replay.
  owner_checkpoint,
  // Checkpoints by policy: the policy's `checkpoint` member (docs/FORMAT.md
  // "Checkpoints by policy"): keys it names publish checkpoints besides the
  // owner, and `every` asks for them; with their replay.
  policy_checkpoints,
  // Witness cosignatures of checkpoints (attest.hpp make_cosignature,
  // open_cosignature; trust.hpp check_cosigned; docs/FORMAT.md "Witnesses").
  witness_cosignatures,
  // The handoff op: a live lease handed to another key in one transition
  // (plan.hpp; docs/FORMAT.md "Hand-off").
  lease_handoff,
  // Path leases of mode "intent": announcements that lock nothing
  // (docs/FORMAT.md "Intent").
  lease_intent,
  // The waiters' queue: ticket, ticket-renew, ticket-drop, and claims that
  // respect it (docs/FORMAT.md "Tickets").
  lease_queue,
};

// The stable name of a capability, e.g. "owner_guard_time_enable".
std::string_view capability_name(Capability c);

// Every capability of this build, in a fixed order.
const std::vector<Capability>& capabilities();

// {"capabilities":[NAME,...],"format":"gitlocks-capabilities-v1"}: names in
// the order of capabilities(). Names are only ever added.
json capabilities_json();

}  // namespace gitlocks
