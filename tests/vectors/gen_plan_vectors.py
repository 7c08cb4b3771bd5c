#!/usr/bin/env python3
"""Writes tests/vectors/plan/*.json: planner scenarios with hand-derived
expectations.

Semantics (ok/refusal code and reason, action, generations) are written by
hand below.
Intervals are computed here from SPEC §4's default guards by an independent
Python model of the TTL window (MIN 1000, MAX 3600000): a claim with
expiry e admits [e - MAX, e - MIN]; a reclaim adds T > after; an extend adds
T <= prev. The expected records of every admitted step ("records") come from
the independent model of docs/FORMAT.md in tests/reference/golden_store.py,
never from the core (the queue record too: a ticket's `behind` is the
model's `State.behind`, the holders in its way). The successor state tree ids ("state") were recorded
from the first native run (GITLOCKS_VECTORS_PRINT=1, merged with --merge);
tests/reference/golden_plan.py derives each of them again from "records"
with real git plumbing, and every host must reproduce them byte for byte.

Usage: gen_plan_vectors.py [--merge PRINTED.jsonl | --check]
  --check  exits 1 if plan/scenarios.json differs from what this writes
"""
import json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import golden_store  # noqa: E402

MIN, MAX = 1000, 3600000
NOW = 1700000000000
TTL = 60000

def claim(path, ttl=TTL, mode="exclusive", now=NOW, **kw):
    op = {"op": "claim", "path": path, "mode": mode, "expires_at": now + ttl}
    op.update(kw)
    return op

def ttl_iv(e, lo_extra=None, hi_extra=None):
    lo, hi = max(e - MAX, 0), e - MIN
    if lo_extra is not None: lo = max(lo, lo_extra)
    if hi_extra is not None: hi = min(hi, hi_extra)
    return [lo, hi]

def step(actor, ops, now=NOW, **expect):
    return {"actor": actor, "now": now, "ops": ops, "expect": expect}

def ok(actor, ops, now=NOW, **exp):
    exp["ok"] = True
    return step(actor, ops, now, **exp)

def err(actor, ops, code, now=NOW, reason=None):
    """A refusal: its code, and its reason where the core gives a sub-code."""
    if reason is None:
        return step(actor, ops, now, error=code)
    return step(actor, ops, now, error=code, reason=reason)

cases = []
def case(name, steps, policy=None):
    c = {"name": name, "steps": steps}
    if policy: c["policy"] = policy
    cases.append(c)

