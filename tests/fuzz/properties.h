// The properties the fuzz targets check, one function per target, shared
// with the unit suite (tests/unit/fuzz_regressions_test.cpp), which replays
// every corpus seed and regression input through the same functions. Each
// returns "" when the property holds, else what broke.
//
// The expression oracle below is written from SPEC §6 "Expressions" and seed
// 002, not from lib/src/expr.cpp: it evaluates a guard list at one concrete
// T, and the interval property compares derive_interval with it at every T of
// small windows (brute force).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/canon.hpp"
#include "gitlocks/expr.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"

namespace gitlocks::fuzz {

inline std::string canon_property(std::string_view in) {
  auto strict = canon_parse(in, CanonMode::strict);
  if (strict.ok()) {
    auto out = canon_dump(*strict);
    if (!out.ok() || *out != in) return "strict parse does not re-encode to its input";
  }
  auto lenient = canon_parse(in, CanonMode::lenient);
  if (lenient.ok()) {
    auto out = canon_dump(*lenient);
    if (!out.ok()) return "lenient parse does not encode";
    auto again = canon_parse(*out, CanonMode::strict);
    if (!again.ok() || *again != *lenient) return "lenient parse does not re-encode to a strict fixpoint";
  }
  if (strict.ok() && !lenient.ok()) return "accepted strictly, refused leniently";
  return "";
}

// A signed document that opens must be canonical, and must stop opening when
// its signature's last hex digit changes (the check is real).
template <typename Open>
std::string signed_property(std::string_view in, Open open, const char* what) {
  if (!open(in).ok()) return "";
  auto doc = canon_parse(in, CanonMode::strict);
  if (!doc.ok() || canon_dump(*doc).value() != in) return std::string(what) + " opened from a non-canonical input";
  std::string flipped(in);
  // Canonical form ends with ..."sig":"<hex>"}: the last hex digit is at
  // size-3.
  if (flipped.size() < 3) return std::string(what) + " opened from a tiny input";
  char& c = flipped[flipped.size() - 3];
  c = c == '0' ? '1' : '0';
  auto again = open(flipped);
  if (again.ok()) return std::string(what) + " still opens with another signature";
  if (again.error().code != Errc::bad_signature && again.error().code != Errc::bad_json)
    return std::string(what) + " with a changed signature fails with " + std::string(errc_name(again.error().code));
  return "";
}

inline std::string packet_property(std::string_view in) {
  std::string why = signed_property(
      in, [](std::string_view s) { return open_packet(s); }, "packet");
  if (why.empty())
    why = signed_property(
        in, [](std::string_view s) { return open_attestation(s); }, "attestation");
  if (why.empty())
    why = signed_property(
        in, [](std::string_view s) { return open_admission_request(s); }, "admission request");
  return why;
}

inline std::string path_property(std::string_view in) {
  auto half = in.find('\n');
  std::string_view a = in.substr(0, half);
  std::string_view b = half == std::string_view::npos ? std::string_view() : in.substr(half + 1);
  auto pa = parse_repo_path(a);
  if (pa.ok()) {
    if (pa->display() != a) return "accepted path does not re-display to its input";
    if (!paths_overlap(*pa, *pa)) return "overlap is not reflexive";
    for (const auto& c : pa->components)
      if (c.empty() || c == "." || c == ".." || c.find('/') != std::string::npos) return "bad component accepted";
  }
  auto pb = parse_repo_path(b);
  if (pa.ok() && pb.ok()) {
    if (paths_overlap(*pa, *pb) != paths_overlap(*pb, *pa)) return "overlap is not symmetric";
    // SPEC §3: overlap iff one component list is a prefix of the other.
    const auto& x = pa->components.size() <= pb->components.size() ? pa->components : pb->components;
    const auto& y = pa->components.size() <= pb->components.size() ? pb->components : pa->components;
    if (paths_overlap(*pa, *pb) != std::equal(x.begin(), x.end(), y.begin())) return "overlap is not the prefix rule";
  }
  // A host's normalization lands on a path the planner accepts, and stays.
  for (PathCase pc : {PathCase::sensitive, PathCase::insensitive}) {
    auto n = normalize_path_input(a, pc);
    if (!n.ok()) continue;
    if (!parse_repo_path(*n, pc).ok()) return "normalized path is refused by parse_repo_path";
    auto again = normalize_path_input(*n, pc);
    if (!again.ok() || *again != *n) return "normalize_path_input is not idempotent";
  }
  if (auto n = normalize_path_input(a); pa.ok() && (!n.ok() || *n != a))
    return "an accepted path is rewritten by normalization";
  return "";
}

// ---------------------------------------------------------------------------
// Expression oracle

namespace oracle {

__extension__ typedef __int128 i128;
constexpr i128 kMax = kMaxSafeInteger;
inline bool in_domain(i128 v) { return v >= 0 && v <= kMax; }

// Outcome at one T. error_body / error_overflow hold at every T (a missing
// body value, a time-free value outside the safe domain where one is
// required); excluded means this T leaves the safe domain in a timed time_add.
enum Status { ok = 0, excluded = 1, error_overflow = 2, error_body = 3 };

struct Node {
  enum Kind { time, value, add, cmp, all, any, negate } kind = value;
  std::string op;            // cmp: lt, lte, gt, gte, eq, ne
  i128 v = 0;                // value
  Status value_status = ok;  // value: error_body when the body lookup failed
  std::vector<int> kids;
  bool timed = false;
};

// A guard list compiled once (body lookups resolved), evaluated at many T.
class Guards {
 public:
  // `guards` must have passed expr_preflight (shape and support).
  Guards(const json& guards, const json& body) : body_(body) {
    for (const auto& g : guards) roots_.push_back(expr(g));
  }

