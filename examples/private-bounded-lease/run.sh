#!/usr/bin/env bash
# A bounded lease on a PRIVATE store under trusted admission time, end to end
# (seed 002's headline case; README.md in this directory walks through it):
# a notary on the SYSTEM clock, an activation whose answer is lost and then
# recovered, claim, renewal well before and just before expiry, a renewal
# after expiry refused, reclaim by another member, the old generation refused
# by `fence`, and the whole history verified.
#
#   GIT_LOCKS=/path/to/git-locks examples/private-bounded-lease/run.sh
#
# Needs git, python3 (to read --json output) and about 10 s of real time.
# Every step checks its outcome: the script exits non-zero at the first
# surprise (it is run by the test suite as examples/private-bounded-lease).
set -euo pipefail
bin=${GIT_LOCKS:-git-locks}
command -v "$bin" >/dev/null 2>&1 || { echo "git-locks not found: set GIT_LOCKS=/path/to/git-locks" >&2; exit 2; }
work=$(mktemp -d)
notary_pid=
cleanup() {
  if [ -n "$notary_pid" ]; then kill "$notary_pid" 2>/dev/null || true; wait "$notary_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# -- helpers -----------------------------------------------------------------
# Any command that fails unexpectedly names itself (set -e alone would stop silently).
trap 'echo "FAILED: line $LINENO: $BASH_COMMAND (exit $?)" >&2' ERR
step() { printf '\n== %s\n' "$*"; }
die() { echo "FAILED: $*" >&2; exit 1; }
# field KEY... : one value of the JSON document on stdin (lists by index).
field() {
  python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]:
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$@"
}
now_ms() { python3 -c 'import time; print(time.time_ns() // 1000000)'; }
sleep_until() {  # sleep_until MS: real time passes until the wall clock is past MS
  python3 -c 'import sys, time; time.sleep(max(0, int(sys.argv[1]) - time.time_ns() // 1000000) / 1000)' "$1"
}
as() {  # as ACTOR git-locks-args...: run as one of the actors (own key, own name)
  local who=$1; shift
  GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0="$who" GIT_LOCKS_KEY="$work/$who.key" \
    "$bin" --repo "$work/repo" "$@"
}
# refused STATUS REASON ACTOR ARGS...: the command must fail with that exit
# status and that stable reason in its JSON error, and leave the ref alone.
refused() {
  local want_status=$1 want_reason=$2; shift 2
  local before status=0 reason
  before=$(git -C "$work/repo" rev-parse refs/locks/state)
  as "$1" --json "${@:2}" >"$work/out" 2>"$work/err" || status=$?
  [ "$status" = "$want_status" ] || die "$* exited $status, expected $want_status: $(cat "$work/err")"
  reason=$(tail -n 1 "$work/err" | field reason)
  [ "$reason" = "$want_reason" ] || die "$* refused with $reason, expected $want_reason"
  [ "$(git -C "$work/repo" rev-parse refs/locks/state)" = "$before" ] || die "$* moved refs/locks/state"
  echo "refused as expected (exit $status, $reason): $(tail -n 1 "$work/err" | field detail)"
}

# -- a repository, three members, a PRIVATE store ------------------------------
step "a repository and a PRIVATE store owned by olivia; alice and bob are members"
git init -q "$work/repo"
printf '{"min_ttl_ms": 1000, "max_ttl_ms": 60000}\n' >"$work/policy.json"
as olivia init --private --policy "$work/policy.json"
for who in alice bob; do
  key=$(as "$who" --json whoami | field actor)
  as olivia member add "$key" >/dev/null
  echo "added $who ($key)"
done
as olivia member list

# -- the notary, on the system clock ------------------------------------------
step "a notary on the system clock (no --test-clock)"
service_key=$("$bin" notary keygen --out "$work/notary.key" | field service_key)
mkdir -m 700 "$work/notary-state"
"$bin" notary serve --key "$work/notary.key" --state "$work/notary-state" --listen 127.0.0.1:0 \
  --audience locks.example >"$work/notary.out" 2>"$work/notary.err" &
notary_pid=$!
for _ in $(seq 100); do [ -s "$work/notary.out" ] && break; sleep 0.1; done
[ -s "$work/notary.out" ] || die "the notary did not start: $(cat "$work/notary.err")"
[ "$(head -n 1 "$work/notary.out" | field clock)" = system ] || die "the notary is not on the system clock"
url="http://$(head -n 1 "$work/notary.out" | field listening)"
git -C "$work/repo" config locks.notary "$url"
echo "notary at $url, service key $service_key"

# -- activation whose answer is lost, then recovered ---------------------------
step "guard-time enable; the process dies after the notary admitted it (the answer is lost)"
policy_hash=$(as olivia --json status | field policy_hash)
before=$(git -C "$work/repo" rev-parse refs/locks/state)
status=0
GIT_LOCKS_TEST_CRASH_AFTER=admit as olivia guard-time enable --audience locks.example --service-key "$service_key" \
  --disclosure GUARD_WINDOW --expected-policy-hash "$policy_hash" --operation-id enable-1 || status=$?
[ "$status" = 137 ] || die "the simulated crash exited $status"
[ "$(git -C "$work/repo" rev-parse refs/locks/state)" = "$before" ] || die "a lost answer published"
as olivia guard-time history
[ "$(as olivia --json guard-time history | field operations 0 status)" = PENDING ] || die "not PENDING"

