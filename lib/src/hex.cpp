#include "gitlocks/hex.hpp"

namespace gitlocks {

bool is_hex(std::string_view s, std::size_t digits, HexCase accept) {
  if (s.size() != digits) return false;
  for (char c : s)
    if (hex_digit(c, accept) < 0) return false;
  return true;
}

std::string to_hex(const std::uint8_t* data, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[data[i] >> 4];
    s[2 * i + 1] = digits[data[i] & 15];
  }
  return s;
}

bool hex_decode(std::string_view s, std::uint8_t* out, std::size_t n, HexCase accept) {
  if (s.size() != 2 * n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const int hi = hex_digit(s[2 * i], accept), lo = hex_digit(s[2 * i + 1], accept);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

namespace {

// value + 1 of each byte as a digit (0: not a digit), built from hex_digit
// itself so the two decoders cannot disagree.
struct DigitTable {
  std::uint8_t lower[256];
  std::uint8_t either[256];
  DigitTable() {
    for (int c = 0; c < 256; ++c) {
      lower[c] = static_cast<std::uint8_t>(hex_digit(static_cast<char>(c), HexCase::lower) + 1);
      either[c] = static_cast<std::uint8_t>(hex_digit(static_cast<char>(c), HexCase::either) + 1);
    }
  }
};

}  // namespace

bool hex_decode_public(std::string_view s, std::uint8_t* out, std::size_t n, HexCase accept) {
  static const DigitTable table;
  if (s.size() != 2 * n) return false;
  const std::uint8_t* t = accept == HexCase::either ? table.either : table.lower;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  unsigned bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned hi = t[p[2 * i]], lo = t[p[2 * i + 1]];
    bad |= static_cast<unsigned>(hi == 0) | static_cast<unsigned>(lo == 0);
    out[i] = static_cast<std::uint8_t>((hi - 1) << 4 | ((lo - 1) & 15));
  }
  return bad == 0;
}

std::optional<std::vector<std::uint8_t>> hex_to_bytes(std::string_view s, HexCase accept) {
  if (s.size() % 2) return std::nullopt;
  std::vector<std::uint8_t> out(s.size() / 2);
  if (!hex_decode(s, out.data(), out.size(), accept)) return std::nullopt;
  return out;
}

}  // namespace gitlocks
