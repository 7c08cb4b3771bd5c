// Crypto primitives: published test vectors (FIPS 180-2, RFC 8032), exact
// failure of verification under any single-bit change, domain separation,
// strict hex parsing.
#include "gitlocks/crypto.hpp"

#include <doctest/doctest.h>
#include <sodium.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

using gitlocks::kAttestationDomain;
using gitlocks::KeyPair;
using gitlocks::kPacketDomain;
using gitlocks::PublicKey;
using gitlocks::Signature;

namespace {

using Seed = std::array<std::uint8_t, gitlocks::kSeedBytes>;

void init() { REQUIRE(gitlocks::crypto_init()); }

// Test-local hex decoder (independent of the code under test).
std::vector<std::uint8_t> unhex(std::string_view h) {
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  REQUIRE(h.size() % 2 == 0);
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < h.size(); i += 2) {
    int hi = nib(h[i]), lo = nib(h[i + 1]);
    REQUIRE(hi >= 0);
    REQUIRE(lo >= 0);
    out.push_back(static_cast<std::uint8_t>(hi * 16 + lo));
  }
  return out;
}

Seed seed_from_hex(std::string_view h) {
  auto v = unhex(h);
  REQUIRE(v.size() == 32);
  Seed s{};
  std::copy(v.begin(), v.end(), s.begin());
  return s;
}

Seed seed_filled(std::uint8_t b) {
  Seed s{};
  s.fill(b);
  return s;
}

const std::string kPkHex = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

}  // namespace

