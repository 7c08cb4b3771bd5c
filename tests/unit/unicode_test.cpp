// Unicode normalization for path identity (SPEC §3, docs/FORMAT.md "Path
// identity"): NFC checked against Unicode's own NormalizationTest.txt, simple
// case folding, and the edges of UTF-8 input.
#include "gitlocks/unicode.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gitlocks/path.hpp"
#include "unicode.h"

using gitlocks::case_fold_nfc;
using gitlocks::Errc;
using gitlocks::normalize_path_input;
using gitlocks::parse_repo_path;
using gitlocks::PathCase;
using gitlocks::to_nfc;

namespace {
// Under CI ($CI set to anything but "", "0", "false" or "no", as
// tests/support/unittest_ci.py in_ci() reads it) missing data fails.
bool in_ci() {
  const char* v = std::getenv("CI");
  std::string s = v ? v : "";
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return !(s.empty() || s == "0" || s == "false" || s == "no");
}
}  // namespace

namespace {

std::u32string parse_field(const std::string& field) {
  std::u32string out;
  std::istringstream in(field);
  std::string hex;
  while (in >> hex) out += static_cast<char32_t>(std::stoul(hex, nullptr, 16));
  return out;
}

std::string hex_of(const std::u32string& s) {
  std::string out;
  char buf[12];
  for (char32_t c : s) {
    std::snprintf(buf, sizeof buf, "%s%04X", out.empty() ? "" : " ", static_cast<unsigned>(c));
    out += buf;
  }
  return out;
}

std::string nfc(std::string_view s) {
  auto r = to_nfc(s);
  REQUIRE(r.ok());
  return *r;
}

std::string fold(std::string_view s) {
  auto r = case_fold_nfc(s);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("unicode NormalizationTest.txt conformance of NFC") {
  std::ifstream in(GITLOCKS_NORMALIZATION_TEST);
  if (!in) {
    // Setup installs Debian's unicode-data; in CI its absence is a failure.
    if (in_ci()) FAIL("missing " GITLOCKS_NORMALIZATION_TEST " (install unicode-data)");
    MESSAGE("skipped: " GITLOCKS_NORMALIZATION_TEST " not found (install unicode-data)");
    return;
  }
  using gitlocks::detail::nfc;
  std::string line;
  std::string part;
  std::set<char32_t> part1;
  std::size_t lines = 0;
  std::size_t failures = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '@') {
      part = line.substr(0, line.find(' '));
      continue;
    }
    std::vector<std::u32string> c;
    std::size_t start = 0;
    for (int i = 0; i < 5; ++i) {
      std::size_t end = line.find(';', start);
      REQUIRE(end != std::string::npos);
      c.push_back(parse_field(line.substr(start, end - start)));
      start = end + 1;
    }
    ++lines;
    if (part == "@Part1") part1.insert(c[0][0]);
    // The file's NFC invariants: c2 == NFC(c1) == NFC(c2) == NFC(c3), c4 == NFC(c4) == NFC(c5).
    const std::u32string want[5] = {c[1], c[1], c[1], c[3], c[3]};
    for (int i = 0; i < 5; ++i) {
      std::u32string got = nfc(c[i]);
      if (got != want[i] && ++failures <= 20)
        FAIL_CHECK("NFC(c" << i + 1 << ") of line '" << line << "' is " << hex_of(got) << ", want " << hex_of(want[i]));
    }
  }
  CHECK(failures == 0);
  CHECK(lines > 19000);
  REQUIRE(part1.size() > 10000);
  // Part 1 lists every code point that normalization changes; all others
  // are invariant: NFC(X) == X.
  std::size_t invariant = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || part1.count(cp)) continue;
    const std::u32string one(1, cp);
    if (nfc(one) != one && ++failures <= 40) FAIL_CHECK("NFC(" << hex_of(one) << ") changed");
    ++invariant;
  }
  CHECK(failures == 0);
  CHECK(invariant > 1000000);
}

