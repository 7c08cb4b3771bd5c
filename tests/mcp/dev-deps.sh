#!/usr/bin/env bash
# Installs the MCP test's devDependencies (@modelcontextprotocol/sdk, the
# official TypeScript SDK, as the client) exactly as locked in
# tests/mcp/package-lock.json into DIR/node_modules; a no-op when DIR
# already holds them for the same lock file. Without npm: a skip (77), a
# failure under CI=true (toolchains/setup.sh --native installs it).
#
#   tests/mcp/dev-deps.sh DIR
set -euo pipefail
# Under CI: $CI set to anything but "", 0, false or no (tests/support/unittest_ci.py in_ci).
in_ci() { case "$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')" in "" | 0 | false | no) return 1 ;; *) return 0 ;; esac; }
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:?usage: dev-deps.sh DIR}
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  if in_ci; then
    echo "mcp dev-deps: FAILED under CI=true: node or npm is missing (run toolchains/setup.sh --native)" >&2
    exit 1
  fi
  echo "mcp dev-deps: NOT PASSED, skipped: node or npm is missing (run toolchains/setup.sh --native)" >&2
  exit 77
fi
mkdir -p "$dir"
if [ -f "$dir/package-lock.json" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json" &&
   [ -f "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
  echo "mcp dev-deps: up to date in $dir"
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
cd "$dir"
npm ci --ignore-scripts --no-audit --no-fund
echo "mcp dev-deps: installed @modelcontextprotocol/sdk $(node -p "require('./node_modules/@modelcontextprotocol/sdk/package.json').version")"
