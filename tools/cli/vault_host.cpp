#include "vault_host.h"

#include <sodium.h>

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

Status require_keys(Context& ctx, const Snapshot& snap) {
  if (!snap.commit || !snap.is_private() || snap.codec()) return Ok{};
  GITLOCKS_TRY(me, ctx.identity());
  const std::string who = me->actor.substr(0, 12);
  if (!snap.keys) {
    // The snapshot was verified without this identity's keys: it is not in
    // the tip's keyring (or its key is unreadable there).
    auto vault = Vault::open(snap.policy, me->key);
    if (!vault.ok() && vault.error().code != Errc::not_member) return vault.error();
    return make_error(Errc::not_member, "this store is PRIVATE and your key (" + who +
                                            ") is not one of its members: ask the owner to run `git-locks member add " +
                                            me->actor + "`");
  }
  return make_error(Errc::not_member, "this store is PRIVATE and your key (" + who +
                                          ") cannot open its current epoch " + std::to_string(snap.epoch()) +
                                          " (removed from the members?)");
}

void open_sealed_body(const Vault* vault, json& packet) {
  if (!vault || !packet.contains("body") || !packet["body"].is_object() || !packet["body"].contains("sealed")) return;
  auto epoch = sealed_epoch(packet["body"]);
  if (!epoch.ok() || !packet.contains("instance") || !packet["instance"].is_string() || !packet.contains("store") ||
      !packet["store"].is_string())
    return;
  const EpochKey* key = vault->key(*epoch);
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
