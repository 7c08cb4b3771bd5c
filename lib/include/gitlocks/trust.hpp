// gitlocks/trust.hpp — anchored trust (SPEC §7 "Acting on history"): nobody
// acts on a tip whose history has not been verified.
//
// verified_snapshot() replays the history from a trusted anchor (the
// checkpoint a host kept from its last verification or publication) or from
// the root to the tip, with the same verifier as `git-locks verify`
// (replay_chain: full re-execution), and returns the snapshot to build on
// with every fact a writer trusts — store id, policy hash, guard-time pins,
// last admitted T, keyring epoch — taken from the verified chain.
#pragma once

#include <cstddef>
#include <optional>

#include "gitlocks/canon.hpp"
#include "gitlocks/limits.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/transition.hpp"

namespace gitlocks {

struct TrustOptions {
  // The last verified tip and its trust state. It is used only when its
  // commit exists and agrees with it; otherwise the replay starts at the root.
  std::optional<TrustState> anchor;
  // Accept attestations of a notary running its test clock (--allow-test-clock).
  bool allow_test_clock = false;
  // A member's keys (verifier_keys): PRIVATE commits are verified in full
  // only with them, and the snapshot of a PRIVATE store carries them with
  // the codec of its epoch (Snapshot::keys).
  const Vault* vault = nullptr;
  // Who verifies: the actor whose keys `vault` holds ("" without keys). An
  // anchor that is not `full` is used only by its own verifier; anyone else
  // replays from the root (and must still find the anchor on the chain).
  std::string verifier;
  // The owner the store must have (`git config locks.owner`): a history
  // whose root, trusted commit or checkpoint names another is refused
  // (owner-mismatch), and only that owner's checkpoints are started at.
  std::optional<std::string> expected_owner;
  // Without a usable anchor, start at the newest checkpoint on the chain
  // (checkpoint_anchor) rather than at the root: a fresh clone replays only
  // what follows it.
  bool start_at_checkpoint = false;
  // Keys besides the owner whose checkpoints may be started at
  // (ReplayOptions::checkpoint_signers): a checkpoint another key the
  // policy names signed is verified like any other, but a fresh start
  // passes over it to an older one (or the root) unless its signer is here.
  std::vector<std::string> checkpoint_signers;
  // ReplayOptions::cosigned and cosign_quorum (a fresh start's witnesses).
  std::vector<Oid> cosigned;
  std::size_t cosign_quorum = 0;
};

// Split views (docs/FORMAT.md "Witnesses"): every checkpoint a witness
// cosigned for this store must be on the chain ending at `tip` (walked
// with chain_parent, across cuts whose archive is here). The first that is
// not: invalid_history with fields "commit" (the tip), "verdict"
// ("split-view"), "cosigned" (that checkpoint), "last_valid" "" and, when
// the chain starts at a cut whose earlier history is not here, "archived"
// (its prev: fetched, the checkpoint may be there). Errors: store_read.
Status check_cosigned(ObjectStore& store, const Oid& tip, const std::vector<Oid>& cosigned);

// Where a clone that trusts nothing yet may start (docs/FORMAT.md
// "Checkpoints"): the newest checkpoint among the `within` commits of the
// first-parent chain ending at `tip`, re-executed from its parent by the
// verifier of `git-locks verify` (replay_chain with the options of the
// replay that will follow it — its expected owner, test clock and keys;
// `from` is the checkpoint's parent: the owner's signature, its `prev`, the
// state it leaves unchanged, the store, policy hash, epoch and time
// bindings; the parent's state is what the checkpoint vouches for). Its
// trust state, by `verifier`, or nullopt when there is none within reach or
// the newest does not verify (a replay from the root then says why). A
// checkpoint signed by neither the owner nor one of
// `replay.checkpoint_signers` is passed over for an older one, unless it is
// at or below `replay.cosign_quorum` of `replay.cosigned` (witnessed).
// Errors: store_read.
Result<std::optional<TrustState>> checkpoint_anchor(ObjectStore& store, const Oid& tip, const ReplayOptions& replay,
                                                    const std::string& verifier,
                                                    std::size_t within = kCheckpointSearchCommits);

// The chain ending at `tip` starts at a cut (its earlier history is not in
// the store) signed by neither the owner its policy names nor one of
// `checkpoint_signers`: a replay cannot start there (not-owner), so the
// history before it is needed. Its prev (the archive to fetch), or nullopt.
// Reads every commit of the chain (as the replay from its bottom will).
// Errors: store_read.
Result<std::optional<Oid>> untrusted_cut_start(ObjectStore& store, const Oid& tip,
                                               const std::vector<std::string>& checkpoint_signers);

struct Trusted {
  Snapshot snapshot;                // commit == nullopt: there is no store
  std::optional<TrustState> trust;  // the new checkpoint (nullopt: no store)
  std::size_t replayed = 0;         // commits re-executed
  bool anchored = false;            // the anchor was used (else: from the root)
  bool from_checkpoint = false;     // the anchor was the newest checkpoint (start_at_checkpoint)
};

// Errors: invalid_history when a commit between the anchor (or the root) and
// the tip does not verify — fields "commit" (the first invalid one),
// "verdict" (its reason), "last_valid" (its parent; "" for the root) — or
// when the tip does not descend from the anchor (a rewrite: "commit" is the
// tip, "verdict" is "rewrite", "last_valid" the anchor); store_read when the
// chain cannot be read; unknown_format (with the same fields) when the
// first invalid commit uses a format or profile this version does not know.
Result<Trusted> verified_snapshot(ObjectStore& store, const std::optional<Oid>& tip, const TrustOptions& options);

// The checkpoint `anchor` if `verifier` may continue a replay from it (as
// `git-locks verify` does by default): its commit is in the store and agrees
// with it (store id, policy hash, pins, last T, epoch), and it is `full` or
// this verifier's own. nullopt otherwise (replay from the root).
std::optional<TrustState> usable_anchor(ObjectStore& store, const TrustState& anchor, const std::string& verifier);

// The trust state at the end of `summary`, a replay by `verifier` that
// continued from `anchor` (nullopt: from the root): full only when both were.
TrustState continued_trust(const ReplaySummary& summary, const std::optional<TrustState>& anchor,
                           const std::string& verifier);

// The trust state after one's own publication `c` built on the verified
// snapshot `base`: the new commit follows from it without re-verification
// (it is as full as `base`, by the same verifier).
Result<TrustState> trust_after(ObjectStore& store, const Snapshot& base, const Candidate& c);
// The same on a base verified in full by nobody in particular (tests, tools).
Result<TrustState> trust_after(ObjectStore& store, const Candidate& c);

// The snapshot a verified trust state describes at its commit (its layout
// read from the store, its facts from `trust`).
Result<Snapshot> snapshot_at(ObjectStore& store, const TrustState& trust);

// {"commit","store","policy_hash","guard_time":{"audience","service_key"}|null,
//  "last_time":T|null,"epoch","full":bool,"verifier":HEX64|""} — canonical
// JSON in checkpoint files.
json trust_state_json(const TrustState& t);
// nullopt for anything malformed.
std::optional<TrustState> parse_trust_state(const json& j);

}  // namespace gitlocks