E = NOW + TTL
# -- path claims
case("claim a free path exclusively", [ok("alice", [claim("src/a.c")], action="claim", interval=ttl_iv(E), generations={"path:src/a.c": 1})])
case("claim a free path shared", [ok("alice", [claim("src/a.c", mode="shared")], action="claim", interval=ttl_iv(E))])
case("exclusive vs exclusive on one path", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), err("bob", [claim("f")], "held-path")])
case("shared request vs exclusive holder", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), err("bob", [claim("f", mode="shared")], "held-path")])
case("exclusive request vs shared holder", [ok("alice", [claim("f", mode="shared")], action="claim", interval=ttl_iv(E)), err("bob", [claim("f")], "held-path")])
case("shared plus shared are admitted", [ok("alice", [claim("f", mode="shared")], action="claim", interval=ttl_iv(E)), ok("bob", [claim("f", mode="shared")], action="claim", interval=ttl_iv(E), generations={"path:f": 2})])
case("directory claim covers a file below it", [ok("alice", [claim("src/")], action="claim", interval=ttl_iv(E)), err("bob", [claim("src/x/y.c")], "held-path")])
case("file claim blocks a directory above it", [ok("alice", [claim("src/x/y.c")], action="claim", interval=ttl_iv(E)), err("bob", [claim("src/")], "held-path")])
case("file claim blocks a shared directory claim above it", [ok("alice", [claim("src/x/y.c")], action="claim", interval=ttl_iv(E)), err("bob", [claim("src/x/", mode="shared")], "held-path")])
case("shared directory and shared file below coexist", [ok("alice", [claim("src/x/y.c", mode="shared")], action="claim", interval=ttl_iv(E)), ok("bob", [claim("src/", mode="shared")], action="claim", interval=ttl_iv(E))])
case("components, not string prefixes: srcx vs src/", [ok("alice", [claim("src/")], action="claim", interval=ttl_iv(E)), ok("bob", [claim("srcx/a")], action="claim", interval=ttl_iv(E))])
case("same holder never conflicts with itself", [ok("alice", [claim("src/a.c")], action="claim", interval=ttl_iv(E)), ok("alice", [claim("src/")], action="claim", interval=ttl_iv(E))])
case("same holder claiming its live lease again is refused as already-held", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), err("alice", [claim("f")], "already-held")])
case("deep directory conflict five levels down", [ok("alice", [claim("a/b/c/d/e/f.txt")], action="claim", interval=ttl_iv(E)), err("bob", [claim("a/b/")], "held-path"), ok("bob", [claim("a/c/")], action="claim", interval=ttl_iv(E))])
# -- TTL window boundaries
case("TTL at MIN_TTL is admitted", [ok("alice", [claim("f", ttl=MIN)], action="claim", interval=ttl_iv(NOW + MIN))])
case("TTL one ms below MIN_TTL is refused", [err("alice", [claim("f", ttl=MIN - 1)], "guard-window")])
case("TTL at MAX_TTL is admitted", [ok("alice", [claim("f", ttl=MAX)], action="claim", interval=ttl_iv(NOW + MAX))])
case("TTL one ms above MAX_TTL is refused", [err("alice", [claim("f", ttl=MAX + 1)], "guard-window")])
case("zero TTL is refused", [err("alice", [claim("f", ttl=0)], "guard-window")])
case("expiry below MIN_TTL from time zero has an empty interval", [err("alice", [{"op": "claim", "path": "f", "mode": "exclusive", "expires_at": 500}], "empty-interval")])
case("policy TTL bounds are used", [ok("alice", [claim("f", ttl=10)], action="claim", interval=[NOW + 10 - 20, NOW + 10 - 5]), err("bob", [claim("g", ttl=21)], "guard-window")], policy={"min_ttl_ms": 5, "max_ttl_ms": 20})
# -- reclaim
S = 5000
ES = NOW + S
case("reclaim before expiry is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("bob", [claim("f", now=ES - 1)], "held-path", now=ES - 1)])
case("reclaim at expiry is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("bob", [claim("f", now=ES)], "held-path", now=ES)])
case("reclaim one ms after expiry gets generation + 1", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("bob", [claim("f", now=ES + 1)], now=ES + 1, action="reclaim", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1), generations={"path:f": 2})])
case("own expired lease is reclaimed", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("alice", [claim("f", now=ES + 1)], now=ES + 1, action="reclaim", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1), generations={"path:f": 2})])
case("directory claim over an expired lease below", [ok("alice", [claim("d/x", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("bob", [claim("d/", now=ES + 1)], now=ES + 1, action="reclaim", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1))])
# -- extend
def extend(path, lease_ref, new_exp):
    return {"op": "extend", "path": path, "lease": lease_ref, "expires_at": new_exp}
case("extend before expiry", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("alice", [extend("f", "$0.0", ES + TTL)], now=ES - 10, action="extend", interval=ttl_iv(ES + TTL, hi_extra=ES), generations={"path:f": 1})])
case("extend at expiry", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("alice", [extend("f", "$0.0", ES + TTL)], now=ES, action="extend", interval=ttl_iv(ES + TTL, hi_extra=ES))])
case("extend after expiry is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("alice", [extend("f", "$0.0", ES + TTL)], "guard-window", now=ES + 1)])
case("extend with a non-increasing expiry is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("alice", [extend("f", "$0.0", ES)], "guard-window")])
case("extend by a non-holder is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("bob", [extend("f", "$0.0", ES + 10)], "not-holder")])
case("extend naming an old generation is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("alice", [dict(extend("f", "$0.0", ES + 10), generation=7)], "stale-generation")])
# -- release
def release(path, lease_ref, **kw):
    op = {"op": "release", "path": path, "lease": lease_ref}
    op.update(kw)
    return op
case("release by the holder", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), ok("alice", [release("f", "$0.0")], action="release", interval=[0, 2**53 - 1], generations={"path:f": 1})])
case("release by a non-holder is refused", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), err("bob", [release("f", "$0.0")], "not-holder")])
case("release of a superseded lease is a stale generation", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("bob", [claim("f", now=ES + 1)], now=ES + 1, action="reclaim", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1)), err("alice", [release("f", "$0.0", generation=1)], "stale-generation", now=ES + 2)])
case("generations increase across release", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), ok("alice", [release("f", "$0.0")], action="release", interval=[0, 2**53 - 1]), ok("bob", [claim("f")], action="claim", interval=ttl_iv(E), generations={"path:f": 2})])
# -- intention markers above a lease follow it (records checked by the runners)
case("extend raises the marker expiry above the lease", [ok("alice", [claim("d/x", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("alice", [extend("d/x", "$0.0", ES + TTL)], now=ES - 10, action="extend", interval=ttl_iv(ES + TTL, hi_extra=ES), generations={"path:d/x": 1})])
case("releasing the last exclusive lease below clears its marker expiry", [ok("alice", [claim("d/a"), claim("d/b", mode="shared")], action="batch", interval=ttl_iv(E)), ok("alice", [release("d/a", "$0.0")], action="release", interval=[0, 2**53 - 1], generations={"path:d/a": 1, "path:d/b": 1})])
# -- families
FAM = {"families": [{"name": "db", "policy": "exclusive", "members": ["db/schema.sql", "db/migrations/"]}, {"name": "docs", "policy": "shared", "members": ["docs/"]}]}
case("exclusive family blocks another holder on another member", [ok("alice", [claim("db/schema.sql")], action="claim", interval=ttl_iv(E)), err("bob", [claim("db/migrations/001.sql", mode="shared")], "family-policy")], policy=FAM)
case("exclusive family admits the same holder on every member", [ok("alice", [claim("db/schema.sql")], action="claim", interval=ttl_iv(E)), ok("alice", [claim("db/migrations/001.sql")], action="claim", interval=ttl_iv(E))], policy=FAM)
case("a directory above a member belongs to the exclusive family", [ok("alice", [claim("db/")], action="claim", interval=ttl_iv(E)), err("bob", [claim("db/migrations/")], "held-path")], policy=FAM)
case("shared family refuses an exclusive claim", [err("alice", [claim("docs/a.md")], "family-policy")], policy=FAM)
case("shared family admits shared claims", [ok("alice", [claim("docs/a.md", mode="shared")], action="claim", interval=ttl_iv(E)), ok("bob", [claim("docs/b.md", mode="shared")], action="claim", interval=ttl_iv(E))], policy=FAM)
case("family is free again after release", [ok("alice", [claim("db/schema.sql")], action="claim", interval=ttl_iv(E)), ok("alice", [release("db/schema.sql", "$0.0")], action="release", interval=[0, 2**53 - 1]), ok("bob", [claim("db/migrations/7.sql")], action="claim", interval=ttl_iv(E))], policy=FAM)
case("expired family holder is reclaimed after its expiry", [ok("alice", [claim("db/schema.sql", ttl=S)], action="claim", interval=ttl_iv(ES)), err("bob", [claim("db/migrations/7.sql", now=ES)], "family-policy", now=ES), ok("bob", [claim("db/migrations/7.sql", now=ES + 1)], now=ES + 1, action="reclaim", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1))], policy=FAM)
# -- semaphores
def acq(name, limit, ttl=TTL, now=NOW):
    return {"op": "sem-acquire", "sem": name, "limit": limit, "expires_at": now + ttl}
case("semaphore acquire", [ok("a", [acq("ci", 2)], action="sem-acquire", interval=ttl_iv(E), generations={"sem:ci": 1})])
case("full semaphore is refused", [ok("a", [acq("ci", 1)], action="sem-acquire", interval=ttl_iv(E)), err("b", [acq("ci", 1)], "full-semaphore")])
case("mismatched semaphore limit is refused", [ok("a", [acq("ci", 2)], action="sem-acquire", interval=ttl_iv(E)), err("b", [acq("ci", 3)], "limit-mismatch")])
case("expired semaphore slot is reclaimed", [ok("a", [acq("ci", 1, ttl=S)], action="sem-acquire", interval=ttl_iv(ES)), ok("b", [acq("ci", 1, now=ES + 1)], now=ES + 1, action="sem-acquire", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1), generations={"sem:ci": 2})])
case("an acquire reclaims every expired slot, the semaphore full or not", [ok("a", [acq("ci", 2, ttl=S)], action="sem-acquire", interval=ttl_iv(ES)), ok("b", [acq("ci", 2, now=ES + 1)], now=ES + 1, action="sem-acquire", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1), generations={"sem:ci": 2})])
case("semaphore release frees a slot", [ok("a", [acq("ci", 1)], action="sem-acquire", interval=ttl_iv(E)), ok("a", [{"op": "sem-release", "sem": "ci", "lease": "$0.0"}], action="sem-release", interval=[0, 2**53 - 1]), ok("b", [acq("ci", 1)], action="sem-acquire", interval=ttl_iv(E), generations={"sem:ci": 2})])
case("semaphore extend keeps the generation", [ok("a", [acq("ci", 2, ttl=S)], action="sem-acquire", interval=ttl_iv(ES)), ok("a", [{"op": "extend", "sem": "ci", "lease": "$0.0", "expires_at": ES + TTL}], now=ES - 10, action="extend", interval=ttl_iv(ES + TTL, hi_extra=ES), generations={"sem:ci": 1})])
# -- batch and sweep
case("batch of claim and acquire", [ok("alice", [claim("a"), claim("b", mode="shared"), acq("s", 3)], action="batch", interval=ttl_iv(E))])
case("batch is all or nothing", [ok("bob", [claim("taken")], action="claim", interval=ttl_iv(E)), err("alice", [claim("free"), claim("taken")], "held-path"), ok("carol", [claim("free")], action="claim", interval=ttl_iv(E), generations={"path:free": 1})])
case("sweep removes an expired lease", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("bob", [{"op": "sweep", "leases": [{"path": "f", "lease": "$0.0", "generation": 1, "expires_at": ES}]}], now=ES + 1, action="sweep", interval=[ES + 1, 2**53 - 1])])
case("sweep of an unexpired lease is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("bob", [{"op": "sweep", "leases": [{"path": "f", "lease": "$0.0", "generation": 1, "expires_at": ES}]}], "held-path", now=ES)])
# -- hand-off (docs/FORMAT.md "Hand-off"): the receiver's lease is the next
# generation; the interval is the receiver's TTL window capped at the
# handed lease's expiry (T <= prev_expires_at, as for extend)
BOB = golden_store.actor_hex("bob")
def handoff(lease_ref, to=BOB, to_name="bob", ttl=TTL, now=NOW, path="f", **kw):
    op = {"op": "handoff", "path": path, "lease": lease_ref, "to": to, "to_name": to_name, "expires_at": now + ttl}
    op.update(kw)
    return op
case("handoff gives the path to the receiver at the next generation", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("alice", [handoff("$0.0", now=NOW + 10)], now=NOW + 10, action="handoff", interval=ttl_iv(NOW + 10 + TTL, hi_extra=ES), generations={"path:f": 2}), err("carol", [claim("f", now=NOW + 20)], "held-path", now=NOW + 20)])
case("handoff moves the markers and the family to the receiver", [ok("alice", [claim("db/schema.sql", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("alice", [handoff("$0.0", path="db/schema.sql", now=NOW + 10)], now=NOW + 10, action="handoff", interval=ttl_iv(NOW + 10 + TTL, hi_extra=ES), generations={"path:db/schema.sql": 2}), err("alice", [claim("db/migrations/1.sql", now=NOW + 20)], "family-policy", now=NOW + 20)], policy={"families": [{"name": "db", "policy": "exclusive", "members": ["db/schema.sql", "db/migrations/"]}]})
case("handoff of a semaphore slot", [ok("alice", [acq("ci", 1, ttl=S)], action="sem-acquire", interval=ttl_iv(ES)), ok("alice", [{"op": "handoff", "sem": "ci", "lease": "$0.0", "to": BOB, "to_name": "bob", "expires_at": NOW + 10 + TTL}], now=NOW + 10, action="handoff", interval=ttl_iv(NOW + 10 + TTL, hi_extra=ES), generations={"sem:ci": 2}), err("carol", [acq("ci", 1, now=NOW + 20)], "full-semaphore", now=NOW + 20)])
case("handoff by a non-holder is refused", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), err("carol", [handoff("$0.0")], "not-holder")])
case("handoff after expiry is refused", [ok("alice", [claim("f", ttl=S)], action="claim", interval=ttl_iv(ES)), err("alice", [handoff("$0.0", now=ES + 1)], "guard-window", now=ES + 1)])
case("handoff to the holder itself is refused", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), err("alice", [handoff("$0.0", to=golden_store.actor_hex("alice"))], "usage")])
case("handoff to a receiver under the giver's directory is refused", [ok("alice", [claim("d/")], action="claim", interval=ttl_iv(E)), ok("alice", [claim("d/x")], action="claim", interval=ttl_iv(E)), err("alice", [handoff("$1.0", path="d/x")], "held-path")])
# -- intent (docs/FORMAT.md "Intent"): never refused, refuses nobody, counted
# in the markers ("i"/"iu") but not in exclusive families
def intent(path, **kw):
    return claim(path, mode="intent", **kw)
