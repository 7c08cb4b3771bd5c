#!/bin/bash
# A git stand-in that moves refs/locks/state (by an honest git-locks claim
# when MOVING_GIT_WRITER names the binary, else to a new commit with the same
# tree) just before every `update-ref --stdin` reaches git: every
# compare-and-swap of git-locks then loses to a real concurrent writer.
# Counts the update-ref runs in $MOVING_GIT_COUNT (a file) when set.
set -u
is_update_ref=0
for arg in "$@"; do [ "$arg" = "update-ref" ] && is_update_ref=1; done
[ $is_update_ref = 0 ] && exec git "$@"
# Wait for the transaction text: it arrives only after git-locks has planned.
input=$(cat; printf x)
input=${input%x}
repo=()
[ "${1:-}" = "-C" ] && repo=(-C "$2")
if [ -n "${MOVING_GIT_WRITER:-}" ]; then
  # An honest concurrent writer (writers act only on verified history, so
  # the ref must move by valid transitions): a real git-locks claim of a
  # fresh path by another key, through the real git.
  n=$( [ -n "${MOVING_GIT_COUNT:-}" ] && [ -f "$MOVING_GIT_COUNT" ] && wc -l < "$MOVING_GIT_COUNT" || echo 0)
  env -u GIT_LOCKS_GIT GIT_LOCKS_KEY="$MOVING_GIT_KEY" "$MOVING_GIT_WRITER" --repo "$2" claim --ttl 1h \
    "mover/$n" > /dev/null || exit 99
else
  tip=$(git "${repo[@]}" rev-parse refs/locks/state)
  moved=$(git "${repo[@]}" commit-tree -p "$tip" -m "moved by moving_git.sh" "$tip^{tree}")
  git "${repo[@]}" update-ref refs/locks/state "$moved" "$tip"
fi
[ -n "${MOVING_GIT_COUNT:-}" ] && echo x >> "$MOVING_GIT_COUNT"
printf '%s' "$input" | git "$@"
