#!/bin/bash
# A git stand-in that moves refs/locks/state (to a new commit with the same
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
tip=$(git "${repo[@]}" rev-parse refs/locks/state)
moved=$(git "${repo[@]}" commit-tree -p "$tip" -m "moved by moving_git.sh" "$tip^{tree}")
git "${repo[@]}" update-ref refs/locks/state "$moved" "$tip"
[ -n "${MOVING_GIT_COUNT:-}" ] && echo x >> "$MOVING_GIT_COUNT"
printf '%s' "$input" | git "$@"
