// gitlocks/crypto.hpp — the few primitives the core needs, libsodium-shaped:
// named sizes, caller-owned buffers, detached signatures, domain separation.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "gitlocks/hex.hpp"
#include "gitlocks/result.hpp"

namespace gitlocks {

inline constexpr std::size_t kPublicKeyBytes = 32;
inline constexpr std::size_t kSecretKeyBytes = 64;  // seed || public key
inline constexpr std::size_t kSeedBytes = 32;
inline constexpr std::size_t kSignatureBytes = 64;
inline constexpr std::size_t kSha256Bytes = 32;

using PublicKey = std::array<std::uint8_t, kPublicKeyBytes>;
using Signature = std::array<std::uint8_t, kSignatureBytes>;

// Domain-separation prefixes: a signature made for one purpose never
// verifies for another.
inline constexpr std::string_view kPacketDomain{"gitlocks/packet/v1\0", 19};
inline constexpr std::string_view kAttestationDomain{"gitlocks/attestation/v1\0", 24};

struct KeyPair {
  PublicKey public_key{};
  std::array<std::uint8_t, kSecretKeyBytes> secret_key{};
};

// Must be called once per process before any other function here; cheap and
// idempotent. Returns false if libsodium cannot initialise.
bool crypto_init();

// Deterministic key pair from a 32-byte seed (the host supplies randomness).
KeyPair keypair_from_seed(const std::array<std::uint8_t, kSeedBytes>& seed);

// An actor key file: {"format":"gitlocks-actor-key-v1","seed":HEX64}.
inline constexpr std::string_view kActorKeyFormat = "gitlocks-actor-key-v1";

// The key pair of an actor key given as the contents of a key file, or as the
// bare 64-hex-digit seed; surrounding whitespace is ignored. Errors: usage,
// with a message that never quotes the input. Copies of the seed made while
// parsing are wiped.
Result<KeyPair> parse_actor_key(std::string_view text);

// Overwrites a key pair's secret half (sodium_memzero).
void wipe(KeyPair& key);

// Detached Ed25519 signature over domain || message.
Signature sign_detached(std::string_view domain, std::string_view message, const KeyPair& key);

[[nodiscard]] bool verify_detached(std::string_view domain, std::string_view message, const Signature& sig,
                                   const PublicKey& pk);

std::array<std::uint8_t, kSha256Bytes> sha256(std::string_view data);
std::string sha256_hex(std::string_view data);

// Parses exactly 2*N lowercase hex digits. Errors: bad_json.
Result<PublicKey> public_key_from_hex(std::string_view hex);
Result<Signature> signature_from_hex(std::string_view hex);

}  // namespace gitlocks