case("an intent is admitted over another holder's exclusive lease", [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)), ok("bob", [intent("f")], action="claim", interval=ttl_iv(E), generations={"path:f": 2})])
case("an intent refuses no exclusive claim below or above it", [ok("alice", [intent("d/")], action="claim", interval=ttl_iv(E)), ok("bob", [claim("d/x")], action="claim", interval=ttl_iv(E)), err("carol", [claim("d/")], "held-path")])
case("an intent below a directory is counted in its markers and refuses nobody", [ok("alice", [intent("d/e/f")], action="claim", interval=ttl_iv(E)), ok("bob", [claim("d/")], action="claim", interval=ttl_iv(E)), ok("bob", [release("d/", "$1.0")], action="release", interval=[0, 2**53 - 1])])
case("a lock replaces its holder's own intent on the path", [ok("alice", [intent("f")], action="claim", interval=ttl_iv(E)), ok("alice", [claim("f")], action="claim", interval=ttl_iv(E), generations={"path:f": 2})])
case("an intent twice by one holder is already-held", [ok("alice", [intent("f")], action="claim", interval=ttl_iv(E)), err("alice", [intent("f")], "already-held")])
case("an intent holds no exclusive family", [ok("alice", [claim("db/schema.sql")], action="claim", interval=ttl_iv(E)), ok("bob", [intent("db/migrations/1.sql")], action="claim", interval=ttl_iv(E)), ok("carol", [intent("docs/a.md")], action="claim", interval=ttl_iv(E))], policy=FAM)
case("an expired intent is reclaimed by its holder's lock", [ok("alice", [intent("f", ttl=S)], action="claim", interval=ttl_iv(ES)), ok("alice", [claim("f", now=ES + 1)], now=ES + 1, action="claim", interval=ttl_iv(ES + 1 + TTL), generations={"path:f": 2})])
# -- malformed input
case("bad path is refused", [err("alice", [claim("a/../b")], "bad-path")])
case("unknown op is refused", [err("alice", [{"op": "steal", "path": "f"}], "bad-json")])
case("unknown field is refused", [err("alice", [dict(claim("f"), colour="red")], "bad-json")])
case("bad mode is refused", [err("alice", [claim("f", mode="sticky")], "usage")])
case("note longer than 1024 bytes is refused", [err("alice", [dict(claim("f"), note="x" * 1025)], "usage")])
# -- path identity (docs/FORMAT.md "Path identity"): one spelling per file
CAFE_NFC, CAFE_NFD = "docs/caf\u00e9.md", "docs/cafe\u0301.md"
case("an NFD twin of a held NFC path is refused as a bad path", [ok("alice", [claim(CAFE_NFC)], action="claim", interval=ttl_iv(E)), err("bob", [claim(CAFE_NFD)], "bad-path"), err("bob", [claim(CAFE_NFC)], "held-path")])
case("an NFD path is refused even in a fresh store", [err("alice", [claim("cafe\u0301/")], "bad-path")])
case("a Hangul path in NFC is admitted and its jamo spelling refused", [ok("alice", [claim("\uac01")], action="claim", interval=ttl_iv(E)), err("bob", [claim("\u1100\u1161\u11a8")], "bad-path")])
CI = {"case_insensitive": True}
case("case-insensitive store: a case twin is refused as a bad path - the folded form is held", [ok("alice", [claim("src/main.c")], action="claim", interval=ttl_iv(E)), err("bob", [claim("Src/Main.c")], "bad-path"), err("bob", [claim("src/main.c")], "held-path")], policy=CI)
case("case-insensitive store: a folded directory claim covers the file below", [ok("alice", [claim("src/x.c")], action="claim", interval=ttl_iv(E)), err("bob", [claim("SRC/")], "bad-path"), err("bob", [claim("src/")], "held-path")], policy=CI)
case("case-insensitive store: non-ASCII case is folded too", [ok("alice", [claim("\u00e9t\u00e9/a")], action="claim", interval=ttl_iv(E)), err("bob", [claim("\u00c9t\u00e9/a")], "bad-path")], policy=CI)
case("case-sensitive store: case variants are different paths", [ok("alice", [claim("src/main.c")], action="claim", interval=ttl_iv(E)), ok("bob", [claim("Src/Main.c")], action="claim", interval=ttl_iv(E))])