  // The worst status over every guard, and whether all hold.
  std::pair<Status, bool> at(i128 t) const {
    Status worst = ok;
    bool all = true;
    for (int r : roots_) {
      auto [s, b] = eval_bool(r, t);
      worst = std::max(worst, s);
      all = all && b;
    }
    return {worst, all};
  }

 private:
  int push(Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size()) - 1;
  }
  static bool integer(const json& v, i128& out) {
    if (v.is_number_unsigned()) {
      auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(kMaxSafeInteger)) return false;
      out = static_cast<i128>(u);
      return true;
    }
    if (!v.is_number_integer()) return false;
    auto i = v.get<std::int64_t>();
    if (i > kMaxSafeInteger || i < -kMaxSafeInteger) return false;
    out = i;
    return true;
  }
  int operand(const json& op) {
    const std::string from = op["from"].get<std::string>();
    Node n;
    if (from == "time") {
      n.kind = Node::time;
      n.timed = true;
    } else if (from == "literal") {
      integer(op["value"], n.v);
    } else if (from == "body") {
      const json* cur = &body_;
      for (const auto& step : op["path"]) {
        if (cur == nullptr) break;
        if (step.is_string()) {
          cur = cur->is_object() && cur->contains(step.get<std::string>()) ? &(*cur)[step.get<std::string>()] : nullptr;
        } else {
          auto i = step.get<std::uint64_t>();
          cur = cur->is_array() && i < cur->size() ? &(*cur)[static_cast<std::size_t>(i)] : nullptr;
        }
      }
      if (cur == nullptr || !integer(*cur, n.v)) n.value_status = error_body;
    } else {  // time_add
      n.kind = Node::add;
      n.kids = {operand(op["timestamp"]), operand(op["milliseconds"])};
      n.timed = nodes_[n.kids[0]].timed || nodes_[n.kids[1]].timed;
    }
    return push(n);
  }
  int expr(const json& e) {
    const std::string op = e["op"].get<std::string>();
    Node n;
    if (op == "and" || op == "or") {
      n.kind = op == "and" ? Node::all : Node::any;
      for (const auto& a : e["args"]) n.kids.push_back(expr(a));
    } else if (op == "not") {
      n.kind = Node::negate;
      n.kids = {expr(e["arg"])};
    } else {
      n.kind = Node::cmp;
      n.op = op;
      n.kids = {operand(e["left"]), operand(e["right"])};
    }
    return push(n);
  }
  // Every operand is evaluated (errors anywhere count), the worst status wins.
  std::pair<Status, i128> eval_value(int i, i128 t) const {
    const Node& n = nodes_[i];
    if (n.kind == Node::time) return {ok, t};
    if (n.kind == Node::value) return {n.value_status, n.v};
    auto [sa, a] = eval_value(n.kids[0], t);
    auto [sb, b] = eval_value(n.kids[1], t);
    Status s = std::max(sa, sb);
    // Every time_add operand and result lies in [0, 2^53-1]: outside it, a
    // time-free value is an error at every T, a timed one excludes this T.
    auto check = [&](i128 v, bool timed) {
      if (!in_domain(v)) s = std::max(s, timed ? excluded : error_overflow);
    };
    if (sa == ok) check(a, nodes_[n.kids[0]].timed);
    if (sb == ok) check(b, nodes_[n.kids[1]].timed);
    if (s == ok) check(a + b, n.timed);
    return {s, a + b};
  }
  std::pair<Status, bool> eval_bool(int i, i128 t) const {
    const Node& n = nodes_[i];
    if (n.kind == Node::cmp) {
      auto [sa, a] = eval_value(n.kids[0], t);
      auto [sb, b] = eval_value(n.kids[1], t);
      const std::string& op = n.op;
      bool r = op == "lt"    ? a < b
               : op == "lte" ? a <= b
               : op == "gt"  ? a > b
               : op == "gte" ? a >= b
               : op == "eq"  ? a == b
                             : a != b;
      return {std::max(sa, sb), r};
    }
    if (n.kind == Node::negate) {
      auto [s, b] = eval_bool(n.kids[0], t);
      return {s, !b};
    }
    Status worst = ok;
    bool all = true, any = false;
    for (int k : n.kids) {
      auto [s, b] = eval_bool(k, t);
      worst = std::max(worst, s);
      all = all && b;
      any = any || b;
    }
    return {worst, n.kind == Node::all ? all : any};
  }

