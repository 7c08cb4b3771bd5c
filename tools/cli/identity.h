// identity.h — what the host supplies to the core: the actor's key, its
// display name, randomness and the clock.
//
// Key file (docs/CLI.md): one line of JSON,
//   {"format":"gitlocks-actor-key-v1","seed":"<64 lowercase hex>"}
// the Ed25519 seed; the public key is derived from it. Mode 0600, created on
// first use; a key readable or writable by group or others is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gitlocks/crypto.hpp"
#include "gitlocks/result.hpp"

namespace gitlocks::cli {

inline constexpr std::string_view kKeyFormat = kActorKeyFormat;
inline constexpr std::size_t kInstanceBytes = 32;

struct Identity {
  KeyPair key;
  std::string actor;  // public key, 64 hex
  std::string key_file;
};

// --key FILE, else $GIT_LOCKS_KEY, else $XDG_CONFIG_HOME/git-locks/actor.key
// (or ~/.config/git-locks/actor.key). Errors: usage.
Result<std::string> key_file_path(const std::optional<std::string>& flag);

// What load_identity does when the key file does not exist.
enum class MissingKey {
  create,  // make a new key (and, for the default location, its directory)
  refuse,  // an error: the caller only uses keys that exist (Git's signing program)
};

// Loads the key file, creating it when missing unless told not to. Errors:
// usage (missing and not created, unreadable, malformed, too open).
Result<Identity> load_identity(const std::string& path, MissingKey missing = MissingKey::create);

// `bytes` random bytes from libsodium, as hex.
std::string random_hex(std::size_t bytes);

// The host's clock in ms since the epoch, or $GIT_LOCKS_NOW_MS (tests).
// Errors: usage when the override is not an integer.
Result<std::int64_t> now_ms();

}  // namespace gitlocks::cli
