// Adversarial tests of guard expressions and interval derivation (seed 002,
// "Native expression"). Expected intervals are worked out by hand in the
// comments; boundaries are also re-checked with a separate, deliberately
// naive reference evaluator that plugs T back into the guards.
#include "gitlocks/expr.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/policy.hpp"

using gitlocks::derive_interval;
using gitlocks::Errc;
using gitlocks::errc_name;
using gitlocks::Interval;
using gitlocks::json;

namespace {

// A document as a check's context shows it: invalid UTF-8 (some malformed
// inputs carry it) replaced, never thrown (doctest prints the context of
// passing checks too, with -s).
std::string shown(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

__extension__ typedef __int128 i128;
constexpr std::int64_t MAX = 9007199254740991;  // 2^53 - 1

// ---------------------------------------------------------------------------
// Builders

json lit(std::int64_t v) { return json{{"from", "literal"}, {"value", v}}; }
json tnow() { return json{{"from", "time"}}; }
json body(const std::string& key) { return json{{"from", "body"}, {"path", json::array({key})}}; }
json add(json ts, json ms) {
  return json{{"from", "time_add"}, {"timestamp", std::move(ts)}, {"milliseconds", std::move(ms)}};
}
json cmp(const std::string& op, json l, json r) {
  return json{{"op", op}, {"left", std::move(l)}, {"right", std::move(r)}};
}
// A copy of obj with one more field.
json with(json obj, const std::string& key, json value) {
  obj[key] = std::move(value);
  return obj;
}

// The seed's two guards: MIN_TTL <= expires_at - T <= MAX_TTL.
json seed_guards(std::int64_t min_ttl = 1000, std::int64_t max_ttl = 60000) {
  return json::array({cmp("lte", add(tnow(), lit(min_ttl)), body("expires_at")),
                      cmp("gte", add(tnow(), lit(max_ttl)), body("expires_at"))});
}
json expires(std::int64_t e) { return json{{"expires_at", e}}; }

// ---------------------------------------------------------------------------
// Reference evaluator: "do the guards hold at this T?" by direct substitution.
// A time_add whose operand or result leaves [0, MAX] makes its guard false.
// Only for well-formed guards whose time-free parts cannot fail.

std::optional<i128> ref_value(const json& op, const json& b, i128 t) {
  std::string from = op["from"];
  if (from == "time") return t;
  if (from == "literal") return op["value"].get<std::int64_t>();
  if (from == "body") {
    const json* node = &b;
    for (const auto& step : op["path"]) {
      if (step.is_string()) node = &(*node)[step.get<std::string>()];
      else node = &(*node)[step.get<std::size_t>()];
    }
    return node->get<std::int64_t>();
  }
  auto a = ref_value(op["timestamp"], b, t);
  auto m = ref_value(op["milliseconds"], b, t);
  if (!a || !m) return std::nullopt;
  if (*a < 0 || *a > MAX || *m < 0 || *m > MAX || *a + *m > MAX) return std::nullopt;
  return *a + *m;
}

bool ref_holds_expr(const json& e, const json& b, i128 t) {
  std::string op = e["op"];
  if (op == "and") {
    bool all = true;
    for (const auto& a : e["args"]) all = ref_holds_expr(a, b, t) && all;
    return all;
  }
  if (op == "or") {
    bool any = false;
    for (const auto& a : e["args"]) any = ref_holds_expr(a, b, t) || any;
    return any;
  }
  if (op == "not") return !ref_holds_expr(e["arg"], b, t);
  auto l = ref_value(e["left"], b, t);
  auto r = ref_value(e["right"], b, t);
  if (!l || !r) return false;
  if (op == "lt") return *l < *r;
  if (op == "lte") return *l <= *r;
  if (op == "gt") return *l > *r;
  if (op == "gte") return *l >= *r;
  if (op == "eq") return *l == *r;
  return *l != *r;
}

bool ref_holds(const json& guards, const json& b, i128 t) {
  if (t < 0 || t > MAX) return false;
  for (const auto& g : guards)
    if (!ref_holds_expr(g, b, t)) return false;
  return true;
}

// The interval is exact at its edges: lo-1 and hi+1 are refused, lo and hi
// admitted (plugging T back into the guards).
void check_edges(const json& guards, const json& b, const Interval& iv) {
  CHECK(ref_holds(guards, b, iv.lo));
  CHECK(ref_holds(guards, b, iv.hi));
  CHECK_FALSE(ref_holds(guards, b, static_cast<i128>(iv.lo) - 1));
  CHECK_FALSE(ref_holds(guards, b, static_cast<i128>(iv.hi) + 1));
}

Interval expect_interval(const json& guards, const json& b) {
  auto r = derive_interval(guards, b);
  INFO("guards: " << shown(guards) << " body: " << shown(b));
  if (!r.ok()) {
    FAIL_CHECK("unexpected error " << errc_name(r.error().code) << ": " << r.error().message);
    return Interval{-1, -1};
  }
  return *r;
}

void expect_error(const gitlocks::Error& e, Errc code, const std::string& substring) {
  INFO("message: " << e.message);
  CHECK(errc_name(e.code) == errc_name(code));
  CHECK(e.message.find(substring) != std::string::npos);
}

void expect_derive_error(const json& guards, const json& b, Errc code, const std::string& substring) {
  INFO("guards: " << shown(guards) << " body: " << shown(b));
  auto r = derive_interval(guards, b);
  REQUIRE_FALSE(r.ok());
  expect_error(r.error(), code, substring);
}

void expect_preflight_error(const json& guards, Errc code, const std::string& substring) {
  INFO("guards: " << shown(guards));
  auto s = gitlocks::expr_preflight(guards);
  REQUIRE_FALSE(s.ok());
  expect_error(s.error(), code, substring);
  // derive_interval runs preflight itself and must agree.
  expect_derive_error(guards, expires(100000), code, substring);
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("expr: the seed's example - 1000 <= e - T <= 60000 gives [e-60000 - e-1000]") {
  auto g = seed_guards();
  auto iv = expect_interval(g, expires(100000));
  CHECK(iv == Interval{40000, 99000});  // [100000-60000, 100000-1000]
  check_edges(g, expires(100000), iv);
  CHECK(iv.contains(40000));
  CHECK(iv.contains(99000));
  CHECK_FALSE(iv.contains(39999));
  CHECK_FALSE(iv.contains(99001));
}

TEST_CASE("expr: e = 2^53-1 admits the single point 2^53-1-60000") {
  // T >= e-60000 = MAX-60000; T <= e-1000; time_add domain T+60000 <= MAX.
  auto iv = expect_interval(seed_guards(), expires(MAX));
  CHECK(iv == Interval{MAX - 60000, MAX - 60000});
  CHECK(ref_holds(seed_guards(), expires(MAX), MAX - 60000));
  // T = MAX-59999 satisfies both unbounded comparisons but T+60000 overflows.
  CHECK_FALSE(ref_holds(seed_guards(), expires(MAX), MAX - 59999));
}

TEST_CASE("expr: e = 500 is empty") {
  // T <= 500-1000 = -500 < 0.
  expect_derive_error(seed_guards(), expires(500), Errc::empty_interval, "empty interval");
}

TEST_CASE("expr: lower bounds below 0 are cut at 0 - never shifted") {
  // e=60000: T >= 0, T <= 59000.
  CHECK(expect_interval(seed_guards(), expires(60000)) == Interval{0, 59000});
  // e=59999: T >= -1 cut to 0; T <= 58999 (not shifted to [1, 59000]).
  CHECK(expect_interval(seed_guards(), expires(59999)) == Interval{0, 58999});
  // e=1000: [max(0,-59000), 0] = [0, 0].
  CHECK(expect_interval(seed_guards(), expires(1000)) == Interval{0, 0});
  // e=999: T <= -1: empty.
  expect_derive_error(seed_guards(), expires(999), Errc::empty_interval, "empty interval");
  // e=0 and negative e: empty.
  expect_derive_error(seed_guards(), expires(0), Errc::empty_interval, "empty interval");
  expect_derive_error(seed_guards(), expires(-5), Errc::empty_interval, "empty interval");
}

TEST_CASE("expr: overflow of T + MAX_TTL is refused although the comparison would hold") {
  // e = MAX-100: T >= MAX-60100, T <= MAX-1100, T <= MAX-60000 (domain).
  auto g = seed_guards();
  auto b = expires(MAX - 100);
  auto iv = expect_interval(g, b);
  CHECK(iv == Interval{MAX - 60100, MAX - 60000});
  check_edges(g, b, iv);
  // MAX_TTL = MAX: T + MAX <= MAX only at T = 0.
  auto g2 = json::array({cmp("gte", add(tnow(), lit(MAX)), lit(5))});
  CHECK(expect_interval(g2, json::object()) == Interval{0, 0});
  // Nested: T + MAX + 1 never fits, whatever the comparison says.
  auto g3 = json::array({cmp("gte", add(add(tnow(), lit(MAX)), lit(1)), lit(0))});
  expect_derive_error(g3, json::object(), Errc::empty_interval, "empty interval");
}

TEST_CASE("expr: nested time_add adds its milliseconds") {
  // (T + 400) + 600 <= e  and  ((T + 10000) + 20000) + 30000 >= e, e = 100000.
  auto g = json::array({cmp("lte", add(add(tnow(), lit(400)), lit(600)), body("expires_at")),
                        cmp("gte", add(add(add(tnow(), lit(10000)), lit(20000)), lit(30000)), body("expires_at"))});
  auto iv = expect_interval(g, expires(100000));
  CHECK(iv == Interval{40000, 99000});
  check_edges(g, expires(100000), iv);
  // Top of the domain uses the total shift: e = MAX gives T = MAX-60000 only.
  CHECK(expect_interval(g, expires(MAX)) == Interval{MAX - 60000, MAX - 60000});
  // A bare T (k = 0) is a chain too.
  auto g0 = json::array({cmp("lte", tnow(), lit(7))});
  CHECK(expect_interval(g0, json::object()) == Interval{0, 7});
  // Milliseconds from the body and from a time-free time_add.
  auto gb = json::array({cmp("lte", add(tnow(), add(body("a"), lit(5))), lit(100))});
  CHECK(expect_interval(gb, json{{"a", 10}}) == Interval{0, 85});
}

TEST_CASE("expr: reversed comparisons are normalised") {
  auto b = expires(100000);
  // e >= T+1000  and  e <= T+60000.
  auto g = json::array({cmp("gte", body("expires_at"), add(tnow(), lit(1000))),
                        cmp("lte", body("expires_at"), add(tnow(), lit(60000)))});
  CHECK(expect_interval(g, b) == Interval{40000, 99000});
  // e > T+1000 => T <= 98999;  e < T+60000 => T >= 40001.
  auto gs = json::array(
      {cmp("gt", body("expires_at"), add(tnow(), lit(1000))), cmp("lt", body("expires_at"), add(tnow(), lit(60000)))});
  auto iv = expect_interval(gs, b);
  CHECK(iv == Interval{40001, 98999});
  check_edges(gs, b, iv);
}

TEST_CASE("expr: strict vs non-strict") {
  auto b = expires(100000);
  struct Row {
    const char* op;
    Interval expect;
  };
  // T + 1000 op 100000.
  const Row rows[] = {
      {"lte", {0, 99000}}, {"lt", {0, 98999}}, {"gte", {99000, MAX - 1000}}, {"gt", {99001, MAX - 1000}}};
  for (const auto& row : rows) {
    CAPTURE(row.op);
    auto g = json::array({cmp(row.op, add(tnow(), lit(1000)), body("expires_at"))});
    auto iv = expect_interval(g, b);
    CHECK(iv == row.expect);
    check_edges(g, b, iv);
  }
  // T < 0 and T > MAX are empty; T <= 0 and T >= MAX are points.
  expect_derive_error(json::array({cmp("lt", tnow(), lit(0))}), b, Errc::empty_interval, "empty");
  expect_derive_error(json::array({cmp("gt", tnow(), lit(MAX))}), b, Errc::empty_interval, "empty");
  CHECK(expect_interval(json::array({cmp("lte", tnow(), lit(0))}), b) == Interval{0, 0});
  CHECK(expect_interval(json::array({cmp("gte", tnow(), lit(MAX))}), b) == Interval{MAX, MAX});
  // Extreme literal on the other side: T >= -MAX is cut at 0.
  CHECK(expect_interval(json::array({cmp("gte", tnow(), lit(-MAX))}), b) == gitlocks::kUniversalInterval);
}

TEST_CASE("expr: empty guard list and conjunctions") {
  CHECK(expect_interval(json::array(), json::object()) == gitlocks::kUniversalInterval);
  auto g = json::array(
      {json{{"op", "and"},
            {"args", json::array({cmp("gte", tnow(), lit(10)), json{{"op", "and"}, {"args", json::array()}},
                                  json{{"op", "and"}, {"args", json::array({cmp("lt", tnow(), lit(20))})}}})}}});
  CHECK(expect_interval(g, json::object()) == Interval{10, 19});
}

TEST_CASE("expr: time-free guards are evaluated") {
  auto timed = cmp("lte", add(tnow(), lit(1000)), body("expires_at"));
  auto b = json{{"expires_at", 5000}, {"prev", 4000}, {"gen", 3}, {"items", json::array({7, 8})}};
  auto yes = cmp("gt", body("expires_at"), body("prev"));
  auto no = cmp("lt", body("expires_at"), body("prev"));
  CHECK(expect_interval(json::array({timed, yes}), b) == Interval{0, 4000});
  expect_derive_error(json::array({timed, no}), b, Errc::empty_interval, "guards[1] is false");
  // or / not / eq / ne are fine without time.
  auto either = json{{"op", "or"}, {"args", json::array({no, yes})}};
  auto negated = json{{"op", "not"}, {"arg", no}};
  auto eq = cmp("eq", body("gen"), lit(3));
  auto ne = cmp("ne", body("gen"), lit(3));
  CHECK(expect_interval(json::array({either, negated, eq}), b) == gitlocks::kUniversalInterval);
  expect_derive_error(json::array({ne}), b, Errc::empty_interval, "false");
  expect_derive_error(json::array({json{{"op", "or"}, {"args", json::array()}}}), b, Errc::empty_interval, "false");
  // Array index in a body path.
  auto idx = json{{"from", "body"}, {"path", json::array({"items", 1})}};
  CHECK(expect_interval(json::array({cmp("eq", idx, lit(8))}), b) == gitlocks::kUniversalInterval);
  // Time-free time_add evaluated with domain checks.
  CHECK(expect_interval(json::array({cmp("eq", add(body("prev"), lit(1000)), body("expires_at"))}), b) ==
        gitlocks::kUniversalInterval);
}

TEST_CASE("expr: missing body path or non-integer values name the path") {
  auto g = seed_guards();
  expect_derive_error(g, json::object(), Errc::bad_expression, "[\"expires_at\"]");
  expect_derive_error(g, json{{"expires_at", "100000"}}, Errc::bad_expression, "[\"expires_at\"]");
  expect_derive_error(g, json{{"expires_at", 1.5}}, Errc::bad_expression, "not a safe integer");
  expect_derive_error(g, json{{"expires_at", true}}, Errc::bad_expression, "not a safe integer");
  expect_derive_error(g, json{{"expires_at", nullptr}}, Errc::bad_expression, "expires_at");
  expect_derive_error(g, json::array(), Errc::bad_expression, "is missing");
  expect_derive_error(g, json{{"expires_at", std::uint64_t{1} << 53}}, Errc::bad_expression, "not a safe integer");
  auto deep = json{{"from", "body"}, {"path", json::array({"a", 2, "b"})}};
  expect_derive_error(json::array({cmp("lte", tnow(), deep)}), json{{"a", json::array({1, 2})}}, Errc::bad_expression,
                      "[\"a\",2,\"b\"] is missing");
  expect_derive_error(json::array({cmp("lte", tnow(), deep)}), json{{"a", json{{"2", 5}}}}, Errc::bad_expression,
                      "is missing");
  // An error in a later guard wins over emptiness found earlier.
  auto empty_then_missing = json::array({cmp("lt", tnow(), lit(0)), cmp("lte", tnow(), body("nope"))});
  expect_derive_error(empty_then_missing, json::object(), Errc::bad_expression, "nope");
  // Error inside an or: no short-circuit hides it.
  auto either = json{{"op", "or"}, {"args", json::array({cmp("eq", lit(1), lit(1)), cmp("eq", body("nope"), lit(1))})}};
  expect_derive_error(json::array({either}), json::object(), Errc::bad_expression, "nope");
}

TEST_CASE("expr: arithmetic domain of time_add operands") {
  auto b = json{{"neg", -1}, {"max", MAX}, {"zero", 0}};
  // Timed chain with a negative body milliseconds: out of domain.
  expect_derive_error(json::array({cmp("lte", add(tnow(), body("neg")), lit(10))}), b, Errc::arithmetic_overflow, "-1");
  // Time-free time_add overflowing, or with a negative timestamp.
  expect_derive_error(json::array({cmp("lte", tnow(), add(body("max"), lit(1)))}), b, Errc::arithmetic_overflow,
                      "exceeds");
  expect_derive_error(json::array({cmp("lte", tnow(), add(lit(-1), lit(1)))}), b, Errc::arithmetic_overflow,
                      "timestamp");
  expect_derive_error(json::array({cmp("lte", tnow(), add(body("neg"), body("zero")))}), b, Errc::arithmetic_overflow,
                      "timestamp");
  // ... also inside time-free guards.
  expect_derive_error(json::array({cmp("eq", add(body("max"), body("max")), lit(0))}), b, Errc::arithmetic_overflow,
                      "exceeds");
  // Right at the top is fine: MAX + 0.
  CHECK(expect_interval(json::array({cmp("lte", tnow(), add(body("max"), lit(0)))}), b) ==
        gitlocks::kUniversalInterval);
  // Milliseconds summing beyond MAX: no T keeps the chain in the domain.
  auto g = json::array({cmp("gte", add(add(tnow(), body("max")), body("max")), lit(0))});
  expect_derive_error(g, b, Errc::empty_interval, "empty interval");
}

TEST_CASE("expr: huge and negative literals") {
  const std::int64_t two53 = MAX + 1;
  expect_preflight_error(json::array({cmp("lte", tnow(), lit(two53))}), Errc::bad_expression, "literal value");
  expect_preflight_error(json::array({cmp("lte", tnow(), lit(-two53))}), Errc::bad_expression, "literal value");
  expect_preflight_error(
      json::array({cmp("lte", tnow(), json{{"from", "literal"}, {"value", std::uint64_t{18446744073709551615u}}})}),
      Errc::bad_expression, "literal value");
  expect_preflight_error(json::array({cmp("lte", add(tnow(), lit(-1)), lit(10))}), Errc::unsupported_expression,
                         "negative milliseconds");
  expect_preflight_error(json::array({cmp("lte", add(tnow(), lit(-MAX)), lit(10))}), Errc::unsupported_expression,
                         "negative milliseconds");
  // Negative literal milliseconds in a time-free time_add is refused too.
  expect_preflight_error(json::array({cmp("eq", add(lit(5), lit(-1)), lit(4))}), Errc::unsupported_expression,
                         "negative milliseconds");
  // 2^53-1 as milliseconds: allowed at preflight, fits only at T = 0.
  CHECK(expect_interval(json::array({cmp("lte", add(tnow(), lit(MAX)), lit(MAX))}), json::object()) == Interval{0, 0});
}

TEST_CASE("expr: each unsupported form fails preflight with its phrase") {
  using E = Errc;
  expect_preflight_error(json::array({cmp("lte", add(tnow(), lit(1)), tnow())}), E::unsupported_expression,
                         "time on both sides");
  expect_preflight_error(json::array({cmp("lt", tnow(), tnow())}), E::unsupported_expression, "time on both sides");
  expect_preflight_error(json::array({cmp("lte", add(tnow(), tnow()), lit(5))}), E::unsupported_expression,
                         "time in milliseconds");
  expect_preflight_error(json::array({cmp("lte", add(lit(5), tnow()), lit(5))}), E::unsupported_expression,
                         "time in milliseconds");
  expect_preflight_error(json::array({cmp("lte", lit(5), add(add(tnow(), lit(1)), add(lit(1), tnow())))}),
                         E::unsupported_expression, "time in milliseconds");
  expect_preflight_error(json::array({cmp("eq", tnow(), lit(5))}), E::unsupported_expression, "timed equality");
  expect_preflight_error(json::array({cmp("ne", lit(5), add(tnow(), lit(1)))}), E::unsupported_expression,
                         "timed equality");
  auto timed = cmp("lte", tnow(), lit(5));
  auto free = cmp("lte", lit(1), lit(5));
  expect_preflight_error(json::array({json{{"op", "or"}, {"args", json::array({free, timed})}}}),
                         E::unsupported_expression, "timed or");
  expect_preflight_error(json::array({json{{"op", "not"}, {"arg", timed}}}), E::unsupported_expression, "timed not");
  // Hidden one level down.
  auto and_timed = json{{"op", "and"}, {"args", json::array({free, timed})}};
  expect_preflight_error(json::array({json{{"op", "not"}, {"arg", and_timed}}}), E::unsupported_expression,
                         "timed not");
  expect_preflight_error(
      json::array(
          {json{{"op", "and"}, {"args", json::array({json{{"op", "or"}, {"args", json::array({and_timed})}}})}}}),
      E::unsupported_expression, "timed or");
  // The location is reported.
  expect_preflight_error(json::array({free, cmp("eq", tnow(), lit(5))}), E::unsupported_expression, "guards[1]");
}

TEST_CASE("expr: action preflight") {
  auto timed = json::array({cmp("lte", tnow(), lit(5))});
  auto free = json::array({cmp("lte", lit(1), lit(5))});
  auto copy = json::array({json{{"target", json::array({"expires_at"})}, {"value", body("expires_at")}}});
  auto action = [](json g, json e) { return json{{"guards", std::move(g)}, {"effects", std::move(e)}}; };

  CHECK(gitlocks::action_preflight(action(timed, copy)).ok());
  CHECK(gitlocks::action_preflight(action(json::array(), json::array())).ok());
  CHECK(gitlocks::action_preflight(json{{"variants", json::array({action(timed, copy)})}}).ok());
  CHECK(gitlocks::action_preflight(json{{"variants", json::array({action(free, copy), action(free, json::array())})}})
            .ok());

  auto two_timed = json{{"variants", json::array({action(free, copy), action(timed, copy)})}};
  auto s = gitlocks::action_preflight(two_timed);
  REQUIRE_FALSE(s.ok());
  expect_error(s.error(), Errc::unsupported_expression, "timed variants");
  // Nested variants count their leaves.
  auto nested =
      json{{"variants", json::array({json{{"variants", json::array({action(timed, copy), action(free, copy)})}}})}};
  s = gitlocks::action_preflight(nested);
  REQUIRE_FALSE(s.ok());
  expect_error(s.error(), Errc::unsupported_expression, "timed variants");

  auto reads_t = json::array({json{{"target", json::array({"expires_at"})}, {"value", add(tnow(), lit(1))}}});
  s = gitlocks::action_preflight(action(free, reads_t));
  REQUIRE_FALSE(s.ok());
  expect_error(s.error(), Errc::unsupported_expression, "effect reads time");
  auto bare_t = json::array({json{{"target", json::array({"at"})}, {"value", tnow()}}});
  s = gitlocks::action_preflight(action(json::array(), bare_t));
  REQUIRE_FALSE(s.ok());
  expect_error(s.error(), Errc::unsupported_expression, "effect reads time");

  // Guard errors surface through the action.
  s = gitlocks::action_preflight(action(json::array({cmp("eq", tnow(), lit(1))}), copy));
  REQUIRE_FALSE(s.ok());
  expect_error(s.error(), Errc::unsupported_expression, "timed equality");

  // Malformed actions.
  const json malformed[] = {
      json::array(),
      json{{"guards", json::array()}},
      json{{"effects", json::array()}},
      json{{"guards", json::array()}, {"effects", json::array()}, {"extra", 1}},
      json{{"variants", json::array()}},
      json{{"variants", json::array({action(free, copy)})}, {"guards", json::array()}},
      action(free, json::object()),
      action(free, json::array({json{{"target", json::array()}, {"value", lit(1)}}})),
      action(free, json::array({json{{"target", json::array({1})}, {"value", lit(1)}}})),
      action(free, json::array({json{{"target", json::array({"a"})}}})),
      action(free, json::array({json{{"target", json::array({"a"})}, {"value", lit(1)}, {"x", 1}}})),
      action(json::object(), copy),
  };
  for (const auto& m : malformed) {
    CAPTURE(shown(m));
    s = gitlocks::action_preflight(m);
    REQUIRE_FALSE(s.ok());
    CHECK(errc_name(s.error().code) == "bad-expression");
  }
}

TEST_CASE("expr: malformed expressions are bad_expression") {
  auto ok_op = lit(1);
  const json malformed[] = {
      json::object(),  // not an array
      json(5),
      json::array({5}),               // expression not an object
      json::array({json::object()}),  // missing op
      json::array({json{{"op", 1}, {"left", tnow()}, {"right", ok_op}}}),
      json::array({json{{"op", "le"}, {"left", tnow()}, {"right", ok_op}}}),  // unknown op
      json::array({json{{"op", "LTE"}, {"left", tnow()}, {"right", ok_op}}}),
      json::array({json{{"op", "lte"}, {"left", tnow()}}}),  // truncated
      json::array({json{{"op", "lte"}, {"right", ok_op}}}),
      json::array({json{{"op", "lte"}, {"left", tnow()}, {"right", ok_op}, {"why", "x"}}}),  // unknown field
      json::array({json{{"op", "and"}}}),
      json::array({json{{"op", "and"}, {"args", json::object()}}}),
      json::array({json{{"op", "and"}, {"args", json::array({1})}}}),
      json::array({json{{"op", "and"}, {"args", json::array()}, {"arg", json::object()}}}),
      json::array({json{{"op", "not"}}}),
      json::array({json{{"op", "not"}, {"args", json::array()}}}),
      json::array({cmp("lte", json::object(), ok_op)}),  // operand missing from
      json::array({cmp("lte", json{{"from", 3}}, ok_op)}),
      json::array({cmp("lte", json{{"from", "clock"}}, ok_op)}),  // unknown source
      json::array({cmp("lte", json{{"from", "time"}, {"unit", "ms"}}, ok_op)}),
      json::array({cmp("lte", tnow(), json{{"from", "literal"}})}),
      json::array({cmp("lte", tnow(), json{{"from", "literal"}, {"value", "5"}})}),
      json::array({cmp("lte", tnow(), json{{"from", "literal"}, {"value", 5.0}})}),
      json::array({cmp("lte", tnow(), json{{"from", "literal"}, {"value", true}})}),
      json::array({cmp("lte", tnow(), json{{"from", "literal"}, {"value", nullptr}})}),
      json::array({cmp("lte", tnow(), json{{"from", "literal"}, {"value", 5}, {"x", 0}})}),
      json::array({cmp("lte", tnow(), json{{"from", "body"}})}),
      json::array({cmp("lte", tnow(), json{{"from", "body"}, {"path", "expires_at"}})}),
      json::array({cmp("lte", tnow(), json{{"from", "body"}, {"path", json::array()}})}),
      json::array({cmp("lte", tnow(), json{{"from", "body"}, {"path", json::array({-1})}})}),
      json::array({cmp("lte", tnow(), json{{"from", "body"}, {"path", json::array({1.5})}})}),
      json::array({cmp("lte", tnow(), json{{"from", "body"}, {"path", json::array({nullptr})}})}),
      json::array({cmp("lte", tnow(), json{{"from", "time_add"}, {"timestamp", tnow()}})}),
      json::array({cmp("lte", json{{"from", "time_add"}, {"milliseconds", lit(1)}}, ok_op)}),
      json::array({cmp("lte", with(add(tnow(), lit(1)), "extra", 0), ok_op)}),
      json::array({cmp("lte", add(tnow(), json::array()), ok_op)}),
      json::array({cmp("lte", tnow(), ok_op), 7}),  // second guard malformed
  };
  for (const auto& g : malformed) {
    CAPTURE(shown(g));
    auto s = gitlocks::expr_preflight(g);
    REQUIRE_FALSE(s.ok());
    CHECK(errc_name(s.error().code) == "bad-expression");
    auto r = derive_interval(g, expires(1));
    REQUIRE_FALSE(r.ok());
    CHECK(errc_name(r.error().code) == "bad-expression");
  }
  // Malformed wins over unsupported, wherever each occurs.
  expect_preflight_error(json::array({cmp("eq", tnow(), lit(1)), json{{"op", "xor"}}}), Errc::bad_expression,
                         "unknown op 'xor'");
  // Messages name the offending field.
  expect_preflight_error(json::array({with(cmp("lte", tnow(), lit(1)), "because", 1)}), Errc::bad_expression,
                         "unknown field 'because'");
  // Invalid UTF-8 in a path does not break message formatting.
  expect_preflight_error(
      json::array({cmp("lte", tnow(), json{{"from", "body"}, {"path", json::array({"ok", -3, "\xff"})}})}),
      Errc::bad_expression, "body path");
}

TEST_CASE("expr: deeply nested input is refused without exhausting the stack") {
  const int depth = 100000;
  json op = tnow();
  for (int i = 0; i < depth; ++i) {
    json next = json::object();
    next["from"] = "time_add";
    next["timestamp"] = std::move(op);
    next["milliseconds"] = lit(1);
    op = std::move(next);
  }
  // Moved, never copied or dumped: those would recurse 100000 levels.
  json g1 = json::array();
  g1.push_back(cmp("lte", std::move(op), lit(5)));
  auto s1 = gitlocks::expr_preflight(g1);
  REQUIRE_FALSE(s1.ok());
  expect_error(s1.error(), Errc::bad_expression, "nested deeper");
  auto r1 = derive_interval(g1, json::object());
  REQUIRE_FALSE(r1.ok());
  CHECK(errc_name(r1.error().code) == "bad-expression");

  json e = cmp("lte", lit(1), lit(2));
  for (int i = 0; i < depth; ++i) {
    json next = json::object();
    next["op"] = "not";
    next["arg"] = std::move(e);
    e = std::move(next);
  }
  auto r2 = gitlocks::eval_time_free(e, json::object());
  REQUIRE_FALSE(r2.ok());
  expect_error(r2.error(), Errc::bad_expression, "nested deeper");
  json g2 = json::array();
  g2.push_back(std::move(e));
  auto s2 = gitlocks::expr_preflight(g2);
  REQUIRE_FALSE(s2.ok());
  expect_error(s2.error(), Errc::bad_expression, "nested deeper");

  // Just inside the limit: 62 nested time_adds of 1 ms under a comparison.
  json ok = tnow();
  for (int i = 0; i < 62; ++i) ok = add(ok, lit(1));
  CHECK(expect_interval(json::array({cmp("lte", ok, lit(100))}), json::object()) == Interval{0, 38});
}

TEST_CASE("expr: time-free evaluators") {
  auto b = json{{"a", 7}, {"list", json::array({1, 2, 3})}};
  auto v = gitlocks::eval_operand(add(body("a"), lit(3)), b);
  REQUIRE(v.ok());
  CHECK(*v == 10);
  auto idx = gitlocks::eval_operand(json{{"from", "body"}, {"path", json::array({"list", 2})}}, b);
  REQUIRE(idx.ok());
  CHECK(*idx == 3);
  auto neg = gitlocks::eval_operand(lit(-MAX), b);
  REQUIRE(neg.ok());
  CHECK(*neg == -MAX);

  auto timed = gitlocks::eval_operand(add(tnow(), lit(1)), b);
  REQUIRE_FALSE(timed.ok());
  CHECK(errc_name(timed.error().code) == "bad-expression");
  auto over = gitlocks::eval_operand(add(lit(MAX), lit(1)), b);
  REQUIRE_FALSE(over.ok());
  CHECK(errc_name(over.error().code) == "arithmetic-overflow");
  auto missing = gitlocks::eval_operand(body("zzz"), b);
  REQUIRE_FALSE(missing.ok());
  expect_error(missing.error(), Errc::bad_expression, "[\"zzz\"]");

  auto t = gitlocks::eval_time_free(json{{"op", "not"}, {"arg", cmp("eq", body("a"), lit(8))}}, b);
  REQUIRE(t.ok());
  CHECK(*t);
  auto f = gitlocks::eval_time_free(json{{"op", "and"}, {"args", json::array({cmp("gt", body("a"), lit(7))})}}, b);
  REQUIRE(f.ok());
  CHECK_FALSE(*f);
  auto with_time = gitlocks::eval_time_free(cmp("lte", tnow(), lit(5)), b);
  REQUIRE_FALSE(with_time.ok());
  CHECK(errc_name(with_time.error().code) == "bad-expression");
  auto timed_or = gitlocks::eval_time_free(json{{"op", "or"}, {"args", json::array({cmp("lte", tnow(), lit(5))})}}, b);
  REQUIRE_FALSE(timed_or.ok());
  expect_error(timed_or.error(), Errc::unsupported_expression, "timed or");
}

// ---------------------------------------------------------------------------
// Property test. Every bound the generator can produce is either small (near
// 0) or near the top of the domain, because every value is drawn from
// [-10, 70] or [MAX-70, MAX] and every shift from [0, 40]. The admitted set
// is an intersection of half-lines, i.e. an interval, so if it is non-empty
// its lower end lies in [0, 200] or [MAX-200, MAX]. Enumerating both windows
// exhaustively with the reference evaluator therefore decides emptiness and
// pins both ends exactly.

namespace {

struct Rng {  // xorshift64*, fixed seed: deterministic on every platform
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
  std::int64_t range(std::int64_t lo, std::int64_t hi) {  // inclusive
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
};

json random_value(Rng& r, json& b) {
  std::int64_t v = r.range(0, 3) == 0 ? MAX - r.range(0, 70) : r.range(-10, 70);
  switch (r.range(0, 2)) {
    case 0:
      return lit(v);
    case 1: {
      std::string key = "k" + std::to_string(b.size());
      b[key] = v;
      return body(key);
    }
    default:  // time-free time_add that cannot overflow
      return add(lit(r.range(0, 30)), lit(r.range(0, 30)));
  }
}

json random_chain(Rng& r, json& b) {
  json c = tnow();
  for (std::int64_t k = r.range(0, 3); k > 0; --k) {
    json ms = lit(r.range(0, 15));
    if (r.range(0, 3) == 0) {
      std::string key = "m" + std::to_string(b.size());
      b[key] = r.range(0, 15);
      ms = body(key);
    }
    c = add(c, ms);
  }
  return c;
}

json random_guard(Rng& r, json& b) {
  static const char* const ops[] = {"lt", "lte", "gt", "gte"};
  std::string op = ops[r.range(0, 3)];
  if (r.range(0, 7) == 0) {  // time-free guard
    static const char* const all_ops[] = {"lt", "lte", "gt", "gte", "eq", "ne"};
    return cmp(all_ops[r.range(0, 5)], random_value(r, b), random_value(r, b));
  }
  json chain = random_chain(r, b), value = random_value(r, b);
  if (r.range(0, 1) == 0) return cmp(op, chain, value);
  return cmp(op, value, chain);  // reversed
}

}  // namespace

TEST_CASE("expr: property — derive_interval agrees with brute force") {
  Rng rng{0x9e3779b97f4a7c15ull};
  int nonempty = 0, empty = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    json b = json::object();
    json guards = json::array();
    for (std::int64_t n = rng.range(0, 4); n > 0; --n) guards.push_back(random_guard(rng, b));
    if (rng.range(0, 9) == 0 && !guards.empty())  // wrap some in a conjunction
      guards = json::array({json{{"op", "and"}, {"args", guards}}});
    INFO("iteration " << iter << " guards: " << shown(guards) << " body: " << shown(b));

    // Reference: enumerate both windows once.
    std::vector<i128> points;
    for (i128 t = 0; t <= 200; ++t) points.push_back(t);
    for (i128 t = MAX - 200; t <= MAX; ++t) points.push_back(t);
    std::vector<bool> holds;
    std::optional<i128> ref_lo, ref_hi;
    for (i128 t : points) {
      holds.push_back(ref_holds(guards, b, t));
      if (holds.back()) {
        if (!ref_lo) ref_lo = t;
        ref_hi = t;
      }
    }

    auto r = derive_interval(guards, b);
    if (!ref_lo) {
      ++empty;
      REQUIRE_FALSE(r.ok());
      CHECK(errc_name(r.error().code) == "empty-interval");
      continue;
    }
    ++nonempty;
    REQUIRE(r.ok());
    CHECK(static_cast<i128>(r->lo) == *ref_lo);
    CHECK(static_cast<i128>(r->hi) == *ref_hi);
    check_edges(guards, b, *r);
    // Membership agrees inside the windows and at random points in between.
    int mismatches = 0;
    for (std::size_t i = 0; i < points.size(); ++i)
      mismatches += r->contains(static_cast<std::int64_t>(points[i])) != holds[i];
    for (int k = 0; k < 8; ++k) {
      std::int64_t t = rng.range(0, MAX);
      mismatches += r->contains(t) != ref_holds(guards, b, t);
    }
    CHECK(mismatches == 0);
  }
  // The generator must exercise both outcomes.
  CHECK(nonempty > 200);
  CHECK(empty > 200);
}

// ---------------------------------------------------------------------------
// Typed guards (the planner's form): the same interval as their seed 002
// documents, derived by the document evaluator above from a body that holds
// each guard's value at its path.

namespace {

using gitlocks::TimeGuard;

// {"ops":[{"v":value0},{"v":value1},...]} and guards over ["ops",k,"v"].
json body_for(const std::vector<TimeGuard>& guards) {
  json ops = json::array();
  for (const auto& g : guards) ops.push_back({{"v", g.value}});
  return {{"ops", ops}};
}

TimeGuard typed(TimeGuard::Cmp cmp, std::optional<std::int64_t> add_ms, std::int64_t value, std::size_t k) {
  return TimeGuard{cmp, add_ms, json::array({"ops", k, "v"}), value};
}

std::string outcome(const gitlocks::Result<Interval>& r) {
  if (!r.ok()) return std::string(errc_name(r.error().code)) + ": " + r.error().message;
  return "[" + std::to_string(r->lo) + ", " + std::to_string(r->hi) + "]";
}

}  // namespace

TEST_CASE("expr: a typed guard is the seed 002 document the planner always wrote") {
  const json path = json::array({"ops", 0, "after"});
  CHECK(gitlocks::time_after(path, 5).document() ==
        json::parse(R"({"op":"gt","left":{"from":"time"},"right":{"from":"body","path":["ops",0,"after"]}})"));
  CHECK(gitlocks::time_not_after(path, 5).document() ==
        json::parse(R"({"op":"lte","left":{"from":"time"},"right":{"from":"body","path":["ops",0,"after"]}})"));
  gitlocks::Policy p;
  p.min_ttl_ms = 1000;
  p.max_ttl_ms = 60000;
  CHECK(gitlocks::ttl_guards(p, json::array({"ops", 2})) == json::parse(R"([
    {"op":"lte","left":{"from":"time_add","timestamp":{"from":"time"},"milliseconds":{"from":"literal","value":1000}},
     "right":{"from":"body","path":["ops",2,"expires_at"]}},
    {"op":"gte","left":{"from":"time_add","timestamp":{"from":"time"},"milliseconds":{"from":"literal","value":60000}},
     "right":{"from":"body","path":["ops",2,"expires_at"]}}])"));
  // The seed's example through the typed list: 1000 <= e - T <= 60000.
  auto iv = gitlocks::guard_interval(gitlocks::ttl_time_guards(p, json::array({"ops", 0}), 100000));
  REQUIRE(iv.ok());
  CHECK(*iv == Interval{40000, 99000});
}

TEST_CASE("expr: typed guards derive what their documents derive at every boundary") {
  using Cmp = TimeGuard::Cmp;
  const std::vector<Cmp> cmps = {Cmp::lt, Cmp::lte, Cmp::gt, Cmp::gte};
  const std::vector<std::optional<std::int64_t>> adds = {std::nullopt, 0, 1, 1000, MAX - 1, MAX};
  const std::vector<std::int64_t> values = {-MAX, -1, 0, 1, 999, 1000, 1001, MAX - 1, MAX};
  std::vector<TimeGuard> singles;
  for (Cmp c : cmps)
    for (const auto& a : adds)
      for (std::int64_t v : values) singles.push_back(typed(c, a, v, 0));
  std::size_t compared = 0, empty = 0;
  auto compare = [&](std::vector<TimeGuard> list) {
    for (std::size_t k = 0; k < list.size(); ++k) list[k].path = json::array({"ops", k, "v"});
    const auto typed_result = gitlocks::guard_interval(list);
    const auto document_result = derive_interval(gitlocks::guard_documents(list), body_for(list));
    CHECK_MESSAGE(outcome(typed_result) == outcome(document_result), shown(gitlocks::guard_documents(list)));
    ++compared;
    if (!document_result.ok()) ++empty;
  };
  for (const auto& g : singles) compare({g});
  // Pairs and triples from a fixed linear congruential sequence.
  std::uint64_t state = 42;
  auto next = [&]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>(state >> 33) % singles.size();
  };
  for (int n = 0; n < 2000; ++n) compare({singles[next()], singles[next()]});
  for (int n = 0; n < 1000; ++n) compare({singles[next()], singles[next()], singles[next()]});
  CHECK(compared == singles.size() + 3000);
  // Both outcomes occur: the comparison is not of two always-empty lists.
  CHECK(empty > 0);
  CHECK(empty < compared);
  CHECK(outcome(gitlocks::guard_interval({})) == "[0, " + std::to_string(MAX) + "]");
}

TEST_CASE("expr: a typed guard outside its domain is bad-expression") {
  using Cmp = TimeGuard::Cmp;
  auto code = [](const std::vector<TimeGuard>& list) {
    auto r = gitlocks::guard_interval(list);
    return r.ok() ? std::string("ok") : std::string(errc_name(r.error().code));
  };
  CHECK(code({typed(Cmp::gt, std::nullopt, MAX, 0)}) == "empty-interval");
  CHECK(code({typed(Cmp::gte, std::nullopt, MAX, 0)}) == "ok");
  CHECK(code({typed(Cmp::gt, std::nullopt, MAX + 1, 0)}) == "bad-expression");
  CHECK(code({typed(Cmp::gt, std::nullopt, -MAX, 0)}) == "ok");
  CHECK(code({typed(Cmp::gt, std::nullopt, -MAX - 1, 0)}) == "bad-expression");
  CHECK(code({typed(Cmp::lte, MAX, MAX, 0)}) == "ok");
  CHECK(code({typed(Cmp::lte, MAX + 1, MAX, 0)}) == "bad-expression");
  CHECK(code({typed(Cmp::lte, -1, 5, 0)}) == "bad-expression");
  CHECK(code({typed(Cmp::lte, 0, 5, 0)}) == "ok");
}
