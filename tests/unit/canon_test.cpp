// Canonical JSON (SPEC §3): adversarial inputs for canon_parse (strict and
// lenient), canon_dump and the typed accessors. Expected bytes are written by
// hand, never produced by the code under test.
#include "gitlocks/canon.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using gitlocks::canon_dump;
using gitlocks::canon_parse;
using gitlocks::CanonMode;
using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Result;

namespace {

// "ok" or the kebab-case error name: readable in doctest's failure output.
template <class T>
std::string outcome(const Result<T>& r) {
  return r.ok() ? std::string("ok") : std::string(gitlocks::errc_name(r.error().code));
}

// Printable form of arbitrary bytes for INFO().
std::string show(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string strict_outcome(std::string_view s) { return outcome(canon_parse(s, CanonMode::strict)); }
std::string lenient_outcome(std::string_view s) { return outcome(canon_parse(s, CanonMode::lenient)); }

// n nested arrays around `inner`.
std::string nest_arrays(int n, const std::string& inner) {
  return std::string(static_cast<std::size_t>(n), '[') + inner + std::string(static_cast<std::size_t>(n), ']');
}

// n nested objects {"a":{"a":...inner...}}.
std::string nest_objects(int n, const std::string& inner) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "{\"a\":";
  s += inner;
  for (int i = 0; i < n; ++i) s += "}";
  return s;
}

json nest_json(int n, json inner) {
  for (int i = 0; i < n; ++i) inner = json::array({inner});
  return inner;
}

// Deterministic PRNG (splitmix64): same mutations on every host.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

// A hand-written canonical document of ~200 bytes: sorted keys (by UTF-8
// bytes), escapes, raw non-ASCII, boundary integers, nesting.
const std::string kDoc =
    "{\"Z\":null,\"a\":[1,-2,0,{\"k\":\"v\"},[],{}],\"ab\":\"line\\nbreak\\ttab\\\"q\\\\/\","
    "\"b\":{\"x\":true,\"y\":false},\"int\":9007199254740991,\"neg\":-9007199254740991,"
    "\"s\":\"\\u0001\\u001f\\b\\f\\r\",\"\xC3\xA9t\xC3\xA9\":\"caf\xC3\xA9 \xF0\x9F\x98\x80\","
    "\"\xEF\xBF\xBD\":\"\xE2\x80\xA8\"}";

}  // namespace

// ---------------------------------------------------------------- numbers

TEST_CASE("canon: floats are rejected in every spelling - strict and lenient") {
  const char* floats[] = {"1.0",   "1e3",         "1E3",
                          "1e+3",  "1E-2",        "-0.0",
                          "0.0",   "0e0",         "1e0",
                          "1.5",   "-1.5",        "2.5e-308",
                          "1e400", "-1e400",      "9007199254740991.0",
                          "[1.0]", "{\"a\":1e3}", "{\"a\":[0,{\"b\":-0.0}]}"};
  for (const char* f : floats) {
    INFO("input: ", f);
    CHECK(strict_outcome(f) == "bad-json");
    CHECK(lenient_outcome(f) == "bad-json");
  }
}

TEST_CASE("canon: malformed number syntax is bad JSON") {
  const char* bad[] = {"+1",       "01",        "-01", ".5", "1.",  "-",   "--1",  "0x10",
                       "Infinity", "-Infinity", "NaN", "1e", "1e+", "- 1", "1_000"};
  for (const char* b : bad) {
    INFO("input: ", b);
    CHECK(strict_outcome(b) == "bad-json");
    CHECK(lenient_outcome(b) == "bad-json");
  }
}

TEST_CASE("canon: integers at +-(2^53-1) are accepted - one beyond is rejected") {
  auto hi = canon_parse("9007199254740991");
  REQUIRE(hi.ok());
  CHECK(hi->get<std::int64_t>() == 9007199254740991LL);
  auto lo = canon_parse("-9007199254740991");
  REQUIRE(lo.ok());
  CHECK(lo->get<std::int64_t>() == -9007199254740991LL);
  auto in_obj = canon_parse("{\"a\":[9007199254740991,-9007199254740991]}");
  REQUIRE(in_obj.ok());
  CHECK((*in_obj)["a"][1].get<std::int64_t>() == -9007199254740991LL);

  const char* unsafe[] = {
      "9007199254740992",          "-9007199254740992",    "9007199254740993",      "-9007199254740993",
      "9223372036854775807",       "-9223372036854775808", "9223372036854775808",   "-9223372036854775809",
      "18446744073709551615",      "18446744073709551616", "-18446744073709551616", "[9007199254740992]",
      "{\"a\":-9007199254740992}",
  };
  for (const char* u : unsafe) {
    INFO("input: ", u);
    CHECK(strict_outcome(u) == "bad-json");
    CHECK(lenient_outcome(u) == "bad-json");
  }
  // Huge digit strings (past every native integer type).
  for (std::size_t n : {20u, 21u, 40u, 309u, 400u, 5000u}) {
    std::string big = "1" + std::string(n, '0');
    INFO("digits: ", n + 1);
    CHECK(strict_outcome(big) == "bad-json");
    CHECK(strict_outcome("-" + big) == "bad-json");
    CHECK(lenient_outcome("[" + big + "]") == "bad-json");
  }
}

