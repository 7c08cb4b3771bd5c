#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs every
# dependency (toolchains/setup.sh), builds and tests the native release and
# asan (ASan + UBSan) presets and the WebAssembly preset under Node.
#
#   tests/run.sh            everything (what CI runs, via .ci/run)
#   tests/run.sh release    one step only (release | asan | wasm | fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs

presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(release asan wasm fuzz)

need_wasm=0
for p in "${presets[@]}"; do [ "$p" = wasm ] && need_wasm=1; done
if [ "$need_wasm" = 1 ]; then toolchains/setup.sh; else toolchains/setup.sh --native; fi

summary=()
for p in "${presets[@]}"; do
  echo "== $p"
  start=$(date +%s)
  if [ "$p" = fuzz ]; then
    tests/fuzz/run.sh "${GITLOCKS_FUZZ_SECONDS:-60}"
    summary+=("fuzz: passed in $(( $(date +%s) - start ))s")
    continue
  fi
  cmake --preset "$p" >/dev/null
  cmake --build --preset "$p"
  ctest --preset "$p"
  summary+=("$p: passed in $(( $(date +%s) - start ))s")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
