#include "backoff.h"

#include <algorithm>

namespace gitlocks::cli {

std::int64_t backoff_ms(int replan, std::int64_t round_ms, std::int64_t slept_ms,
                        const std::function<std::uint64_t(std::uint64_t)>& uniform) {
  if (replan < 1 || slept_ms >= kBackoffBudgetMs) return 0;
  const std::int64_t round = std::clamp<std::int64_t>(round_ms, 1, kBackoffCapMs);
  const int doublings = std::min(replan - 1, kBackoffDoublings);
  const std::int64_t window = std::min<std::int64_t>(kBackoffCapMs, round << doublings);
  const auto draw = static_cast<std::int64_t>(uniform(static_cast<std::uint64_t>(window) + 1));
  return std::min(draw, kBackoffBudgetMs - std::max<std::int64_t>(slept_ms, 0));
}

}  // namespace gitlocks::cli