TEST_CASE("canon: -0 is accepted leniently as 0 but is not canonical") {
  auto l = canon_parse("-0", CanonMode::lenient);
  REQUIRE(l.ok());
  CHECK(*l == json(0));
  auto d = canon_dump(*l);
  REQUIRE(d.ok());
  CHECK(*d == "0");
  CHECK(strict_outcome("-0") == "non-canonical");
  CHECK(strict_outcome("[-0]") == "non-canonical");
  CHECK(strict_outcome("{\"a\":-0}") == "non-canonical");
  CHECK(strict_outcome("0") == "ok");
}

// ------------------------------------------------------------- duplicates

TEST_CASE("canon: duplicate keys are rejected at top level and nested") {
  const char* dups[] = {
      "{\"a\":1,\"a\":1}",
      "{\"a\":1,\"a\":2}",
      "{\"a\":1,\"b\":2,\"a\":3}",
      "{\"x\":{\"a\":1,\"a\":2}}",
      "{\"x\":[{\"k\":1,\"k\":1}]}",
      "[{\"a\":{\"b\":{\"c\":1,\"c\":1}}}]",
      // Same key after unescaping.
      "{\"a\":1,\"\\u0061\":2}",
      "{\"\xC3\xA9\":1,\"\\u00e9\":2}",
      // Duplicate after an inner object closed.
      "{\"a\":{\"b\":1},\"a\":{\"b\":1}}",
  };
  for (const char* d : dups) {
    INFO("input: ", show(d));
    CHECK(strict_outcome(d) == "bad-json");
    CHECK(lenient_outcome(d) == "bad-json");
  }
  // Equal keys in *different* objects are fine.
  CHECK(strict_outcome("{\"x\":{\"a\":1},\"y\":{\"a\":1}}") == "ok");
  CHECK(strict_outcome("[{\"a\":1},{\"a\":1}]") == "ok");
  CHECK(strict_outcome("{\"a\":{\"a\":{\"a\":1}}}") == "ok");
  // Keys that differ only after a NUL are distinct.
  CHECK(strict_outcome("{\"a\":1,\"a\\u0000\":2}") == "ok");
}

// ------------------------------------------------------------------ UTF-8

TEST_CASE("canon: invalid UTF-8 is rejected inside and outside strings") {
  const std::vector<std::string> bad_seqs = {
      "\x80",                      // lone continuation byte
      "\xBF",                      // lone continuation byte
      "\xC0\xAF",                  // overlong '/'
      "\xC0\x80",                  // overlong NUL
      "\xC1\xBF",                  // overlong (C1 lead)
      "\xE0\x80\xAF",              // 3-byte overlong '/'
      "\xE0\x9F\xBF",              // 3-byte overlong U+07FF
      "\xF0\x80\x80\xAF",          // 4-byte overlong '/'
      "\xF0\x8F\xBF\xBF",          // 4-byte overlong U+FFFF
      "\xED\xA0\x80",              // UTF-16 high surrogate U+D800
      "\xED\xBF\xBF",              // low surrogate U+DFFF
      "\xED\xA0\xBD\xED\xB8\x80",  // CESU-8 surrogate pair
      "\xF4\x90\x80\x80",          // U+110000
      "\xF5\x80\x80\x80",          // lead byte beyond range
      "\xF8\x88\x80\x80\x80",      // 5-byte form
      "\xFE",
      "\xFF",
      "\xC3\x28",          // lead followed by ASCII
      "\xE2\x28\xA1",      // bad second byte
      "\xE2\x82\x28",      // bad third byte
      "\xF0\x9F\x98\x28",  // bad fourth byte
  };
  for (const auto& seq : bad_seqs) {
    INFO("sequence: ", show(seq));
    const std::vector<std::string> docs = {
        "\"" + seq + "\"",      // inside a string value
        "{\"" + seq + "\":1}",  // inside a key
        "[\"a" + seq + "b\"]",  // middle of a string
        seq + "{}",             // before the document
        "{}" + seq,             // after the document
        "[1," + seq + "]",      // between values
    };
    for (const auto& d : docs) {
      INFO("doc: ", show(d));
      CHECK(strict_outcome(d) == "bad-json");
      CHECK(lenient_outcome(d) == "bad-json");
    }
  }
}

