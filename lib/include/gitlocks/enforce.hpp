// gitlocks/enforce.hpp — claims bind the work (SPEC §9, docs/CLI.md
// "Enforcing claims"): which changes of a Git commit break a claim.
//
// The rule, stated once and used by every host (the server's pre-receive,
// the local reference-transaction hook, `git-locks check`, the npm bin):
// a commit is refused when a path it changes is under a live exclusive
// claim, or in a family held exclusively, of a holder other than the
// commit's signer, on the verified state the check is made against.
//
// - The signer is proved, never read from user.name/user.email: the Ed25519
//   key of the commit's SSH signature (SSHSIG, namespace "git", sshsig.hpp).
//   An unsigned commit, or one whose signature does not verify, has no
//   holder: it may change only paths nobody else claims.
// - "Changes" (commit_changed_paths): against the first parent; a root
//   commit changes every path of its tree; a merge changes only what its
//   resolution adds of its own (ObjectStore::changed_paths). The commits a
//   merge brings in are checked one by one by the host that walks them.
// - "Under another's claim" is the planner's own conflict rule: the changes
//   of a commit signed by S are refused exactly where a shared claim of the
//   same paths by S would be refused as held-path or family-policy at the
//   same instant. The rule therefore never disagrees with admission.
// - A changed path that cannot be a path of the store (not valid UTF-8, a
//   control character: what Git allows and claims cannot name) cannot be
//   checked, so it is refused (bad-path): the check fails closed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/result.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/transition.hpp"

namespace gitlocks {

// Who signed a commit, as the rule sees it.
struct CommitSigner {
  // The signer's actor key (64 hex) when the commit carries a valid SSHSIG
  // in namespace "git"; nullopt: no holder.
  std::optional<std::string> actor;
  // "valid", "unsigned", or why the signature was not accepted (the
  // bad_signature reason: "signature-mismatch", "signature-namespace", ...).
  std::string signature;
};

// Reads commit `commit`'s raw object and verifies its signature. Errors:
// store_read (the commit cannot be read).
Result<CommitSigner> commit_signer_of(ObjectStore& store, const Oid& commit);

// The state a check is judged on: a verified snapshot (verified_snapshot or
// a verified replay; for a PRIVATE store it carries the member's keys and
// codec, Snapshot::keys) and the instant of the check.
struct EnforcementView {
  const Snapshot* snap = nullptr;
  std::int64_t now = 0;
};

// One changed path the rule refuses. `refusal` is held_path, family_policy
// or bad_path, with the fields "commit", "path" (the changed path, as the
// commit spells it), "signer" (actor key or ""), and for a claim in the
// way "claimed_path", "holder", "holder_name", "lease", "expires_at_ms"
// (and "family" when a family is held); its message says what to do.
struct PathRefusal {
  std::string path;
  Error refusal;
};

// The rule on paths alone, for a commit not made yet (the client hooks ask
// it of the staged or pushed paths, as their writer): for each of `paths`
// (as Git spells them), the refusal a commit by `signer` changing it would
// get — the planner's held_path or family_policy with the lease in the way
// ("claimed_path", "holder", "holder_name", "lease", "expires_at_ms"), or
// bad_path for a path no claim can name — else nullopt. Errors: as
// check_commits.
Result<std::vector<std::optional<Error>>> path_refusals(ObjectStore& store, const EnforcementView& view,
                                                        const std::optional<std::string>& signer,
                                                        const std::vector<std::string>& paths);

// The verdict on one commit.
struct CommitCheck {
  Oid commit;
  CommitSigner signer;
  std::size_t paths = 0;  // how many paths it changes
  std::vector<PathRefusal> refused;
  bool ok() const { return refused.empty(); }
};

// Signer, changed paths and refusals of each of `commits`, in order. The
// planner is asked once per signer for the union of the paths its commits
// change (a push of thousands of commits costs a few plans, not one per
// commit). Errors: store_read, not_member (a PRIVATE store without the
// vault), invalid.
Result<std::vector<CommitCheck>> check_commits(ObjectStore& store, const EnforcementView& view,
                                               const std::vector<Oid>& commits);
// check_commits of one commit.
Result<CommitCheck> check_commit(ObjectStore& store, const EnforcementView& view, const Oid& commit);

// The JSON of one verdict (docs/CLI.md "check"):
//   {"commit","signer":KEY|null,"signature","paths":N,"ok":B,
//    "refused":[{"path","code","reason","message","fields":{...}}]}
json commit_check_json(const CommitCheck& c);

// The instant a check is judged at: the host's clock `clock`, never before
// the last admitted T of the state (snap.last_time), so a slow clock cannot
// see a lease as live that admission already counted past. Every host that
// checks (the CLI, the npm bin) takes its `now_ms` from here.
std::int64_t check_instant(const Snapshot& snap, std::int64_t clock);

// The document of `git-locks check --json` (docs/CLI.md "check"), the same
// bytes from every host that checks the same commits at the same instant:
//   {"op":"check","store","state","now_ms","checked":N,"refused":K,
//    "commits":[commit_check_json...]}
// "state" is the verified tip of refs/locks/state the verdicts are judged
// on, "refused" the number of refused commits.
json check_report_json(const Snapshot& snap, std::int64_t now, const std::vector<CommitCheck>& checks);

}  // namespace gitlocks
