#include "gitlocks/unicode.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "unicode.h"
#include "utf8.h"

namespace gitlocks {
namespace detail {
namespace {

#include "unicode_tables.inc"

constexpr std::uint64_t kMask21 = (1u << 21) - 1;

// Hangul syllables (Unicode §3.12): S = SBase + (L * VCount + V) * TCount + T.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// The entry of a table sorted by its bits from `shift` up whose key is `key`.
template <std::size_t N>
const std::uint64_t* find(const std::uint64_t (&table)[N], std::uint64_t key, int shift) {
  const std::uint64_t* it =
      std::lower_bound(std::begin(table), std::end(table), key << shift,
                       [&](std::uint64_t e, std::uint64_t k) { return (e >> shift) < (k >> shift); });
  return it != std::end(table) && (*it >> shift) == key ? it : nullptr;
}

void decompose(char32_t c, std::u32string& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out += static_cast<char32_t>(kLBase + s / kNCount);
    out += static_cast<char32_t>(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out += static_cast<char32_t>(kTBase + s % kTCount);
    return;
  }
  if (const std::uint64_t* e = find(kDecomposition, c, 42)) {
    decompose(static_cast<char32_t>((*e >> 21) & kMask21), out);
    if (const auto second = static_cast<char32_t>(*e & kMask21)) decompose(second, out);
    return;
  }
  out += c;
}

// The primary composite of a starter and a following character, or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  if (a > kMask21 || b > kMask21) return 0;
  const std::uint64_t* e = find(kComposition, std::uint64_t{a} << 21 | b, 21);
  return e ? static_cast<char32_t>(*e & kMask21) : 0;
}

std::u32string decomposed(std::u32string_view s) {
  std::u32string d;
  d.reserve(s.size());
  for (char32_t c : s) decompose(c, d);
  // Canonical ordering: each run of non-starters, stably by class.
  for (std::size_t i = 0; i < d.size();) {
    if (!combining_class(d[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < d.size() && combining_class(d[j])) ++j;
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t x, char32_t y) { return combining_class(x) < combining_class(y); });
    i = j;
  }
  return d;
}

}  // namespace

std::uint8_t combining_class(char32_t c) {
  const auto key = std::uint64_t{c} << 29 | 0x1FFFFFFF;
  const std::uint64_t* it = std::upper_bound(std::begin(kCombiningClass), std::end(kCombiningClass), key);
  if (it == std::begin(kCombiningClass)) return 0;
  const std::uint64_t e = *(it - 1);
  return c <= ((e >> 8) & kMask21) ? static_cast<std::uint8_t>(e & 0xFF) : 0;
}

std::u32string nfc(std::u32string_view s) {
  std::u32string d = decomposed(s);
  std::u32string out;
  out.reserve(d.size());
  std::size_t starter = std::u32string::npos;
  for (char32_t c : d) {
    const std::uint8_t cc = combining_class(c);
    if (starter != std::u32string::npos) {
      // Blocked: something between the starter and c has class 0 or >= c's.
      const bool adjacent = starter + 1 == out.size();
      const std::uint8_t last = adjacent ? 0 : combining_class(out.back());
      if (adjacent || (last != 0 && last < cc)) {
        if (char32_t composite = compose(out[starter], c)) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (cc == 0) starter = out.size();
    out += c;
  }
  return out;
}

char32_t simple_fold(char32_t c) {
  // The last run starting at or before c (runs never interleave: the
  // generator checks every code point).
  const std::uint64_t key = std::uint64_t{c} << 43 | ((std::uint64_t{1} << 43) - 1);
  const std::uint64_t* it = std::upper_bound(std::begin(kCaseFold), std::end(kCaseFold), key);
  if (it == std::begin(kCaseFold)) return c;
  const std::uint64_t e = *(it - 1);
  const auto first = static_cast<char32_t>(e >> 43);
  const auto count = static_cast<char32_t>((e >> 32) & 0x7FF);
  const char32_t stride = ((e >> 31) & 1) + 1;
  const auto delta = static_cast<std::int64_t>(e & 0x7FFFFFFF) - (std::int64_t{1} << 30);
  if (c >= first + count * stride || (c - first) % stride) return c;
  return static_cast<char32_t>(static_cast<std::int64_t>(c) + delta);
}

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < len; ++i) cp = (cp << 6) | (p[i] & 0x3F);
    out += cp;
    p += len;
  }
  return out;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

}  // namespace detail

std::string_view unicode_version() { return detail::kUnicodeVersion; }

namespace {
// ASCII is its own NFC, has no combining marks and folds A-Z only: the
// common case (every path the planner and replay see) costs one scan.
bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}
}  // namespace

Result<std::string> to_nfc(std::string_view utf8) {
  if (!detail::utf8_valid(utf8)) return make_error(Errc::usage, "not valid UTF-8");
  if (is_ascii(utf8)) return std::string(utf8);
  return detail::utf8_encode(detail::nfc(detail::utf8_decode(utf8)));
}

Result<std::string> case_fold_nfc(std::string_view utf8) {
  if (!detail::utf8_valid(utf8)) return make_error(Errc::usage, "not valid UTF-8");
  if (is_ascii(utf8)) {
    std::string out(utf8);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  std::u32string s = detail::nfc(detail::utf8_decode(utf8));
  for (char32_t& c : s) c = detail::simple_fold(c);
  return detail::utf8_encode(detail::nfc(s));
}

std::size_t longest_nonstarter_run(std::string_view utf8) {
  if (is_ascii(utf8)) return 0;
  std::size_t longest = 0;
  std::size_t run = 0;
  std::u32string d;
  for (char32_t c : detail::utf8_decode(utf8)) {
    d.clear();
    detail::decompose(c, d);
    for (char32_t x : d) {
      run = detail::combining_class(x) ? run + 1 : 0;
      longest = std::max(longest, run);
    }
  }
  return longest;
}

}  // namespace gitlocks
