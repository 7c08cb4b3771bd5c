#include "gitlocks/crypto.hpp"

#include <sodium.h>

#include <string>
#include <vector>

#include "gitlocks/canon.hpp"

namespace gitlocks {

bool crypto_init() { return sodium_init() >= 0; }

KeyPair keypair_from_seed(const std::array<std::uint8_t, kSeedBytes>& seed) {
  static_assert(kPublicKeyBytes == crypto_sign_PUBLICKEYBYTES);
  static_assert(kSecretKeyBytes == crypto_sign_SECRETKEYBYTES);
  static_assert(kSeedBytes == crypto_sign_SEEDBYTES);
  KeyPair kp;
  crypto_sign_seed_keypair(kp.public_key.data(), kp.secret_key.data(), seed.data());
  return kp;
}

namespace {

// Exactly 64 hex digits (either case: a key file may be written by hand) into a seed.
bool seed_from_hex(std::string_view hex, std::array<std::uint8_t, kSeedBytes>& seed) {
  return hex_decode(hex, seed.data(), seed.size(), HexCase::either);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

Result<KeyPair> parse_actor_key(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  auto bad = [](const std::string& why) { return make_error(Errc::usage, "not a git-locks actor key (" + why + ")"); };
  std::array<std::uint8_t, kSeedBytes> seed{};
  if (text.empty() || text.front() != '{') {
    if (!seed_from_hex(text, seed)) return bad("expected a key file or a seed of 64 hex digits");
  } else {
    // The parser's own messages may quote the input: they are not passed on.
    auto doc = canon_parse(text, CanonMode::lenient);
    if (!doc.ok() || !doc->is_object()) return bad("not a JSON object");
    std::string* seed_hex = nullptr;
    if (doc->contains("seed") && (*doc)["seed"].is_string()) seed_hex = &(*doc)["seed"].get_ref<std::string&>();
    const bool known = check_keys(*doc, {"format", "seed"}, "key file").ok() && doc->contains("format") &&
                       (*doc)["format"] == kActorKeyFormat;
    const bool read = seed_hex && seed_from_hex(*seed_hex, seed);
    if (seed_hex) sodium_memzero(seed_hex->data(), seed_hex->size());
    if (!known || !read) {
      sodium_memzero(seed.data(), seed.size());
      return bad(known ? "seed must be 64 hex digits"
                       : "format is not " + std::string(kActorKeyFormat) + ", or unknown fields");
    }
  }
  KeyPair kp = keypair_from_seed(seed);
  sodium_memzero(seed.data(), seed.size());
  return kp;
}

void wipe(KeyPair& key) { sodium_memzero(key.secret_key.data(), key.secret_key.size()); }

namespace {
std::string framed(std::string_view domain, std::string_view message) {
  std::string m;
  m.reserve(domain.size() + message.size());
  m.append(domain);
  m.append(message);
  return m;
}
}  // namespace

Signature sign_detached(std::string_view domain, std::string_view message, const KeyPair& key) {
  static_assert(kSignatureBytes == crypto_sign_BYTES);
  auto m = framed(domain, message);
  Signature sig{};
  crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(m.data()), m.size(),
                       key.secret_key.data());
  return sig;
}

bool verify_detached(std::string_view domain, std::string_view message, const Signature& sig, const PublicKey& pk) {
  auto m = framed(domain, message);
  return crypto_sign_verify_detached(sig.data(), reinterpret_cast<const unsigned char*>(m.data()), m.size(),
                                     pk.data()) == 0;
}

std::array<std::uint8_t, kSha256Bytes> sha256(std::string_view data) {
  std::array<std::uint8_t, kSha256Bytes> out{};
  crypto_hash_sha256(out.data(), reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return out;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

namespace {
template <std::size_t N>
Result<std::array<std::uint8_t, N>> from_hex(std::string_view hex, const char* what) {
  if (hex.size() != 2 * N)
    return make_error(Errc::bad_json,
                      std::string(what) + " must be " + std::to_string(2 * N) + " lowercase hex digits");
  auto out = hex_to_array<N>(hex);
  if (!out) return make_error(Errc::bad_json, std::string(what) + " must be lowercase hex");
  return *out;
}
}  // namespace

Result<PublicKey> public_key_from_hex(std::string_view hex) { return from_hex<kPublicKeyBytes>(hex, "public key"); }
Result<Signature> signature_from_hex(std::string_view hex) { return from_hex<kSignatureBytes>(hex, "signature"); }

}  // namespace gitlocks
