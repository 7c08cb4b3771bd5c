#!/usr/bin/env bash
# The main job on the embedded default: a throw-away local repository and the
# local clock. Two identities claim, conflict, release; the state is shown and
# the history verified. Sets up and builds first when needed (fresh Debian):
# only the CLI's build dependencies (toolchains/setup.sh --demo) and only the
# git-locks target, in build/demo, unoptimised (the demo runs a dozen short
# commands; an optimised build takes 1.5 times the CPU to compile) and without
# the tests. A git-locks already built by the release preset is used as it is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/build/release/tools/cli/git-locks"
if [ ! -x "$bin" ] || [ "${GITLOCKS_DEMO_REBUILD:-0}" = 1 ]; then
  bin="$root/build/demo/tools/cli/git-locks"
  log="$root/build/demo-build.log"
  mkdir -p "$root/build"
  echo "building git-locks first (one-time; about 2 minutes on 2 cores, log: $log)"
  if ! { "$root/toolchains/setup.sh" --demo &&
         cmake -S "$root" -B "$root/build/demo" -G Ninja -DCMAKE_BUILD_TYPE=None -DGITLOCKS_BUILD_TESTS=OFF \
           -DGITLOCKS_USE_NATIVE_DEPS=OFF &&
         cmake --build "$root/build/demo" --target git-locks; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "demo: the build failed (whole log: $log)" >&2
    exit 1
  fi
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
