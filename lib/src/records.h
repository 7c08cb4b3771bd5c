// Record documents of the state tree: the strict check of a record read
// from the store, and the small mutations of the derived data a path lease
// keeps, on typed records (gitlocks/model.hpp Record). docs/FORMAT.md
// describes every field.
#pragma once

#include <cstdint>
#include <string>

#include "gitlocks/canon.hpp"
#include "gitlocks/model.hpp"

namespace gitlocks::records {

// A validated record that carries nothing (Record::carries_nothing), or null.
bool is_empty(const json& rec);

// Strict schema check of a record read from the store at `resource`.
// Errors: store_read naming what is wrong.
Status validate(const json& rec, const std::string& resource);

// Intention markers on an ancestor directory: per holder, how many live
// exclusive ("x"), shared ("s") and intent ("i") leases lie below, and the
// latest expiry of each ("xu", "su", "iu"). Expiries only grow while a
// holder has leases below (a safe over-approximation); the entry disappears
// with its last lease.
void bump_marker(Record& rec, const std::string& holder, PathMode mode, std::int64_t until);
void renew_marker(Record& rec, const std::string& holder, PathMode mode, std::int64_t until);
void drop_marker(Record& rec, const std::string& holder, PathMode mode);

// Family holders: {"n": leases on members, "until": latest expiry}.
void bump_family_holder(Record& rec, const std::string& holder, std::int64_t until);
void renew_family_holder(Record& rec, const std::string& holder, std::int64_t until);
void drop_family_holder(Record& rec, const std::string& holder);

}  // namespace gitlocks::records
