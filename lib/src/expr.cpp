// Guard expressions over admission time T and the exact interval they admit
// (seed 002, "Native expression"; SPEC §6 "Expressions").
//
// Every public entry point works in up to three passes over untrusted JSON:
//   1. shape    — well-formedness only (bad_expression). Bounded recursion, so
//                 the later passes may recurse freely.
//   2. support  — the forms seed 002 lists as unsupported
//                 (unsupported_expression). Runs only on well-formed input,
//                 so "malformed" always wins over "unsupported".
//   3. evaluate — checked integer evaluation against the body
//                 (bad_expression, arithmetic_overflow) and, for
//                 derive_interval, the interval arithmetic (empty_interval).
//
// No exceptions: every nlohmann access is type-checked first (find() instead
// of at()/operator[], get<T>() only after is_*()). No floating point: the
// interval arithmetic runs in 128-bit integers, so no sum or difference of
// safe integers can overflow.
#include "gitlocks/expr.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gitlocks {
namespace {

__extension__ typedef __int128 i128;  // __extension__: -Wpedantic knows it is not ISO.

constexpr std::int64_t kMax = kMaxSafeInteger;
// Nesting of expressions and operands. canon_parse already caps JSON depth at
// 64; this protects callers that build JSON in memory from stack exhaustion.
constexpr int kMaxNesting = 64;

// ---------------------------------------------------------------------------
// Small helpers

Error bad(std::string msg) { return make_error(Errc::bad_expression, std::move(msg)); }
Error unsupported(std::string msg) {
  return make_error(Errc::unsupported_expression, "unsupported: " + std::move(msg));
}
Error overflow(std::string msg) { return make_error(Errc::arithmetic_overflow, std::move(msg)); }

// Prefixes an error message with where it happened, keeping its code.
Error locate(const Error& e, const std::string& where) { return Error{e.code, where + ": " + e.message, e.fields}; }

// JSON text for messages; never throws (invalid UTF-8 is replaced).
std::string show(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string to_string(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  std::string s;
  while (v != 0) {
    int digit = static_cast<int>(v % 10);
    s.insert(s.begin(), static_cast<char>('0' + (neg ? -digit : digit)));
    v /= 10;
  }
  return neg ? "-" + s : s;
}

bool in_domain(i128 v) { return v >= 0 && v <= kMax; }

// A field of an object, or nullptr.
const json* field(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// The string value of obj[key], or nullopt when absent or not a string.
std::optional<std::string> string_field(const json& obj, std::string_view key) {
  const json* f = field(obj, key);
  if (f == nullptr || !f->is_string()) return std::nullopt;
  return f->get<std::string>();
}

// A JSON integer inside the canonical data model [-(2^53-1), 2^53-1], or
// nullopt (booleans, floats and larger integers are not integers here).
std::optional<std::int64_t> safe_int(const json& v) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(kMax)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    if (i > kMax || i < -kMax) return std::nullopt;
    return i;
  }
  return std::nullopt;
}

// Like canon's check_keys, but a stray field is a malformed *expression*.
Status only_fields(const json& obj, std::initializer_list<std::string_view> allowed, const std::string& what) {
  for (const auto& item : obj.items()) {
    bool known = false;
    for (auto a : allowed) known = known || (a == item.key());
    if (!known) return bad("unknown field '" + item.key() + "' in " + what);
  }
  return Ok{};
}

Result<const json*> required(const json& obj, std::string_view key, const std::string& what) {
  const json* f = field(obj, key);
  if (f == nullptr) return bad(what + " is missing field '" + std::string(key) + "'");
  return f;
}

bool is_comparison(std::string_view op) {
  return op == "lt" || op == "lte" || op == "gt" || op == "gte" || op == "eq" || op == "ne";
}
bool is_ordering(std::string_view op) { return op == "lt" || op == "lte" || op == "gt" || op == "gte"; }

// ---------------------------------------------------------------------------
// Pass 1: shape

Status shape_path(const json& path) {
  if (!path.is_array()) return bad("body path must be an array");
  if (path.empty()) return bad("body path must not be empty");
  for (const auto& step : path) {
    if (step.is_string()) continue;
    auto index = safe_int(step);
    if (!index || *index < 0)
      return bad("body path " + show(path) + ": each step must be a string key or a non-negative integer index");
  }
  return Ok{};
}

Status shape_operand(const json& op, int depth) {
  if (depth > kMaxNesting) return bad("expression nested deeper than 64 levels");
  if (!op.is_object()) return bad("operand must be an object, got " + std::string(op.type_name()));
  const json* from = field(op, "from");
  if (from == nullptr) return bad("operand is missing field 'from'");
  if (!from->is_string()) return bad("operand field 'from' must be a string");
  const std::string& src = from->get_ref<const std::string&>();

  if (src == "time") return only_fields(op, {"from"}, "time operand");
  if (src == "literal") {
    GITLOCKS_CHECK(only_fields(op, {"from", "value"}, "literal operand"));
    GITLOCKS_TRY(value, required(op, "value", "literal operand"));
    if (!safe_int(*value))
      return bad("literal value " + show(*value) + " must be an integer in [-9007199254740991, 9007199254740991]");
    return Ok{};
  }
  if (src == "body") {
    GITLOCKS_CHECK(only_fields(op, {"from", "path"}, "body operand"));
    GITLOCKS_TRY(path, required(op, "path", "body operand"));
    return shape_path(*path);
  }
  if (src == "time_add") {
    GITLOCKS_CHECK(only_fields(op, {"from", "timestamp", "milliseconds"}, "time_add operand"));
    GITLOCKS_TRY(ts, required(op, "timestamp", "time_add operand"));
    GITLOCKS_TRY(ms, required(op, "milliseconds", "time_add operand"));
    GITLOCKS_CHECK(shape_operand(*ts, depth + 1));
    return shape_operand(*ms, depth + 1);
  }
  return bad("unknown operand source '" + src + "'");
}

Status shape_expr(const json& e, int depth) {
  if (depth > kMaxNesting) return bad("expression nested deeper than 64 levels");
  if (!e.is_object()) return bad("expression must be an object, got " + std::string(e.type_name()));
  const json* opf = field(e, "op");
  if (opf == nullptr) return bad("expression is missing field 'op'");
  if (!opf->is_string()) return bad("expression field 'op' must be a string");
  const std::string& op = opf->get_ref<const std::string&>();

  if (is_comparison(op)) {
    const std::string what = "'" + op + "' comparison";
    GITLOCKS_CHECK(only_fields(e, {"op", "left", "right"}, what));
    GITLOCKS_TRY(left, required(e, "left", what));
    GITLOCKS_TRY(right, required(e, "right", what));
    GITLOCKS_CHECK(shape_operand(*left, depth + 1));
    return shape_operand(*right, depth + 1);
  }
  if (op == "and" || op == "or") {
    const std::string what = "'" + op + "' expression";
    GITLOCKS_CHECK(only_fields(e, {"op", "args"}, what));
    GITLOCKS_TRY(args, required(e, "args", what));
    if (!args->is_array()) return bad(what + ": field 'args' must be an array");
    for (const auto& a : *args) GITLOCKS_CHECK(shape_expr(a, depth + 1));
    return Ok{};
  }
  if (op == "not") {
    GITLOCKS_CHECK(only_fields(e, {"op", "arg"}, "'not' expression"));
    GITLOCKS_TRY(arg, required(e, "arg", "'not' expression"));
    return shape_expr(*arg, depth + 1);
  }
  return bad("unknown op '" + op + "'");
}

Status shape_guards(const json& guards) {
  if (!guards.is_array()) return bad("guard list must be an array");
  std::size_t i = 0;
  for (const auto& g : guards) {
    auto s = shape_expr(g, 1);
    if (!s.ok()) return locate(s.error(), "guards[" + std::to_string(i) + "]");
    ++i;
  }
  return Ok{};
}

Status shape_effect(const json& effect) {
  if (!effect.is_object()) return bad("effect must be an object");
  GITLOCKS_CHECK(only_fields(effect, {"target", "value"}, "effect"));
  GITLOCKS_TRY(target, required(effect, "target", "effect"));
  GITLOCKS_TRY(value, required(effect, "value", "effect"));
  if (!target->is_array() || target->empty()) return bad("effect target must be a non-empty array of keys");
  for (const auto& k : *target)
    if (!k.is_string()) return bad("effect target " + show(*target) + ": each key must be a string");
  return shape_operand(*value, 1);
}

Status shape_action(const json& action, int depth) {
  if (depth > kMaxNesting) return bad("action nested deeper than 64 levels");
  if (!action.is_object()) return bad("action must be an object");
  if (const json* variants = field(action, "variants")) {
    GITLOCKS_CHECK(only_fields(action, {"variants"}, "action with variants"));
    if (!variants->is_array() || variants->empty()) return bad("action field 'variants' must be a non-empty array");
    for (const auto& v : *variants) GITLOCKS_CHECK(shape_action(v, depth + 1));
    return Ok{};
  }
  GITLOCKS_CHECK(only_fields(action, {"guards", "effects"}, "action"));
  GITLOCKS_TRY(guards, required(action, "guards", "action"));
  GITLOCKS_TRY(effects, required(action, "effects", "action"));
  GITLOCKS_CHECK(shape_guards(*guards));
  if (!effects->is_array()) return bad("action field 'effects' must be an array");
  for (const auto& e : *effects) GITLOCKS_CHECK(shape_effect(e));
  return Ok{};
}

// ---------------------------------------------------------------------------
// Pass 2: support. Everything below assumes pass 1 succeeded, so fields are
// present with the right types and recursion depth is bounded.

bool operand_reads_time(const json& op) {
  auto src = string_field(op, "from");
  if (src == "time") return true;
  if (src != "time_add") return false;
  return operand_reads_time(*field(op, "timestamp")) || operand_reads_time(*field(op, "milliseconds"));
}

bool expr_reads_time(const json& e) {
  auto op = *string_field(e, "op");
  if (is_comparison(op)) return operand_reads_time(*field(e, "left")) || operand_reads_time(*field(e, "right"));
  if (op == "not") return expr_reads_time(*field(e, "arg"));
  for (const auto& a : *field(e, "args"))
    if (expr_reads_time(a)) return true;
  return false;
}

bool guards_read_time(const json& guards) {
  for (const auto& g : guards)
    if (expr_reads_time(g)) return true;
  return false;
}

// Every time_add anywhere: milliseconds must be time-free (T is only ever
// shifted by known amounts) and not a negative literal (time only moves
// forward in a time_add; a negative body value is caught at evaluation).
Status support_operand(const json& op) {
  if (string_field(op, "from") != "time_add") return Ok{};
  const json& ms = *field(op, "milliseconds");
  if (operand_reads_time(ms))
    return unsupported("time in milliseconds: a time_add milliseconds operand must be time-free");
  if (string_field(ms, "from") == "literal" && *safe_int(*field(ms, "value")) < 0)
    return unsupported("negative milliseconds: time_add milliseconds literal " + show(*field(ms, "value")) +
                       " is negative");
  GITLOCKS_CHECK(support_operand(*field(op, "timestamp")));
  return support_operand(ms);
}

Status support_expr(const json& e) {
  auto op = *string_field(e, "op");
  if (is_comparison(op)) {
    const json& left = *field(e, "left");
    const json& right = *field(e, "right");
    bool lt = operand_reads_time(left), rt = operand_reads_time(right);
    if (!is_ordering(op) && (lt || rt))
      return unsupported("timed equality: '" + op + "' cannot compare time; use lt/lte/gt/gte");
    if (lt && rt) return unsupported("time on both sides of '" + op + "'");
    GITLOCKS_CHECK(support_operand(left));
    return support_operand(right);
  }
  if (op == "or" && expr_reads_time(e)) return unsupported("timed or: 'or' over time would not give one interval");
  if (op == "not") {
    if (expr_reads_time(e)) return unsupported("timed not: 'not' over time is not supported");
    return support_expr(*field(e, "arg"));
  }
  for (const auto& a : *field(e, "args")) GITLOCKS_CHECK(support_expr(a));
  return Ok{};
}

Status support_guards(const json& guards) {
  std::size_t i = 0;
  for (const auto& g : guards) {
    auto s = support_expr(g);
    if (!s.ok()) return locate(s.error(), "guards[" + std::to_string(i) + "]");
    ++i;
  }
  return Ok{};
}

// The plain actions of a (possibly nested) variants tree, in order.
void collect_leaves(const json& action, std::vector<const json*>& out) {
  if (const json* variants = field(action, "variants")) {
    for (const auto& v : *variants) collect_leaves(v, out);
    return;
  }
  out.push_back(&action);
}

Status support_action(const json& action) {
  std::vector<const json*> leaves;
  collect_leaves(action, leaves);
  bool any_timed = false;
  for (const json* leaf : leaves) {
    const json& guards = *field(*leaf, "guards");
    GITLOCKS_CHECK(support_guards(guards));
    any_timed = any_timed || guards_read_time(guards);
    for (const auto& effect : *field(*leaf, "effects")) {
      const json& value = *field(effect, "value");
      if (operand_reads_time(value))
        return unsupported("effect reads time: effect on " + show(*field(effect, "target")) +
                           " must copy body values, never T");
      GITLOCKS_CHECK(support_operand(value));
    }
  }
  if (any_timed && leaves.size() > 1)
    return unsupported("timed variants: an action whose guards read time must have one variant, not " +
                       std::to_string(leaves.size()));
  return Ok{};
}

// ---------------------------------------------------------------------------
// Pass 3: checked evaluation of time-free parts (preflight already passed).

Result<std::int64_t> lookup_body(const json& path, const json& body) {
  const json* node = &body;
  for (const auto& step : path) {
    if (step.is_string()) {
      if (!node->is_object()) node = nullptr;
      else node = field(*node, step.get_ref<const std::string&>());
    } else {
      auto index = static_cast<std::size_t>(*safe_int(step));
      node = (node->is_array() && index < node->size()) ? &(*node)[index] : nullptr;
    }
    if (node == nullptr) return bad("body path " + show(path) + " is missing");
  }
  auto value = safe_int(*node);
  if (!value)
    return bad("body path " + show(path) + " is not a safe integer (got " + std::string(node->type_name()) + ")");
  return *value;
}

Result<std::int64_t> eval_value(const json& op, const json& body);

// A time_add milliseconds value must lie in the safe domain.
Result<std::int64_t> eval_milliseconds(const json& ms, const json& body) {
  GITLOCKS_TRY(m, eval_value(ms, body));
  if (!in_domain(m))
    return overflow("time_add milliseconds operand " + to_string(m) + " is outside [0, 9007199254740991]");
  return m;
}

Result<std::int64_t> eval_value(const json& op, const json& body) {
  auto src = *string_field(op, "from");
  if (src == "literal") return *safe_int(*field(op, "value"));
  if (src == "body") return lookup_body(*field(op, "path"), body);
  if (src == "time_add") {
    GITLOCKS_TRY(ts, eval_value(*field(op, "timestamp"), body));
    if (!in_domain(ts))
      return overflow("time_add timestamp operand " + to_string(ts) + " is outside [0, 9007199254740991]");
    GITLOCKS_TRY(ms, eval_milliseconds(*field(op, "milliseconds"), body));
    i128 sum = static_cast<i128>(ts) + ms;
    if (!in_domain(sum))
      return overflow("time_add result " + to_string(ts) + " + " + to_string(ms) + " exceeds 9007199254740991");
    return static_cast<std::int64_t>(sum);
  }
  // Unreachable after the time-free check; kept so no path is undefined.
  return bad("operand reads time where a time-free value is required");
}

bool compare(std::string_view op, i128 a, i128 b) {
  if (op == "lt") return a < b;
  if (op == "lte") return a <= b;
  if (op == "gt") return a > b;
  if (op == "gte") return a >= b;
  if (op == "eq") return a == b;
  return a != b;  // "ne"
}

// All arguments are evaluated (no short-circuit) so that an error in any of
// them is reported whatever the values of the others.
Result<bool> eval_bool(const json& e, const json& body) {
  auto op = *string_field(e, "op");
  if (is_comparison(op)) {
    GITLOCKS_TRY(a, eval_value(*field(e, "left"), body));
    GITLOCKS_TRY(b, eval_value(*field(e, "right"), body));
    return compare(op, a, b);
  }
  if (op == "not") {
    GITLOCKS_TRY(v, eval_bool(*field(e, "arg"), body));
    return !v;
  }
  bool all = true, any = false;
  for (const auto& a : *field(e, "args")) {
    GITLOCKS_TRY(v, eval_bool(a, body));
    all = all && v;
    any = any || v;
  }
  return op == "and" ? all : any;
}

// ---------------------------------------------------------------------------
// Interval derivation.

// The half-lines collected from the guards, in exact 128-bit arithmetic.
struct Bounds {
  i128 lo = 0;                             // the domain's lower end: lower bounds below 0 are cut, not shifted
  i128 hi = kMax;                          // the domain's upper end
  std::optional<std::size_t> false_guard;  // first time-free guard that is false

