#include "gitlocks/canon.hpp"

#include <memory>
#include <set>
#include <vector>

#include "utf8.h"

namespace gitlocks {

std::string_view errc_name(Errc c) {
  switch (c) {
    case Errc::held_path:
      return "held-path";
    case Errc::full_semaphore:
      return "full-semaphore";
    case Errc::family_policy:
      return "family-policy";
    case Errc::stale_generation:
      return "stale-generation";
    case Errc::not_holder:
      return "not-holder";
    case Errc::guard_window:
      return "guard-window";
    case Errc::empty_interval:
      return "empty-interval";
    case Errc::limit_mismatch:
      return "limit-mismatch";
    case Errc::stale_retries_exhausted:
      return "stale-retries-exhausted";
    case Errc::not_member:
      return "not-member";
    case Errc::wait_timeout:
      return "wait-timeout";
    case Errc::already_held:
      return "already-held";
    case Errc::lease_lost:
      return "lease-lost";
    case Errc::deadlock:
      return "deadlock";
    case Errc::usage:
      return "usage";
    case Errc::bad_path:
      return "bad-path";
    case Errc::bad_json:
      return "bad-json";
    case Errc::non_canonical:
      return "non-canonical";
    case Errc::bad_expression:
      return "bad-expression";
    case Errc::unsupported_expression:
      return "unsupported-expression";
    case Errc::arithmetic_overflow:
      return "arithmetic-overflow";
    case Errc::unknown_format:
      return "unknown-format";
    case Errc::store_read:
      return "store-read";
    case Errc::store_write:
      return "store-write";
    case Errc::bad_signature:
      return "bad-signature";
    case Errc::invalid:
      return "invalid";
    case Errc::invalid_history:
      return "invalid-history";
  }
  return "unknown";
}

namespace {

constexpr int kMaxDepth = 64;

Status check_value(const json& v, int depth) {
  // depth = containers enclosing v; an array or object is itself one more level.
  if (depth + (v.is_structured() ? 1 : 0) > kMaxDepth)
    return make_error(Errc::bad_json, "nesting deeper than 64 levels");
  switch (v.type()) {
    case json::value_t::number_float:
      return make_error(Errc::bad_json, "floating-point numbers are not allowed");
    case json::value_t::number_integer: {
      auto i = v.get<std::int64_t>();
      if (i > kMaxSafeInteger || i < -kMaxSafeInteger)
        return make_error(Errc::bad_json, "integer outside [-(2^53-1), 2^53-1]");
      return Ok{};
    }
    case json::value_t::number_unsigned:
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxSafeInteger))
        return make_error(Errc::bad_json, "integer outside [-(2^53-1), 2^53-1]");
      return Ok{};
    case json::value_t::string:
      if (!detail::utf8_valid(v.get_ref<const std::string&>()))
        return make_error(Errc::bad_json, "string is not valid UTF-8");
      return Ok{};
    case json::value_t::array:
      for (const auto& e : v) GITLOCKS_CHECK(check_value(e, depth + 1));
      return Ok{};
    case json::value_t::object:
      for (const auto& [k, e] : v.items()) {
        if (!detail::utf8_valid(k)) return make_error(Errc::bad_json, "key is not valid UTF-8");
        GITLOCKS_CHECK(check_value(e, depth + 1));
      }
      return Ok{};
    case json::value_t::binary:
    case json::value_t::discarded:
      return make_error(Errc::bad_json, "value outside the JSON data model");
    default:
      return Ok{};
  }
}

// nlohmann/json's DOM parser, plus what canonical JSON checks on the way:
// duplicate keys and nesting depth. (Its callback parser could do the same,
// but it rescans the enclosing container each time a value ends in it:
// quadratic in the length of an array, a denial of service on a large
// packet or policy.)
class CheckedDomParser : public nlohmann::detail::json_sax_dom_parser<json> {
  using Base = nlohmann::detail::json_sax_dom_parser<json>;

 public:
  explicit CheckedDomParser(json& result) : Base(result, /*allow_exceptions=*/false) {}
  bool start_object(std::size_t n) {
    enter();
    keys_.emplace_back();
    return Base::start_object(n);
  }
  bool end_object() {
    --depth_;
    keys_.pop_back();
    return Base::end_object();
  }
  bool start_array(std::size_t n) {
    enter();
    return Base::start_array(n);
  }
  bool end_array() {
    --depth_;
    return Base::end_array();
  }
  bool key(std::string& k) {
    if (keys_.back().add(k)) duplicate = true;
    return Base::key(k);
  }

