#include "gitlocks/vault.hpp"

#include <sodium.h>

#include <algorithm>
#include <cstring>

#include "gitlocks/hex.hpp"
#include "gitlocks/policy.hpp"

namespace gitlocks {
namespace {

// Subkeys of an epoch key, one per purpose.
std::array<std::uint8_t, 32> subkey(const EpochKey& key, std::string_view purpose) {
  std::array<std::uint8_t, 32> out{};
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const unsigned char*>(purpose.data()), purpose.size(),
                     key.data(), key.size());
  return out;
}

Result<std::vector<std::uint8_t>> from_hex(std::string_view hex, const char* what) {
  if (auto out = hex_to_bytes(hex)) return std::move(*out);
  if (hex_to_bytes(hex, HexCase::either))
    return make_error(Errc::bad_json, std::string(what) + " must be lowercase hex");
  return make_error(Errc::bad_json, std::string(what) + " is not hex");
}

Result<std::string> associated_data(std::int64_t epoch, const std::string& store, const std::string& location) {
  return canon_dump(json{{"epoch", epoch}, {"location", location}, {"store", store}});
}

}  // namespace

Result<std::string> seal_epoch_key(const EpochKey& key, const PublicKey& member,
                                   const std::array<std::uint8_t, 32>& ephemeral_seed) {
  // libsodium's sealed box: eph_pk || crypto_box_easy(m, nonce = H(eph_pk || pk), pk, eph_sk),
  // with the ephemeral key pair derived from the host's seed.
  unsigned char recipient[crypto_box_PUBLICKEYBYTES];
  if (crypto_sign_ed25519_pk_to_curve25519(recipient, member.data()) != 0)
    return make_error(Errc::bad_json, "member key is not a valid Ed25519 public key");
  unsigned char eph_pk[crypto_box_PUBLICKEYBYTES];
  unsigned char eph_sk[crypto_box_SECRETKEYBYTES];
  crypto_box_seed_keypair(eph_pk, eph_sk, ephemeral_seed.data());
  unsigned char nonce[crypto_box_NONCEBYTES];
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, sizeof nonce);
  crypto_generichash_update(&st, eph_pk, sizeof eph_pk);
  crypto_generichash_update(&st, recipient, sizeof recipient);
  crypto_generichash_final(&st, nonce, sizeof nonce);
  std::vector<std::uint8_t> out(crypto_box_PUBLICKEYBYTES + crypto_box_MACBYTES + key.size());
  std::memcpy(out.data(), eph_pk, sizeof eph_pk);
  int rc = crypto_box_easy(out.data() + sizeof eph_pk, key.data(), key.size(), nonce, recipient, eph_sk);
  sodium_memzero(eph_sk, sizeof eph_sk);
  if (rc != 0) return make_error(Errc::bad_json, "cannot seal the epoch key to this member");
  return to_hex(out.data(), out.size());
}

static_assert(kSealedEpochKeyBytes == crypto_box_SEALBYTES + kEpochKeyBytes);

Result<EpochKey> open_epoch_key(std::string_view sealed_hex, const KeyPair& member) {
  GITLOCKS_TRY(sealed, from_hex(sealed_hex, "sealed epoch key"));
  if (sealed.size() != kSealedEpochKeyBytes) return make_error(Errc::bad_json, "sealed epoch key has the wrong length");
  unsigned char pk[crypto_box_PUBLICKEYBYTES];
  unsigned char sk[crypto_box_SECRETKEYBYTES];
  if (crypto_sign_ed25519_pk_to_curve25519(pk, member.public_key.data()) != 0 ||
      crypto_sign_ed25519_sk_to_curve25519(sk, member.secret_key.data()) != 0)
    return make_error(Errc::bad_json, "member key cannot be converted to X25519");
  EpochKey key{};
  int rc = crypto_box_seal_open(key.data(), sealed.data(), sealed.size(), pk, sk);
  sodium_memzero(sk, sizeof sk);
  if (rc != 0)
    return make_error(Errc::bad_signature, "the epoch key is not sealed to this member (or was tampered with)");
  return key;
}

