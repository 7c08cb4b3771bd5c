// gitlocks/expr.hpp — guard expressions over admission time T (seed 002,
// "Native expression") and the exact interval of T they admit.
//
// JSON form (seed 002):
//   comparison  {"op":"lt"|"lte"|"gt"|"gte"|"eq"|"ne","left":OPERAND,"right":OPERAND}
//   conjunction {"op":"and","args":[EXPR,...]}
//   disjunction {"op":"or","args":[EXPR,...]}      (time-free only)
//   negation    {"op":"not","arg":EXPR}            (time-free only)
//   operands    {"from":"time"}
//               {"from":"literal","value":INTEGER}
//               {"from":"body","path":[KEY-or-INDEX,...]}
//               {"from":"time_add","timestamp":OPERAND,"milliseconds":OPERAND}
// A guard list is a JSON array of expressions, read as a conjunction.
// An action is {"guards":[...],"effects":[...]} or {"variants":[ACTION,...]};
// an effect is {"target":[KEY,...],"value":OPERAND}.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/result.hpp"

namespace gitlocks {

// Inclusive interval of admission times, within [0, kMaxSafeInteger].
struct Interval {
  std::int64_t lo = 0;
  std::int64_t hi = kMaxSafeInteger;
  bool contains(std::int64_t t) const { return lo <= t && t <= hi; }
  bool operator==(const Interval& o) const { return lo == o.lo && hi == o.hi; }
  bool operator!=(const Interval& o) const { return !(*this == o); }
};

inline constexpr Interval kUniversalInterval{0, kMaxSafeInteger};

// Checks that a guard list uses only supported forms. Errors:
//   bad_expression          malformed (unknown op/operand, missing or unknown
//                           fields, wrong types)
//   unsupported_expression  a form seed 002 lists as unsupported: time on both
//                           comparison sides, time in a milliseconds operand,
//                           timed eq/ne, timed or, timed not, a negative
//                           literal milliseconds operand.
Status expr_preflight(const json& guards);

// Preflight of a whole action: its guards, plus the action-level rules:
// several variants in a timed action, and effects that read T, are
// unsupported_expression.
Status action_preflight(const json& action);

// The exact set of T in [0, 2^53-1] for which every guard holds and every
// time_add operand and result stays in [0, 2^53-1]. Time-free parts are
// evaluated with the checked evaluator against `body`. Errors: those of
// preflight; bad_expression (a body path that is missing or not an integer);
// arithmetic_overflow (a time-free time_add out of the safe domain);
// empty_interval (no T satisfies the guards).
Result<Interval> derive_interval(const json& guards, const json& body);

// Checked evaluator for a time-free expression (no {"from":"time"} inside).
Result<bool> eval_time_free(const json& expr, const json& body);

// Checked evaluator for a time-free operand.
Result<std::int64_t> eval_operand(const json& operand, const json& body);

// A guard as the planner states it, typed: T, or T + add_ms (a time_add of
// a literal), compared with the integer `value` that the body holds at
// `path` (["ops", i, ...]). The planner reads `value` from the typed op it
// plans (or writes it there when proposing), so the guard never looks the
// body up by name. Its seed 002 document is document():
//   {"op":CMP,"left":{"from":"time"} | {"from":"time_add","timestamp":{"from":"time"},
//    "milliseconds":{"from":"literal","value":ADD_MS}},"right":{"from":"body","path":PATH}}
struct TimeGuard {
  enum class Cmp { lt, lte, gt, gte };
  Cmp cmp = Cmp::gt;
  std::optional<std::int64_t> add_ms;  // in [0, 2^53-1]
  json path;                           // where the body holds `value`
  std::int64_t value = 0;              // in [-(2^53-1), 2^53-1]
  json document() const;
};
// T > body[path], T <= body[path].
TimeGuard time_after(json path, std::int64_t value);
TimeGuard time_not_after(json path, std::int64_t value);
// The guard list's seed 002 documents, in order (what a host shows).
json guard_documents(const std::vector<TimeGuard>& guards);
// The exact interval of T in which every guard holds: for a body that holds
// each guard's `value` at its `path`, exactly what
// derive_interval(guard_documents(guards), body) gives, errors included
// (empty_interval). A guard outside its documented domain is bad_expression.
Result<Interval> guard_interval(const std::vector<TimeGuard>& guards);

}  // namespace gitlocks