TEST_CASE("canon: truncated UTF-8 at end of input is rejected") {
  const std::vector<std::string> docs = {
      "\"\xC3",   "\"\xE2\x82",     "\"\xF0\x9F\x98",   "\"\xF0",
      "\"\xC3\"", "\"\xE2\x82\"",   "\"\xF0\x9F\x98\"", "{\"a\":\"\xE2\x82\xAC\xE2\x82\"}",
      "{}\xC3",   "{}\xF0\x9F\x98",
  };
  for (const auto& d : docs) {
    INFO("doc: ", show(d));
    CHECK(strict_outcome(d) == "bad-json");
    CHECK(lenient_outcome(d) == "bad-json");
  }
}

TEST_CASE("canon: UTF-8 boundary code points are accepted raw") {
  const std::vector<std::string> good = {
      "\x7F",              // U+007F (DEL is not a JSON control character)
      "\xC2\x80",          // U+0080
      "\xDF\xBF",          // U+07FF
      "\xE0\xA0\x80",      // U+0800
      "\xED\x9F\xBF",      // U+D7FF
      "\xEE\x80\x80",      // U+E000
      "\xEF\xBF\xBD",      // U+FFFD
      "\xEF\xBF\xBF",      // U+FFFF
      "\xF0\x90\x80\x80",  // U+10000
      "\xF4\x8F\xBF\xBF",  // U+10FFFF
  };
  for (const auto& g : good) {
    std::string doc = "\"" + g + "\"";
    INFO("doc: ", show(doc));
    auto r = canon_parse(doc);
    REQUIRE(r.ok());
    CHECK(r->get<std::string>() == g);
    auto d = canon_dump(*r);
    REQUIRE(d.ok());
    CHECK(*d == doc);
  }
}

// ---------------------------------------------------------- \u escapes

TEST_CASE("canon: backslash-u escapes of lone or misordered surrogates are rejected") {
  const char* bad[] = {
      "\"\\ud800\"",        "\"\\udbff\"",        "\"\\udc00\"",        "\"\\udfff\"",
      "\"\\ud800\\u0041\"", "\"\\udc00\\ud800\"", "\"\\ud800\\ud800\"", "\"\\ud800x\"",
      "\"\\ud800",          "{\"\\ud800\":1}",    "\"\\uD800\"",
  };
  for (const char* b : bad) {
    INFO("input: ", b);
    CHECK(strict_outcome(b) == "bad-json");
    CHECK(lenient_outcome(b) == "bad-json");
  }
}

TEST_CASE("canon: a valid escaped surrogate pair is lenient-only and decodes to raw UTF-8") {
  auto r = canon_parse("\"\\ud83d\\ude00\"", CanonMode::lenient);
  REQUIRE(r.ok());
  CHECK(r->get<std::string>() == "\xF0\x9F\x98\x80");
  CHECK(strict_outcome("\"\\ud83d\\ude00\"") == "non-canonical");
  CHECK(strict_outcome("\"\xF0\x9F\x98\x80\"") == "ok");
}

TEST_CASE("canon: the escape of U+0000 decodes to a NUL byte and is canonical as backslash-u0000") {
  auto r = canon_parse("\"a\\u0000b\"");
  REQUIRE(r.ok());
  CHECK(r->get<std::string>() == std::string("a\0b", 3));
  auto d = canon_dump(json(std::string("\0", 1)));
  REQUIRE(d.ok());
  CHECK(*d == "\"\\u0000\"");
  // A raw NUL byte is not allowed in a string or between tokens.
  CHECK(strict_outcome(std::string("\"a\0b\"", 5)) == "bad-json");
  CHECK(lenient_outcome(std::string("\"a\0b\"", 5)) == "bad-json");
  CHECK(lenient_outcome(std::string("{}\0", 3)) == "bad-json");
  CHECK(lenient_outcome(std::string("\0{}", 3)) == "bad-json");
}

TEST_CASE("canon: malformed escapes are bad JSON") {
  const char* bad[] = {"\"\\u\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\x41\"", "\"\\U0041\"", "\"\\a\"",
                       "\"\\'\"", "\"\\0\"",   "\"\\\"",      "\"abc",     "\"\\u-123\"", "\"\\ u0041\""};
  for (const char* b : bad) {
    INFO("input: ", b);
    CHECK(strict_outcome(b) == "bad-json");
    CHECK(lenient_outcome(b) == "bad-json");
  }
  // Raw control characters inside strings are not JSON.
  for (int c = 1; c < 0x20; ++c) {
    std::string d = "\"a" + std::string(1, static_cast<char>(c)) + "\"";
    INFO("control: ", c);
    CHECK(lenient_outcome(d) == "bad-json");
  }
}

// ---------------------------------------------------------------- escapes

