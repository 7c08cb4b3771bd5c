// gitlocks/replay.hpp — verification of a store's whole history (SPEC §7).
//
// Walks refs/locks/state from its root (or from a trusted commit) and checks
// every commit: layout, parents, the packet (format, signature, bindings),
// re-planning the body on the parent's recorded state reproduces the
// recorded successor tree bit for bit, the derived interval equals the
// packet's, the admission time lies in it and never decreases; and,
// independently of the planner, that no two conflicting leases were ever
// live at once, no semaphore exceeded its limit and no generation was
// reused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/canon.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {

// How far a commit was verified. full: re-planned and checked
// semantically; structural: a PRIVATE commit the verifier holds no key for
// (signatures, chain, bindings, attestation and time only, NOT a semantic
// validation). Written "full" / "structural" in every host's output.
enum class VerifyLevel { full, structural };
inline const char* level_name(VerifyLevel l) { return l == VerifyLevel::structural ? "structural" : "full"; }

struct Verdict {
  Oid commit;
  std::string command;
  std::string action;
  std::string actor;
  std::optional<std::int64_t> time;  // admission time T, when known
  bool ok = true;
  VerifyLevel level = VerifyLevel::full;
  std::string reason;  // stable code, e.g. "result-mismatch" (empty when ok)
  std::string detail;  // human explanation
};

// What a verifier says whenever commits were verified structurally only, or
// a PRIVATE store was verified without a member's keys.
inline constexpr std::string_view kStructuralNote = "structural verification only: not a semantic validation";

// {"commit","command","actor","time","ok","level","reason"} (+ "detail" when not ok);
// keys sorted, one canonical line per verdict.
json verdict_json(const Verdict& v);

