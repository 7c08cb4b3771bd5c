#!/usr/bin/env bash
# The ctest entry of the MCP test: `node --test mcp.test.mjs`. Without
# Node.js a skip (77), a failure under CI=true.
set -euo pipefail
# Under CI: $CI set to anything but "", 0, false or no (tests/support/unittest_ci.py in_ci).
in_ci() { case "$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')" in "" | 0 | false | no) return 1 ;; *) return 0 ;; esac; }
if ! command -v node >/dev/null; then
  if in_ci; then
    echo "mcp test: FAILED under CI=true: node is missing (run toolchains/setup.sh --native)" >&2
    exit 1
  fi
  echo "mcp test: NOT PASSED, skipped: node is missing (run toolchains/setup.sh --native)" >&2
  exit 77
fi
exec node --test --test-concurrency=1 "$(dirname "${BASH_SOURCE[0]}")/mcp.test.mjs"
