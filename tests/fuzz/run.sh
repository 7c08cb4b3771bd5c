#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time from the committed seed
# corpus (a scratch copy: the committed corpus is not modified).
#   tests/fuzz/run.sh [SECONDS-PER-TARGET]   (default 60)
# Crashes are saved under build/fuzz/artifacts/; any crash fails the run.
# Every crash found becomes a regression input in tests/fuzz/regressions/,
# which the unit suite replays with the seeds through the same property
# functions (tests/fuzz/properties.h, tests/unit/fuzz_regressions_test.cpp).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz >/dev/null
mkdir -p build/fuzz/artifacts
# One target per core at a time: the same time per target, less wall time.
jobs=$(nproc 2>/dev/null || echo 1)

run_one() {
  local t=$1 work log
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$t/." "$work/"
  log="build/fuzz/fuzz_$t.log"
  # -max_len covers the largest seed (libFuzzer would cut longer ones), at least 4096.
  local max_len
  max_len=$(find "tests/fuzz/corpus/$t" -type f -printf '%s\n' | sort -n | tail -1)
  if [ "${max_len:-0}" -lt 4096 ]; then max_len=4096; fi
  if "build/fuzz/tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="build/fuzz/artifacts/${t}-" "$work" >"$log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || echo "?")
    echo "fuzz_$t: $runs executions in ${secs}s, no crash" >"build/fuzz/fuzz_$t.result"
  else
    { echo "fuzz_$t: FAILED (see $log)"; tail -30 "$log"; } >"build/fuzz/fuzz_$t.result"
  fi
  rm -rf "$work"
}

targets=(canon packet expr path batch)
running=0
for t in "${targets[@]}"; do
  rm -f "build/fuzz/fuzz_$t.result"
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
status=0
for t in "${targets[@]}"; do
  if [ -f "build/fuzz/fuzz_$t.result" ]; then cat "build/fuzz/fuzz_$t.result"; else echo "fuzz_$t: no result"; fi
  grep -q ", no crash$" "build/fuzz/fuzz_$t.result" 2>/dev/null || status=1
done
exit $status
