// Record documents of the state tree (format 1) and their small mutations.
// docs/FORMAT.md describes every field.
#pragma once

#include <cstdint>
#include <string>

#include "gitlocks/canon.hpp"

namespace gitlocks::records {

json new_path(const std::string& key);
json new_sem(const std::string& name, std::int64_t limit);
json new_family(const std::string& name);

// A record that carries nothing (no generation, no leases, no markers) is
// removed from the tree, so equal states have equal trees.
bool is_empty(const json& rec);

// Strict schema check of a record read from the store at `resource`.
// Errors: store_read naming what is wrong.
Status validate(const json& rec, const std::string& resource);

// Intention markers on an ancestor directory: per holder, how many live
// exclusive ("x") and shared ("s") leases lie below, and the latest expiry
// of each ("xu", "su"). Expiries only grow while a holder has leases below
// (a safe over-approximation); the entry disappears with its last lease.
void bump_marker(json& rec, const std::string& holder, bool exclusive, std::int64_t until);
void renew_marker(json& rec, const std::string& holder, bool exclusive, std::int64_t until);
void drop_marker(json& rec, const std::string& holder, bool exclusive);

// Family holders: {"n": leases on members, "until": latest expiry}.
void bump_family_holder(json& rec, const std::string& holder, std::int64_t until);
void renew_family_holder(json& rec, const std::string& holder, std::int64_t until);
void drop_family_holder(json& rec, const std::string& holder);

}  // namespace gitlocks::records
