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

std::optional<std::vector<std::uint8_t>> hex_to_bytes(std::string_view s, HexCase accept) {
  if (s.size() % 2) return std::nullopt;
  std::vector<std::uint8_t> out(s.size() / 2);
  if (!hex_decode(s, out.data(), out.size(), accept)) return std::nullopt;
  return out;
}

}  // namespace gitlocks
