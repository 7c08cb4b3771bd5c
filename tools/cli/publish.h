// publish.h — one transition from snapshot to ref (SPEC §5, seed 000):
// snapshot (libgit2) -> build_candidate (core: plan, admission time, signed
// packet, commit objects) -> compare-and-swap of refs/locks/state through
// `git update-ref --stdin`.
//
//   expected-root mismatch / creation lost   fresh snapshot and plan; at most
//                                            200 replans, then
//                                            stale-retries-exhausted (exit 1)
//   refs/locks/state.lock exists             the same candidate again: at most
//                                            6 attempts, 5 pauses of 20 ms,
//                                            then store-write (exit 2); the
//                                            lock file is never touched
//   anything else                            store-write at once
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "cli.h"
#include "gitlocks/transition.hpp"
#include "vault_host.h"

namespace gitlocks::cli {

inline constexpr int kMaxReplans = 200;
inline constexpr int kLockAttempts = 6;
inline constexpr int kLockPauseMs = 20;

// Builds the body to publish against a fresh snapshot at host time `now`;
// nullopt when there is nothing to do. Called again after every replan.
using BodyFn = std::function<Result<std::optional<json>>(const Snapshot& snap, std::int64_t now)>;

struct Published {
  Snapshot source;                     // the snapshot the body was built on
  std::optional<Candidate> candidate;  // nullopt: nothing was published
};

// Publishes one transition as `command`; records the number of update-ref
// runs in ctx.attempts. Never reports success unless the ref moved.
Result<Published> publish(Context& ctx, const std::string& command, const BodyFn& make_body);

// {"created_at":now,"name":display name,"ops":ops}
json transition_body(Context& ctx, std::int64_t now, json ops);

// Error for commands that need an existing store.
Status require_store(Context& ctx, const Snapshot& snap);
// "no lock store in this repository ..." (or "... on remote NAME ...").
std::string no_store_message(Context& ctx);

// The current snapshot, verified from the clone's checkpoint (checkpoint.h):
// what every command whose answer is relied on acts on.
Result<Snapshot> current_snapshot(Context& ctx);

// Prints the success of a publication: one JSON object with --json
//   {"op","commit","action","admitted_at_ms","attempts","leases":[...],"ops":[...]}
// else one human line per op.
int report_published(Context& ctx, const Published& p);

}  // namespace gitlocks::cli