step "guard-time resume: the identical request is sent again and published"
as olivia guard-time resume enable-1
[ "$(as olivia --json guard-time history | field operations 0 status)" = ACCEPTED ] || die "not ACCEPTED"
[ "$(as alice --json status | field guard_time enabled)" = true ] || die "guard time is off"
# Resuming again only finds it in the verified history.
[ "$(as olivia --json guard-time resume enable-1 | field commit)" = "$(git -C "$work/repo" rev-parse refs/locks/state)" ] ||
  die "resume does not name the tip"

# -- claim, renew, expiry, reclaim, fencing ----------------------------------
step "alice claims deploy/prod for 8 s (T is the notary's)"
claim=$(as alice --json claim --ttl 8s --note "release 1.2" deploy/prod)
lease=$(echo "$claim" | field leases 0 lease)
[ "$(echo "$claim" | field leases 0 generation)" = 1 ] || die "generation is not 1"
e1=$(echo "$claim" | field leases 0 expires_at)
echo "lease $lease, generation 1, expires at $e1, admitted at $(echo "$claim" | field admitted_at_ms)"

step "bob cannot take it while it is live"
refused 1 held-path bob claim deploy/prod

step "alice renews well before expiry (same lease, same generation, later expiry)"
ext=$(as alice --json extend --ttl 8s "$lease")
[ "$(echo "$ext" | field leases 0 generation)" = 1 ] || die "renewal changed the generation"
e2=$(echo "$ext" | field leases 0 expires_at)
[ "$e2" -gt "$e1" ] || die "renewal did not move the expiry"
echo "expires at $e2"

step "alice renews once more just before expiry (T <= expires_at is its guard)"
sleep_until $((e2 - 2500))
ext=$(as alice --json extend --ttl 3s "$lease")
t=$(echo "$ext" | field admitted_at_ms)
e3=$(echo "$ext" | field leases 0 expires_at)
[ "$t" -le "$e2" ] || die "admitted at $t, after the expiry $e2"
echo "admitted at $t, $((e2 - t)) ms before the old expiry; expires at $e3"

step "the lease runs out; renewing after expiry is refused by the notary's time"
sleep_until $((e3 + 100))
# alice's clock lags: it reads 500 ms before the expiry (GIT_LOCKS_PROPOSAL_MS
# sets the proposal clock), so her own planner lets the renewal through and
# the notary, whose T is past the expiry, is the one that refuses it.
GIT_LOCKS_PROPOSAL_MS=$((e3 - 500)) refused 1 guard-window alice extend --ttl 3s "$lease"
grep -q "the notary's admission time is outside the guard interval" "$work/err" ||
  die "the renewal was not refused by the notary: $(cat "$work/err")"

step "bob reclaims it: generation 2"
rec=$(as bob --json claim --ttl 30s deploy/prod)
[ "$(echo "$rec" | field action)" = reclaim ] || die "not a reclaim"
[ "$(echo "$rec" | field leases 0 generation)" = 2 ] || die "generation is not 2"
t=$(echo "$rec" | field admitted_at_ms)
[ "$t" -gt "$e3" ] || die "reclaimed at $t, before the expiry $e3"
echo "generation 2, admitted at $t (after $e3)"

step "a deploy still holding generation 1 is fenced off; generation 2 is current"
refused 1 stale-generation alice fence deploy/prod 1
as bob fence deploy/prod 2
refused 1 not-holder alice release "$lease"

# -- the record ----------------------------------------------------------------
step "the whole history verifies: in full for the owner, who holds every epoch key"
as olivia --json verify --full >"$work/verdicts" 2>"$work/summary"
python3 - "$work/verdicts" <<'PY'
import json, sys
verdicts = [json.loads(line) for line in open(sys.argv[1])]
bad = [v for v in verdicts if not v["ok"] or v["level"] != "full"]
if bad:
    sys.exit(f"not all verified in full: {bad}")
print(f"{len(verdicts)} commits, every one verified in full: " + " ".join(v["command"] for v in verdicts))
PY
step "bob joined at epoch 3: he checks the rekeys under the epochs before structurally, the rest in full"
as bob --json verify --full >"$work/verdicts" 2>"$work/summary"
python3 - "$work/verdicts" <<'PY'
import json, sys
verdicts = [json.loads(line) for line in open(sys.argv[1])]
levels = [v["level"] for v in verdicts]
# The two rekeys re-seal records under epochs 1 and 2, whose keys bob never had.
structural = [v["command"] for v in verdicts if v["level"] == "structural"]
if not all(v["ok"] for v in verdicts) or structural != ["member", "member"] or levels[-5:] != ["full"] * 5:
    sys.exit(f"unexpected verdicts: {verdicts}")
print(f"{len(verdicts)} commits valid: the 2 rekeys under epochs before his structurally, "
      f"{levels.count('full')} in full")
PY
step "someone without a member key sees no path, note or name"
refused 1 not-member mallory status
as mallory log >"$work/log"
cat "$work/log"
if grep -q -e deploy -e "release 1.2" -e alice "$work/log"; then die "a non-member's log shows business fields"; fi
step "a member's log"
as alice log
echo
echo "OK: private bounded lease, end to end"