TEST_CASE("canon: string escapes in canonical output - derived by hand") {
  struct Case {
    std::string value;
    std::string encoded;
  };
  const std::vector<Case> cases = {
      {"\n", "\"\\n\""},
      {"\t", "\"\\t\""},
      {"\b", "\"\\b\""},
      {"\f", "\"\\f\""},
      {"\r", "\"\\r\""},
      {"\"", "\"\\\"\""},
      {"\\", "\"\\\\\""},
      {"/", "\"/\""},
      {std::string("\x01", 1), "\"\\u0001\""},
      {std::string("\x0b", 1), "\"\\u000b\""},
      {std::string("\x0e", 1), "\"\\u000e\""},
      {std::string("\x1a", 1), "\"\\u001a\""},
      {std::string("\x1f", 1), "\"\\u001f\""},
      {std::string("\x7f", 1), "\"\x7f\""},
      {"\xC3\xA9", "\"\xC3\xA9\""},
      {"\xE2\x80\xA8\xE2\x80\xA9", "\"\xE2\x80\xA8\xE2\x80\xA9\""},  // U+2028/2029 raw
      {"\xF0\x9F\x98\x80", "\"\xF0\x9F\x98\x80\""},
      {"a/b\\c\"d\ne", "\"a/b\\\\c\\\"d\\ne\""},
  };
  for (const auto& c : cases) {
    INFO("value: ", show(c.value));
    auto d = canon_dump(json(c.value));
    REQUIRE(d.ok());
    CHECK(show(*d) == show(c.encoded));
    auto p = canon_parse(c.encoded);
    REQUIRE(p.ok());
    CHECK(p->get<std::string>() == c.value);
  }
  // The same value spelled any other way is not canonical.
  const char* noncanon[] = {
      "\"\\/\"",      // escaped solidus
      "\"\\u000a\"",  // \n spelled as \u
      "\"\\u0009\"",  // \t spelled as \u
      "\"\\u0008\"",  // \b
      "\"\\u000c\"",  // \f
      "\"\\u000d\"",  // \r
      "\"\\u001F\"",  // uppercase hex
      "\"\\u000B\"",  // uppercase hex
      "\"\\u0041\"",  // escaped ASCII letter
      "\"\\u0022\"",  // '"' as \u
      "\"\\u005c\"",  // '\\' as \u
      "\"\\u00e9\"",  // escaped non-ASCII
      "\"\\u007f\"",  // DEL escaped
      "\"\\u2028\"",  // escaped line separator
  };
  for (const char* n : noncanon) {
    INFO("input: ", n);
    CHECK(lenient_outcome(n) == "ok");
    CHECK(strict_outcome(n) == "non-canonical");
  }
}

// --------------------------------------------------------------- nesting

TEST_CASE("canon: nesting of exactly 64 levels is accepted - 65 is rejected") {
  for (const std::string& inner : {std::string(""), std::string("1"), std::string("\"s\""), std::string("{}")}) {
    INFO("inner: ", inner);
    // `{}` as inner is itself a level.
    int extra = inner == "{}" ? 1 : 0;
    std::string ok64 = nest_arrays(64 - extra, inner);
    std::string bad65 = nest_arrays(65 - extra, inner);
    CHECK(strict_outcome(ok64) == "ok");
    CHECK(strict_outcome(bad65) == "bad-json");
    CHECK(lenient_outcome(bad65) == "bad-json");
  }
  CHECK(strict_outcome(nest_objects(64, "1")) == "ok");
  CHECK(strict_outcome(nest_objects(63, "[]")) == "ok");
  CHECK(strict_outcome(nest_objects(65, "1")) == "bad-json");
  CHECK(strict_outcome(nest_objects(64, "[]")) == "bad-json");
  CHECK(strict_outcome(nest_objects(65, "{}")) == "bad-json");
  // Mixed arrays and objects.
  std::string mixed;
  for (int i = 0; i < 32; ++i) mixed += "[{\"k\":";
  std::string closing;
  for (int i = 0; i < 32; ++i) closing += "}]";
  CHECK(strict_outcome(mixed + "0" + closing) == "ok");          // 64 levels
  CHECK(strict_outcome(mixed + "[0]" + closing) == "bad-json");  // 65 levels
}

TEST_CASE("canon: canon_dump applies the same 64-level limit") {
  CHECK(outcome(canon_dump(nest_json(64, json(1)))) == "ok");
  CHECK(outcome(canon_dump(nest_json(63, json::array()))) == "ok");
  CHECK(outcome(canon_dump(nest_json(65, json(1)))) == "bad-json");
  CHECK(outcome(canon_dump(nest_json(64, json::array()))) == "bad-json");
  CHECK(outcome(canon_dump(nest_json(64, json::object()))) == "bad-json");
}

TEST_CASE("canon: very deep nesting is rejected without exhausting the stack") {
  for (int n : {100, 1000, 100000}) {
    INFO("depth: ", n);
    CHECK(strict_outcome(nest_arrays(n, "")) == "bad-json");
    CHECK(lenient_outcome(nest_arrays(n, "1")) == "bad-json");
    CHECK(lenient_outcome(nest_objects(n, "1")) == "bad-json");
    // Unterminated deep input.
    CHECK(lenient_outcome(std::string(static_cast<std::size_t>(n), '[')) == "bad-json");
  }
}

