// gitlocks/transition.hpp — building one candidate transition: snapshot ->
// plan -> admission time check -> signed packet -> commit. Publication (the
// compare-and-swap of refs/locks/state) is the host's job.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gitlocks/attest.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {

class RecordCodec;  // gitlocks/state.hpp

// The member's keys a verified snapshot of a PRIVATE store was opened with:
// the vault the verifier brought (verifier_keys: the tip's keyring) and the
// codec of the snapshot's epoch it opens (state_codec), or why it opens none.
struct SnapshotKeys {
  Vault vault;
  std::shared_ptr<const RecordCodec> codec;  // null: see codec_error
  std::optional<Error> codec_error;          // not_member: no key of the current epoch
};

// What a writer builds on: the tip and the facts of the verified history.
struct Snapshot {
  std::optional<Oid> commit;  // current tip of refs/locks/state
  Oid state;                  // its state tree (the null id when no store)
  std::string policy_hash;    // sha256 of policy.json ("" when no store)
  std::string store_id;
  std::optional<std::int64_t> last_time;  // T of the tip (packet or attestation)
  int format = 2;                         // state format version of the tip
  bool full = true;                       // its history was re-executed in full (TrustState::full)
  std::string verifier;                   // whose keys verified it (TrustState::verifier)
  // The policy in force at the tip (policy.json of `state`, parsed once):
  // hosts read the store's rules here, never from the tree again. The
  // facts below are this policy's, read from it and stored nowhere else
  // (snapshot_at refuses a trust state that disagrees with it).
  Policy policy;
  // The notary pins in force (guard time on), none otherwise.
  const std::optional<Pins>& guard_time() const { return policy.guard_time; }
  // A PRIVATE store (records and bodies sealed), and its current key epoch.
  bool is_private() const { return policy.is_private; }
  std::int64_t epoch() const { return policy.epoch; }
  // How the store compares paths (Policy::case_insensitive): hosts turn a
  // user's path into an op with normalize_path_input(text, path_case()).
  PathCase path_case() const { return policy.path_case(); }
  // A PRIVATE store's member keys, when the verifier brought them (set by
  // verified_snapshot from TrustOptions::vault; shared by every copy, never
  // changed): the vault, and the codec that reads and writes this state's
  // records. Both nullptr for a public store (records in the clear) and
  // without a member's keys.
  std::shared_ptr<const SnapshotKeys> keys;
  const Vault* vault() const { return keys ? &keys->vault : nullptr; }
  const RecordCodec* codec() const { return keys ? keys->codec.get() : nullptr; }
};

// A Snapshot is obtained only from verified_snapshot() (gitlocks/trust.hpp):
// its trust facts come from the verified chain, never from the tip alone.

// The host's way to a notary: takes a stored admission request, returns the
// stored attestation (or an error: store_write when the notary is
// unreachable, guard_window when it refuses T).
using AdmitFn = std::function<Result<std::string>(const std::string& request_stored)>;

struct Candidate {
  Oid commit;  // the new commit (objects already written)
  json packet;
  std::string packet_stored;
  PlanOutcome outcome;
  std::int64_t admitted_at_ms = 0;
  std::optional<std::string> attestation_stored;
};

// A candidate before admission: planned, packet signed, no commit yet.
// Under guard time (`pins`: those of the transition's result, as replay
// judges it — the snapshot's, or those the transition itself installs or
// replaces; none for the transition that turns guard time off) its
// admission request is what the host sends to the notary, and T is the
// notary's; without, T is `admitted_at_ms`.
struct Prepared {
  json packet;
  std::string packet_stored;
  PlanOutcome outcome;
  std::optional<Pins> pins;
  std::optional<std::string> request_stored;
  std::int64_t admitted_at_ms = 0;
};

// Plans `body` against the snapshot, proposing with `now_ms`, and signs the
// packet; on a PRIVATE store with the snapshot's member keys
// (Snapshot::vault(): they open the records and seal the body). Without
// guard time T = max(now_ms, snapshot.last_time) (admission time never
// decreases along the chain), recorded as claimed_at_ms. Errors: the
// planner's refusals, guard_window when T is outside the derived interval,
// unknown_format on a store of an older format.
Result<Prepared> prepare_candidate(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                   const std::string& command, const std::string& instance, const json& body,
                                   std::int64_t now_ms);

// The prepared candidate of an earlier run, from its signed packet (a host's
// saved operation): the packet must be signed by `key` and built on this
// snapshot — its source state, store, policy hash and epoch — else
// stale_generation ("the source changed"); it is re-executed on the
// snapshot (as replay does) and must give the packet's result and action,
// else store_read. Its admission request is made again (deterministic:
// Ed25519 signatures are).
Result<Prepared> reopen_prepared(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                 const std::string& packet_stored);

// Writes the candidate commit. Under guard time `attestation_stored` is the
// notary's answer to the request: it must bind this packet and carry the
// pins (a test clock only with `allow_test_clock`, the host's explicit
// --allow-test-clock), and its T must not be before the snapshot's last;
// else store_write. Without guard time the attestation must be absent.
// `on` cut: the commit has no Git parent (a checkpoint that starts a new
// chain, docs/FORMAT.md "The cut"); the body must be a checkpoint of the
// snapshot's commit, else usage.
enum class CommitOn { tip, cut };
Result<Candidate> complete_candidate(ObjectStore& store, const Snapshot& snap, Prepared prepared,
                                     const std::optional<std::string>& attestation_stored,
                                     bool allow_test_clock = false, CommitOn on = CommitOn::tip);

// prepare_candidate, then (under guard time) `admit` with its request, then
// complete_candidate. Errors: those of both, usage when guard time is on and
// no `admit` is given, and admit's errors.
Result<Candidate> build_candidate(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                  const std::string& command, const std::string& instance, const json& body,
                                  std::int64_t now_ms, const AdmitFn& admit = nullptr, bool allow_test_clock = false);

// Where a PRIVATE packet's sealed body lives, for the associated data.
std::string sealed_body_location(const std::string& instance);

// One-line human summary used as the commit message. For PRIVATE stores
// (sealed body) it names the action only.
std::string describe_transition(const json& packet);

}  // namespace gitlocks