  json body_;
  std::vector<Node> nodes_;
  std::vector<int> roots_;
};

// Maps every literal value and body integer into a small range, keeping
// values near 2^53-1 near it: the windows below then hold every edge.
inline void shrink(json& v, bool in_body) {
  auto small = [](std::int64_t x) -> std::int64_t {
    if (x < -kMaxSafeInteger) return x;  // not a safe integer: left for preflight to refuse
    if (x >= 0) return x > kMaxSafeInteger / 2 ? kMaxSafeInteger - (kMaxSafeInteger - x) % 1000 : x % 1000;
    return -((-x) % 1000);
  };
  if (v.is_object()) {
    const bool literal = v.contains("from") && v["from"] == "literal";
    for (auto& [k, sub] : v.items()) {
      if (literal && k == "value" && sub.is_number_integer()) sub = small(sub.get<std::int64_t>());
      else if (k != "path" || in_body) shrink(sub, in_body);
    }
  } else if (v.is_array()) {
    for (auto& sub : v) shrink(sub, in_body);
  } else if (in_body && v.is_number_integer() && !v.is_number_unsigned()) {
    v = small(v.get<std::int64_t>());
  } else if (in_body && v.is_number_unsigned() &&
             v.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxSafeInteger)) {
    v = small(static_cast<std::int64_t>(v.get<std::uint64_t>()));
  }
}

}  // namespace oracle