// ---------------------------------------------------- truncation, garbage

TEST_CASE("canon: the fixture document is canonical and about 200 bytes") {
  CHECK(kDoc.size() >= 180);
  CHECK(kDoc.size() <= 260);
  auto r = canon_parse(kDoc);
  REQUIRE(r.ok());
  CHECK((*r)["int"].get<std::int64_t>() == 9007199254740991LL);
  CHECK((*r)["ab"].get<std::string>() == "line\nbreak\ttab\"q\\/");
  CHECK((*r)["s"].get<std::string>() == "\x01\x1f\b\f\r");
  CHECK((*r)["\xC3\xA9t\xC3\xA9"].get<std::string>() == "caf\xC3\xA9 \xF0\x9F\x98\x80");
}

TEST_CASE("canon: no proper prefix of a canonical document parses to the same value") {
  auto full = canon_parse(kDoc);
  REQUIRE(full.ok());
  for (std::size_t n = 0; n < kDoc.size(); ++n) {
    std::string_view prefix(kDoc.data(), n);
    INFO("prefix length: ", n);
    auto strict = canon_parse(prefix, CanonMode::strict);
    auto lenient = canon_parse(prefix, CanonMode::lenient);
    // An object document: every proper prefix is incomplete.
    CHECK_FALSE(strict.ok());
    CHECK_FALSE(lenient.ok());
    if (strict.ok()) CHECK(*strict != *full);
    if (lenient.ok()) CHECK(*lenient != *full);
  }
  // Scalars: a prefix may be a *different* valid document, never the same.
  for (std::string doc : {"12345", "-9007199254740991", "true", "\"abc\"", "[1,[2]]"}) {
    auto f = canon_parse(doc);
    REQUIRE(f.ok());
    for (std::size_t n = 0; n < doc.size(); ++n) {
      auto p = canon_parse(std::string_view(doc.data(), n), CanonMode::lenient);
      INFO("doc: ", doc, " prefix: ", n);
      if (p.ok()) CHECK(*p != *f);
    }
  }
  CHECK(strict_outcome("") == "bad-json");
  CHECK(lenient_outcome("") == "bad-json");
}

TEST_CASE("canon: trailing garbage is rejected") {
  const std::vector<std::string> bad = {
      kDoc + "x", kDoc + "}",  kDoc + "{}", kDoc + ",", kDoc + "0",   kDoc + "\"", "{}{}",  "[][]",       "1 2",
      "1,2",      "null null", "{},",       "[1]]",     "{\"a\":1}}", "truex",     "nulll", "\"a\"\"b\"", "0 0",
  };
  for (const auto& b : bad) {
    INFO("input: ", show(b));
    CHECK(strict_outcome(b) == "bad-json");
    CHECK(lenient_outcome(b) == "bad-json");
  }
  // The JSON lexer treats a NUL byte as end of input; whatever follows it must
  // not be silently dropped (a second document, an override, anything).
  const std::vector<std::string> after_nul = {
      std::string("{}\0", 3),
      std::string("{\"a\":1}\0{\"a\":2}", 15),
      std::string("1\0"
                  "2",
                  3),
      std::string("[1]\0garbage", 11),
      kDoc + std::string("\0", 1) + kDoc,
  };
  for (const auto& b : after_nul) {
    INFO("input: ", show(b));
    CHECK(strict_outcome(b) == "bad-json");
    CHECK(lenient_outcome(b) == "bad-json");
  }
}

TEST_CASE("canon: whitespace is free in lenient mode and non-canonical in strict mode") {
  const std::vector<std::string> ws = {
      " {}",
      "{} ",
      "{}\n",
      "\n{}",
      "\t{}",
      "{}\r\n",
      "{ }",
      "[ ]",
      "[1, 2]",
      "[1 ,2]",
      "{\"a\": 1}",
      "{\"a\" :1}",
      "{ \"a\":1}",
      "{\"a\":1 }",
      "{\"a\":1,\r\"b\":2}",
      "{\n  \"a\": [\n    1\n  ]\n}",
      " 1",
      "1 ",
      "\"x\" ",
  };
  for (const auto& w : ws) {
    INFO("input: ", show(w));
    CHECK(lenient_outcome(w) == "ok");
    CHECK(strict_outcome(w) == "non-canonical");
  }
  // Not JSON whitespace at all: form feed, vertical tab, NBSP, U+2028, BOM
  // (strict only: the BOM is never canonical).
  const std::vector<std::string> not_ws = {"\f{}",
                                           "{}\f",
                                           "\v[]",
                                           "[1,\v2]",
                                           "\xC2\xA0{}",
                                           "[1,\xC2\xA0"
                                           "2]",
                                           "{}\xE2\x80\xA8"};
  for (const auto& w : not_ws) {
    INFO("input: ", show(w));
    CHECK(lenient_outcome(w) == "bad-json");
    CHECK(strict_outcome(w) == "bad-json");
  }
  CHECK(strict_outcome("\xEF\xBB\xBF{}") != "ok");
}

