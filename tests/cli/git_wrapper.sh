#!/bin/bash
# A logging, fault-injecting stand-in for git, installed through the
# GIT_LOCKS_GIT test seam. Only `update-ref --stdin` is intercepted; every
# other invocation runs the real git unchanged.
#
#   GIT_WRAPPER_LOG       append one line per update-ref run:
#                         "<exit status> <base64 of its exact stdin>"
#   GIT_WRAPPER_FAIL      inject a failure instead of running git:
#                           stale      "is at X but expected Y" (exit 128)
#                           message:T  print T on stderr and exit 128
#   GIT_WRAPPER_RACE_CMD  a shell command run once (before the first
#                         update-ref reaches git), to let another writer in
#   GIT_WRAPPER_STATE     directory for the wrapper's own bookkeeping
#   GIT_WRAPPER_ARGS_LOG  append one line per update-ref run: "LC_ALL=<value>"
#                         and then its arguments, separated by tabs
set -u
real_git=${GIT_WRAPPER_REAL_GIT:-git}

is_update_ref=0
for arg in "$@"; do
  [ "$arg" = "update-ref" ] && is_update_ref=1
done
if [ $is_update_ref = 0 ]; then
  exec "$real_git" "$@"
fi

input=$(cat; printf x)
input=${input%x}

if [ -n "${GIT_WRAPPER_RACE_CMD:-}" ] && [ -n "${GIT_WRAPPER_STATE:-}" ] && \
   mkdir "$GIT_WRAPPER_STATE/raced" 2>/dev/null; then
  race_cmd=$GIT_WRAPPER_RACE_CMD
  (unset GIT_LOCKS_GIT GIT_WRAPPER_RACE_CMD; eval "$race_cmd") >/dev/null 2>&1
fi

case "${GIT_WRAPPER_FAIL:-}" in
  stale)
    err="fatal: prepare: cannot lock ref 'refs/locks/state': is at 1111111111111111111111111111111111111111 but expected 2222222222222222222222222222222222222222"
    status=128
    printf 'start: ok\n'
    printf '%s\n' "$err" >&2
    ;;
  message:*)
    status=128
    printf 'start: ok\n'
    printf '%s\n' "${GIT_WRAPPER_FAIL#message:}" >&2
    ;;
  *)
    printf '%s' "$input" | "$real_git" "$@"
    status=$?
    ;;
esac
if [ -n "${GIT_WRAPPER_ARGS_LOG:-}" ]; then
  (IFS=$'\t'; printf 'LC_ALL=%s\t%s\n' "${LC_ALL-<unset>}" "$*") >> "$GIT_WRAPPER_ARGS_LOG"
fi
if [ -n "${GIT_WRAPPER_LOG:-}" ]; then
  printf '%s %s\n' "$status" "$(printf '%s' "$input" | base64 -w0)" >> "$GIT_WRAPPER_LOG"
fi
exit $status