  bool duplicate = false;
  bool too_deep = false;

 private:
  void enter() {
    if (++depth_ > kMaxDepth) too_deep = true;
  }
  // The keys of an object: while they arrive in increasing order (always, in
  // canonical JSON) no key can repeat one before it, so only the last is
  // compared; at the first key out of order they go into a set.
  struct Keys {
    std::string last;
    bool any = false;
    std::unique_ptr<std::set<std::string>> seen;
    std::vector<std::string> ordered;
    // True when k was seen before in this object.
    bool add(const std::string& k) {
      if (!seen) {
        if (!any || last < k) {
          if (any) ordered.push_back(std::move(last));
          last = k;
          any = true;
          return false;
        }
        seen = std::make_unique<std::set<std::string>>(std::make_move_iterator(ordered.begin()),
                                                       std::make_move_iterator(ordered.end()));
        seen->insert(std::move(last));
        ordered.clear();
      }
      return !seen->insert(k).second;
    }
  };
  int depth_ = 0;
  std::vector<Keys> keys_;  // of the open objects
};

}  // namespace

Status canon_check(const json& value) { return check_value(value, 0); }

Result<json> canon_parse(std::string_view text, CanonMode mode) {
  // Raw bytes first: the lexer accepts some things we reject (e.g. it would
  // report invalid UTF-8 only inside strings).
  if (!detail::utf8_valid(text)) return make_error(Errc::bad_json, "input is not valid UTF-8");
  // The lexer treats a NUL byte as end of input and would ignore what follows;
  // a raw NUL is never valid JSON.
  if (text.find('\0') != std::string_view::npos) return make_error(Errc::bad_json, "input contains a NUL byte");

  json v;
  CheckedDomParser sax(v);
  if (!json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, /*strict=*/true) || sax.is_errored())
    return make_error(Errc::bad_json, "not valid JSON");
  const bool duplicate = sax.duplicate, too_deep = sax.too_deep;
  if (duplicate) return make_error(Errc::bad_json, "duplicate object key");
  if (too_deep) return make_error(Errc::bad_json, "nesting deeper than 64 levels");
  GITLOCKS_CHECK(canon_check(v));
  if (mode == CanonMode::strict) {
    auto s = v.dump();
    if (s != text) return make_error(Errc::non_canonical, "input is not in canonical form");
  }
  return v;
}

Result<std::string> canon_dump(const json& value) {
  GITLOCKS_CHECK(canon_check(value));
  // canon_check guarantees valid UTF-8, so the serializer cannot fail.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> get_string(const json& obj, std::string_view key) {
  if (!obj.is_object()) return make_error(Errc::bad_json, "expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) return make_error(Errc::bad_json, "missing field '" + std::string(key) + "'");
  if (!it->is_string()) return make_error(Errc::bad_json, "field '" + std::string(key) + "' must be a string");
  return it->get<std::string>();
}

Result<std::int64_t> get_int(const json& obj, std::string_view key) {
  if (!obj.is_object()) return make_error(Errc::bad_json, "expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) return make_error(Errc::bad_json, "missing field '" + std::string(key) + "'");
  if (!it->is_number_integer())
    return make_error(Errc::bad_json, "field '" + std::string(key) + "' must be an integer");
  // An unsigned value above INT64_MAX would wrap to a negative int64 below.
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxSafeInteger))
    return make_error(Errc::bad_json, "field '" + std::string(key) + "' is outside the safe integer range");
  auto i = it->get<std::int64_t>();
  if (i > kMaxSafeInteger || i < -kMaxSafeInteger)
    return make_error(Errc::bad_json, "field '" + std::string(key) + "' is outside the safe integer range");
  return i;
}

bool member_is(const json& obj, std::string_view key, std::string_view want) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() && it->get_ref<const std::string&>() == want;
}

std::string string_member(const json& obj, std::string_view key, std::string fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

Status check_keys(const json& obj, std::initializer_list<std::string_view> allowed, std::string_view what) {
  if (!obj.is_object()) return make_error(Errc::bad_json, std::string(what) + " must be an object");
  for (const auto& [k, v] : obj.items()) {
    bool found = false;
    for (auto a : allowed) found = found || (a == k);
    if (!found) return make_error(Errc::bad_json, "unknown field '" + k + "' in " + std::string(what));
  }
  return Ok{};
}

}  // namespace gitlocks
