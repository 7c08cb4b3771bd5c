// The one hex codec (gitlocks/hex.hpp): every byte value against a table
// oracle, lengths at the boundary, and round trips.
#include "gitlocks/hex.hpp"

#include <doctest/doctest.h>

#include <string>

#include "gitlocks/crypto.hpp"

using namespace gitlocks;

namespace {
// Independent of the branch-free arithmetic under test: position in a string.
int oracle(char c, HexCase accept) {
  const std::string lower = "0123456789abcdef", upper = "0123456789ABCDEF";
  auto at = lower.find(c);
  if (c != '\0' && at != std::string::npos) return static_cast<int>(at);
  at = upper.find(c);
  if (accept == HexCase::either && c != '\0' && at != std::string::npos) return static_cast<int>(at);
  return -1;
}
}  // namespace

TEST_CASE("hex: every byte value decodes as a table lookup would - lowercase only and either case") {
  int lower_digits = 0, either_digits = 0;
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    CAPTURE(b);
    CHECK(hex_digit(c, HexCase::lower) == oracle(c, HexCase::lower));
    CHECK(hex_digit(c, HexCase::either) == oracle(c, HexCase::either));
    lower_digits += hex_digit(c, HexCase::lower) >= 0;
    either_digits += hex_digit(c, HexCase::either) >= 0;
  }
  CHECK(lower_digits == 16);
  CHECK(either_digits == 22);
}

TEST_CASE("hex: exactly the digits asked for - one fewer or one more is refused") {
  const std::string h64(64, 'a');
  CHECK(is_hex(h64, 64));
  CHECK_FALSE(is_hex(h64.substr(1), 64));
  CHECK_FALSE(is_hex(h64 + "a", 64));
  CHECK_FALSE(is_hex(std::string(63, 'a') + "A", 64));
  CHECK(is_hex(std::string(63, 'a') + "A", 64, HexCase::either));
  CHECK_FALSE(is_hex(std::string(63, 'a') + "g", 64, HexCase::either));
  CHECK_FALSE(is_hex(std::string(63, 'a') + std::string(1, '\0'), 64));
  CHECK(is_hex("", 0));
  std::uint8_t out[2];
  CHECK(hex_decode("0aff", out, 2));
  CHECK(out[0] == 0x0a);
  CHECK(out[1] == 0xff);
  CHECK_FALSE(hex_decode("0af", out, 2));
  CHECK_FALSE(hex_decode("0aff0", out, 2));
  CHECK_FALSE(hex_decode("0aFF", out, 2));
  CHECK(hex_decode("0aFF", out, 2, HexCase::either));
  CHECK(out[1] == 0xff);
  CHECK_FALSE(hex_to_bytes("abc").has_value());
  CHECK(hex_to_bytes("")->empty());
  CHECK_FALSE(hex_to_array<2>("0a ff").has_value());
}

TEST_CASE("hex: encoding is lowercase and decodes back to every byte") {
  std::array<std::uint8_t, 256> all{};
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint8_t>(i);
  const std::string text = to_hex(all);
  CHECK(text.substr(0, 8) == "00010203");
  CHECK(text.substr(text.size() - 8) == "fcfdfeff");
  CHECK(text.find_first_not_of("0123456789abcdef") == std::string::npos);
  auto back = hex_to_array<256>(text);
  REQUIRE(back.has_value());
  CHECK(*back == all);
  auto bytes = hex_to_bytes(text);
  REQUIRE(bytes.has_value());
  CHECK(std::equal(bytes->begin(), bytes->end(), all.begin(), all.end()));
}

TEST_CASE("hex: keys and signatures are lowercase only - a seed may be either case") {
  const std::string key(64, 'a');
  CHECK(public_key_from_hex(key).ok());
  std::string upper = key;
  upper[10] = 'A';
  auto bad = public_key_from_hex(upper);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "public key must be lowercase hex");
  auto short_key = public_key_from_hex(key.substr(1));
  REQUIRE_FALSE(short_key.ok());
  CHECK(short_key.error().message == "public key must be 64 lowercase hex digits");
  const std::string seed = "0123456789ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef";
  auto mixed = parse_actor_key(seed);
  REQUIRE(mixed.ok());
  auto lower = parse_actor_key("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  REQUIRE(lower.ok());
  CHECK(mixed->public_key == lower->public_key);
  CHECK_FALSE(parse_actor_key(seed.substr(1)).ok());
  CHECK_FALSE(parse_actor_key(seed + "0").ok());
}

// The table decoder for public ids gives hex_decode's answer for every pair
// of byte values in both modes (valid or not, and the same bytes when valid),
// and lengths one off are refused.
TEST_CASE("hex: the public table decoder agrees with the constant-time one on every digit pair") {
  for (HexCase accept : {HexCase::lower, HexCase::either}) {
    for (int a = 0; a < 256; ++a) {
      for (int b = 0; b < 256; ++b) {
        const std::string s{static_cast<char>(a), static_cast<char>(b)};
        std::uint8_t x = 0, y = 0;
        const bool want = oracle(s[0], accept) >= 0 && oracle(s[1], accept) >= 0;
        const bool fast = hex_decode_public(s, &x, 1, accept);
        REQUIRE(fast == want);
        REQUIRE(hex_decode(s, &y, 1, accept) == want);
        if (want) REQUIRE(x == oracle(s[0], accept) * 16 + oracle(s[1], accept));
      }
    }
  }
  std::uint8_t id[20];
  const std::string oid = "0123456789abcdefABCDEF0123456789abcdef01";
  CHECK_FALSE(hex_decode_public(oid, id, 20));  // uppercase needs either
  CHECK(hex_decode_public(oid, id, 20, HexCase::either));
  CHECK(id[0] == 0x01);
  CHECK(id[7] == 0xef);
  CHECK(id[8] == 0xab);
  CHECK(id[19] == 0x01);
  CHECK_FALSE(hex_decode_public(oid.substr(1), id, 20, HexCase::either));
  CHECK_FALSE(hex_decode_public(oid + "0", id, 20, HexCase::either));
  CHECK_FALSE(hex_decode_public(std::string(39, '0') + "g", id, 20, HexCase::either));
}
