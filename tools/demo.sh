#!/usr/bin/env bash
# The main job on the embedded default: a throw-away local repository and the
# local clock. Two identities claim, conflict, release; the state is shown and
# the history verified. Sets up and builds first when needed (fresh Debian).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/build/release/tools/cli/git-locks"
if [ ! -x "$bin" ] || [ "${GITLOCKS_DEMO_REBUILD:-0}" = 1 ]; then
  "$root/toolchains/setup.sh" --native
  (cd "$root" && cmake --preset release >/dev/null && cmake --build --preset release >/dev/null)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q repo && cd repo
git config user.name "demo" && git config user.email demo@example.invalid
show() { printf '\n$ %s\n' "$*"; "$@" || echo "(exit status $?)"; }
alice() { GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0=alice GIT_LOCKS_KEY="$work/alice.key" "$bin" "$@"; }
bob() { GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0=bob GIT_LOCKS_KEY="$work/bob.key" "$bin" "$@"; }
echo "git-locks demo in $work/repo (local repository, local clock)"
show alice init
show alice whoami
show bob whoami
show alice claim --ttl 10m --note "schema change" db/schema.sql src/generated/
show bob claim src/generated/api.ts
show bob claim --mode shared docs/
show alice claim --mode shared docs/
show alice status
show alice release db/schema.sql src/generated/
show bob claim src/generated/api.ts
show bob status --json
show alice log
if "$bin" --help 2>/dev/null | grep -q '^  verify'; then show alice verify --full; fi
