#!/usr/bin/env bash
# The claims check of a pull or merge request, for hosted forges where no
# server hook runs (docs/CLI.md "Enforcing claims"): fetch the lock store,
# then `git-locks check BASE..HEAD`. Used by github/action.yml and
# gitlab-ci.yml; run it from the checked-out repository.
#
#   git-locks-check.sh BASE HEAD [REMOTE]
#
# GIT_LOCKS         the command that runs git-locks (default: git-locks on
#                   PATH; the npm package's bin works as well:
#                   "npx --yes --package=@git-locks/core git-locks")
# GIT_LOCKS_REPORT  also write the JSON verdicts to this file
#
# Exit status: 0 no commit of the range changes a path under another
# holder's claim, 1 some commit does (the log names commit, path, holder,
# lease and expiry), 2 the store could not be fetched, read or verified
# (a missing store fails the check: it never passes for want of data),
# 64 bad arguments.
set -uo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ] || [ -z "$1" ] || [ -z "$2" ]; then
  echo "usage: git-locks-check.sh BASE HEAD [REMOTE]" >&2
  exit 64
fi
base=$1 head=$2 remote=${3:-origin}
read -r -a gl <<<"${GIT_LOCKS:-git-locks}"

if ! git fetch --no-tags --quiet "$remote" "+refs/locks/state:refs/locks/state"; then
  echo "git-locks-check: cannot fetch refs/locks/state from $remote (is there a lock store?)" >&2
  exit 2
fi
# A shallow or single-branch checkout may lack the base: fetch it.
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  git fetch --no-tags --quiet "$remote" "$base" || true
fi

if [ -n "${GIT_LOCKS_REPORT:-}" ]; then
  "${gl[@]}" --json check "$base..$head" >"$GIT_LOCKS_REPORT"
fi
"${gl[@]}" check "$base..$head"