# -- the waiters' queue (docs/FORMAT.md "Queue record", "Tickets"). A ticket's
# id is lease_id(instance, op index, "queue:tickets") with the step's
# instance sha256hex(case name + ":" + K), so the ops below name it directly.
# A ticket's interval is its TTL window; a renewal's also T <= its previous
# expiry; dropping another's lapsed ticket T > its expiry; dropping one's own
# is time-free. A claim that passes a ticket is also bounded by the pass's
# `until` (T <= until: the expiry of the lease of the holder the ticket
# queued behind), and one admitted after a lapsed ticket declares it in
# `after` (T > its expiry; the action of such a single claim is reclaim).
# Ticket-drops do not count toward the action.
TT = 30000  # a waiter's ticket TTL
MAXT = 2**53 - 1
def ticket(wants, ttl=TT, now=NOW):
    return {"op": "ticket", "wants": wants, "expires_at": now + ttl}
def want(path, mode="exclusive"):
    return {"path": path, "mode": mode}
def tid(name, k, j=0):
    """The id of the ticket op J of step K of case `name`."""
    return golden_store.ticket_id(golden_store.sha256_hex(name + ":" + str(k)), j)
N = "ticket: a waiter takes its place behind the holder in its way"
case(N, [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)),
         ok("bob", [ticket([want("f")])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("carol", [ticket([want("f", "shared")], now=NOW + 1)], now=NOW + 1, action="ticket", interval=ttl_iv(NOW + 1 + TT))])
