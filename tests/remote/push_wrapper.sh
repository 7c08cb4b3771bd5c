#!/bin/bash
# A stand-in for git (through the GIT_LOCKS_GIT test seam) that watches
# `git push`: every other invocation runs the real git unchanged.
#
#   PUSH_WRAPPER_LOG       append one line per push: "<exit status> <args>"
#   PUSH_WRAPPER_RACE_CMD  a shell command run once, before the first push
#                          reaches git, to let another writer in
#   PUSH_WRAPPER_AFTER_CMD a shell command run once, after the first push
#                          has returned (e.g. to release a lock)
#   PUSH_WRAPPER_FAIL=stale  answer every push as a stale lease would,
#                          without contacting the server
#   PUSH_WRAPPER_STATE     directory for the wrapper's own bookkeeping
#   PUSH_WRAPPER_FETCH_LOG append one line per fetch: "fetch <args>"
set -u
real_git=${PUSH_WRAPPER_REAL_GIT:-git}
is_push=0
for arg in "$@"; do
  [ "$arg" = "push" ] && is_push=1
  if [ "$arg" = "fetch" ] && [ -n "${PUSH_WRAPPER_FETCH_LOG:-}" ]; then
    printf 'fetch %s\n' "$*" >> "$PUSH_WRAPPER_FETCH_LOG"
  fi
done
[ $is_push = 0 ] && exec "$real_git" "$@"

if [ -n "${PUSH_WRAPPER_RACE_CMD:-}" ] && [ -n "${PUSH_WRAPPER_STATE:-}" ] && \
   mkdir "$PUSH_WRAPPER_STATE/raced" 2>/dev/null; then
  race_cmd=$PUSH_WRAPPER_RACE_CMD
  (unset GIT_LOCKS_GIT PUSH_WRAPPER_RACE_CMD; eval "$race_cmd") >/dev/null 2>&1
fi
if [ "${PUSH_WRAPPER_FAIL:-}" = stale ]; then
  spec=${*: -1}
  printf 'To server\n!\t%s\t[rejected] (stale info)\nDone\n' "$spec"
  echo "error: failed to push some refs to 'server'" >&2
  status=1
else
  "$real_git" "$@"
  status=$?
fi
if [ -n "${PUSH_WRAPPER_AFTER_CMD:-}" ] && [ -n "${PUSH_WRAPPER_STATE:-}" ] && \
   mkdir "$PUSH_WRAPPER_STATE/after" 2>/dev/null; then
  (eval "$PUSH_WRAPPER_AFTER_CMD") >/dev/null 2>&1
fi
[ -n "${PUSH_WRAPPER_LOG:-}" ] && printf '%s %s\n' "$status" "$*" >> "$PUSH_WRAPPER_LOG"
exit $status