// -------------------------------------------------------------- key order

TEST_CASE("canon: unsorted keys are lenient-only") {
  const char* unsorted[] = {
      "{\"b\":1,\"a\":2}",
      "{\"a\":1,\"c\":2,\"b\":3}",
      "{\"x\":{\"b\":1,\"a\":2}}",
      "[{\"b\":1,\"a\":2}]",
      "{\"aa\":1,\"a\":2}",                           // prefix sorts first
      "{\"a\":1,\"B\":2}",                            // uppercase (0x42) before lowercase (0x61)
      "{\"\xC3\xA9\":1,\"z\":2}",                     // 0xC3 > 'z'
      "{\"\xF0\x9F\x98\x80\":1,\"\xEF\xBF\xBD\":2}",  // UTF-16 order, not UTF-8 order
      "{\"a\\u0000\":1,\"a\":2}",
  };
  for (const char* u : unsorted) {
    INFO("input: ", show(u));
    CHECK(lenient_outcome(u) == "ok");
    CHECK(strict_outcome(u) == "non-canonical");
  }
}

TEST_CASE("canon: keys sort by UTF-8 bytes - including non-ASCII keys") {
  json obj = json::object();
  // Insert in an order that is neither byte order nor code-unit order.
  obj["\xF0\x9F\x98\x80"] = 1;  // U+1F600: F0 9F 98 80 (UTF-16 D83D, sorts before U+FFFD there)
  obj["\xEF\xBF\xBD"] = 2;      // U+FFFD: EF BF BD
  obj["z"] = 3;
  obj["\xC3\xA9"] = 4;  // U+00E9: C3 A9
  obj["Z"] = 5;
  obj["a"] = 6;
  obj["aa"] = 7;
  obj[""] = 8;
  obj[std::string("a\0", 2)] = 9;
  obj["\x7f"] = 10;
  const std::string expected =
      "{\"\":8,\"Z\":5,\"a\":6,\"a\\u0000\":9,\"aa\":7,\"z\":3,\"\x7f\":10,\"\xC3\xA9\":4,"
      "\"\xEF\xBF\xBD\":2,\"\xF0\x9F\x98\x80\":1}";
  auto d = canon_dump(obj);
  REQUIRE(d.ok());
  CHECK(show(*d) == show(expected));
  auto p = canon_parse(expected);
  REQUIRE(p.ok());
  CHECK(*p == obj);
}

// ----------------------------------------------------------- round trips

TEST_CASE("canon: dump(parse(x)) == x for canonical documents") {
  const std::vector<std::string> docs = {
      "{}",
      "[]",
      "\"\"",
      "0",
      "-1",
      "1",
      "null",
      "true",
      "false",
      "9007199254740991",
      "-9007199254740991",
      "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}",
      "[[],[[]],{},{\"\":{}}]",
      "{\"\":\"\",\"a\":\"\\\\\\\"\\n\"}",
      "\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f \x7f\"",
      "{\"k\xC3\xA9y\":\"v\xE2\x82\xAC\",\"\xF0\x9F\x98\x80\":[\"\xF4\x8F\xBF\xBF\"]}",
      kDoc,
  };
  for (const auto& x : docs) {
    INFO("doc: ", show(x));
    auto p = canon_parse(x);
    REQUIRE(p.ok());
    auto d = canon_dump(*p);
    REQUIRE(d.ok());
    CHECK(show(*d) == show(x));
    auto l = canon_parse(x, CanonMode::lenient);
    REQUIRE(l.ok());
    CHECK(*l == *p);
  }
}

// ----------------------------------------------------------- canon_dump

TEST_CASE("canon: canon_dump refuses values outside the data model") {
  CHECK(outcome(canon_dump(json(1.0))) == "bad-json");
  CHECK(outcome(canon_dump(json(-0.0))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::numeric_limits<double>::quiet_NaN()))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::numeric_limits<double>::infinity()))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::int64_t{9007199254740992}))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::int64_t{-9007199254740992}))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::numeric_limits<std::int64_t>::min()))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::numeric_limits<std::int64_t>::max()))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::uint64_t{9007199254740992}))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::numeric_limits<std::uint64_t>::max()))) == "bad-json");
  CHECK(outcome(canon_dump(json{{"a", json::array({1, 2, 2.5})}})) == "bad-json");
  CHECK(outcome(canon_dump(json(std::string("\xC0\xAF")))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::string("\xED\xA0\x80")))) == "bad-json");
  CHECK(outcome(canon_dump(json(std::string("ok\xC3")))) == "bad-json");
  CHECK(outcome(canon_dump(json{{std::string("\xFF"), 1}})) == "bad-json");
  CHECK(outcome(canon_dump(json::binary({1, 2, 3}))) == "bad-json");
  CHECK(outcome(gitlocks::canon_check(json::array({json::binary({1})}))) == "bad-json");

  auto hi = canon_dump(json(std::int64_t{9007199254740991}));
  REQUIRE(hi.ok());
  CHECK(*hi == "9007199254740991");
  auto lo = canon_dump(json(std::int64_t{-9007199254740991}));
  REQUIRE(lo.ok());
  CHECK(*lo == "-9007199254740991");
  auto uhi = canon_dump(json(std::uint64_t{9007199254740991}));
  REQUIRE(uhi.ok());
  CHECK(*uhi == "9007199254740991");
}