N = "ticket: behind names the holders of locks, markers, exclusive families and a full semaphore"
case(N, [ok("alice", [claim("d/x/y", mode="shared")], action="claim", interval=ttl_iv(E)),
         ok("carol", [claim("db/schema.sql", mode="shared")], action="claim", interval=ttl_iv(E)),
         ok("dave", [acq("ci", 1)], action="sem-acquire", interval=ttl_iv(E)),
         ok("erin", [claim("d/", mode="shared")], action="claim", interval=ttl_iv(E)),
         ok("bob", [ticket([want("d/x/"), want("db/migrations/1.sql", "shared"), {"sem": "ci"}])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("frank", [ticket([want("d/x/z", "shared")])], action="ticket", interval=ttl_iv(NOW + TT))], policy=FAM)
N = "ticket: a claim behind an older live ticket of another holder is refused queued-behind"
case(N, [ok("alice", [claim("f")], action="claim", interval=ttl_iv(E)),
         ok("bob", [ticket([want("f")])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("alice", [release("f", "$0.0")], action="release", interval=[0, MAXT]),
         err("carol", [claim("f")], "held-path", reason="queued-behind"),
         err("alice", [claim("f", mode="shared")], "held-path", reason="queued-behind"),
         ok("carol", [claim("g")], action="claim", interval=ttl_iv(E)),
         ok("bob", [claim("f"), {"op": "ticket-drop", "ticket": tid(N, 1)}], action="claim", interval=ttl_iv(E), generations={"path:f": 2})])
N = "ticket: a shared waiter keeps its place before a younger exclusive ticket"
case(N, [ok("bob", [claim("f")], action="claim", interval=ttl_iv(E)),
         ok("alice", [ticket([want("f", "shared")])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("carol", [ticket([want("f")])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("bob", [release("f", "$0.0")], action="release", interval=[0, MAXT]),
         err("carol", [claim("f")], "held-path", reason="queued-behind"),
         ok("alice", [claim("f", mode="shared"), {"op": "ticket-drop", "ticket": tid(N, 1)}], action="claim", interval=ttl_iv(E), generations={"path:f": 2})])
N = "ticket: a claim is admitted after a lapsed ticket and declares it in after"
case(N, [ok("bob", [ticket([want("d/", "shared")], ttl=S)], action="ticket", interval=ttl_iv(ES)),
         err("carol", [claim("d/x", now=ES)], "held-path", now=ES, reason="queued-behind"),
         ok("carol", [claim("d/x", now=ES + 1)], now=ES + 1, action="reclaim", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1), generations={"path:d/x": 1})])
N = "ticket: a claim passes a ticket whose holder is blocked by one it queued behind"
case(N, [ok("alice", [claim("x")], action="claim", interval=ttl_iv(E)),
         ok("bob", [ticket([want("x"), want("y")])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("carol", [claim("y", now=NOW + 10)], now=NOW + 10, action="claim", interval=ttl_iv(NOW + 10 + TTL, hi_extra=E)),
         ok("alice", [release("x", "$0.0")], now=NOW + 20, action="release", interval=[0, MAXT]),
         err("dave", [claim("x", now=NOW + 30)], "held-path", now=NOW + 30, reason="queued-behind")])
N = "ticket: a ticket that would close a wait-for cycle is refused as a deadlock"
case(N, [ok("alice", [claim("a")], action="claim", interval=ttl_iv(E)),
         ok("bob", [claim("b")], action="claim", interval=ttl_iv(E)),
         ok("alice", [ticket([want("b")])], action="ticket", interval=ttl_iv(NOW + TT)),
         err("bob", [ticket([want("a")])], "deadlock"),
         ok("carol", [ticket([want("a", "shared")])], action="ticket", interval=ttl_iv(NOW + TT))])
N = "ticket: a cycle through an older ticket is a deadlock too"
case(N, [ok("alice", [claim("a")], action="claim", interval=ttl_iv(E)),
         ok("bob", [ticket([want("a")])], action="ticket", interval=ttl_iv(NOW + TT)),
         err("alice", [ticket([want("a/b", "shared")])], "deadlock")])
N = "ticket-renew moves its holder's ticket expiry later"
case(N, [ok("bob", [ticket([want("f")])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("bob", [{"op": "ticket-renew", "ticket": tid(N, 0), "expires_at": NOW + 10 + TT}], now=NOW + 10, action="ticket-renew", interval=ttl_iv(NOW + 10 + TT, hi_extra=NOW + TT)),
         err("carol", [{"op": "ticket-renew", "ticket": tid(N, 0), "expires_at": NOW + 20 + TT}], "not-holder", now=NOW + 20),
         err("bob", [{"op": "ticket-renew", "ticket": tid(N, 1), "expires_at": NOW + 20 + TT}], "not-holder", now=NOW + 20, reason="no-ticket"),
         err("bob", [{"op": "ticket-renew", "ticket": tid(N, 0), "expires_at": NOW + 10 + 2 * TT}], "guard-window", now=NOW + 10 + TT + 1)])
N = "ticket-drop: its holder drops it, another only once it lapsed"
case(N, [ok("bob", [ticket([want("f")], ttl=S)], action="ticket", interval=ttl_iv(ES)),
         ok("carol", [ticket([want("g")], ttl=S)], action="ticket", interval=ttl_iv(ES)),
         ok("bob", [{"op": "ticket-drop", "ticket": tid(N, 0)}], now=NOW + 10, action="ticket-drop", interval=[0, MAXT]),
         err("alice", [{"op": "ticket-drop", "ticket": tid(N, 1)}], "held-path", now=ES, reason="not-expired"),
         ok("alice", [{"op": "ticket-drop", "ticket": tid(N, 1)}], now=ES + 1, action="ticket-drop", interval=[ES + 1, MAXT]),
         err("alice", [{"op": "ticket-drop", "ticket": tid(N, 1)}], "not-holder", now=ES + 2, reason="no-ticket")])
N = "ticket: a new ticket drops the lapsed ones it sees in the same transition"
case(N, [ok("bob", [ticket([want("f")], ttl=S)], action="ticket", interval=ttl_iv(ES)),
         ok("carol", [{"op": "ticket-drop", "ticket": tid(N, 0)}, ticket([want("f")], now=ES + 1)], now=ES + 1, action="ticket", interval=ttl_iv(ES + 1 + TT, lo_extra=ES + 1))])
N = "ticket: a sem-acquire behind a live ticket for the semaphore is refused full-semaphore"
case(N, [ok("a", [acq("ci", 2)], action="sem-acquire", interval=ttl_iv(E)),
         ok("b", [acq("ci", 2)], action="sem-acquire", interval=ttl_iv(E)),
         ok("c", [ticket([{"sem": "ci"}])], action="ticket", interval=ttl_iv(NOW + TT)),
         ok("a", [{"op": "sem-release", "sem": "ci", "lease": "$0.0"}], action="sem-release", interval=[0, MAXT]),
         err("d", [acq("ci", 2)], "full-semaphore", reason="queued-behind"),
         ok("c", [acq("ci", 2), {"op": "ticket-drop", "ticket": tid(N, 2)}], action="sem-acquire", interval=ttl_iv(E), generations={"sem:ci": 3}),
         err("d", [acq("ci", 2)], "full-semaphore")])
N = "ticket: a sem-acquire after a lapsed ticket for the semaphore declares it in after"
case(N, [ok("c", [ticket([{"sem": "ci"}], ttl=S)], action="ticket", interval=ttl_iv(ES)),
         ok("a", [acq("ci", 1, now=ES + 1)], now=ES + 1, action="sem-acquire", interval=ttl_iv(ES + 1 + TTL, lo_extra=ES + 1))])

def resolve(v, created):
    """"$K.J" -> the id of the J-th lease created by step K."""
    if isinstance(v, str) and len(v) > 1 and v[0] == "$":
        k, j = map(int, v[1:].split("."))
        return created[k][j]["id"]
    if isinstance(v, list):
        return [resolve(e, created) for e in v]
    if isinstance(v, dict):
        return {k: resolve(e, created) for k, e in v.items()}
    return v


def add_expected_records(c):
    """expect.records of every admitted step: the state's records, sorted by
    resource key, from the model's effects at T = now."""
    policy = golden_store.default_policy("a" * 64, golden_store.actor_hex("owner"))
    policy.update(c.get("policy", {}))
    state = golden_store.State(policy)
    created = []
    for i, s in enumerate(c["steps"]):
        if not s["expect"].get("ok"):
            created.append([])
            continue
        instance = golden_store.sha256_hex(c["name"] + ":" + str(i))
        created.append(state.apply(golden_store.actor_hex(s["actor"]), s["actor"], instance, s["now"], s["now"],
                                   resolve(s["ops"], created)))
        s["expect"]["records"] = json.loads(json.dumps(state.sorted_records()))  # a copy: later steps change them


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plan")
    path = os.path.join(out_dir, "scenarios.json")
    golden = {}
    if "--merge" in sys.argv:
        with open(sys.argv[sys.argv.index("--merge") + 1]) as f:
            for line in f:
                r = json.loads(line)
                if r["step"] < 0:
                    golden[(r["case"], "init")] = r["init"]
                else:
                    golden[(r["case"], r["step"])] = r
    elif os.path.exists(path):
        with open(path) as f:
            for c in json.load(f)["cases"]:
                for i, s in enumerate(c["steps"]):
                    if "state" in s["expect"]:
                        golden[(c["name"], i)] = {"state": s["expect"]["state"]}
                if "init_state" in c:
                    golden[(c["name"], "init")] = c["init_state"]
    for c in cases:
        for i, s in enumerate(c["steps"]):
            g = golden.get((c["name"], i))
            if g and s["expect"].get("ok"):
                s["expect"]["state"] = g["state"]
        if (c["name"], "init") in golden:
            c["init_state"] = golden[(c["name"], "init")]
        add_expected_records(c)
    text = json.dumps({"kind": "plan", "cases": cases}, indent=1, sort_keys=True) + "\n"
    if "--check" in sys.argv:
        with open(path) as f:
            if f.read() != text:
                print(f"{path} is not what gen_plan_vectors.py writes: run it")
                sys.exit(1)
        return
    with open(path, "w") as f:
        f.write(text)
    print(f"{len(cases)} cases, {sum(len(c['steps']) for c in cases)} steps -> {path}")

main()
