// The pause before a replan (tools/cli/backoff.h, issue 18): exponential in
// the replan number, scaled by the round that lost, capped, drawn with full
// jitter. Expected windows are derived here from the rule
// min(5000, clamp(round, 1, 5000) * 2^min(r-1, 6)), not read off the program.
#include "backoff.h"

#include <doctest/doctest.h>
#include <sodium.h>

#include <algorithm>
#include <cstdint>
#include <vector>

using gitlocks::cli::backoff_ms;
using gitlocks::cli::kBackoffCapMs;

namespace {

// A draw that always takes the top of [0, n): the pause is the window.
std::int64_t window(int replan, std::int64_t round) {
  std::vector<std::uint64_t> asked;
  auto top = [&](std::uint64_t n) -> std::uint64_t {
    asked.push_back(n);
    return n - 1;
  };
  std::int64_t w = backoff_ms(replan, round, 0, top);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0] == static_cast<std::uint64_t>(w) + 1);  // [0, window], both ends possible
  return w;
}

}  // namespace

TEST_CASE("backoff: the window doubles with each replan from the length of the lost round") {
  CHECK(kBackoffCapMs == 5000);
  CHECK(window(1, 10) == 10);
  CHECK(window(2, 10) == 20);
  CHECK(window(3, 10) == 40);
  CHECK(window(7, 10) == 640);  // 2^6: the last doubling
  CHECK(window(8, 10) == 640);  // no more: 64 rounds at most
  CHECK(window(200, 10) == 640);
  CHECK(window(4, 200) == 1600);
  CHECK(window(6, 200) == 5000);  // 6,400 is over the cap
}

TEST_CASE("backoff: cap boundaries and degenerate rounds") {
  CHECK(window(1, 4999) == 4999);
  CHECK(window(1, 5000) == 5000);
  CHECK(window(1, 5001) == 5000);
  CHECK(window(1, 600000) == 5000);  // a push that took ten minutes
  CHECK(window(2, 2499) == 4998);
  CHECK(window(2, 2500) == 5000);
  CHECK(window(2, 2501) == 5000);
  CHECK(window(7, 78) == 4992);  // 78 * 64
  CHECK(window(7, 79) == 5000);  // 5,056
  CHECK(window(1, 0) == 1);      // a round too fast to measure still spreads writers
  CHECK(window(1, -5) == 1);
  CHECK(window(3, 0) == 4);
  CHECK(window(200, 5000) == 5000);  // no overflow at the last replan
  CHECK(window(1000, 1) == 64);
}

TEST_CASE("backoff: no pause before the first plan") {
  int calls = 0;
  auto count = [&](std::uint64_t) -> std::uint64_t {
    ++calls;
    return 0;
  };
  CHECK(backoff_ms(0, 100, 0, count) == 0);
  CHECK(backoff_ms(-1, 100, 0, count) == 0);
  CHECK(calls == 0);
  CHECK(backoff_ms(1, 100, 0, count) == 0);  // the bottom of the window
  CHECK(calls == 1);
}

TEST_CASE("backoff: libsodium draws stay in the window and spread over it") {
  REQUIRE(sodium_init() >= 0);
  auto uniform = [](std::uint64_t n) -> std::uint64_t { return randombytes_uniform(static_cast<std::uint32_t>(n)); };
  const int draws = 10000;
  double sum = 0;
  std::int64_t lo = kBackoffCapMs, hi = 0;
  for (int i = 0; i < draws; ++i) {
    std::int64_t p = backoff_ms(9, 100, 0, uniform);  // window 6,400 capped to 5,000
    REQUIRE(p >= 0);
    REQUIRE(p <= 5000);
    sum += static_cast<double>(p);
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  // Uniform on [0, 5000]: mean 2500, standard error of the mean ~14.4.
  CHECK(sum / draws > 2250.0);
  CHECK(sum / draws < 2750.0);
  CHECK(lo < 250);
  CHECK(hi > 4750);
}

TEST_CASE("backoff: all pauses of a command stop at the 30 s budget") {
  CHECK(gitlocks::cli::kBackoffBudgetMs == 30000);
  auto top = [](std::uint64_t n) -> std::uint64_t { return n - 1; };
  CHECK(backoff_ms(9, 100, 0, top) == 5000);
  CHECK(backoff_ms(9, 100, 25000, top) == 5000);  // exactly what is left
  CHECK(backoff_ms(9, 100, 25001, top) == 4999);  // cut to what is left
  CHECK(backoff_ms(9, 100, 29999, top) == 1);
  CHECK(backoff_ms(9, 100, 30000, top) == 0);  // spent
  CHECK(backoff_ms(9, 100, 30001, top) == 0);
  CHECK(backoff_ms(1, 10, 29995, top) == 5);  // a small draw is not cut
  CHECK(backoff_ms(1, 10, 29990, top) == 10);
  // 200 replans at the cap never sleep more than the budget.
  std::int64_t slept = 0;
  for (int r = 1; r <= 200; ++r) slept += backoff_ms(r, 5000, slept, top);
  CHECK(slept == 30000);
}
