// gitlocks/timefmt.hpp — instants and durations in messages people read.
//
// Every instant in a message is ISO-8601 UTC plus the time relative to the
// moment of the check ("until 2026-12-01T11:16:33Z, in 9m59s"); the raw
// milliseconds travel beside the message as structured fields (*_ms), so
// programs never parse text. Pure functions of their arguments (no clock, no
// locale, no time zone): native and WASM print the same bytes.
#pragma once

#include <cstdint>
#include <string>

namespace gitlocks {

// "9m58s", "1.5s", "250ms", "2h", "1h30m", "50h", "-3s" (truncated, never rounded up).
std::string format_duration(std::int64_t ms);

// ISO-8601 UTC to the second: "2026-12-01T11:16:33Z" (ms since the epoch,
// 0 <= ms <= 2^53-1; milliseconds are truncated). Proleptic Gregorian.
std::string format_instant(std::int64_t ms);

// ISO-8601 UTC with milliseconds: "2026-12-01T11:16:33.803Z".
std::string format_instant_ms(std::int64_t ms);

// `at` for a reader at `now`: "2026-12-01T11:16:33Z, in 9m59s",
// "2026-12-01T11:16:33Z, 3s ago", or "2026-12-01T11:16:33Z, now".
std::string format_when(std::int64_t at, std::int64_t now);

}  // namespace gitlocks