  void at_least(i128 v) { lo = v > lo ? v : lo; }
  void at_most(i128 v) { hi = v < hi ? v : hi; }
};

// time_add(...time_add(time, m1)..., mk) has value T + (m1 + ... + mk).
// Returns that offset; every m must be in the safe domain.
Result<i128> chain_offset(const json& op, const json& body) {
  i128 offset = 0;
  const json* node = &op;
  while (string_field(*node, "from") == "time_add") {
    GITLOCKS_TRY(m, eval_milliseconds(*field(*node, "milliseconds"), body));
    offset += m;
    node = field(*node, "timestamp");
  }
  return offset;  // node is {"from":"time"}: support rules guarantee the chain shape
}

std::string mirrored(const std::string& op) {
  if (op == "lt") return "gt";
  if (op == "lte") return "gte";
  if (op == "gt") return "lt";
  return "lte";  // "gte"
}

// An ordering comparison's op as a typed one.
TimeGuard::Cmp ordering(const std::string& op) {
  if (op == "lt") return TimeGuard::Cmp::lt;
  if (op == "lte") return TimeGuard::Cmp::lte;
  if (op == "gte") return TimeGuard::Cmp::gte;
  return TimeGuard::Cmp::gt;  // "gt"
}

// T + s CMP v, with s >= 0 the sum of a time_add chain's milliseconds: the
// half-line of T it admits. Both guard forms end here (the documents'
// apply_timed_comparison and the typed guard_interval).
void bound_time(Bounds& b, TimeGuard::Cmp cmp, i128 s, i128 v) {
  // Every time_add result T + m1 + ... + mj must stay <= MAX; the ms are
  // non-negative, so the outermost one is the binding one. (If s > MAX this
  // bound is negative and the interval is empty.)
  b.at_most(static_cast<i128>(kMax) - s);
  const i128 edge = v - s;
  switch (cmp) {
    case TimeGuard::Cmp::lte:
      b.at_most(edge);
      break;
    case TimeGuard::Cmp::lt:
      b.at_most(edge - 1);
      break;
    case TimeGuard::Cmp::gte:
      b.at_least(edge);
      break;
    case TimeGuard::Cmp::gt:
      b.at_least(edge + 1);
      break;
  }
}

// One ordering comparison with time on exactly one side.
Status apply_timed_comparison(const json& e, const json& body, Bounds& b) {
  auto op = *string_field(e, "op");
  const json* timed = field(e, "left");
  const json* other = field(e, "right");
  if (!operand_reads_time(*timed)) {  // reversed: V op chain  ==  chain mirrored(op) V
    std::swap(timed, other);
    op = mirrored(op);
  }
  GITLOCKS_TRY(s, chain_offset(*timed, body));
  GITLOCKS_TRY(v, eval_value(*other, body));
  bound_time(b, ordering(op), s, v);
  return Ok{};
}

// A preflighted guard: time-free (evaluated), a conjunction, or a timed
// ordering comparison.
Status apply_guard(const json& g, const json& body, std::size_t index, Bounds& b) {
  if (!expr_reads_time(g)) {
    GITLOCKS_TRY(holds, eval_bool(g, body));
    if (!holds && !b.false_guard) b.false_guard = index;
    return Ok{};
  }
  if (*string_field(g, "op") == "and") {
    for (const auto& a : *field(g, "args")) GITLOCKS_CHECK(apply_guard(a, body, index, b));
    return Ok{};
  }
  return apply_timed_comparison(g, body, b);
}

// Shape and support of a single time-free expression or operand, for the
// public evaluators.
Status preflight_time_free_operand(const json& op) {
  GITLOCKS_CHECK(shape_operand(op, 1));
  GITLOCKS_CHECK(support_operand(op));
  if (operand_reads_time(op)) return bad("operand reads time; only time-free operands can be evaluated");
  return Ok{};
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API

Status expr_preflight(const json& guards) {
  GITLOCKS_CHECK(shape_guards(guards));
  return support_guards(guards);
}

Status action_preflight(const json& action) {
  GITLOCKS_CHECK(shape_action(action, 1));
  return support_action(action);
}

namespace {
// derive_interval's verdict on the bounds the guards left.
Result<Interval> interval_of(const Bounds& b) {
  // Errors in any guard take precedence over emptiness: all guards were
  // evaluated before deciding.
  if (b.false_guard)
    return make_error(Errc::empty_interval,
                      "empty interval: time-free guards[" + std::to_string(*b.false_guard) + "] is false");
  if (b.lo > b.hi)
    return make_error(Errc::empty_interval, "empty interval: no T in [0, 9007199254740991] satisfies the guards (lo " +
                                                to_string(b.lo) + " > hi " + to_string(b.hi) + ")");
  // lo >= 0 and hi <= MAX by construction, and lo <= hi: both fit in int64.
  return Interval{static_cast<std::int64_t>(b.lo), static_cast<std::int64_t>(b.hi)};
}

const char* cmp_name(TimeGuard::Cmp c) {
  switch (c) {
    case TimeGuard::Cmp::lt:
      return "lt";
    case TimeGuard::Cmp::lte:
      return "lte";
    case TimeGuard::Cmp::gt:
      return "gt";
    case TimeGuard::Cmp::gte:
      return "gte";
  }
  return "gt";
}
}  // namespace

json TimeGuard::document() const {
  json time = {{"from", "time"}};
  json left = add_ms ? json{{"from", "time_add"},
                            {"timestamp", std::move(time)},
                            {"milliseconds", {{"from", "literal"}, {"value", *add_ms}}}}
                     : std::move(time);
  return {{"op", cmp_name(cmp)}, {"left", std::move(left)}, {"right", {{"from", "body"}, {"path", path}}}};
}

TimeGuard time_after(json path, std::int64_t value) {
  return TimeGuard{TimeGuard::Cmp::gt, std::nullopt, std::move(path), value};
}
TimeGuard time_not_after(json path, std::int64_t value) {
  return TimeGuard{TimeGuard::Cmp::lte, std::nullopt, std::move(path), value};
}

json guard_documents(const std::vector<TimeGuard>& guards) {
  json out = json::array();
  for (const auto& g : guards) out.push_back(g.document());
  return out;
}

// The one shape a TimeGuard has (time, or one time_add of a literal, on the
// left; a body value on the right), on values the planner has already
// checked: bound_time, as for a document.
Result<Interval> guard_interval(const std::vector<TimeGuard>& guards) {
  Bounds b;
  for (std::size_t i = 0; i < guards.size(); ++i) {
    const TimeGuard& g = guards[i];
    if ((g.add_ms && !in_domain(*g.add_ms)) || g.value > kMax || g.value < -kMax)
      return bad("guards[" + std::to_string(i) + "]: a typed guard outside its domain (milliseconds " +
                 (g.add_ms ? std::to_string(*g.add_ms) : std::string("none")) + ", value " + std::to_string(g.value) +
                 ")");
    bound_time(b, g.cmp, g.add_ms ? *g.add_ms : 0, g.value);
  }
  return interval_of(b);
}

Result<Interval> derive_interval(const json& guards, const json& body) {
  GITLOCKS_CHECK(expr_preflight(guards));
  Bounds b;
  std::size_t i = 0;
  for (const auto& g : guards) {
    auto s = apply_guard(g, body, i, b);
    if (!s.ok()) return locate(s.error(), "guards[" + std::to_string(i) + "]");
    ++i;
  }
  return interval_of(b);
}

Result<bool> eval_time_free(const json& expr, const json& body) {
  GITLOCKS_CHECK(shape_expr(expr, 1));
  GITLOCKS_CHECK(support_expr(expr));
  if (expr_reads_time(expr)) return bad("expression reads time; only time-free expressions can be evaluated");
  return eval_bool(expr, body);
}

Result<std::int64_t> eval_operand(const json& operand, const json& body) {
  GITLOCKS_CHECK(preflight_time_free_operand(operand));
  return eval_value(operand, body);
}

}  // namespace gitlocks