// ------------------------------------------------------------- accessors

TEST_CASE("canon: get_int checks presence - type and range") {
  json o = {{"n", 5},
            {"neg", -7},
            {"max", std::int64_t{9007199254740991}},
            {"min", std::int64_t{-9007199254740991}},
            {"big", std::int64_t{9007199254740992}},
            {"small", std::int64_t{-9007199254740992}},
            {"u53", std::uint64_t{9007199254740992}},
            {"u63", std::uint64_t{1} << 63},
            {"u64max", std::numeric_limits<std::uint64_t>::max()},
            {"u64max_minus_4", std::numeric_limits<std::uint64_t>::max() - 4},
            {"f", 5.0},
            {"s", "5"},
            {"b", true},
            {"z", nullptr},
            {"arr", json::array({5})},
            {"obj", json::object()}};
  auto n = gitlocks::get_int(o, "n");
  REQUIRE(n.ok());
  CHECK(*n == 5);
  CHECK(*gitlocks::get_int(o, "neg") == -7);
  CHECK(*gitlocks::get_int(o, "max") == 9007199254740991LL);
  CHECK(*gitlocks::get_int(o, "min") == -9007199254740991LL);
  // A key view that is not NUL-terminated.
  std::string_view nx = "nx";
  CHECK(*gitlocks::get_int(o, nx.substr(0, 1)) == 5);
  for (const char* k : {"big", "small", "u53", "u63", "u64max", "u64max_minus_4", "f", "s", "b", "z", "arr", "obj",
                        "missing", "N", ""}) {
    INFO("key: ", std::string(k));
    CHECK(outcome(gitlocks::get_int(o, k)) == "bad-json");
  }
  for (const json& notobj : {json::array({5}), json(5), json("n"), json(nullptr)}) {
    CHECK(outcome(gitlocks::get_int(notobj, "n")) == "bad-json");
  }
}

TEST_CASE("canon: get_string checks presence and type and keeps every byte") {
  json o = {{"s", "hello"}, {"nul", std::string("a\0b", 3)}, {"empty", ""}, {"i", 1}, {"b", false},
            {"z", nullptr}, {"arr", json::array({"s"})}};
  CHECK(*gitlocks::get_string(o, "s") == "hello");
  CHECK(*gitlocks::get_string(o, "nul") == std::string("a\0b", 3));
  auto e = gitlocks::get_string(o, "empty");
  REQUIRE(e.ok());
  CHECK(e->empty());
  for (const char* k : {"i", "b", "z", "arr", "missing", "S"}) {
    INFO("key: ", std::string(k));
    CHECK(outcome(gitlocks::get_string(o, k)) == "bad-json");
  }
  CHECK(outcome(gitlocks::get_string(json::array({"s"}), "s")) == "bad-json");
  CHECK(outcome(gitlocks::get_string(json("s"), "s")) == "bad-json");
}

TEST_CASE("canon: check_keys accepts subsets and names the first unknown field") {
  json o = {{"a", 1}, {"b", 2}};
  CHECK(gitlocks::check_keys(o, {"a", "b"}, "thing").ok());
  CHECK(gitlocks::check_keys(o, {"c", "b", "a"}, "thing").ok());
  CHECK(gitlocks::check_keys(json::object(), {}, "thing").ok());
  CHECK(gitlocks::check_keys(json::object(), {"a"}, "thing").ok());

  auto r = gitlocks::check_keys(o, {"a"}, "thing");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::bad_json);
  CHECK(r.error().message.find("'b'") != std::string::npos);
  CHECK(r.error().message.find("thing") != std::string::npos);

  CHECK(outcome(gitlocks::check_keys(o, {}, "thing")) == "bad-json");
  CHECK(outcome(gitlocks::check_keys(json{{"a", 1}}, {"ab"}, "t")) == "bad-json");
  CHECK(outcome(gitlocks::check_keys(json{{"ab", 1}}, {"a"}, "t")) == "bad-json");
  CHECK(outcome(gitlocks::check_keys(json{{"A", 1}}, {"a"}, "t")) == "bad-json");
  CHECK(outcome(gitlocks::check_keys(json{{std::string("a\0", 2), 1}}, {"a"}, "t")) == "bad-json");
  CHECK(outcome(gitlocks::check_keys(json::array(), {"a"}, "t")) == "bad-json");
  CHECK(outcome(gitlocks::check_keys(json(nullptr), {"a"}, "t")) == "bad-json");
}

