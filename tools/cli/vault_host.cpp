#include "vault_host.h"

#include <sodium.h>

#include <map>

#include "gitlocks/policy.hpp"
#include "gitlocks/replay.hpp"

namespace gitlocks::cli {

namespace {

std::array<std::uint8_t, 32> random_seed() {
  std::array<std::uint8_t, 32> s{};
  randombytes_buf(s.data(), s.size());
  return s;
}

}  // namespace

EpochKey random_epoch_key() {
  EpochKey k{};
  randombytes_buf(k.data(), k.size());
  return k;
}

namespace {

// Views opened in this process, by policy hash (the policy names the epoch
// and the keyring, so one view serves every snapshot with that policy).
std::map<std::string, std::unique_ptr<VaultView>> opened;

}  // namespace

const Vault* opened_vault(const Snapshot& snap) {
  auto it = opened.find(snap.policy_hash);
  return snap.is_private() && it != opened.end() ? it->second->get() : nullptr;
}

const RecordCodec* opened_codec(const Snapshot& snap) {
  auto it = opened.find(snap.policy_hash);
  return snap.is_private() && it != opened.end() ? it->second->codec.get() : nullptr;
}

Result<const VaultView*> open_vault(Context& ctx, const Snapshot& snap) {
  static const VaultView kPublic;
  if (!snap.commit || !snap.is_private()) return &kPublic;
  if (auto it = opened.find(snap.policy_hash); it != opened.end()) return it->second.get();
  GITLOCKS_TRY(me, ctx.identity());
  const Policy& policy = snap.policy;
  auto vault = Vault::open(policy, me->key);
  if (!vault.ok()) {
    if (vault.error().code == Errc::not_member)
      return make_error(Errc::not_member,
                        "this store is PRIVATE and your key (" + me->actor.substr(0, 12) +
                            ") is not one of its members: ask the owner to run `git-locks member add " + me->actor +
                            "`");
    return vault.error();
  }
  auto view = std::make_unique<VaultView>();
  view->vault = std::move(*vault);
  auto codec = state_codec(policy, &*view->vault);
  if (!codec.ok())
    return make_error(Errc::not_member, "this store is PRIVATE and your key (" + me->actor.substr(0, 12) +
                                            ") cannot open its current epoch " + std::to_string(policy.epoch) +
                                            " (removed from the members?)");
  view->codec = std::move(codec).value();
  return opened.emplace(snap.policy_hash, std::move(view)).first->second.get();
}

void open_sealed_body(Context& ctx, ObjectStore& store, json& packet) {
  if (!packet.contains("body") || !packet["body"].is_object() || !packet["body"].contains("sealed")) return;
  static std::optional<std::optional<Vault>> tip_vault;  // opened once, from the tip's keyring
  if (!tip_vault) {
    tip_vault.emplace();
    auto ref = ctx.state_ref();  // as read (and fetched) by the caller
    auto tip = ref.ok() ? store.read_ref(*ref) : Result<std::optional<Oid>>(ref.error());
    auto me = ctx.identity();
    if (tip.ok() && *tip && me.ok()) {
      MemberVault member = open_member_vault(store, **tip, &(*me)->key);
      if (member.vault) *tip_vault = std::move(member.vault);
    }
  }
  if (!*tip_vault) return;
  auto epoch = sealed_epoch(packet["body"]);
  if (!epoch.ok() || !packet.contains("instance") || !packet["instance"].is_string() || !packet.contains("store") ||
      !packet["store"].is_string())
    return;
  const EpochKey* key = (*tip_vault)->key(*epoch);
  if (!key) return;
  auto plain = open_document(packet["body"], *key, packet["store"].get<std::string>(),
                             sealed_body_location(packet["instance"].get<std::string>()));
  if (plain.ok()) packet["body"] = *plain;
}

Result<json> seal_keyring(const EpochKey& key, std::int64_t epoch, const std::vector<std::string>& members) {
  return gitlocks::seal_keyring(key, epoch, members, random_seed);
}

Result<json> make_private_policy(json policy) {
  const EpochKey key = random_epoch_key();
  return gitlocks::make_private_policy(std::move(policy), key, random_seed);
}

}  // namespace gitlocks::cli
