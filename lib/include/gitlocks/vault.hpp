// gitlocks/vault.hpp — PRIVATE stores: epoch keys, sealed records and bodies.
//
// A PRIVATE store (policy format gitlocks-policy-v3, visibility PRIVATE) keeps
// every record and every packet body encrypted with XChaCha20-Poly1305 under
// the current epoch key; resource names become keyed hashes. Epoch keys are
// sealed (libsodium sealed boxes, X25519 derived from each member's Ed25519
// key) to every member of that epoch. docs/PRIVATE.md has the design and its
// security argument.
//
// Determinism: the nonce of a sealed document is a keyed hash (BLAKE2b) of
// its associated data and plaintext (SIV-style). The same plaintext at the
// same location under the same epoch key always gives the same bytes, so
// equal states have equal trees; a nonce never repeats for different
// plaintexts under one key. The only leak is equality of identical
// (location, plaintext) pairs, which the tree ids reveal anyway.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/result.hpp"

namespace gitlocks {

inline constexpr std::size_t kEpochKeyBytes = 32;
using EpochKey = std::array<std::uint8_t, kEpochKeyBytes>;
// An epoch key sealed to a member (libsodium's sealed box: the ephemeral
// public key, the MAC, the key), in hex in the policy's keyrings.
inline constexpr std::size_t kSealedEpochKeyBytes = 32 + 16 + kEpochKeyBytes;
inline constexpr std::string_view kPrivatePolicyFormat = "gitlocks-policy-v3";

// Seals an epoch key to a member (libsodium's sealed-box format, openable by
// crypto_box_seal_open), with the ephemeral key pair derived from
// `ephemeral_seed` — the host supplies the randomness. Returns hex.
Result<std::string> seal_epoch_key(const EpochKey& key, const PublicKey& member,
                                   const std::array<std::uint8_t, 32>& ephemeral_seed);

// The host's randomness for the ephemeral key of each sealed box: 32 fresh
// random bytes per call.
using SeedSource = std::function<std::array<std::uint8_t, 32>()>;

// `key` sealed to each member (member hex -> sealed hex), each box with a
// fresh seed from `seeds`, in the members' order. Errors: bad_json (a member
// that is not an actor key).
Result<std::map<std::string, std::string>> seal_to_members(const EpochKey& key, const std::vector<std::string>& members,
                                                           const SeedSource& seeds);

// A PRIVATE policy's keyring entry for one epoch: {"<epoch>": {"<member
// hex>": sealed}} (seal_to_members).
Result<json> seal_keyring(const EpochKey& key, std::int64_t epoch, const std::vector<std::string>& members,
                          const SeedSource& seeds);

// A public policy document (default_policy + a --policy file) made
// PRIVATE (docs/PRIVATE.md): format v3, visibility PRIVATE, members
// [owner], epoch 1, `key` (fresh, from the host) sealed to the owner, and
// the families sealed under it, written by policy_document. Errors: those
// of parse_policy, and usage for a policy that is PRIVATE already.
Result<json> make_private_policy(const json& policy, const EpochKey& key, const SeedSource& seeds);

// The members after adding (`add`) or removing `member` of a store owned by
// `owner`. Errors: usage ("already a member", "not a member", "the owner
// cannot be removed"; a key is named by its first 12 hex digits).
Result<std::vector<std::string>> next_members(std::vector<std::string> members, const std::string& member, bool add,
                                              const std::string& owner);

// Opens a sealed epoch key with a member's key pair. Errors: bad_signature
// (not sealed to this member, or tampered), bad_json.
Result<EpochKey> open_epoch_key(std::string_view sealed_hex, const KeyPair& member);

struct Policy;

// The epoch keys a member can open, from a PRIVATE policy's keyrings (every
// epoch's and the pending one's). Errors: usage (not a PRIVATE policy),
// not_member (no key sealed to `member`), bad_signature (a key sealed to
// `member` that does not open: tampered).
class Vault {
 public:
  static Result<Vault> open(const Policy& policy, const KeyPair& member);
  // The same from a policy document (parse_policy's errors first).
  static Result<Vault> open(const json& policy_doc, const KeyPair& member);
  Vault() = default;
  Vault(const Vault&) = default;
  Vault(Vault&&) = default;
  Vault& operator=(const Vault&) = default;
  Vault& operator=(Vault&&) = default;
  // The epoch keys are wiped (sodium_memzero) when a vault is destroyed.
  ~Vault();
  // Adds a key directly (e.g. one the member opened from an older policy).
  void add(std::int64_t epoch, const EpochKey& key) { keys_[epoch] = key; }
  const EpochKey* key(std::int64_t epoch) const;
  const std::string& store() const { return store_; }
  const std::map<std::int64_t, EpochKey>& keys() const { return keys_; }
  // Keys of another vault this one lacks (a member keeps old epochs' keys).
  void merge(const Vault& other);

 private:
  std::string store_;
  std::map<std::int64_t, EpochKey> keys_;
};

// Sealed document {"sealed":{"ct":HEX,"epoch":E,"nonce":HEX}} for `plaintext`
// under `key`, associated data = canonical {"epoch":E,"location":LOC,"store":S}.
Result<std::string> seal_document(const json& plaintext, const EpochKey& key, std::int64_t epoch,
                                  const std::string& store, const std::string& location);
// The epoch a sealed document names (to pick the key). Errors: bad_json.
Result<std::int64_t> sealed_epoch(const json& sealed_doc);
// Opens a sealed document; the location and store must be the ones it was
// sealed for. Errors: bad_signature (authentication failed: tampered, moved
// to another location, another store or epoch), bad_json.
Result<json> open_document(const json& sealed_doc, const EpochKey& key, const std::string& store,
                           const std::string& location);

// Keyed hash of a resource name for a PRIVATE store's tree (64 hex).
std::string private_resource_hash(const EpochKey& key, const std::string& resource);

}  // namespace gitlocks
