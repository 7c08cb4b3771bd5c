// waiting.h — blocking acquisition: `claim --wait[=DUR]`, `run --wait[=DUR]`
// and `wait` (docs/CLI.md "Waiting").
//
// A waiter retries its attempt until it is admitted, is refused for a reason
// waiting cannot cure, or its timeout passes. Between attempts it pauses with
// exponential backoff and jitter (50 ms doubling to 2 s, 500 ms for a remote
// store, each pause drawn uniformly from its upper half); on a store in this
// repository it also
// watches refs/locks/state and tries again as soon as the ref moves. It
// writes nothing to the store while it waits: no lease, no renewal.
//
// Fairness: every waiter of a clone registers in a queue on disk,
//   <common git dir>/git-locks/waiters/<arrival>-<pid>-<random>.json
//   {"ref":STATE_REF,"resources":[{"path":P,"mode":M}|{"sem":N}],"pid":PID}
// held under an exclusive flock(2) for as long as it waits, each path in the
// store's canonical form (NFC, case-folded in a case-insensitive store). A
// waiter makes no attempt while an older live waiter of the same store wants
// a resource that conflicts with one of its own by the planner's rules (the
// core's wants_conflict: paths that overlap, unless both are shared; paths of
// one exclusive family of the policy at the clone's verified tip; the same
// semaphore), so waiters of one clone are admitted in arrival order. An
// entry whose flock can be taken belongs to a waiter that died: it is
// removed.
//
// The store's queue (docs/FORMAT.md "Tickets"), the same for every clone:
// a waiter that will claim takes a ticket on its first refusal worth
// waiting for (one transition: the lapsed tickets it sees dropped, then
// its own), renews it at half its TTL (kTicketTtlMs, within the policy's
// TTL window), and drops it in the transition that admits it, or when it
// gives up. A claim behind an older live ticket of another holder is
// refused queued-behind, so waiters of every clone are admitted in ticket
// order. A ticket refused `deadlock` ends the wait with that error; one
// refused for another reason (a full queue) leaves the waiter waiting
// without one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "publish.h"

namespace gitlocks::cli {

inline constexpr std::int64_t kFirstPauseMs = 50;
inline constexpr std::int64_t kMaxPauseMs = 2000;
inline constexpr std::int64_t kRefWatchMs = 20;
// A remote store cannot be watched and its waiters (one per clone) share no
// queue: they try more often, so that a release is not always taken by the
// releaser's own next claim (bench/wait_bench.py --remote).
inline constexpr std::int64_t kMaxRemotePauseMs = 500;
// A ticket's TTL (clamped to the policy's window); renewed at half of it.
inline constexpr std::int64_t kTicketTtlMs = 30000;

// One resource a waiter wants.
struct WantedResource {
  std::string path;  // a repository path, or "" for a semaphore
  bool shared = false;
  std::string sem;  // the semaphore's name when path is ""
};

struct WaitOptions {
  std::optional<std::int64_t> timeout_ms;  // nullopt: wait for ever
  std::vector<WantedResource> wanted;
  // What the waiter is waiting for, for messages ("'src/a.c'").
  std::string label;
  // Take a ticket in the store's queue for `wanted` (a waiter that claims).
  bool ticket = true;
};

// True for the refusals that waiting can cure: held-path, full-semaphore,
// family-policy, stale-retries-exhausted.
bool worth_waiting(Errc code);

// The value of --wait: "" (flag given bare) waits for ever, else a duration.
// Errors: usage.
Result<std::optional<std::int64_t>> parse_wait(const std::string& value);

// One try: nullopt when admitted (the caller keeps what it got), else the
// error it was refused or failed with. `ticket`: the waiter's ticket id,
// which the admitting transition drops (ops::ticket_drop), or nullopt.
using AttemptFn = std::function<std::optional<Error>(const std::optional<std::string>& ticket)>;

struct WaitOutcome {
  std::optional<Error> error;  // nullopt: admitted
  int attempts = 0;            // tries made
  std::int64_t waited_ms = 0;  // from the start to admission or to giving up
  bool timed_out = false;
  std::optional<Error> last_refusal;  // the last refusal worth waiting for
  std::int64_t tickets = 0;           // tickets taken in the store's queue
};

// Runs `attempt` until it is admitted, fails with an error not worth
// waiting for (returned as it is), or the timeout passes (timed_out, error =
// the last refusal; see timeout_error()).
WaitOutcome wait_until_admitted(Context& ctx, const WaitOptions& options, const AttemptFn& attempt);

// The wait-timeout error of a timed-out outcome: exit 1, code
// "wait-timeout", the last refusal named in the detail, and its fields
// (holder, holder_name, expires_at_ms, ...) plus "last_reason",
// "waited_ms" and "polls".
Error timeout_error(const WaitOptions& options, const WaitOutcome& outcome);

// publish(ctx, command, make_body) retried by wait_until_admitted: the
// publication, or the error it ended with (wait-timeout on timeout).
// `waited_ms` receives the time spent.
Result<Published> publish_when_admitted(Context& ctx, const std::string& command, const BodyFn& make_body,
                                        const WaitOptions& options, std::int64_t* waited_ms = nullptr);

// The resources of path claims, for the queue, and their label.
std::vector<WantedResource> wanted_paths(const std::vector<std::string>& paths, bool shared);
std::string paths_label(const std::vector<std::string>& paths);

}  // namespace gitlocks::cli
