// backoff.h — the pause between replans after a lost compare-and-swap
// (issue 18): exponential backoff with full jitter, bounded by the same 200
// replans (publish.h, kMaxReplans).
#pragma once

#include <cstdint>
#include <functional>

namespace gitlocks::cli {

// Before replan r (r = 1..200) after a lost compare-and-swap: a pause drawn
// uniformly from [0, min(kBackoffCapMs, round * 2^min(r-1, kBackoffDoublings)))],
// where round (1 ms at least) is how long the attempt that lost took,
// snapshot to answer: exponential backoff with full jitter, scaled to the
// store's own speed (a local update-ref or a push to a server).
//
// Why these bounds: once the store is saturated every writer waits its turn
// anyway, and a writer that wakes up every round only loses again. Windows of
// up to 64 rounds let 16 writers take turns sleeping instead of colliding
// (issue 18: p90 replans <= 8 at 16 clients); the expected pause is half the
// window. All the pauses of one command together stop at kBackoffBudgetMs:
// a writer that other writers beat every time still reaches its 200th
// replan (stale-retries-exhausted) within the budget plus 200 rounds, not
// after 200 x 5 s.
inline constexpr int kBackoffDoublings = 6;
inline constexpr std::int64_t kBackoffCapMs = 5000;
inline constexpr std::int64_t kBackoffBudgetMs = 30000;

// That pause, for replan `replan` (>= 1) after an attempt of `round_ms`,
// when the command's earlier pauses came to `slept_ms`: the draw, cut to
// what is left of the budget. `uniform(n)` draws from [0, n).
std::int64_t backoff_ms(int replan, std::int64_t round_ms, std::int64_t slept_ms,
                        const std::function<std::uint64_t(std::uint64_t)>& uniform);

}  // namespace gitlocks::cli
