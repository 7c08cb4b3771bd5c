// gitlocks/hex.hpp — the one hex codec. Out: lowercase, always. In: exactly
// the number of digits asked for, lowercase only (every id, key, digest and
// signature the formats carry), except where a file written by people is
// read (an actor key's seed), which says Case::either.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gitlocks {

enum class HexCase { lower, either };

// The value of one hex digit, or -1. Without a branch on the digit's value
// (libsodium's sodium_hex2bin technique): seeds are decoded with it.
inline int hex_digit(char ch, HexCase accept = HexCase::lower) {
  const unsigned c = static_cast<unsigned char>(ch);
  const unsigned num = c ^ 48U;              // '0'..'9' -> 0..9
  const unsigned num_ok = (num - 10U) >> 8;  // non-zero low byte iff num < 10
  // 'a' -> 10; with either case, 'A' too (c & ~32 folds 'a'..'f' onto 'A'..'F').
  const unsigned alpha = accept == HexCase::either ? (c & ~32U) - 55U : c - 87U;
  const unsigned alpha_ok = ((alpha - 10U) ^ (alpha - 16U)) >> 8;  // iff 10 <= alpha < 16
  const unsigned ok = (num_ok | alpha_ok) & 0xffU;
  const unsigned value = ((num_ok & num) | (alpha_ok & alpha)) & 0xffU;
  return ok ? static_cast<int>(value) : -1;
}

// Whether `s` is exactly `digits` hex digits.
bool is_hex(std::string_view s, std::size_t digits, HexCase accept = HexCase::lower);

// Lowercase hex of n bytes.
std::string to_hex(const std::uint8_t* data, std::size_t n);
template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& a) {
  return to_hex(a.data(), N);
}

// Decodes exactly 2*n digits into out[0..n); false (out unspecified) otherwise.
// Its time does not depend on the digits' values (hex_digit): for secrets.
[[nodiscard]] bool hex_decode(std::string_view s, std::uint8_t* out, std::size_t n, HexCase accept = HexCase::lower);

// The same answer as hex_decode, by table lookup: its time depends on the
// digits, so only for public values (object ids on the replay's hot path:
// every entry of every re-planned tree). Never for a seed or other secret.
[[nodiscard]] bool hex_decode_public(std::string_view s, std::uint8_t* out, std::size_t n,
                                     HexCase accept = HexCase::lower);

template <std::size_t N>
std::optional<std::array<std::uint8_t, N>> hex_to_array(std::string_view s, HexCase accept = HexCase::lower) {
  std::array<std::uint8_t, N> out{};
  if (!hex_decode(s, out.data(), N, accept)) return std::nullopt;
  return out;
}

// Any even number of digits.
std::optional<std::vector<std::uint8_t>> hex_to_bytes(std::string_view s, HexCase accept = HexCase::lower);

}  // namespace gitlocks
