// gitlocks/canon.hpp — canonical JSON, the encoding of every stored or signed
// object.
//
// Canonical form: UTF-8; object keys sorted by their UTF-8 bytes; no
// insignificant whitespace; integers only, in [-(2^53-1), 2^53-1]; strings
// escape only '"', '\\' and control characters (\b \f \n \r \t, others as
// \u00xx with lowercase hex); every other character is written as itself.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gitlocks/result.hpp"

namespace gitlocks {

using json = nlohmann::json;

inline constexpr std::int64_t kMaxSafeInteger = 9007199254740991;  // 2^53 - 1

// An Error's field as JSON: a number or a string, as the core typed it.
inline void to_json(json& out, const Field& f) {
  if (f.is_number()) out = f.number();
  else out = f.text();
}

enum class CanonMode {
  // Any valid JSON in the restricted data model (no floats, no duplicate
  // keys, valid UTF-8, safe integers); whitespace and key order are free.
  lenient,
  // Additionally the input must be byte-identical to its canonical encoding:
  // required for everything that is signed or hashed.
  strict,
};

// Parses untrusted bytes without exceptions. Errors: bad_json (syntax,
// floats, duplicate keys, invalid UTF-8, unsafe integers, depth > 64) and
// non_canonical (strict mode only).
Result<json> canon_parse(std::string_view text, CanonMode mode = CanonMode::strict);

// Canonical encoding. Returns bad_json if the value holds a float or an
// integer outside the safe range (so nothing non-canonical can be written).
Result<std::string> canon_dump(const json& value);

// Checks that a value is in the data model (no floats, safe integers).
Status canon_check(const json& value);

// Typed accessors for untrusted objects: each checks presence and type.
Result<std::string> get_string(const json& obj, std::string_view key);
Result<std::int64_t> get_int(const json& obj, std::string_view key);
// Whether obj is an object with member `key` equal to `want` (a member of
// another type is not equal: never a throw on an untrusted document).
bool member_is(const json& obj, std::string_view key, std::string_view want);
// obj's member `key` when obj is an object and the member a string, else
// `fallback`: for showing what an untrusted document says.
std::string string_member(const json& obj, std::string_view key, std::string fallback = "");
// Checks that obj is an object whose keys are all in `allowed`.
Status check_keys(const json& obj, std::initializer_list<std::string_view> allowed, std::string_view what);

}  // namespace gitlocks
