// vault_host.h — the host side of PRIVATE stores (docs/PRIVATE.md): the
// member's vault for the current identity, and the randomness the core
// leaves to the host (epoch keys, ephemeral seeds of sealed boxes).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "gitlocks/state.hpp"
#include "gitlocks/transition.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks::cli {

// Requires what a command needs to read and write `snap`'s records: for a
// public store (or no store yet) nothing; for a PRIVATE one the member's
// keys and the codec of its epoch, which the verified snapshot carries
// (Snapshot::vault(), codec(): verified_tip_snapshot opens them from the
// tip's keyring with the current identity). Errors: not_member (the key is
// not a member, or cannot open the current epoch), usage (no identity).
Status require_keys(Context& ctx, const Snapshot& snap);

// Replaces a PRIVATE packet's sealed body by its plaintext when `vault` (a
// member's keys from the tip's keyring: identity_keys) holds the key of the
// packet's epoch; otherwise leaves the packet as it is. For display only
// (`git-locks log`).
void open_sealed_body(const Vault* vault, json& packet);

// 32 fresh random bytes (libsodium randombytes_buf).
EpochKey random_epoch_key();

// {"<epoch>": {"<member hex>": sealed}} — `key` sealed to each member, each
// with a fresh random ephemeral seed. Errors: bad_json (a malformed key).
Result<json> seal_keyring(const EpochKey& key, std::int64_t epoch, const std::vector<std::string>& members);

// Turns a public policy document (default_policy + the --policy file) into a
// PRIVATE one: format v3, visibility PRIVATE, members [owner], epoch 1, a
// fresh epoch key sealed to the owner, and the families sealed under it.
Result<json> make_private_policy(json policy);

}  // namespace gitlocks::cli
