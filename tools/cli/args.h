// args.h — command-line flags and values: durations, counts.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/result.hpp"
#include "gitlocks/timefmt.hpp"

namespace gitlocks::cli {

struct FlagSpec {
  std::string_view name;  // without the leading "--"
  bool takes_value = false;
  // "--name" alone (value "") or "--name=VALUE"; never the next argument
  // (a next argument that reads as a duration is refused as ambiguous).
  bool optional_value = false;
};

struct Parsed {
  std::map<std::string, std::vector<std::string>> flags;  // every occurrence, in order
  std::vector<std::string> positionals;

  bool has(const std::string& name) const { return flags.count(name) != 0; }
  // The last value given for a flag.
  std::optional<std::string> value(const std::string& name) const;
  const std::vector<std::string>& values(const std::string& name) const;
};

// Parses "--name", "--name VALUE" and "--name=VALUE"; "--" ends the flags.
// A flag with an optional value takes it only as "--name=VALUE".
// With `stop_at_positional`, the first positional argument ends them too
// (for `run -- CMD`). Unknown flags and missing values are usage errors.
Result<Parsed> parse_flags(const std::vector<std::string>& argv, const std::vector<FlagSpec>& specs,
                           bool stop_at_positional);

// "500ms", "30s", "10m", "2h", or plain integer milliseconds. Errors: usage.
Result<std::int64_t> parse_duration(std::string_view text);

// A non-negative decimal integer of at most 2^53-1. Errors: usage naming `what`.
Result<std::int64_t> parse_count(std::string_view text, std::string_view what);

// Human forms of durations and instants: the core's (gitlocks/timefmt.hpp).
using gitlocks::format_duration;
// ISO 8601 UTC with milliseconds: "2023-11-14T22:13:20.000Z".
inline std::string format_time(std::int64_t ms) { return format_instant_ms(ms); }

}  // namespace gitlocks::cli