TEST_CASE("unicode NFC of NFD input is the precomposed form") {
  CHECK(nfc("cafe\xCC\x81") == "caf\xC3\xA9");  // e + U+0301 -> U+00E9
  CHECK(nfc("caf\xC3\xA9") == "caf\xC3\xA9");   // already NFC
  CHECK(nfc("plain/ascii.c") == "plain/ascii.c");
  CHECK(nfc("") == "");
  // Hangul: U+1100 U+1161 U+11A8 -> U+AC01, and an LV syllable + T.
  CHECK(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8") == "\xEA\xB0\x81");
  CHECK(nfc("\xEA\xB0\x80\xE1\x86\xA8") == "\xEA\xB0\x81");
  // A composition exclusion: U+0958 decomposes to U+0915 U+093C and stays so.
  CHECK(nfc("\xE0\xA5\x98") == "\xE0\xA4\x95\xE0\xA4\xBC");
  // Singletons: U+212B ANGSTROM SIGN -> U+00C5, U+2126 OHM -> U+03A9.
  CHECK(nfc("\xE2\x84\xAB") == "\xC3\x85");
  CHECK(nfc("\xE2\x84\xA6") == "\xCE\xA9");
  // Canonical ordering: U+0323 (220) before U+0307 (230) whatever the input order.
  CHECK(nfc("s\xCC\x87\xCC\xA3") == "\xE1\xB9\xA9");
  CHECK(nfc("s\xCC\xA3\xCC\x87") == "\xE1\xB9\xA9");
  // Boundary code points pass through.
  CHECK(nfc("\x7F") == "\x7F");
  CHECK(nfc("\xF4\x8F\xBF\xBF") == "\xF4\x8F\xBF\xBF");
  CHECK(nfc("\xEF\xBF\xBD") == "\xEF\xBF\xBD");
}

TEST_CASE("unicode to_nfc refuses invalid UTF-8") {
  for (std::string bad : {"\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "caf\xC3", "\xFF",
                          "\xF0\x82\x82\xAC"}) {
    auto r = to_nfc(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::usage);
    auto f = case_fold_nfc(bad);
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().code == Errc::usage);
  }
}

TEST_CASE("unicode simple case folding") {
  CHECK(fold("Src/Main.C") == "src/main.c");
  CHECK(fold("\xC3\x89t\xC3\xA9") == "\xC3\xA9t\xC3\xA9");  // Été -> été
  CHECK(fold("E\xCC\x81") == "\xC3\xA9");                   // NFD É -> é
  CHECK(fold("\xCE\xA3\xCF\x82") == "\xCF\x83\xCF\x83");    // Σς -> σσ
  CHECK(fold("\xC3\x9F") == "\xC3\x9F");                    // ß: full folding (F) only, kept
  CHECK(fold("\xE1\xBA\x9E") == "\xC3\x9F");                // U+1E9E -> ß (status S)
  CHECK(fold("\xE2\x84\xAA") == "k");                       // KELVIN SIGN -> NFC K -> k
  CHECK(fold("\xF0\x90\x90\x80") == "\xF0\x90\x90\xA8");    // Deseret U+10400 -> U+10428
  CHECK(fold("I") == "i");                                  // no Turkic mapping (status T)
  // The ASCII fast path agrees with the table for every ASCII code point.
  for (char32_t c = 1; c < 0x80; ++c) {
    const std::string one(1, static_cast<char>(c));
    CHECK(fold(one) == std::string(1, static_cast<char>(gitlocks::detail::simple_fold(c))));
    CHECK(nfc(one) == one);
  }
}

TEST_CASE("unicode case folding is idempotent for every code point") {
  std::size_t failures = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string once = fold(gitlocks::detail::utf8_encode(std::u32string(1, cp)));
    if (fold(once) != once && ++failures <= 20)
      FAIL_CHECK("folding U+" << std::hex << static_cast<unsigned>(cp) << " twice differs");
  }
  CHECK(failures == 0);
}