// `iv` (an interval, or an error) against the oracle `g` at every T of `ts`
// and +-3 around the interval's ends.
inline std::string oracle_agrees(const oracle::Guards& g, const Result<Interval>& iv, std::vector<std::int64_t> ts) {
  // T-independent errors: any T shows them.
  auto [s0, holds0] = g.at(0);
  (void)holds0;
  if (s0 >= oracle::error_overflow) {
    if (iv.ok())
      return "interval derived where the oracle finds a " +
             std::string(s0 == oracle::error_body ? "missing body value" : "time-free overflow");
    const Errc c = iv.error().code;
    if (c != Errc::bad_expression && c != Errc::arithmetic_overflow)
      return "oracle error, derive_interval says " + std::string(errc_name(c));
    return "";
  }
  if (!iv.ok() && iv.error().code != Errc::empty_interval)
    return "derive_interval fails with " + std::string(errc_name(iv.error().code)) + " (" + iv.error().message +
           ") where the oracle finds no error";
  if (iv.ok()) {
    for (std::int64_t d = -3; d <= 3; ++d) {
      ts.push_back(iv->lo + d);
      ts.push_back(iv->hi + d);
    }
  }
  for (std::int64_t t : ts) {
    if (t < 0 || t > kMaxSafeInteger) continue;
    auto [s, holds] = g.at(t);
    if (s >= oracle::error_overflow) return "oracle error at T = " + std::to_string(t) + " only";
    const bool admitted = s == oracle::ok && holds;
    const bool inside = iv.ok() && iv->contains(t);
    if (admitted != inside)
      return "T = " + std::to_string(t) +
             (admitted ? " satisfies every guard in the safe domain but is outside "
                       : " fails a guard or leaves the safe domain but is inside ") +
             (iv.ok() ? "[" + std::to_string(iv->lo) + ", " + std::to_string(iv->hi) + "]" : "the empty interval");
  }
  return "";
}

// derive_interval against the oracle at every T of `ts`.
inline std::string interval_matches_oracle(const json& guards, const json& body, std::vector<std::int64_t> ts) {
  auto pre = expr_preflight(guards);
  auto iv = derive_interval(guards, body);
  if (!pre.ok()) {
    if (iv.ok() || iv.error().code != pre.error().code) return "derive_interval disagrees with its preflight";
    return "";
  }
  return oracle_agrees(oracle::Guards(guards, body), iv, std::move(ts));
}

inline std::vector<std::int64_t> windows(std::int64_t width) {
  std::vector<std::int64_t> ts;
  for (std::int64_t t = 0; t <= width; ++t) {
    ts.push_back(t);
    ts.push_back(kMaxSafeInteger - t);
  }
  return ts;
}

// Input: {"guards":[...],"body":{...}} (anything else is the guard list).
// A derived interval is non-empty and inside the safe domain; errors are the
// documented ones; and the interval is exactly the oracle's set of T, checked
// at T in [0, 64], [2^53-1-64, 2^53-1] and +-3 around its ends, and — with
// every number mapped into a small range — at T in [0, 2000] and
// [2^53-1-2000, 2^53-1].
inline std::string expr_property(std::string_view in) {
  auto doc = canon_parse(in, CanonMode::lenient);
  if (!doc.ok()) return "";
  json guards = *doc;
  json body = json::object();
  if (doc->is_object() && doc->contains("guards")) {
    guards = (*doc)["guards"];
    if (doc->contains("body")) body = (*doc)["body"];
  }
  (void)action_preflight(*doc);
  auto iv = derive_interval(guards, body);
  if (iv.ok()) {
    if (iv->lo > iv->hi || iv->lo < 0 || iv->hi > kMaxSafeInteger) return "interval empty or outside the domain";
  } else if (iv.error().code != Errc::empty_interval && iv.error().code != Errc::bad_expression &&
             iv.error().code != Errc::unsupported_expression && iv.error().code != Errc::arithmetic_overflow) {
    return "undocumented error " + std::string(errc_name(iv.error().code));
  }
  std::string why = interval_matches_oracle(guards, body, windows(64));
  if (!why.empty()) return why;
  json small_guards = guards, small_body = body;
  oracle::shrink(small_guards, false);
  oracle::shrink(small_body, true);
  why = interval_matches_oracle(small_guards, small_body, windows(2000));
  return why.empty() ? "" : "with numbers mapped small: " + why;
}

}  // namespace gitlocks::fuzz
