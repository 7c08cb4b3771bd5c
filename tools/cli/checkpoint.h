// checkpoint.h — anchored trust in the CLI (SPEC §7 "Acting on history";
// docs/FORMAT.md "The trust checkpoint"): every command that publishes or
// whose answer is relied on gets its snapshot here, verified from the
// clone's checkpoint to the tip by the core (verified_snapshot).
//
// The checkpoint lives in the COMMON git dir, so linked worktrees share it:
//   <common>/git-locks/trust/local.json           this repository's store
//   <common>/git-locks/trust/remotes/NAME.json    the store on remote NAME
// {"format":"git-locks-trust-v1","trust":{...trust_state_json...}}, canonical
// JSON, written to a temporary file and renamed over the old one (not
// fsynced: see save_checkpoint).
// Missing, unreadable or malformed, or naming a commit that is not here (or
// disagreeing with it): ignored, and the history is replayed from the root.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "cli.h"
#include "gitlocks/transition.hpp"
#include "gitlocks/trust.hpp"

namespace gitlocks::cli {

// The repository's common git dir (`git rev-parse --git-common-dir`, from
// the core's repository_common_dir: no process), where the clone's own
// git-locks files live.
Result<std::filesystem::path> git_common_dir(Context& ctx);

// The keys this identity brings to the history ending at `tip`
// (gitlocks::verifier_keys: for a PRIVATE store only, the identity is
// loaded, which may create its key). `required`: an identity that cannot be
// loaded is an error (`verify`, `doctor`: a broken key file is not "no
// key"); otherwise the store is verified structurally and the command's own
// reading of the records reports it.
Result<VerifierKeys> identity_keys(Context& ctx, ObjectStore& store, const Oid& tip, bool required);

// Verifies the history ending at `tip` (as just read by ctx.read_tip()) from
// the checkpoint, records the new checkpoint, and returns the snapshot. When
// `tip` does not descend from the checkpoint, the ref is read once more
// (another writer of this clone may have published and checkpointed after
// `tip` was read): the snapshot is then of that newer tip, so a writer
// compares-and-swaps against the snapshot's commit, never against `tip`.
// Errors: invalid_history (with the owner's recovery in the detail and a
// "recovery" field), store_read.
Result<Snapshot> verified_tip_snapshot(Context& ctx, const std::optional<Oid>& tip);

// The snapshot at `tip`, verified from the clone's checkpoint like
// verified_tip_snapshot, without recording a checkpoint: for a tip that is
// not (yet) on the ref, e.g. one a push under inspection would set.
Result<Snapshot> verified_snapshot_unrecorded(Context& ctx, const Oid& tip);
// The checkpoint after one's own publication `c`, built on the verified
// snapshot `base`. A failure to write it is not an error: the next command
// replays. Nothing verified with --allow-test-clock is ever written as a
// checkpoint (here, by verified_tip_snapshot or by record_verified): it would
// let a later command without the flag accept test-clock attestations unseen.
void record_publication(Context& ctx, const Snapshot& base, const Candidate& c);

// The clone's checkpoint for the current store, as written (nullopt when
// missing or malformed); callers decide whether to use it (usable_anchor).
std::optional<TrustState> load_trust_checkpoint(Context& ctx);

// The checkpoint after `git-locks verify` found the whole history valid.
Status record_verified(Context& ctx, const TrustState& trust);
// Forgets the checkpoint (`verify --accept-rewrite`).
Status forget_checkpoint(Context& ctx);

// The command that resets the store to `last_valid` from `tip` (for a
// remote store: the push that does it); `last_valid` "" deletes the ref.
std::string recovery_command(Context& ctx, const std::string& last_valid, const Oid& tip);

}  // namespace gitlocks::cli