Result<Vault> Vault::open(const Policy& policy, const KeyPair& member) {
  if (!policy.is_private) return make_error(Errc::usage, "not a PRIVATE store");
  Vault v;
  v.store_ = policy.store;
  const std::string me = to_hex(member.public_key);
  for (const Policy::Keyring* ring : {&policy.keyring, &policy.pending_keyring})
    for (const auto& [epoch, sealed_to] : *ring)
      if (auto sealed = sealed_to.find(me); sealed != sealed_to.end()) {
        GITLOCKS_TRY(key, open_epoch_key(sealed->second, member));
        v.keys_[epoch] = key;
      }
  if (v.keys_.empty())
    return make_error(Errc::not_member, "this key (" + me.substr(0, 12) + ") is not a member of the store");
  return v;
}

Result<Vault> Vault::open(const json& policy_doc, const KeyPair& member) {
  if (!member_is(policy_doc, "format", kPrivatePolicyFormat)) return make_error(Errc::usage, "not a PRIVATE store");
  GITLOCKS_TRY(policy, parse_policy(policy_doc));
  return open(policy, member);
}

Vault::~Vault() {
  for (auto& [epoch, key] : keys_) sodium_memzero(key.data(), key.size());
}

const EpochKey* Vault::key(std::int64_t epoch) const {
  auto it = keys_.find(epoch);
  return it == keys_.end() ? nullptr : &it->second;
}

void Vault::merge(const Vault& other) {
  for (const auto& [e, k] : other.keys_) keys_.emplace(e, k);
  if (store_.empty()) store_ = other.store_;
}

Result<std::string> seal_document(const json& plaintext, const EpochKey& key, std::int64_t epoch,
                                  const std::string& store, const std::string& location) {
  GITLOCKS_TRY(pt, canon_dump(plaintext));
  GITLOCKS_TRY(ad, associated_data(epoch, store, location));
  auto enc_key = subkey(key, "gitlocks/seal/v1");
  auto nonce_key = subkey(key, "gitlocks/nonce/v1");
  // SIV-style nonce: a PRF of (associated data, plaintext).
  unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
  crypto_generichash_state st;
  crypto_generichash_init(&st, nonce_key.data(), nonce_key.size(), sizeof nonce);
  std::uint8_t len[8];
  const std::uint64_t ad_len = ad.size();  // 64-bit on every host (size_t is 32-bit in WASM)
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(ad_len >> (8 * i));
  crypto_generichash_update(&st, len, sizeof len);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(ad.data()), ad.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(pt.data()), pt.size());
  crypto_generichash_final(&st, nonce, sizeof nonce);
  std::vector<std::uint8_t> ct(pt.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES);
  unsigned long long ct_len = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(ct.data(), &ct_len, reinterpret_cast<const unsigned char*>(pt.data()),
                                             pt.size(), reinterpret_cast<const unsigned char*>(ad.data()), ad.size(),
                                             nullptr, nonce, enc_key.data());
  const auto ct_bytes = static_cast<std::size_t>(ct_len);  // at most ct.size()
  return canon_dump(json{
      {"sealed", {{"ct", to_hex(ct.data(), ct_bytes)}, {"epoch", epoch}, {"nonce", to_hex(nonce, sizeof nonce)}}}});
}

Result<std::int64_t> sealed_epoch(const json& doc) {
  if (!doc.is_object() || doc.size() != 1 || !doc.contains("sealed") || !doc["sealed"].is_object())
    return make_error(Errc::bad_json, "expected a sealed document");
  GITLOCKS_CHECK(check_keys(doc["sealed"], {"ct", "epoch", "nonce"}, "sealed document"));
  GITLOCKS_TRY(e, get_int(doc["sealed"], "epoch"));
  if (e < 0) return make_error(Errc::bad_json, "negative epoch");
  return e;
}