TEST_CASE("crypto: sha256 matches the FIPS 180-2 test vectors") {
  init();
  CHECK(gitlocks::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(gitlocks::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(gitlocks::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  auto raw = gitlocks::sha256("abc");
  CHECK(raw[0] == 0xba);
  CHECK(raw[31] == 0xad);
  // Embedded NUL bytes are hashed, not treated as a terminator.
  CHECK(gitlocks::sha256_hex(std::string("abc\0", 4)) != gitlocks::sha256_hex("abc"));
  CHECK(gitlocks::sha256_hex(std::string("\0", 1)) !=
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("crypto: keypair_from_seed matches RFC 8032 and is seed || public key") {
  init();
  auto seed = seed_from_hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
  KeyPair kp = gitlocks::keypair_from_seed(seed);
  CHECK(gitlocks::to_hex(kp.public_key) == kPkHex);
  for (std::size_t i = 0; i < 32; ++i) {
    CHECK(kp.secret_key[i] == seed[i]);
    CHECK(kp.secret_key[32 + i] == kp.public_key[i]);
  }
  // RFC 8032 test 1: empty message; with an empty domain the framed message is
  // exactly the RFC's message.
  Signature sig = gitlocks::sign_detached("", "", kp);
  CHECK(gitlocks::to_hex(sig) ==
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3970"
        "1cf9b46bd25bf5f0595bbe24655141438e7a100b");
  // RFC 8032 test 2: one-byte message 0x72.
  KeyPair kp2 =
      gitlocks::keypair_from_seed(seed_from_hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"));
  CHECK(gitlocks::to_hex(kp2.public_key) == "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
  CHECK(gitlocks::to_hex(gitlocks::sign_detached("", "\x72", kp2)) ==
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613"
        "d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");
}

TEST_CASE("crypto: keypair_from_seed is deterministic - different seeds give different keys") {
  init();
  KeyPair a1 = gitlocks::keypair_from_seed(seed_filled(1));
  KeyPair a2 = gitlocks::keypair_from_seed(seed_filled(1));
  CHECK(a1.public_key == a2.public_key);
  CHECK(a1.secret_key == a2.secret_key);
  std::vector<PublicKey> seen;
  for (int b = 0; b < 8; ++b) {
    Seed s = seed_filled(0);
    if (b > 0) s[static_cast<std::size_t>(b * 4 - 1)] = 1;  // differ in a single byte
    seen.push_back(gitlocks::keypair_from_seed(s).public_key);
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    for (std::size_t j = i + 1; j < seen.size(); ++j) {
      INFO(i, " vs ", j);
      CHECK(seen[i] != seen[j]);
    }
  // Flipping the last seed bit changes the key.
  Seed s = seed_filled(7);
  Seed t = s;
  t[31] ^= 0x80;
  CHECK(gitlocks::keypair_from_seed(s).public_key != gitlocks::keypair_from_seed(t).public_key);
}

TEST_CASE("crypto: sign/verify round trip and deterministic signatures") {
  init();
  KeyPair kp = gitlocks::keypair_from_seed(seed_filled(0x42));
  for (std::string msg : {std::string(""), std::string("x"), std::string("hello world"), std::string("a\0b", 3),
                          std::string(10000, 'z')}) {
    INFO("message size: ", msg.size());
    Signature s1 = gitlocks::sign_detached(kPacketDomain, msg, kp);
    Signature s2 = gitlocks::sign_detached(kPacketDomain, msg, kp);
    CHECK(s1 == s2);
    CHECK(gitlocks::verify_detached(kPacketDomain, msg, s1, kp.public_key));
    // Appending or dropping a byte breaks it.
    CHECK_FALSE(gitlocks::verify_detached(kPacketDomain, msg + '\0', s1, kp.public_key));
    if (!msg.empty())
      CHECK_FALSE(gitlocks::verify_detached(kPacketDomain, msg.substr(0, msg.size() - 1), s1, kp.public_key));
  }
  // Wrong key.
  KeyPair other = gitlocks::keypair_from_seed(seed_filled(0x43));
  Signature s = gitlocks::sign_detached(kPacketDomain, "m", kp);
  CHECK_FALSE(gitlocks::verify_detached(kPacketDomain, "m", s, other.public_key));
  CHECK(gitlocks::sign_detached(kPacketDomain, "m", other) != s);
  // All-zero signature and key.
  CHECK_FALSE(gitlocks::verify_detached(kPacketDomain, "m", Signature{}, kp.public_key));
  CHECK_FALSE(gitlocks::verify_detached(kPacketDomain, "m", s, PublicKey{}));
}

TEST_CASE("crypto: every single-bit flip of message - signature or public key fails") {
  init();
  KeyPair kp = gitlocks::keypair_from_seed(seed_filled(0x5a));
  const std::string msg = "{\"command\":\"claim\",\"path\":\"a/b\",\"gen\":7}";
  Signature sig = gitlocks::sign_detached(kAttestationDomain, msg, kp);
  REQUIRE(gitlocks::verify_detached(kAttestationDomain, msg, sig, kp.public_key));
  // Ed25519 sizes: every bit of a 64-byte signature and a 32-byte key is flipped below.
  static_assert(std::tuple_size<Signature>::value == 64, "signature size");
  static_assert(std::tuple_size<PublicKey>::value == 32, "public key size");

  // Each flip is counted only when the flipped copy really differs from the
  // original and the verifier then refuses it.
  std::size_t refused = 0;
  for (std::size_t bit = 0; bit < msg.size() * 8; ++bit) {
    std::string m = msg;
    m[bit / 8] = static_cast<char>(m[bit / 8] ^ (1 << (bit % 8)));
    INFO("message bit ", bit);
    REQUIRE(m != msg);
    bool ok = gitlocks::verify_detached(kAttestationDomain, m, sig, kp.public_key);
    CHECK_FALSE(ok);
    refused += ok ? 0 : 1;
  }
  for (std::size_t bit = 0; bit < sig.size() * 8; ++bit) {
    Signature s = sig;
    s[bit / 8] = static_cast<std::uint8_t>(s[bit / 8] ^ (1 << (bit % 8)));
    INFO("signature bit ", bit);
    REQUIRE(s != sig);
    bool ok = gitlocks::verify_detached(kAttestationDomain, msg, s, kp.public_key);
    CHECK_FALSE(ok);
    refused += ok ? 0 : 1;
  }
  for (std::size_t bit = 0; bit < kp.public_key.size() * 8; ++bit) {
    PublicKey pk = kp.public_key;
    pk[bit / 8] = static_cast<std::uint8_t>(pk[bit / 8] ^ (1 << (bit % 8)));
    INFO("public key bit ", bit);
    REQUIRE(pk != kp.public_key);
    bool ok = gitlocks::verify_detached(kAttestationDomain, msg, sig, pk);
    CHECK_FALSE(ok);
    refused += ok ? 0 : 1;
  }
  // 40 message bytes (the literal above has 40 characters), 64 signature and 32 key bytes.
  CHECK(refused == (40 + 64 + 32) * 8);
  // The untouched triple still verifies (the flips above were on copies).
  CHECK(gitlocks::verify_detached(kAttestationDomain, msg, sig, kp.public_key));
}

TEST_CASE("crypto: domain separation between packet and attestation signatures") {
  init();
  CHECK(kPacketDomain.size() == 19);
  CHECK(kPacketDomain.back() == '\0');
  CHECK(kAttestationDomain.size() == 24);
  CHECK(kAttestationDomain.back() == '\0');
  KeyPair kp = gitlocks::keypair_from_seed(seed_filled(0x11));
  const std::string msg = "{\"a\":1}";
  Signature p = gitlocks::sign_detached(kPacketDomain, msg, kp);
  Signature a = gitlocks::sign_detached(kAttestationDomain, msg, kp);
  CHECK(p != a);
  CHECK(gitlocks::verify_detached(kPacketDomain, msg, p, kp.public_key));
  CHECK(gitlocks::verify_detached(kAttestationDomain, msg, a, kp.public_key));
  CHECK_FALSE(gitlocks::verify_detached(kAttestationDomain, msg, p, kp.public_key));
  CHECK_FALSE(gitlocks::verify_detached(kPacketDomain, msg, a, kp.public_key));
  // Neither verifies as a bare signature over the message.
  CHECK_FALSE(gitlocks::verify_detached("", msg, p, kp.public_key));
  CHECK_FALSE(gitlocks::verify_detached("", msg, a, kp.public_key));
  // The domain's terminating NUL is part of what is signed.
  CHECK_FALSE(gitlocks::verify_detached(kPacketDomain.substr(0, 18), msg, p, kp.public_key));
  // A bare signature over the message is not a packet signature.
  Signature bare = gitlocks::sign_detached("", msg, kp);
  CHECK_FALSE(gitlocks::verify_detached(kPacketDomain, msg, bare, kp.public_key));

  // Wire format: Ed25519 over domain || message, checked with libsodium directly.
  std::string framed = std::string(kPacketDomain) + msg;
  CHECK(crypto_sign_verify_detached(p.data(), reinterpret_cast<const unsigned char*>(framed.data()), framed.size(),
                                    kp.public_key.data()) == 0);
  CHECK(crypto_sign_verify_detached(p.data(), reinterpret_cast<const unsigned char*>(msg.data()), msg.size(),
                                    kp.public_key.data()) != 0);
}

TEST_CASE("crypto: to_hex is lowercase and round-trips through the parsers") {
  init();
  const std::uint8_t bytes[] = {0x00, 0xff, 0x0f, 0xf0, 0xa5, 0x5a};
  CHECK(gitlocks::to_hex(bytes, sizeof bytes) == "00ff0ff0a55a");
  CHECK(gitlocks::to_hex(bytes, 0).empty());
  // Every byte value, through a signature-sized and a key-sized array.
  for (int base = 0; base < 256; base += 64) {
    Signature s{};
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>(base + static_cast<int>(i));
    std::string h = gitlocks::to_hex(s);
    CHECK(h.size() == 128);
    CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
    auto back = gitlocks::signature_from_hex(h);
    REQUIRE(back.ok());
    CHECK(*back == s);
    CHECK(std::vector<std::uint8_t>(s.begin(), s.end()) == unhex(h));
  }
  auto pk = gitlocks::public_key_from_hex(kPkHex);
  REQUIRE(pk.ok());
  CHECK(gitlocks::to_hex(*pk) == kPkHex);
  CHECK((*pk)[0] == 0xd7);
  CHECK((*pk)[31] == 0x1a);
}

TEST_CASE("crypto: hex parsers reject uppercase - wrong lengths and non-hex") {
  init();
  const std::string pk = kPkHex;
  const std::string sig(128, 'a');
  REQUIRE(gitlocks::public_key_from_hex(pk).ok());
  REQUIRE(gitlocks::signature_from_hex(sig).ok());

  auto pk_bad = [](const std::string& h) {
    auto r = gitlocks::public_key_from_hex(h);
    return !r.ok() && r.error().code == gitlocks::Errc::bad_json;
  };
  auto sig_bad = [](const std::string& h) {
    auto r = gitlocks::signature_from_hex(h);
    return !r.ok() && r.error().code == gitlocks::Errc::bad_json;
  };

  // Lengths: odd, +-1 digit, +-1 byte, empty, swapped sizes.
  for (std::size_t n : {0u, 1u, 2u, 62u, 63u, 65u, 66u, 127u, 128u}) {
    INFO("pk length ", n);
    CHECK(pk_bad(std::string(n, 'a')));
  }
  for (std::size_t n : {0u, 64u, 126u, 127u, 129u, 130u, 256u}) {
    INFO("sig length ", n);
    CHECK(sig_bad(std::string(n, 'a')));
  }
  CHECK(pk_bad(pk + "0"));
  CHECK(pk_bad(pk + "00"));
  CHECK(pk_bad(pk.substr(0, 62)));
  CHECK(pk_bad(pk.substr(1)));
  CHECK(pk_bad("0x" + pk.substr(2)));
  CHECK(pk_bad(" " + pk.substr(1)));
  CHECK(pk_bad(pk.substr(0, 63) + "\n"));
  CHECK(pk_bad(pk + std::string("\0", 1)));

  // Every position: uppercase, non-hex ASCII, NUL, non-ASCII byte.
  for (std::size_t i = 0; i < pk.size(); ++i) {
    for (char c : {'A', 'F', 'g', 'G', 'x', ' ', '-', '\0', '/', ':', '`', '@', static_cast<char>(0xC3)}) {
      std::string h = pk;
      h[i] = c;
      INFO("pk position ", i, " char ", static_cast<int>(static_cast<unsigned char>(c)));
      CHECK(pk_bad(h));
    }
  }
  for (std::size_t i = 0; i < sig.size(); i += 7) {
    for (char c : {'A', 'B', 'E', 'g', 'z', '\0'}) {
      std::string h = sig;
      h[i] = c;
      INFO("sig position ", i);
      CHECK(sig_bad(h));
    }
  }
  // The uppercase spelling of a valid key is refused as a whole.
  std::string upper = pk;
  for (auto& ch : upper)
    if (ch >= 'a' && ch <= 'f') ch = static_cast<char>(ch - 'a' + 'A');
  CHECK(pk_bad(upper));
  // Fullwidth digit (UTF-8) in place of two ASCII digits.
  CHECK(pk_bad("\xEF\xBC\x90" + pk.substr(3)));
}
