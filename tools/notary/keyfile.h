// keyfile.h — the notary's service key file (format in notary.h, keygen).
#pragma once

#include <string>

#include "failure.h"
#include "gitlocks/crypto.hpp"

namespace gitlocks::notary {

// Loads a key file made by notary_keygen. Refuses (codes): key-missing,
// key-unreadable, key-permissions (group/other bits set, or another owner),
// key-malformed (anything but 64 lowercase hex and an optional "\n").
bool load_service_key(const std::string& path, KeyPair& out, StartFailure& failure);

}  // namespace gitlocks::notary
