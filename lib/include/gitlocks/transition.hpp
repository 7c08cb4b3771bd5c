// gitlocks/transition.hpp — building one candidate transition: snapshot ->
// plan -> admission time check -> signed packet -> commit. Publication (the
// compare-and-swap of refs/locks/state) is the host's job.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "gitlocks/attest.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {

// What a writer builds on: the tip and the facts of the verified history.
struct Snapshot {
  std::optional<Oid> commit;      // current tip of refs/locks/state
  Oid state;                      // its state tree ("" when no store)
  std::string policy_hash;        // sha256 of policy.json ("" when no store)
  std::string store_id;
  std::optional<std::int64_t> last_time;  // T of the tip (packet or attestation)
  std::optional<Pins> guard_time;         // notary pins when guard time is on
  int format = 2;                         // state format version of the tip
  bool is_private = false;                // a PRIVATE store (records and bodies sealed)
  std::int64_t epoch = 0;                 // its current key epoch
};

// A Snapshot is obtained only from verified_snapshot() (gitlocks/trust.hpp):
// its trust facts come from the verified chain, never from the tip alone.

// The host's way to a notary: takes a stored admission request, returns the
// stored attestation (or an error: store_write when the notary is
// unreachable, guard_window when it refuses T).
using AdmitFn = std::function<Result<std::string>(const std::string& request_stored)>;

struct Candidate {
  Oid commit;             // the new commit (objects already written)
  json packet;
  std::string packet_stored;
  PlanOutcome outcome;
  std::int64_t admitted_at_ms = 0;
  std::optional<std::string> attestation_stored;
};

// Plans `body` against the snapshot, proposing with `now_ms`, and writes the
// candidate commit. Without guard time it admits at T = max(now_ms,
// snapshot.last_time) (admission time never decreases along the chain) and
// records it as claimed_at_ms. With guard time (the snapshot's policy, or the
// policy the transition installs, has pins) T comes only from `admit`: the
// attestation is checked against the pins before it is used, and one signed
// with a notary's test clock is refused unless `allow_test_clock` (the
// host's explicit --allow-test-clock). Errors: the planner's refusals,
// guard_window when T is outside the derived interval, usage when guard time
// is on and no `admit` is given, store_write for an attestation that fails a
// check, and admit's errors.
Result<Candidate> build_candidate(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                  const std::string& command, const std::string& instance, const json& body,
                                  std::int64_t now_ms, const AdmitFn& admit = nullptr, const Vault* vault = nullptr,
                                  bool allow_test_clock = false);

// Where a PRIVATE packet's sealed body lives, for the associated data.
std::string sealed_body_location(const std::string& instance);

// One-line human summary used as the commit message. For PRIVATE stores
// (sealed body) it names the action only.
std::string describe_transition(const json& packet);

}  // namespace gitlocks
