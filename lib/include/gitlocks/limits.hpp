// gitlocks/limits.hpp — the planner's limits and the hosts' defaults, named
// once. The planner refuses a body beyond a limit (usage, the message names
// the limit); a host that splits or checks input early uses the same
// constants, so the two cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gitlocks {

// Ops in one transition body ({"ops":[...]}); a host with more splits them
// into several transitions.
inline constexpr std::size_t kMaxOps = 10000;

// Bytes of a lease's optional "note".
inline constexpr std::size_t kMaxNoteBytes = 1024;

// Bytes of the holder's display name (the body's "name").
inline constexpr std::size_t kMaxNameBytes = 256;

// Bytes of a semaphore's name (at least one, no control characters).
inline constexpr std::size_t kMaxSemNameBytes = 255;

// The store's queue holds at most this many tickets, each waiting for at
// most kMaxTicketWants resources (docs/FORMAT.md "Tickets").
inline constexpr std::size_t kMaxTickets = 256;
inline constexpr std::size_t kMaxTicketWants = 64;

// The largest limit of a semaphore (its slots: 1..kMaxSemLimit).
inline constexpr std::int64_t kMaxSemLimit = 1000000;

// Hex digits of a lease id (a prefix of a SHA-256, lease_id in plan.hpp).
inline constexpr std::size_t kLeaseIdHexDigits = 24;

// A host's lease TTL when the user gives none: 10 minutes.
inline constexpr std::int64_t kDefaultTtlMs = 10 * 60 * 1000;

// How far below the tip a clone that trusts nothing yet looks for a
// checkpoint to start at (trust.hpp checkpoint_anchor): past it, it replays
// from the root.
inline constexpr std::size_t kCheckpointSearchCommits = 100000;

}  // namespace gitlocks
