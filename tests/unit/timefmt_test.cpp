// Instants and durations in messages (gitlocks/timefmt.hpp). The expected
// strings were computed with Python's datetime (proleptic Gregorian, UTC),
// not with this code.
#include "gitlocks/timefmt.hpp"

#include <doctest/doctest.h>

using namespace gitlocks;

TEST_CASE("timefmt: format_instant agrees with an independent calendar") {
  struct Row {
    long long ms;
    const char* seconds;
    const char* millis;
  };
  const Row rows[] = {
      {0LL, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"},
      {999LL, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.999Z"},
      {1000LL, "1970-01-01T00:00:01Z", "1970-01-01T00:00:01.000Z"},
      {86399999LL, "1970-01-01T23:59:59Z", "1970-01-01T23:59:59.999Z"},
      {86400000LL, "1970-01-02T00:00:00Z", "1970-01-02T00:00:00.000Z"},
      {951782400000LL, "2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"},
      {951868799999LL, "2000-02-29T23:59:59Z", "2000-02-29T23:59:59.999Z"},
      {1700000000000LL, "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.000Z"},
      {1796123793803LL, "2026-12-01T11:16:33Z", "2026-12-01T11:16:33.803Z"},
      {253402300799999LL, "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999Z"},
      {111132926676279LL, "5491-08-30T17:24:36Z", "5491-08-30T17:24:36.279Z"},
      {13592072266832LL, "2400-09-18T15:37:46Z", "2400-09-18T15:37:46.832Z"},
      {231168335884083LL, "9295-06-07T10:38:04Z", "9295-06-07T10:38:04.083Z"},
      {26493659877419LL, "2809-07-20T13:57:57Z", "2809-07-20T13:57:57.419Z"},
      {164039256558072LL, "7168-03-13T12:09:18Z", "7168-03-13T12:09:18.072Z"},
      {60432369274613LL, "3885-01-09T17:14:34Z", "3885-01-09T17:14:34.613Z"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.ms);
    CHECK(format_instant(r.ms) == r.seconds);
    CHECK(format_instant_ms(r.ms) == r.millis);
  }
  // Past year 9999 the year just grows: 2^53-1 ms is 104,249,991 days,
  // about 285,426 Gregorian years after 1970.
  CHECK(format_instant(9007199254740991LL).rfind("287396-", 0) == 0);
  CHECK(format_instant(253402300800000LL) == "10000-01-01T00:00:00Z");
}

TEST_CASE("timefmt: format_when says in how long or how long ago") {
  const long long t = 1796123793803LL;  // 2026-12-01T11:16:33.803Z
  CHECK(format_when(t, t - 599000) == "2026-12-01T11:16:33Z, in 9m59s");
  CHECK(format_when(t, t + 3000) == "2026-12-01T11:16:33Z, 3s ago");
  CHECK(format_when(t, t) == "2026-12-01T11:16:33Z, now");
  CHECK(format_when(t, t - 1) == "2026-12-01T11:16:33Z, in 1ms");
}

TEST_CASE("timefmt: format_duration truncates and names the largest units") {
  CHECK(format_duration(0) == "0ms");
  CHECK(format_duration(999) == "999ms");
  CHECK(format_duration(1000) == "1s");
  CHECK(format_duration(1599) == "1.5s");
  CHECK(format_duration(59999) == "59.9s");
  CHECK(format_duration(60000) == "1m");
  CHECK(format_duration(599000) == "9m59s");
  CHECK(format_duration(3600000) == "1h");
  CHECK(format_duration(7200000) == "2h");
  CHECK(format_duration(5400000) == "1h30m");
  CHECK(format_duration(180000000) == "50h");
  CHECK(format_duration(-3000) == "-3s");
}