Result<json> open_document(const json& doc, const EpochKey& key, const std::string& store,
                           const std::string& location) {
  GITLOCKS_TRY(epoch, sealed_epoch(doc));
  GITLOCKS_TRY(ct_hex, get_string(doc["sealed"], "ct"));
  GITLOCKS_TRY(nonce_hex, get_string(doc["sealed"], "nonce"));
  GITLOCKS_TRY(ct, from_hex(ct_hex, "ciphertext"));
  GITLOCKS_TRY(nonce, from_hex(nonce_hex, "nonce"));
  if (nonce.size() != crypto_aead_xchacha20poly1305_ietf_NPUBBYTES ||
      ct.size() < crypto_aead_xchacha20poly1305_ietf_ABYTES)
    return make_error(Errc::bad_json, "sealed document has a malformed nonce or ciphertext");
  GITLOCKS_TRY(ad, associated_data(epoch, store, location));
  auto enc_key = subkey(key, "gitlocks/seal/v1");
  std::string pt(ct.size() - crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
  unsigned long long pt_len = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          reinterpret_cast<unsigned char*>(pt.data()), &pt_len, nullptr, ct.data(), ct.size(),
          reinterpret_cast<const unsigned char*>(ad.data()), ad.size(), nonce.data(), enc_key.data()) != 0)
    return make_error(Errc::bad_signature, "sealed document at " + location +
                                               " does not authenticate (tampered, moved, or another epoch or store)");
  pt.resize(static_cast<std::size_t>(pt_len));  // pt_len <= pt.size()
  auto v = canon_parse(pt, CanonMode::strict);
  if (!v.ok()) return make_error(Errc::bad_json, "sealed plaintext: " + v.error().message);
  // The nonce must be the one this plaintext derives: otherwise equal states
  // could have different trees.
  GITLOCKS_TRY(again, seal_document(*v, key, epoch, store, location));
  GITLOCKS_TRY(stored, canon_dump(doc));
  if (again != stored)
    return make_error(Errc::non_canonical, "sealed document at " + location + " has a non-derived nonce");
  return std::move(v).value();
}

std::string private_resource_hash(const EpochKey& key, const std::string& resource) {
  auto name_key = subkey(key, "gitlocks/names/v1");
  std::array<std::uint8_t, 32> out{};
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const unsigned char*>(resource.data()), resource.size(),
                     name_key.data(), name_key.size());
  return to_hex(out);
}

}  // namespace gitlocks

namespace gitlocks {

Result<std::map<std::string, std::string>> seal_to_members(const EpochKey& key, const std::vector<std::string>& members,
                                                           const SeedSource& seeds) {
  std::map<std::string, std::string> out;
  for (const auto& m : members) {
    GITLOCKS_TRY(pk, public_key_from_hex(m));
    GITLOCKS_TRY(sealed, seal_epoch_key(key, pk, seeds()));
    out[m] = sealed;
  }
  return out;
}

Result<json> seal_keyring(const EpochKey& key, std::int64_t epoch, const std::vector<std::string>& members,
                          const SeedSource& seeds) {
  GITLOCKS_TRY(ring, seal_to_members(key, members, seeds));
  return json{{std::to_string(epoch), ring}};
}

Result<json> make_private_policy(const json& policy, const EpochKey& key, const SeedSource& seeds) {
  GITLOCKS_TRY(p, parse_policy(policy));
  if (p.is_private) return make_error(Errc::usage, "the policy is PRIVATE already");
  p.is_private = true;
  p.epoch = 1;
  p.members = {p.owner};
  GITLOCKS_TRY(sealed_to, seal_to_members(key, p.members, seeds));
  p.keyring[1] = std::move(sealed_to);
  if (!p.families.empty()) {
    GITLOCKS_TRY(sealed, seal_document(families_document(p.families), key, 1, p.store, "policy.json#families"));
    p.sealed_families = json::parse(sealed);
    p.families_sealed = true;
  }
  return policy_document(p);
}

Result<std::vector<std::string>> next_members(std::vector<std::string> members, const std::string& member, bool add,
                                              const std::string& owner) {
  auto it = std::find(members.begin(), members.end(), member);
  if (add) {
    if (it != members.end()) return make_error(Errc::usage, "already a member: " + member.substr(0, 12));
    members.push_back(member);
  } else {
    if (it == members.end()) return make_error(Errc::usage, "not a member: " + member.substr(0, 12));
    if (member == owner) return make_error(Errc::usage, "the owner cannot be removed");
    members.erase(it);
  }
  return members;
}

}  // namespace gitlocks
