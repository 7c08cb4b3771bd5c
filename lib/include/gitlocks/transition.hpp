// gitlocks/transition.hpp — building one candidate transition: snapshot ->
// plan -> admission time check -> signed packet -> commit. Publication (the
// compare-and-swap of refs/locks/state) is the host's job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gitlocks/packet.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

struct Snapshot {
  std::optional<Oid> commit;      // current tip of refs/locks/state
  Oid state;                      // its state tree ("" when no store)
  std::string policy_hash;        // sha256 of policy.json ("" when no store)
  std::string store_id;
  std::optional<std::int64_t> last_time;  // T of the tip's packet
};

// Reads the tip commit's layout, policy and last admission time.
Result<Snapshot> read_snapshot(ObjectStore& store, const std::optional<Oid>& tip);

struct Candidate {
  Oid commit;             // the new commit (objects already written)
  json packet;
  std::string packet_stored;
  PlanOutcome outcome;
  std::int64_t admitted_at_ms = 0;
};

// Plans `body` against the snapshot, proposing with `now_ms`, admits at
// T = max(now_ms, snapshot.last_time) (admission time never decreases along
// the chain) and writes the candidate commit. Errors: the planner's refusals,
// guard_window when T is outside the derived interval.
Result<Candidate> build_candidate(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                  const std::string& command, const std::string& instance, const json& body,
                                  std::int64_t now_ms);

// One-line human summary used as the commit message.
std::string describe_transition(const json& packet);

}  // namespace gitlocks
