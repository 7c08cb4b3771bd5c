#include "gitlocks/timefmt.hpp"

#include <cstdio>

namespace gitlocks {
namespace {

// Days since 1970-01-01 to (year, month, day): Howard Hinnant's
// civil_from_days, exact for the whole proleptic Gregorian calendar.
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
}

std::string instant(std::int64_t ms, bool with_ms) {
  const std::int64_t floor_ms = ms >= 0 ? ms : ms - 999;
  std::int64_t secs = floor_ms / 1000;
  const auto milli = static_cast<int>(ms - secs * 1000);
  std::int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  const std::int64_t rem = secs - days * 86400;
  std::int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  char buf[64];
  if (with_ms)
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<long long>(y), m, d,
                  static_cast<int>(rem / 3600), static_cast<int>(rem % 3600 / 60), static_cast<int>(rem % 60), milli);
  else
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02dZ", static_cast<long long>(y), m, d,
                  static_cast<int>(rem / 3600), static_cast<int>(rem % 3600 / 60), static_cast<int>(rem % 60));
  return buf;
}

}  // namespace

std::string format_duration(std::int64_t ms) {
  std::string sign = ms < 0 ? "-" : "";
  std::int64_t a = ms < 0 ? -ms : ms;
  if (a < 1000) return sign + std::to_string(a) + "ms";
  if (a < 60000) {
    std::string s = std::to_string(a / 1000);
    if (a % 1000 >= 100) s += "." + std::to_string(a % 1000 / 100);
    return sign + s + "s";
  }
  std::int64_t s = a / 1000;
  if (s < 3600) return sign + std::to_string(s / 60) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  return sign + std::to_string(s / 3600) + "h" + (s % 3600 / 60 ? std::to_string(s % 3600 / 60) + "m" : "");
}

std::string format_instant(std::int64_t ms) { return instant(ms, false); }

std::string format_instant_ms(std::int64_t ms) { return instant(ms, true); }

std::string format_when(std::int64_t at, std::int64_t now) {
  std::string out = format_instant(at) + ", ";
  if (at == now) return out + "now";
  if (at > now) return out + "in " + format_duration(at - now);
  return out + format_duration(now - at) + " ago";
}

}  // namespace gitlocks
