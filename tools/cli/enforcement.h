// enforcement.h — the CLI's side of "claims bind the work" (SPEC §9,
// docs/CLI.md "Enforcing claims"): which commits a ref update brings in,
// and their verdicts under the core's rule (gitlocks/enforce.hpp), for the
// server's pre-receive, the local reference-transaction hook and `check`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "gitlocks/enforce.hpp"

namespace gitlocks::cli {

// The refs whose updates are checked: git config locks.enforce (one or
// more patterns; "NAME/*" is every ref below NAME/), default refs/heads/*;
// "none": no ref.
// The refs a claims check may guard: under refs/, never the store
// (refs/locks/) nor remote-tracking refs (a server checked those).
bool enforceable_ref(const std::string& ref);
// The enforced ref patterns: the policy's `enforce` when the store sets one,
// else `git config locks.enforce` (every value; "none" turns it off), else
// refs/heads/*.
Result<std::vector<std::string>> enforced_ref_patterns(Context& ctx, const Snapshot& snap);
bool ref_matches(const std::string& ref, const std::vector<std::string>& patterns);

// The commits `git rev-list --reverse --topo-order ARGS` lists (oldest
// first). Errors: store_read (git failed), usage (git rejected ARGS as a
// range, with its message).
Result<std::vector<Oid>> rev_list(Context& ctx, const std::vector<std::string>& args);

// The commits an update of a ref from `old_oid` to `new_oid` brings in:
// new ^old, or for a new ref everything not yet on any ref; `exclude`
// adds negative revisions (the local hook adds --remotes: what came from
// a server was checked there).
Result<std::vector<Oid>> commits_brought_in(Context& ctx, const std::string& old_oid, const std::string& new_oid,
                                            const std::vector<std::string>& exclude);

// The instant a check is made at: the host clock (or $GIT_LOCKS_NOW_MS),
// never before the last admitted T of the verified history.
Result<std::int64_t> check_time(const Snapshot& snap);

// Every verdict of `commits` on the verified snapshot `snap` (a PRIVATE
// store is read with the current identity's keys: not_member otherwise).
Result<std::vector<CommitCheck>> check_commits(Context& ctx, const Snapshot& snap, const std::vector<Oid>& commits,
                                               std::int64_t now);

// Prints every refusal of `checks` as a JSON error line on stderr, each
// prefixed by `context`; returns the exit status (0 when none).
// Each refusal also notes the intents of others on its path.
int report_refusals(Context& ctx, const std::vector<CommitCheck>& checks, const std::string& context,
                    const Snapshot& snap, std::int64_t now);

}  // namespace gitlocks::cli
