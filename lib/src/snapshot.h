// snapshot.h — the tip's layout read as it is, verifying nothing (private).
//
// Only verified_snapshot() (gitlocks/trust.hpp) calls it in the product: it
// reads the tip's state tree, format and policy, then replaces every fact a
// writer trusts (store id, policy hash, pins, last T, epoch) by the ones the
// verified chain established. Test fixtures that build their own chains in
// memory use it directly.
#pragma once

#include <optional>

#include "gitlocks/transition.hpp"

namespace gitlocks::detail {

Result<Snapshot> read_unverified_snapshot(ObjectStore& store, const std::optional<Oid>& tip);

// Gives a snapshot of a PRIVATE store the member's keys `vault` and the
// codec of its epoch (Snapshot::keys); a public store or no vault: none.
// verified_snapshot's, with the vault the verifier brought; fixtures use it
// on the snapshots of their in-memory chains.
void attach_keys(Snapshot& snap, const Vault* vault);

}  // namespace gitlocks::detail