struct ReplayOptions {
  // Verify from this commit on, trusting it and its ancestors.
  std::optional<Oid> from;
  // Accept attestations from a notary running its test-only clock.
  bool allow_test_clock = false;
  // When set, the guard-time pins in force at the tip must be these (else
  // the tip's verdict is pins-mismatch; every attestation is checked against
  // the pins the chain had at its commit).
  std::optional<Pins> expected_pins;
  // When set, the store's owner key (hex) must be this one: else the root's
  // verdict is owner-mismatch (a replay from a trusted commit fails with
  // invalid). The page, the npm module and `verify --expect-owner` all pin
  // the owner here.
  std::optional<std::string> expected_owner;
  // Keys besides the owner whose checkpoint this verifier trusts to start
  // at (`git config locks.checkpointSigners`; docs/FORMAT.md "Checkpoints
  // by policy"): a cut the replay starts at is judged on its own state, so
  // the policy naming its signer is the cut's own word; only the owner's
  // cut, or one of these keys', is accepted there (else not-owner).
  std::vector<std::string> checkpoint_signers;
  // The newest checkpoint each witness this verifier requires has cosigned
  // (docs/FORMAT.md "Witnesses"), each on the chain (check_cosigned): a
  // fresh start may start at a checkpoint at or below `cosign_quorum` of
  // them whoever signed it (the witnesses verified the history up to it).
  std::vector<Oid> cosigned;
  std::size_t cosign_quorum = 0;
  // A member's keys: PRIVATE commits are verified in full only with them.
  const Vault* vault = nullptr;
  // Called after every commit with (done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

// A member's keys for verifying the history ending at `tip`, opened from the
// keyring of the policy that `tip` records (as `git-locks verify` does).
// `vault` is empty when no member key is given (nullptr), when the store at
// `tip` is public or unreadable (replay reports that), or when `member` is
// not in its keyring: the sealed commits are then verified structurally.
struct MemberVault {
  bool is_private = false;  // the policy at `tip` is a PRIVATE one
  std::optional<Vault> vault;
};
MemberVault open_member_vault(ObjectStore& store, const Oid& tip, const KeyPair* member);

// The policy a commit records in its own state, parsed, unverified (nullopt:
// the commit, its state or its policy cannot be read): for a host's choice
// of keys or of where to start, never a verdict.
std::optional<Policy> recorded_policy(ObjectStore& store, const Oid& commit);

// The keys a verifier brings to the history ending at `tip`, the one rule
// of every host (`verify`, every writer's and query's verification, `doctor`,
// the npm module, the page): a public store needs none; for a PRIVATE one
// `key()` is asked for the member's key (only then: a host may create or
// load its key lazily; nullptr: none) and its vault opened from the tip's
// keyring. `verifier` is that key's actor (hex) when it opened a vault, ""
// otherwise: whose keys a structural-or-full verification was made with
// (TrustOptions::verifier, the checkpoint's "verifier"). Errors: those of
// `key()`.
struct VerifierKeys {
  MemberVault member;
  std::string verifier;
  const Vault* vault() const { return member.vault ? &*member.vault : nullptr; }
};
using MemberKeyFn = std::function<Result<const KeyPair*>()>;
Result<VerifierKeys> verifier_keys(ObjectStore& store, const Oid& tip, const MemberKeyFn& key);
// The same with a key already at hand (nullptr: none).
VerifierKeys verifier_keys(ObjectStore& store, const Oid& tip, const KeyPair* member);

// What a verified history establishes at its tip, and all a later
// verification needs to continue from it (the checkpoint, docs/FORMAT.md).
struct TrustState {
  Oid commit;  // the verified tip
  std::string store_id;
  std::string policy_hash;                // sha256 of the policy in force at the tip
  std::optional<Pins> guard_time;         // the notary pins in force (from the verified chain)
  std::optional<std::int64_t> last_time;  // the last admitted T along the chain
  std::int64_t epoch = 0;                 // the keyring epoch (PRIVATE stores; 0 otherwise)
  // Every commit up to `commit` was re-executed in full (false: some PRIVATE
  // commits were checked structurally only, without their epoch key).
  bool full = true;
  // The actor whose keys verified it ("" when none were given): a
  // structural state is trusted only by that same verifier, so a member
  // never builds on what a keyless reader could not check.
  std::string verifier;
  bool operator==(const TrustState& o) const {
    return commit == o.commit && store_id == o.store_id && policy_hash == o.policy_hash && guard_time == o.guard_time &&
           last_time == o.last_time && epoch == o.epoch && full == o.full && verifier == o.verifier;
  }
};

// The rule of PRIVATE stores that needs no key (docs/PRIVATE.md,
// "Verification"), applied by replay_chain to every commit on a PRIVATE
// source, at both levels, so full and structural verification agree:
//   - "not-member": the signer is neither the owner nor in the member list of
//     the epoch in force at the source (`source`);
//   - "policy-changed": a commit that is not an admin one (its body has no
//     "admin": every sealed body) changed the public policy, i.e. the
//     policy.json blob of its result differs from the source's by any byte
//     (members, keyring, TTL bounds, guard-time pins, sealed families);
//   - "not-owner": an admin commit, or any change of the public policy, not
//     signed by the owner.
// `result_policy_blob` is nullopt when the result has no policy.json.
struct PrivateBreach {
  std::string reason;
  std::string detail;
};
std::optional<PrivateBreach> check_private_commit(const Policy& source, const Oid& source_policy_blob,
                                                  const std::optional<Oid>& result_policy_blob,
                                                  const std::string& actor, bool admin);

struct ReplaySummary {
  std::size_t commits = 0;
  std::size_t invalid = 0;
  std::size_t structural = 0;  // commits verified structurally only
  std::optional<Oid> tip;
  std::optional<Oid> first_invalid;
  std::optional<Verdict> first_invalid_verdict;
  // The checkpoints among the replayed commits (action "checkpoint"): those
  // that verified, and those that did not.
  std::size_t checkpoints = 0;
  std::size_t invalid_checkpoints = 0;
  // The replay started at this cut (docs/FORMAT.md "The cut"): the chain
  // before it, its `prev`, is not in the store (not fetched, or archived
  // elsewhere), so it was verified as its owner's checkpoint of its own
  // state. nullopt: the replay started at the store's creation or at
  // ReplayOptions::from.
  std::optional<Oid> cut_start;
  // The chain's state after its tip (meaningful when invalid == 0).
  TrustState end;
};

// Whether a replay or a fresh start may begin at a checkpoint signed by
// `actor` on its word, in a store owned by `owner`: the owner's, or one of
// `checkpoint_signers` (the keys the verifier pins; docs/FORMAT.md
// "Checkpoints by policy"). The one rule of replay's cut start,
// trust.hpp's checkpoint_anchor and untrusted_cut_start.
bool trusted_to_start(const std::string& actor, const std::string& owner,
                      const std::vector<std::string>& checkpoint_signers);

// The cut (docs/FORMAT.md "The cut"): a checkpoint commit with no Git
// parent starts a new chain of refs/locks/state, so that a fetch of it
// transfers only what follows; its `prev` names the tip of the chain it
// continues (kept on refs/locks/archive/PREV). The prev of `commit` when it
// is such a commit, read as stored (unverified: replay judges it); nullopt
// otherwise.
std::optional<Oid> cut_prev(ObjectStore& store, const Oid& commit);
// The commit below `commit` (`c`, its object) on the chain every verifier
// walks: its first parent; for a cut whose prev is in the store, that prev;
// nullopt at the bottom (the store's creation, or a cut whose earlier
// history is not here).
std::optional<Oid> chain_parent(ObjectStore& store, const Oid& commit, const Commit& c);
// The commit `commit` follows on its chain, here or not: its first parent,
// or a cut's prev (where the store's owner resets the ref to when `commit`
// is the first invalid one). nullopt for the store's creation.
std::optional<Oid> chain_predecessor(ObjectStore& store, const Oid& commit);

// Verifies the chain ending at `tip`. Calls `on_verdict` for every commit, in
// order from the root. Errors: store_read when the chain cannot be read at
// all (verdicts carry everything that is merely invalid).
Result<ReplaySummary> replay_chain(ObjectStore& store, const Oid& tip, const ReplayOptions& options,
                                   const std::function<void(const Verdict&)>& on_verdict);

// One commit as the replay established it, for a host that shows more than
// its verdict (the timeline of leases): the facts the verifier itself went
// on, never read from the commit again. Valid during the callback only;
// `codec` may be kept (the next commits share it while the epoch lasts).
struct ReplayedCommit {
  const Verdict& verdict;
  // Its recorded state tree; nullptr when the replay could not read it or
  // its policy (the verdict says why): policy and codec are then not its.
  const Oid* state;
  const Policy& policy;                   // the policy of that state (pins in force: policy.guard_time)
  const Oid& policy_blob;                 // its policy.json blob: commits with the same one share policy and codec
  std::optional<std::int64_t> last_time;  // the last admitted T along the chain, this commit's included
  // The codec of the state's epoch from the verifier's vault
  // (ReplayOptions::vault): null for a state in the clear and when the
  // vault holds no key of that epoch (the records stay sealed).
  std::shared_ptr<const RecordCodec> codec;
};
// replay_chain, calling `on_commit` with each commit's facts.
Result<ReplaySummary> replay_commits(ObjectStore& store, const Oid& tip, const ReplayOptions& options,
                                     const std::function<void(const ReplayedCommit&)>& on_commit);

}  // namespace gitlocks
