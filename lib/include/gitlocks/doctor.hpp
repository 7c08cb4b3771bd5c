// gitlocks/doctor.hpp — diagnosis of reservation data in a state tree.
//
// Doctor reads; it repairs nothing. It does not know (and does not claim to
// know) whether a publisher is active or whether the store is writable: a
// stale refs/locks/state.lock is a question for the operator, not for this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

struct Finding {
  std::string severity;  // "error" (the data is wrong) or "info" (worth knowing)
  std::string code;      // stable: unknown-format, malformed-record, non-canonical, name-hash-mismatch,
                         // wrong-shard, unexpected-entry, generation-regression, marker-mismatch,
                         // family-mismatch, bad-policy, expired-lease
  std::string location;  // path inside the state tree
  std::string detail;
};

json finding_json(const Finding& f);

// Diagnoses `state`. `parent_state` (the previous commit's state), when
// given, lets doctor see generations that went backwards. `now` is the local
// clock, used only to report expired leases. Errors: store_read when the
// tree itself cannot be read.
Result<std::vector<Finding>> diagnose(ObjectStore& store, const Oid& state, std::int64_t now,
                                      const std::optional<Oid>& parent_state = std::nullopt);

}  // namespace gitlocks