TEST_CASE("unicode long combining sequences stay bounded") {
  std::string thirty = "a";
  for (int i = 0; i < 30; ++i) thirty += "\xCC\x81";
  CHECK(gitlocks::longest_nonstarter_run(thirty) == 30);
  CHECK(parse_repo_path(nfc(thirty)).ok());
  std::string thirty_one = thirty + "\xCC\x81";
  CHECK(gitlocks::longest_nonstarter_run(thirty_one) == 31);
  auto r = parse_repo_path(thirty_one);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::bad_path);
  CHECK(r.error().message.find("30 combining marks") != std::string::npos);
  auto n = normalize_path_input(thirty_one);
  REQUIRE_FALSE(n.ok());
  CHECK(n.error().code == Errc::bad_path);
  // A decomposition counts: U+1E69 is s + two marks, so 29 more make 31.
  std::string hidden = "\xE1\xB9\xA9";
  for (int i = 0; i < 29; ++i) hidden += "\xCC\x81";
  CHECK(gitlocks::longest_nonstarter_run(hidden) == 31);
  CHECK(parse_repo_path(hidden).error().code == Errc::bad_path);
  // The normalizer itself has no limit and stays fast on a long run.
  std::string long_run = "a";
  for (int i = 0; i < 4000; ++i) long_run += i % 2 ? "\xCC\x81" : "\xCC\xA3";
  // Sorted: 2000 x U+0323 (class 220) before 2000 x U+0301 (230); the first
  // U+0323 composes with 'a' (U+1EA1), nothing else composes.
  const std::string out = nfc(long_run);
  CHECK(out.size() == 3 + 1999 * 2 + 2000 * 2);
  CHECK(out.rfind("\xE1\xBA\xA1\xCC\xA3", 0) == 0);
  CHECK(out.substr(out.size() - 2) == "\xCC\x81");
}

TEST_CASE("path non-NFC paths are refused naming the NFC form") {
  auto r = parse_repo_path("docs/cafe\xCC\x81.md");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::bad_path);
  CHECK(r.error().message.find("not in Unicode NFC") != std::string::npos);
  CHECK(r.error().message.find("docs/cafe\\u0301.md") != std::string::npos);
  CHECK(r.error().message.find("(write 'docs/caf\xC3\xA9.md')") != std::string::npos);
  CHECK(parse_repo_path("docs/caf\xC3\xA9.md").ok());
  // A singleton is not NFC either.
  CHECK(parse_repo_path("\xE2\x84\xAB").error().code == Errc::bad_path);
}

TEST_CASE("path normalize_path_input gives the canonical form of a store") {
  auto n = normalize_path_input("docs/cafe\xCC\x81/");
  REQUIRE(n.ok());
  CHECK(*n == "docs/caf\xC3\xA9/");
  auto same = normalize_path_input("Src/Main.c");
  REQUIRE(same.ok());
  CHECK(*same == "Src/Main.c");
  auto folded = normalize_path_input("Src/Main.c", PathCase::insensitive);
  REQUIRE(folded.ok());
  CHECK(*folded == "src/main.c");
  auto nfd_upper = normalize_path_input("CAFE\xCC\x81/", PathCase::insensitive);
  REQUIRE(nfd_upper.ok());
  CHECK(*nfd_upper == "caf\xC3\xA9/");
  // Nothing but the Unicode form is rewritten.
  for (std::string bad : {"./a", "a//b", "/abs", "a\\b", "", "caf\xC3", "a\x01"}) {
    auto b = normalize_path_input(bad);
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().code == Errc::bad_path);
  }
}

TEST_CASE("path case-insensitive stores refuse paths that are not folded") {
  CHECK(parse_repo_path("Src/Main.c").ok());
  auto r = parse_repo_path("Src/Main.c", PathCase::insensitive);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::bad_path);
  CHECK(r.error().message.find("(write 'src/main.c')") != std::string::npos);
  CHECK(parse_repo_path("src/main.c", PathCase::insensitive).ok());
}

TEST_CASE("unicode simple_fold is CaseFolding.txt status C and S for every code point") {
  std::ifstream in("/usr/share/unicode/CaseFolding.txt");
  if (!in) {
    if (in_ci()) FAIL("missing /usr/share/unicode/CaseFolding.txt (install unicode-data)");
    MESSAGE("skipped: /usr/share/unicode/CaseFolding.txt not found (install unicode-data)");
    return;
  }
  std::map<char32_t, char32_t> want;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string code, status, mapping;
    std::getline(f, code, ';');
    std::getline(f, status, ';');
    std::getline(f, mapping, ';');
    if (status != " C" && status != " S") continue;
    want[static_cast<char32_t>(std::stoul(code, nullptr, 16))] =
        static_cast<char32_t>(std::stoul(mapping, nullptr, 16));
  }
  REQUIRE(want.size() > 1400);
  std::size_t failures = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    auto it = want.find(cp);
    const char32_t expected = it == want.end() ? cp : it->second;
    if (gitlocks::detail::simple_fold(cp) != expected && ++failures <= 20)
      FAIL_CHECK("simple_fold(U+" << std::hex << static_cast<unsigned>(cp) << ") is wrong");
  }
  CHECK(failures == 0);
}