// -------------------------------------------------------------- mutation

TEST_CASE("canon: single-byte mutations never crash and strict success is byte-exact") {
  const std::vector<std::string> seeds = {
      kDoc,
      "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}",
      "[9007199254740991,-9007199254740991,0,\"\\u0000\\u001f\",true,false,null]",
      "{\"k\":{\"x\":[[],{}]},\"\xC3\xA9\":\"\xF0\x9F\x98\x80\"}",
  };
  // Bytes that matter to a JSON parser, plus UTF-8 lead/continuation bytes.
  const std::string interesting = std::string("{}[],:\"\\/-+.0123456789eEtrufalsn \t\r\n\b\fu") +
                                  std::string("\x00\x01\x1f\x7f\x80\xbf\xc0\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff", 16);
  SplitMix64 rng{0x5EED'C0DE'2024ULL};
  int accepted_strict = 0, non_canonical = 0, malformed = 0;
  for (const auto& seed : seeds) {
    REQUIRE(canon_parse(seed).ok());
    for (int i = 0; i < 1500; ++i) {
      std::string m = seed;
      auto random_byte = [&]() {
        if (rng.below(2)) return interesting[rng.below(interesting.size())];
        return static_cast<char>(rng.below(256));
      };
      switch (rng.below(4)) {
        case 0: {  // flip one bit
          std::size_t pos = rng.below(m.size());
          m[pos] = static_cast<char>(m[pos] ^ (1 << rng.below(8)));
          break;
        }
        // Draws are sequenced explicitly: argument evaluation order differs
        // between compilers, and the mutants must be the same on every host.
        case 1: {  // replace a byte
          std::size_t pos = rng.below(m.size());
          char b = random_byte();
          m[pos] = b;
          break;
        }
        case 2: {  // insert a byte
          std::size_t pos = rng.below(m.size() + 1);
          char b = random_byte();
          m.insert(m.begin() + static_cast<std::ptrdiff_t>(pos), b);
          break;
        }
        default:  // delete a byte
          m.erase(m.begin() + static_cast<std::ptrdiff_t>(rng.below(m.size())));
          break;
      }
      INFO("mutant: ", show(m));
      auto s = canon_parse(m, CanonMode::strict);
      auto l = canon_parse(m, CanonMode::lenient);
      if (s.ok()) {
        ++accepted_strict;
        auto d = canon_dump(*s);
        REQUIRE(d.ok());
        CHECK(show(*d) == show(m));
        REQUIRE(l.ok());
        CHECK(*l == *s);
      } else if (s.error().code == Errc::non_canonical) {
        ++non_canonical;
        // Non-canonical means well-formed: lenient must accept it.
        CHECK(l.ok());
      } else {
        ++malformed;
        CHECK(s.error().code == Errc::bad_json);
        CHECK_FALSE(l.ok());
      }
      if (l.ok()) {
        // Whatever lenient accepts has a canonical form that strict accepts.
        auto d = canon_dump(*l);
        REQUIRE(d.ok());
        auto again = canon_parse(*d, CanonMode::strict);
        REQUIRE(again.ok());
        CHECK(*again == *l);
      }
    }
  }
  // The campaign actually exercised every outcome: canonical mutants,
  // well-formed but non-canonical ones, and malformed ones.
  CHECK(accepted_strict > 0);
  CHECK(non_canonical > 0);
  CHECK(malformed > 0);
}

// An Error's fields keep the type they were set with (result.hpp, Field):
// every host renders them through this to_json, never by the field's name.
TEST_CASE("error fields: numbers render as JSON numbers and text as strings") {
  gitlocks::Fields f;
  f["expires_at_ms"] = std::int64_t{1764590193000};
  f["op_index"] = std::size_t{2};
  f["polls"] = 0;
  f["holder"] = "alice";
  f["current_generation"] = std::string("3");  // text stays text, even if it looks like a number
  const gitlocks::json j = f;
  CHECK(j.dump() ==
        R"({"current_generation":"3","expires_at_ms":1764590193000,"holder":"alice","op_index":2,"polls":0})");
  CHECK(f["op_index"].is_number());
  CHECK(f["op_index"].number() == 2);
  CHECK(f["op_index"].text().empty());
  CHECK(f["holder"].text() == "alice");
  CHECK(f["holder"].number() == 0);
  CHECK(f["expires_at_ms"].str() == "1764590193000");
  CHECK(f["current_generation"] != gitlocks::Field(3));
  CHECK(gitlocks::Field(-1).str() == "-1");
}
