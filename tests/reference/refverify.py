#!/usr/bin/python3
"""An independent reference verifier of git-locks stores (issue 14, item 6).

Written from docs/FORMAT.md, docs/PRIVATE.md and the product specification,
never from lib/: it is a second oracle for `git-locks verify`, not a copy of
it. It reads a repository with real `git` (rev-list, cat-file --batch) and
checks, for every commit on refs/locks/state from the root:

- the commit: exactly one parent (none for the root), tree entries exactly
  `state/`, `txn/packet.json` and, under guard time, `txn/attestation.json`;
- the packet: strict JSON, byte-identical to its canonical re-encoding, the
  known format, every required field, the store id of the history, the
  actor's Ed25519 signature over "gitlocks/packet/v1\\0" + canonical packet
  (the owner's key for creation and admin transitions);
- the chain: source = the parent's state tree id ("" at the root), result =
  the commit's own state tree id, policy hash = SHA-256 of the source's
  policy.json (of the new policy at creation), the policy unchanged by
  non-admin transitions;
- the state: format.json, canonical record blobs stored at
  records/AA/BB/<sha256(resource key)>.json (public stores);
- the interval: re-derived from the body by the guard table of FORMAT.md
  (public stores), and T inside it: the attested T under guard time, else
  `claimed_at_ms`;
- guard time, judged by the pins of each commit's result: they change only by
  the owner's guard-time-set (other pins, attested by them; or none, the
  owner's claimed_at_ms), and nothing else of the policy changes with them;
- guard time: the attestation is canonical, signed by the pinned service key
  over "gitlocks/attestation/v1\\0" + canonical attestation, every binding
  equal to the packet's, the packet digest, the pinned audience and key,
  a known profile, the clock (`test` only with --allow-test-clock), and T
  non-decreasing along the chain (local admission times too);
- a force-release (public stores) signed by the owner or a policy admin;
- a hand-off (public stores): the one new lease not held by the signer is the
  receiver's it names, on the resource of the signer's lease that ends, live at T;
- a checkpoint (FORMAT.md "Checkpoints"): the owner's, naming its parent
  commit as `prev`, and leaving the state as it is;
- a cut (FORMAT.md "The cut"): a checkpoint with no parent; the chain goes on
  below it at its `prev` when that commit is in the repository (the archive),
  and otherwise starts at the cut, whose source is then its own state;
- the waiters' queue (public stores; FORMAT.md "Queue record", "Tickets",
  "Guards"), see "The waiters' queue" below;
- every record name and lease path in NFC (public stores);
- the exclusion invariant over the timeline (public stores; intents lock
  nothing and are left out): at the
  admission time of every state, no two live leases (T <= expires_at) with
  overlapping paths (equal, or component-wise ancestor/descendant), at least
  one exclusive and different holders; no two holders live on members of an
  exclusive family; no live exclusive lease on a member of a shared family;
  no semaphore with more live leases than its limit.

The waiters' queue. The record `queue:tickets` is well formed (seq, tickets
in strictly increasing seq order at most the record's, at most 256, 1-64
wants each, `behind` sorted and unique). The guards of `ticket` (its TTL
window), `ticket-renew` (T <= prev_expires_at, the TTL window, a later
expiry), `ticket-drop` of another holder's ticket (T > its declared
expires_at) and of a claim's `passes` (T <= every `until`) are part of the
re-derived interval; ticket-drops do not count toward the action. The
queue's effects are replayed exactly from the body, op by op: a ticket is
appended with seq = the record's seq + 1, id lease_id(instance, op,
"queue:tickets"), holder = the signer, the body's name and created_at, the
op's wants, expires_at and behind; a renewal names a ticket in the queue
(`no-ticket`), the signer's own (`foreign-effect`), at its current expiry
(`expiry-changed`), and changes only that expiry; a drop removes exactly the
named ticket: the signer's own (declaring no expires_at, `bad-body`) or
another's that lapsed, its expiry declared as the queue has it
(`foreign-effect`). The resulting queue record must be exactly that
(`queue-mismatch`): nothing else of the queue changes in any commit. Then the
rules that read the rest of the source state:
- a ticket's `behind` equals the holders (sorted, not the signer) of the
  locks, markers and exclusive-family entries in its path wants' way and of
  a semaphore it wants that holds `limit` leases or more (`behind-mismatch`),
  and it closes no cycle of the wait-for graph (`deadlock`);
- a claim (not an intent, which passes no ticket: `passes-mismatch`) lists
  in `passes`, in queue order, exactly the older conflicting tickets of
  other holders (seq below its signer's own place) that it does not declare
  in `after` (`passes-mismatch`), each with `until` = the latest expiry of
  what stands in that ticket's path wants' way, judged for its holder, held
  by one in its `behind` (`passes-mismatch`); one neither passed nor covered
  by `after` (after >= its expiry, so it lapsed before T) was live in the
  claim's way (`queued-behind`);
- a sem-acquire is admitted only while the semaphore's leases live at T plus
  the live tickets at T of other holders before its place that want it stay
  below the limit (`queued-behind`).
The lease-reading rules judge the source state's leases, so they are applied
to an op only when no op before it in the body changed a lease (a waiter's
bodies: `[ticket-drop..., ticket]`, `[claim..., ticket-drop]`, the first
claim of a batch); for a later op only the queue-only rules apply (which
tickets are passed or covered by `after`, and the queue's effects). Not
checked: the `until` of a pass, `behind` and the deadlock rule for such later
ops, and a sem-acquire's count after another op changed leases; whether a
ticket's wants are paths in the store's canonical form; a lapsed ticket
declared in `after` that could have been passed (replay accepts either).
Hand-offs and intents pass the queue: no rule reads it for them.

It does not re-run the planner. PRIVATE stores are checked structurally
(records and bodies are sealed): everything above that does not need the
plaintext.

Output: one JSON line per commit, root first,
{"commit":ID,"ok":BOOL,"reason":R?,"detail":D?}; exit 0 all valid, 1 any
invalid, 2 the store cannot be read, 64 usage.

Usage: refverify.py [--allow-test-clock] [--ref REF] REPO
"""

import hashlib
import json
import subprocess
import sys
import unicodedata

import nacl.exceptions
import nacl.signing

MAX = 2**53 - 1
PACKET_DOMAIN = b"gitlocks/packet/v1\x00"
ATTESTATION_DOMAIN = b"gitlocks/attestation/v1\x00"
PROFILES = {"signed-private-guard-time-v1", "time-add-guard-window-v1"}
STATE_FORMATS = {"gitlocks-state-v1": 1, "gitlocks-state-v2": 2}
ADMIN_ACTIONS = {"init", "guard-time-enable", "guard-time-set", "member-add", "member-remove", "rekey", "policy-set",
                 "checkpoint"}
# The fields an owner's policy-set may change (FORMAT.md "Changing the policy").
SETTABLE_POLICY = {"min_ttl_ms", "max_ttl_ms", "families", "require_claim", "enforce", "admins", "bots",
                   "checkpoint"}
PACKET_FIELDS = {"format", "store", "actor", "command", "action", "instance", "epoch", "policy_hash",
                 "source", "body", "interval", "result"}
BINDINGS = ("store", "actor", "command", "action", "instance", "epoch", "policy_hash", "source", "result",
            "interval")
ATT_FIELDS = set(BINDINGS) | {"format", "profile", "audience", "service_key", "admitted_at_ms", "clock",
                              "packet_digest"}
# FORMAT.md "Queue record (`queue:tickets`)".
QUEUE = "queue:tickets"
QUEUE_OPS = ("ticket", "ticket-renew", "ticket-drop")
TICKET_FIELDS = {"id", "holder", "name", "seq", "expires_at", "created_at", "wants", "behind"}
MAX_TICKETS = 256
MAX_WANTS = 64


class Invalid(Exception):
    def __init__(self, reason, detail):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class StoreRead(Exception):
    pass


# --- canonical JSON (FORMAT.md "Canonical JSON") ------------------------------

def _escape(s):
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif c < 0x20:
            out.append("\\u%04x" % c)
        elif 0xD800 <= c <= 0xDFFF:
            raise ValueError("lone surrogate")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def canon(value):
    """The canonical encoding (bytes) of a JSON value made of dict/list/str/int/bool/None."""
    def enc(v):
        if v is True:
            return "true"
        if v is False:
            return "false"
        if v is None:
            return "null"
        if isinstance(v, int):
            if not -MAX <= v <= MAX:
                raise ValueError("unsafe integer")
            return str(v)
        if isinstance(v, str):
            return _escape(v)
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        if isinstance(v, dict):
            keys = sorted(v, key=lambda k: k.encode("utf-8"))
            return "{" + ",".join(_escape(k) + ":" + enc(v[k]) for k in keys) + "}"
        raise ValueError("not a JSON value: %r" % type(v))
    return enc(value).encode("utf-8")


def _no_dupes(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError("duplicate key %r" % k)
        out[k] = v
    return out


def _depth(v, d=1):
    if d > 64:
        raise ValueError("nesting deeper than 64")
    if isinstance(v, dict):
        for x in v.values():
            _depth(x, d + 1)
    elif isinstance(v, list):
        for x in v:
            _depth(x, d + 1)


def _reject_float(s):
    raise ValueError("float %s" % s)


def _reject_constant(s):
    raise ValueError("constant %s" % s)


def parse_canonical(data, what):
    """Strict decoding, then byte-identity with the canonical encoding."""
    try:
        text = data.decode("utf-8")  # strict: overlong forms, surrogates, > U+10FFFF
        value = json.loads(text, object_pairs_hook=_no_dupes, parse_float=_reject_float,
                           parse_constant=_reject_constant)
        _depth(value)
        again = canon(value)
    except (ValueError, RecursionError) as e:
        raise Invalid("malformed-json", "%s: %s" % (what, e))
    if again != data:
        raise Invalid("non-canonical", "%s is not in canonical encoding" % what)
    return value


# --- Git access ---------------------------------------------------------------

class Git:
    def __init__(self, repo):
        self.repo = repo
        self.proc = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
        self.cache = {}

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()

    def object(self, oid):
        if oid in self.cache:
            return self.cache[oid]
        self.proc.stdin.write(oid.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3:
            raise StoreRead("object %s: %s" % (oid, b" ".join(header).decode(errors="replace")))
        size = int(header[2])
        data = self.proc.stdout.read(size)
        self.proc.stdout.read(1)
        obj = (header[1].decode(), data)
        self.cache[oid] = obj
        return obj

    def typed(self, oid, kind):
        t, data = self.object(oid)
        if t != kind:
            raise Invalid("bad-object", "%s is a %s, not a %s" % (oid, t, kind))
        return data

    def tree(self, oid):
        """{name: (mode, oid)} of a tree object."""
        data = self.typed(oid, "tree")
        out, i = {}, 0
        while i < len(data):
            sp = data.index(b" ", i)
            nul = data.index(b"\0", sp)
            mode = data[i:sp].decode()
            name = data[sp + 1:nul].decode("utf-8", "surrogateescape")
            out[name] = (mode, data[nul + 1:nul + 21].hex())
            i = nul + 21
        return out

    def commit(self, oid):
        data = self.typed(oid, "commit")
        head = data.split(b"\n\n", 1)[0].decode("utf-8", "replace")
        tree, parents = None, []
        for line in head.split("\n"):
            if line.startswith("tree "):
                tree = line[5:]
            elif line.startswith("parent "):
                parents.append(line[7:])
        return tree, parents

    def chain(self, ref):
        r = subprocess.run(["git", "-C", self.repo, "rev-list", "--reverse", "--first-parent", ref],
                           capture_output=True, text=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
        if r.returncode != 0:
            raise StoreRead("rev-list %s: %s" % (ref, r.stderr.strip()))
        return r.stdout.split()

    def exists(self, oid):
        r = subprocess.run(["git", "-C", self.repo, "cat-file", "-e", oid + "^{commit}"],
                           capture_output=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
        return r.returncode == 0


# --- paths (SPEC §3) -----------------------------------------------------------

def components(path):
    return path[:-1].split("/") if path.endswith("/") else path.split("/")


def overlap(a, b):
    ca, cb = components(a), components(b)
    n = min(len(ca), len(cb))
    return ca[:n] == cb[:n]


def resource_hash(key):
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


# --- the waiters' queue (FORMAT.md "Queue record", "Tickets") --------------------

def valid_want(w):
    """{"path": P, "mode": "exclusive"|"shared"} or {"sem": NAME}."""
    if not isinstance(w, dict):
        return False
    if set(w) == {"sem"}:
        return isinstance(w["sem"], str)
    return set(w) == {"path", "mode"} and isinstance(w["path"], str) and w["mode"] in ("exclusive", "shared")


def check_queue_record(rec, loc):
    """The shape of the queue record; raises bad-record."""
    def bad(why):
        raise Invalid("bad-record", "state/records/%s: queue %s" % (loc, why))
    if set(rec) != {"kind", "name", "seq", "tickets"} or rec["name"] != "tickets":
        bad("fields")
    if type(rec["seq"]) is not int or rec["seq"] < 0:
        bad("seq")
    tickets = rec["tickets"]
    if not isinstance(tickets, list) or len(tickets) > MAX_TICKETS:
        bad("tickets")
    last = 0
    for t in tickets:
        if not isinstance(t, dict) or set(t) != TICKET_FIELDS:
            bad("ticket fields")
        if not (hex_of(t["id"], 24) and hex_of(t["holder"], 64) and isinstance(t["name"], str)):
            bad("ticket id/holder/name")
        if not all(type(t[k]) is int for k in ("seq", "expires_at", "created_at")):
            bad("ticket seq/expires_at/created_at")
        if not last < t["seq"] <= rec["seq"]:
            bad("ticket seqs: strictly increasing, at most the record's seq")
        last = t["seq"]
        wants = t["wants"]
        if not isinstance(wants, list) or not 1 <= len(wants) <= MAX_WANTS or not all(valid_want(w) for w in wants):
            bad("ticket wants")
        behind = t["behind"]
        if not isinstance(behind, list) or not all(hex_of(k, 64) for k in behind) or behind != sorted(set(behind)):
            bad("ticket behind: keys, sorted, unique")


def path_key(path):
    return path[:-1] if path.endswith("/") else path


def exclusive_families(policy, path):
    return {f["name"] for f in policy.get("families", [])
            if f["policy"] == "exclusive" and any(overlap(m, path) for m in f["members"])}


def wants_conflict(policy, a, b):
    """Overlapping paths unless both shared, paths of one exclusive family, the same semaphore."""
    if ("sem" in a) != ("sem" in b):
        return False
    if "sem" in a:
        return a["sem"] == b["sem"]
    if "shared" != a["mode"] or "shared" != b["mode"]:
        if overlap(a["path"], b["path"]):
            return True
    return bool(exclusive_families(policy, a["path"]) & exclusive_families(policy, b["path"]))


class Queue:
    """The queue rules over one transition: the source state's records by resource key (its leases,
    markers, family entries and semaphores, which the queue's ops never change) and the queue,
    which the body's queue ops change in order."""

    def __init__(self, records, policy):
        self.records = records
        self.policy = policy
        q = records.get(QUEUE)
        self.existed = q is not None
        self.queue = json.loads(json.dumps(q)) if q else {"kind": "queue", "name": "tickets", "seq": 0,
                                                          "tickets": []}

    def tickets(self):
        return self.queue["tickets"]

    def find(self, tid):
        for t in self.tickets():
            if t["id"] == tid:
                return t
        raise Invalid("no-ticket", "no ticket %r in the queue" % (tid,))

    def in_way(self, path, mode, who):
        """[(holder, expiry)] of what a claim of `path` in `mode` by `who` meets, live or not: other
        holders' locks (not intents) on the path or an ancestor, exclusive ones only for a shared
        claim; their markers on the path (x; s too for an exclusive claim; the bound as expiry);
        their entries in the path's exclusive families."""
        key = path_key(path)
        excl = mode == "exclusive"
        comps = key.split("/")
        out = []
        for a in ["/".join(comps[:n]) for n in range(1, len(comps) + 1)]:
            for l in self.records.get("path:" + a, {}).get("leases", []):
                if l["holder"] != who and l["mode"] != "intent" and (excl or l["mode"] == "exclusive"):
                    out.append((l["holder"], l["expires_at"]))
        for h, m in self.records.get("path:" + key, {}).get("below", {}).items():
            if h != who:
                if m["x"] > 0:
                    out.append((h, m["xu"]))
                if excl and m["s"] > 0:
                    out.append((h, m["su"]))
        for fam in sorted(exclusive_families(self.policy, path)):
            for h, e in self.records.get("family:" + fam, {}).get("holders", {}).items():
                if h != who:
                    out.append((h, e["until"]))
        return out

    def blockers(self, wants, who):
        """The holders of what stands in the wants' way (a semaphore's while it holds `limit` leases
        or more), sorted, without `who`: a ticket's `behind`."""
        keys = set()
        for w in wants:
            if "sem" in w:
                rec = self.records.get("sem:" + w["sem"])
                if rec and len(rec["leases"]) >= rec["limit"]:
                    keys |= {l["holder"] for l in rec["leases"] if l["holder"] != who}
            else:
                keys |= {h for h, _ in self.in_way(w["path"], w["mode"], who)}
        return sorted(keys)

    def until(self, t):
        """The latest expiry of what stands in ticket `t`'s path wants' way, judged for its holder,
        held by one in its `behind`; None when nothing does."""
        found = [e for w in t["wants"] if "path" in w for h, e in self.in_way(w["path"], w["mode"], t["holder"])
                 if h in t["behind"]]
        return max(found) if found else None

    def waits_for(self, wants, who, seq):
        """The wait-for graph's edges from a ticket: the holders in its way, and those of the older
        tickets (seq below `seq`) of others with a want that conflicts with one of its own."""
        out = set(self.blockers(wants, who))
        for older in self.tickets():
            if older["seq"] < seq and older["holder"] != who and \
                    any(wants_conflict(self.policy, a, b) for a in wants for b in older["wants"]):
                out.add(older["holder"])
        return out

    def cycle(self, wants, who):
        """A cycle through `who` that a ticket of `who` for `wants` would close, or None."""
        edges = {}
        for t in self.tickets():
            edges.setdefault(t["holder"], set()).update(self.waits_for(t["wants"], t["holder"], t["seq"]))
        parent = {k: who for k in self.waits_for(wants, who, MAX + 1)}
        frontier = sorted(parent)
        for cur in frontier:
            if cur == who:
                path, k = [], parent[who]
                while k != who:
                    path.append(k)
                    k = parent[k]
                return [who] + path[::-1]
            for k in sorted(edges.get(cur, ())):
                if k not in parent:
                    parent[k] = cur
                    frontier.append(k)
        return None

    # The queue's own ops, in body order.
    def take(self, i, op, actor, body, instance, reads_source):
        wants, behind = op["wants"], op["behind"]
        if not isinstance(wants, list) or not 1 <= len(wants) <= MAX_WANTS or not all(valid_want(w) for w in wants):
            raise Invalid("bad-body", "ticket op %d: wants %r" % (i, wants))
        if len(self.tickets()) >= MAX_TICKETS:
            raise Invalid("queue-full", "a ticket taken while the queue holds %d" % MAX_TICKETS)
        if reads_source:
            expected = self.blockers(wants, actor)
            if behind != expected:
                raise Invalid("behind-mismatch", "ticket op %d: behind %r, the holders in its way %r"
                              % (i, behind, expected))
            cycle = self.cycle(wants, actor)
            if cycle:
                raise Invalid("deadlock", "ticket op %d closes the cycle %s" % (i, ",".join(cycle)))
        self.queue["seq"] += 1
        self.tickets().append({"id": resource_hash("%s\n%d\n%s" % (instance, i, QUEUE))[:24], "holder": actor,
                               "name": body["name"], "seq": self.queue["seq"], "expires_at": op["expires_at"],
                               "created_at": body["created_at"], "wants": wants, "behind": behind})

    def renew(self, op, actor):
        t = self.find(op["ticket"])
        if t["holder"] != actor:
            raise Invalid("foreign-effect", "ticket %s of %s renewed by %s" % (t["id"], t["holder"], actor))
        if op["prev_expires_at"] != t["expires_at"]:
            raise Invalid("expiry-changed", "ticket %s: prev_expires_at %r, the queue's %d"
                          % (t["id"], op["prev_expires_at"], t["expires_at"]))
        t["expires_at"] = op["expires_at"]

    def drop(self, op, actor, t_ms):
        t = self.find(op["ticket"])
        if t["holder"] == actor:
            if "expires_at" in op:
                raise Invalid("bad-body", "the drop of one's own ticket %s declares an expiry" % t["id"])
        elif op.get("expires_at") != t["expires_at"] or not t["expires_at"] < t_ms:
            raise Invalid("foreign-effect", "ticket %s of %s (expires_at %d) dropped by %s at T %d declaring %r"
                          % (t["id"], t["holder"], t["expires_at"], actor, t_ms, op.get("expires_at")))
        self.tickets().remove(t)

    # Admissions that respect the queue.
    def claim(self, i, op, actor, reads_source):
        passes = op.get("passes")
        if op["mode"] not in ("exclusive", "shared"):
            if passes is not None:
                raise Invalid("passes-mismatch", "op %d: an intent passes no ticket" % i)
            return
        if passes is not None and (not isinstance(passes, list) or not passes):
            raise Invalid("passes-mismatch", "op %d: passes %r" % (i, passes))
        declared = [(p["ticket"], p["until"]) for p in passes or []]
        w = {"path": op["path"], "mode": op["mode"]}
        # Its place: its own oldest ticket for the path in any mode (FORMAT.md "Tickets").
        def exclusive(x):
            return dict(x, mode="exclusive") if "path" in x else x
        place = min([t["seq"] for t in self.tickets() if t["holder"] == actor
                     and any(wants_conflict(self.policy, exclusive(w), exclusive(x)) for x in t["wants"])],
                    default=MAX + 1)
        expected = []
        for t in self.tickets():
            if t["holder"] == actor or t["seq"] >= place or \
                    not any(wants_conflict(self.policy, w, x) for x in t["wants"]):
                continue
            until = [u for tid, u in declared if tid == t["id"]]
            if until:
                expected.append(t["id"])
                if reads_source and until[0] != self.until(t):
                    raise Invalid("passes-mismatch", "op %d passes ticket %s until %r; its holder is blocked until %r"
                                  % (i, t["id"], until[0], self.until(t)))
            elif type(op.get("after")) is not int or op["after"] < t["expires_at"]:
                raise Invalid("queued-behind", "op %d: %s admitted while ticket #%d of %s (expires_at %d) waits "
                              "for it, neither passed nor declared in after" % (i, op["path"], t["seq"], t["holder"],
                                                                                t["expires_at"]))
        if [tid for tid, _ in declared] != expected:
            raise Invalid("passes-mismatch", "op %d passes %r; the queue's tickets to pass %r"
                          % (i, [tid for tid, _ in declared], expected))

    def sem_acquire(self, i, op, actor, t_ms, reads_source):
        want = {"sem": op["sem"]}
        place = min([t["seq"] for t in self.tickets() if t["holder"] == actor and want in t["wants"]],
                    default=MAX + 1)
        ahead = [t for t in self.tickets() if t["holder"] != actor and t["seq"] < place and want in t["wants"]
                 and t["expires_at"] >= t_ms]
        if reads_source and ahead:
            live = [l for l in self.records.get("sem:" + op["sem"], {}).get("leases", []) if l["expires_at"] >= t_ms]
            if len(live) + len(ahead) >= op["limit"]:
                raise Invalid("queued-behind", "op %d: semaphore %s (limit %d) acquired with %d live leases while "
                              "%d live tickets queued before it want it" % (i, op["sem"], op["limit"], len(live),
                                                                             len(ahead)))


# --- guard intervals (FORMAT.md "Guards") ---------------------------------------

def derive_interval(body, policy):
    """The exact admission interval [lo, hi] of a public body, or None when empty."""
    lo, hi = 0, MAX
    if "init" in body or "admin" in body:
        return [lo, hi]
    mn, mx = policy["min_ttl_ms"], policy["max_ttl_ms"]

    def ttl(expires_at):
        nonlocal lo, hi
        # T + min <= e, T + max >= e; both time_add results in [0, MAX].
        lo = max(lo, expires_at - mx)
        hi = min(hi, expires_at - mn, MAX - mx, MAX - mn)

    for op in body["ops"]:
        kind = op["op"]
        if kind in ("claim", "sem-acquire"):
            ttl(op["expires_at"])
            if "after" in op:
                lo = max(lo, op["after"] + 1)
            for r in op.get("reclaims", []):
                lo = max(lo, r["expires_at"] + 1)
            # FORMAT.md "Tickets": a claim passes a ticket only while the lease that blocks its
            # holder is live.
            if kind == "claim":
                for p in op.get("passes", []):
                    hi = min(hi, p["until"])
        elif kind == "ticket":
            ttl(op["expires_at"])
        elif kind == "ticket-renew":
            ttl(op["expires_at"])
            hi = min(hi, op["prev_expires_at"])
            if op["expires_at"] <= op["prev_expires_at"]:
                return None
        elif kind == "ticket-drop":
            # Another holder's ticket, once it lapsed (its expiry declared); one's own: time-free.
            if "expires_at" in op:
                lo = max(lo, op["expires_at"] + 1)
        elif kind == "extend":
            ttl(op["expires_at"])
            hi = min(hi, op["prev_expires_at"])
            if op["expires_at"] <= op["prev_expires_at"]:
                return None
        elif kind == "handoff":
            # FORMAT.md "Hand-off": the lease still live at T, the receiver's TTL bounds, and
            # T after what a path hand-off reclaims for the receiver.
            ttl(op["expires_at"])
            hi = min(hi, op["prev_expires_at"])
            if "after" in op:
                lo = max(lo, op["after"] + 1)
            for r in op.get("reclaims", []):
                lo = max(lo, r["expires_at"] + 1)
        elif kind == "sweep":
            for s in op["leases"]:
                lo = max(lo, s["expires_at"] + 1)
        elif kind in ("release", "sem-release", "force-release"):
            pass
        else:
            raise Invalid("unknown-op", "op %r" % kind)
    return [lo, hi] if lo <= hi else None


def expected_action(body):
    """The planner action a public body names: creation, an admin op, migration,
    else, ticket-drops aside, "batch" for several ops, "reclaim" for one claim
    admitted only after a conflicting lease expired (it declares `after`), or
    the op ("ticket-drop" when there is no other)."""
    if "init" in body:
        return "init"
    if "admin" in body:
        return body["admin"].get("op") if isinstance(body["admin"], dict) else None
    if "migrate" in body:
        return "migrate"
    ops = body.get("ops")
    if not isinstance(ops, list) or not ops or not all(isinstance(o, dict) for o in ops):
        return None
    # Ticket-drops do not count toward the action (FORMAT.md "Tickets"): the other ops', or
    # "ticket-drop" when there are none.
    ops = [o for o in ops if o.get("op") != "ticket-drop"]
    if not ops:
        return "ticket-drop"
    if len(ops) > 1:
        return "batch"
    if ops[0].get("op") == "claim" and "after" in ops[0]:
        return "reclaim"
    return ops[0].get("op")


# --- the verifier --------------------------------------------------------------

def hex_of(v, n):
    return isinstance(v, str) and len(v) == n and all(c in "0123456789abcdef" for c in v)


def ed25519_ok(key_hex, message, sig_hex):
    if not (hex_of(key_hex, 64) and hex_of(sig_hex, 128)):
        return False
    try:
        nacl.signing.VerifyKey(bytes.fromhex(key_hex)).verify(message, bytes.fromhex(sig_hex))
        return True
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return False


class Verifier:
    def __init__(self, repo, allow_test_clock=False, ref="refs/locks/state"):
        self.git = Git(repo)
        self.ref = ref
        self.allow_test_clock = allow_test_clock
        self.store = None      # store id, from the root's policy
        self.pins = None       # (audience, service_key) while guard time is on
        self.result_pins = None  # the pins of the commit being checked, as recorded
        self.last_t = None     # the last admission time T (attested or local)
        self.record_cache = {}

    def state_tree(self, commit):
        tree, _ = self.git.commit(commit)
        entry = self.git.tree(tree).get("state")
        return entry[1] if entry and entry[0] == "40000" else None

    def blob_at(self, tree, path):
        parts = path.split("/")
        for p in parts[:-1]:
            e = self.git.tree(tree).get(p)
            if not e or e[0] != "40000":
                raise Invalid("missing-entry", "no %s" % path)
            tree = e[1]
        e = self.git.tree(tree).get(parts[-1])
        if not e or not e[0].startswith("100"):
            raise Invalid("missing-entry", "no %s" % path)
        return self.git.typed(e[1], "blob")

    def policy_of(self, state):
        raw = self.blob_at(state, "policy.json")
        return raw, parse_canonical(raw, "state/policy.json")

    def cut_prev(self, commit):
        """The `prev` of a checkpoint commit without parents (a cut), else None."""
        try:
            tree, parents = self.git.commit(commit)
            txn = self.git.tree(self.git.tree(tree)["txn"][1])
            packet = json.loads(self.git.typed(txn["packet.json"][1], "blob"))["packet"]
            prev = packet["body"]["admin"]["prev"]
        except (KeyError, TypeError, ValueError, StoreRead):
            return None
        if parents or packet.get("action") != "checkpoint" or not hex_of(prev, 40):
            return None
        return prev

    def full_chain(self):
        """The chain of self.ref, continued below every cut whose prev is here."""
        chain = self.git.chain(self.ref)
        while chain:
            prev = self.cut_prev(chain[0])
            if prev is None or not self.git.exists(prev):
                break
            chain = self.git.chain(prev) + chain
        return chain

    def run(self):
        chain = self.full_chain()
        verdicts = []
        parent_state = None
        for i, commit in enumerate(chain):
            self.result_pins = self.pins
            try:
                t = self.check(i, commit, chain[i - 1] if i else None, parent_state)
                verdicts.append({"commit": commit, "ok": True, "time": t})
            except Invalid as e:
                verdicts.append({"commit": commit, "ok": False, "reason": e.reason, "detail": e.detail})
            # The next commit is judged on this one's recorded state, valid or not: its pins too.
            parent_state = self.state_tree(commit)
            self.pins = self.result_pins
        return verdicts

    # One commit. Returns T; raises Invalid.
    def check(self, index, commit, parent, parent_state):
        tree, parents = self.git.commit(commit)
        if index == 0 and parents:
            raise Invalid("parents", "the root has %d parents" % len(parents))
        if index > 0 and parents != [parent] and parents != []:
            raise Invalid("parents", "%d parents (exactly one, the previous commit, required)" % len(parents))
        top = self.git.tree(tree)
        for name, (mode, _) in top.items():
            if name not in ("state", "txn") or mode != "40000":
                raise Invalid("unexpected-entry", "tree entry %s" % name)
        if "state" not in top or "txn" not in top:
            raise Invalid("missing-entry", "state/ and txn/ required")
        state = top["state"][1]
        txn = self.git.tree(top["txn"][1])
        for name, (mode, _) in txn.items():
            if name not in ("packet.json", "attestation.json") or not mode.startswith("100"):
                raise Invalid("unexpected-entry", "tree entry txn/%s" % name)
        if "packet.json" not in txn:
            raise Invalid("missing-entry", "no txn/packet.json")
        raw_packet = self.git.typed(txn["packet.json"][1], "blob")
        signed = parse_canonical(raw_packet, "txn/packet.json")
        if not isinstance(signed, dict) or set(signed) != {"packet", "sig"} or not isinstance(signed["packet"], dict):
            raise Invalid("bad-packet", "txn/packet.json must be {packet, sig}")
        packet = signed["packet"]
        missing = PACKET_FIELDS - set(packet)
        extra = set(packet) - PACKET_FIELDS - {"claimed_at_ms"}
        if missing or extra:
            raise Invalid("bad-packet", "fields missing %s, unknown %s" % (sorted(missing), sorted(extra)))
        if packet["format"] != "gitlocks-packet-v1":
            raise Invalid("unknown-format", "packet format %r" % packet["format"])
        body = packet["body"]
        if not isinstance(body, dict):
            raise Invalid("bad-packet", "body is not an object")
        action = packet["action"]
        if "sealed" not in body and action != expected_action(body):
            raise Invalid("action-mismatch", "action %r, body says %r" % (action, expected_action(body)))

        # Policies at the source and at the result.
        new_raw, new_policy = self.policy_of(state)
        gt = new_policy.get("guard_time") if isinstance(new_policy, dict) else None
        pins = (gt.get("audience"), gt.get("service_key")) if isinstance(gt, dict) else None
        self.result_pins = pins
        fmt = parse_canonical(self.blob_at(state, "format.json"), "state/format.json")
        if not isinstance(fmt, dict) or fmt.get("format") not in STATE_FORMATS or set(fmt) != {"format"}:
            raise Invalid("unknown-format", "state format %r" % (fmt,))
        if index == 0 and action == "checkpoint":
            # A cut whose earlier history is not here: the chain starts at its own state.
            parent_state = state
            src_raw, src_policy = new_raw, new_policy
            self.store = new_policy.get("store")
            if packet["source"] != state:
                raise Invalid("source-mismatch", "source %s, the cut's own state %s" % (packet["source"], state))
        elif index == 0:
            if action != "init" or "init" not in body:
                raise Invalid("bad-root", "the root is not a creation")
            src_raw, src_policy = new_raw, new_policy
            self.store = new_policy.get("store")
            if packet["source"] != "":
                raise Invalid("source-mismatch", "creation names source %r" % packet["source"])
        else:
            if action == "init" or "init" in body:
                raise Invalid("bad-packet", "creation after the root")
            if packet["source"] != parent_state:
                raise Invalid("source-mismatch", "source %s, parent state %s" % (packet["source"], parent_state))
            src_raw, src_policy = self.policy_of(parent_state)
        if packet["result"] != state:
            raise Invalid("result-mismatch", "result %s, own state %s" % (packet["result"], state))
        if packet["store"] != self.store or new_policy.get("store") != self.store:
            raise Invalid("store-mismatch", "store %r, history's %r" % (packet["store"], self.store))
        if packet["policy_hash"] != hashlib.sha256(src_raw).hexdigest():
            raise Invalid("policy-mismatch", "policy_hash is not the source policy's")
        admin = action in ADMIN_ACTIONS or "admin" in body or "init" in body
        if not admin and new_raw != src_raw:
            raise Invalid("policy-changed", "a %s transition changed policy.json" % action)
        if action == "policy-set":
            if new_raw == src_raw:
                raise Invalid("bad-body", "a policy-set that changes nothing")
            for k in set(new_policy) | set(src_policy):
                if k not in SETTABLE_POLICY and new_policy.get(k, None) != src_policy.get(k, None):
                    raise Invalid("policy-changed", "policy-set changed the fixed field %r" % k)
            if body.get("admin", {}).get("policy") != new_policy:
                raise Invalid("bad-body", "the policy-set body's policy is not the new policy.json")
        if action == "checkpoint":
            # FORMAT.md "Checkpoints": the state as it is, and `prev` names the parent commit.
            admin_op = body.get("admin", {})
            if set(admin_op) != {"op", "expected_policy_hash", "prev"} or not hex_of(admin_op.get("prev"), 40):
                raise Invalid("bad-body", "checkpoint body %r" % (admin_op,))
            if index > 0 and admin_op["prev"] != parent:
                raise Invalid("checkpoint-mismatch", "checkpoint names %s, parent %s" % (admin_op["prev"], parent))
            if state != parent_state:
                raise Invalid("state-changed", "a checkpoint changed the state")

        # The actor's signature (the owner's for creation and admin).
        owner = src_policy.get("owner")
        # A checkpoint after the start may also be signed by a key the source policy names for it
        # (FORMAT.md "Checkpoints by policy"); a cut the chain starts at is its owner's.
        signers = src_policy.get("checkpoint", {}).get("signers", []) if index > 0 else []
        if action == "checkpoint" and packet["actor"] in signers:
            pass
        elif admin and packet["actor"] != owner:
            raise Invalid("not-owner", "admin transition by %s, owner %s" % (packet["actor"], owner))
        # A force-release (FORMAT.md): by the owner or a key the source policy lists in `admins`.
        if isinstance(body.get("ops"), list) and any(op.get("op") == "force-release" for op in body["ops"]) \
                and packet["actor"] != owner and packet["actor"] not in src_policy.get("admins", []):
            raise Invalid("not-admin", "force-release by %s, who is not an admin" % packet["actor"])
        if not ed25519_ok(packet["actor"], PACKET_DOMAIN + canon(packet), signed["sig"]):
            raise Invalid("bad-signature", "packet signature does not verify under the actor key")

        private = "keyring" in new_policy or "sealed" in body
        if not private and packet["epoch"] != 0:
            raise Invalid("bad-epoch", "epoch %r in a store without encryption" % (packet["epoch"],))
        if not private:
            self._records = self.check_records(state, STATE_FORMATS[fmt["format"]])

        # The interval.
        interval = packet["interval"]
        if not (isinstance(interval, list) and len(interval) == 2 and all(type(x) is int for x in interval)
                and 0 <= interval[0] <= interval[1] <= MAX):
            raise Invalid("bad-interval", "interval %r" % (interval,))
        if not private:
            try:
                derived = derive_interval(body, src_policy)
            except (KeyError, TypeError) as e:
                raise Invalid("bad-body", "body: %r" % (e,))
            if derived != interval:
                raise Invalid("interval-mismatch", "packet %r, derived %r" % (interval, derived))

        # Time: attested under the result's pins, else the client's claim. Pins
        # in force change only by the owner's guard-time-set (FORMAT.md
        # "Changing the notary or turning guard time off").
        if action == "guard-time-set":
            want = body.get("admin", {}).get("guard_time")
            asked = (want.get("audience"), want.get("service_key")) if isinstance(want, dict) else want
            if self.pins is None or pins == self.pins or pins != asked:
                raise Invalid("bad-body", "guard-time-set from %r to %r, body asks %r" % (self.pins, pins, asked))
            for k in set(new_policy) | set(src_policy):
                if k != "guard_time" and new_policy.get(k, None) != src_policy.get(k, None):
                    raise Invalid("policy-changed", "guard-time-set changed the field %r" % k)
        elif self.pins is not None and pins != self.pins:
            raise Invalid("pins-changed", "guard-time pins changed" if pins else "guard time dropped from the policy")
        self.pins = pins
        if self.pins is not None:
            if "attestation.json" not in txn:
                raise Invalid("missing-attestation", "guard time is on and there is no attestation")
            if "claimed_at_ms" in packet:
                raise Invalid("bad-packet", "claimed_at_ms under guard time")
            t = self.check_attestation(self.git.typed(txn["attestation.json"][1], "blob"), raw_packet, packet)
        else:
            if "attestation.json" in txn:
                raise Invalid("unexpected-entry", "txn/attestation.json without guard time")
            t = packet.get("claimed_at_ms")
            if type(t) is not int:
                raise Invalid("bad-packet", "no claimed_at_ms")
            # Local admission times never decrease either (an equal one is fine).
            if self.last_t is not None and t < self.last_t:
                raise Invalid("time-decreased", "T %d below the previous %d" % (t, self.last_t))
            self.last_t = t
        if not interval[0] <= t <= interval[1]:
            raise Invalid("time-outside-interval", "T %d outside %r" % (t, interval))

        if not private:
            if index > 0:
                forced = set()
                if packet["actor"] == owner or packet["actor"] in src_policy.get("admins", []):
                    forced = {op.get("lease") for op in body.get("ops", []) if op.get("op") == "force-release"}
                # A hand-off (FORMAT.md "Hand-off") gives a resource to the key it names: the
                # one new lease the signer does not hold.
                handed = {}
                for op in body.get("ops", []):
                    if op.get("op") == "handoff":
                        key = ("sem:" + op["sem"]) if "sem" in op else "path:" + op["path"].rstrip("/")
                        handed.setdefault(key, []).append((op["lease"], op["to"]))
                self.check_effects(parent_state, packet["actor"], t, forced, handed)
                try:
                    self.check_queue(parent_state, packet, src_policy, t)
                except (KeyError, TypeError) as e:
                    raise Invalid("bad-body", "body: %r" % (e,))
            self.check_exclusion(state, new_policy, t)
        return t

    def check_effects(self, parent_state, actor, t, forced=frozenset(), handed=None):
        """Nobody touches another holder's live lease (but an admin's force-release of the leases in
        `forced`); a new lease is the signer's, or the receiver's of a hand-off in `handed`
        (resource key -> [(the signer's lease it ends, the receiver's key)]); generations are
        fencing tokens."""
        handed = handed or {}
        before = self.records_by_key(parent_state)
        after = {r["kind"] + ":" + r["name"]: r for r in self._records}

        def leases(recs):
            return {l["id"]: (key, l) for key, r in recs.items() for l in r.get("leases", [])}
        old, new = leases(before), leases(after)
        for key, r in before.items():
            if r["kind"] in ("family", "queue"):  # derived data; the queue is check_queue's
                continue
            if key not in after and r["generation"] > 0:
                raise Invalid("generation", "record %s (generation %d) vanished" % (key, r["generation"]))
            if key in after and after[key]["generation"] < r["generation"]:
                raise Invalid("generation", "%s: generation %d after %d" % (key, after[key]["generation"],
                                                                             r["generation"]))
        for lid, (key, l) in new.items():
            if lid not in old:
                # The receiver of a hand-off: the signer's live lease it names on this resource ends here.
                gave = any(to == l["holder"] and given in old and given not in new and old[given][0] == key
                           and old[given][1]["holder"] == actor and old[given][1]["expires_at"] >= t
                           for given, to in handed.get(key, []))
                if l["holder"] != actor and not gave:
                    raise Invalid("foreign-effect", "new lease %s held by %s, actor %s" % (lid, l["holder"], actor))
                prev = before.get(key, {}).get("generation", 0)
                if l["generation"] != after[key]["generation"] or l["generation"] <= prev:
                    raise Invalid("generation", "new lease %s: generation %d (record %d, before %d)"
                                  % (lid, l["generation"], after[key]["generation"], prev))
            elif old[lid][1] != l:
                o = old[lid][1]
                if l["holder"] != actor or o["holder"] != actor:
                    raise Invalid("foreign-effect", "lease %s of %s changed by %s" % (lid, o["holder"], actor))
                if {k: v for k, v in o.items() if k != "expires_at"} != \
                        {k: v for k, v in l.items() if k != "expires_at"} or old[lid][0] != key:
                    raise Invalid("foreign-effect", "lease %s changed beyond its expiry" % lid)
                if l["expires_at"] <= o["expires_at"]:
                    raise Invalid("foreign-effect", "lease %s: expiry not increased" % lid)
        for lid, (key, o) in old.items():
            if lid not in new and o["holder"] != actor and not o["expires_at"] < t and lid not in forced:
                raise Invalid("foreign-effect", "live lease %s of %s removed by %s" % (lid, o["holder"], actor))

    def records_by_key(self, state):
        fmt = json.loads(self.blob_at(state, "format.json"))["format"]
        return {r["kind"] + ":" + r["name"]: r for r in self.check_records(state, STATE_FORMATS[fmt])}

    def check_queue(self, parent_state, packet, policy, t):
        """The waiters' queue (FORMAT.md "Tickets"; the module's header says what is checked): the
        body's ops in order against the source state, then the resulting queue record."""
        body, actor = packet["body"], packet["actor"]
        q = Queue(self.records_by_key(parent_state), policy)
        ops = body.get("ops") if isinstance(body.get("ops"), list) else []
        reads_source = True  # no op before this one changed a lease
        for i, op in enumerate(ops):
            kind = op["op"]
            if kind == "ticket":
                q.take(i, op, actor, body, packet["instance"], reads_source)
            elif kind == "ticket-renew":
                q.renew(op, actor)
            elif kind == "ticket-drop":
                q.drop(op, actor, t)
            elif kind == "claim":
                q.claim(i, op, actor, reads_source)
            elif kind == "sem-acquire":
                q.sem_acquire(i, op, actor, t, reads_source)
            if kind not in QUEUE_OPS:
                reads_source = False
        expected = q.queue if q.existed or q.queue["seq"] > 0 else None
        got = next((r for r in self._records if r["kind"] == "queue"), None)
        if got != expected:
            raise Invalid("queue-mismatch", "queue record %s, the body's ops give %s"
                          % (canon(got).decode() if got else None, canon(expected).decode() if expected else None))

    def check_attestation(self, raw, raw_packet, packet):
        signed = parse_canonical(raw, "txn/attestation.json")
        if not isinstance(signed, dict) or set(signed) != {"attestation", "sig"} \
                or not isinstance(signed["attestation"], dict):
            raise Invalid("bad-attestation", "txn/attestation.json must be {attestation, sig}")
        att = signed["attestation"]
        if set(att) != ATT_FIELDS:
            raise Invalid("bad-attestation", "fields %s" % sorted(set(att) ^ ATT_FIELDS))
        if att["format"] != "gitlocks-attestation-v1":
            raise Invalid("unknown-format", "attestation format %r" % att["format"])
        if att["profile"] not in PROFILES:
            raise Invalid("unknown-profile", "profile %r" % att["profile"])
        audience, key = self.pins
        if att["audience"] != audience or att["service_key"] != key:
            raise Invalid("pin-mismatch", "attestation audience/key are not the pinned ones")
        if not ed25519_ok(key, ATTESTATION_DOMAIN + canon(att), signed["sig"]):
            raise Invalid("bad-attestation-signature", "attestation signature does not verify under the pin")
        for b in BINDINGS:
            if att[b] != packet[b]:
                raise Invalid("binding-mismatch", "attestation %s differs from the packet's" % b)
        if att["packet_digest"] != hashlib.sha256(raw_packet).hexdigest():
            raise Invalid("packet-digest", "packet_digest is not SHA-256 of txn/packet.json")
        if att["clock"] == "test":
            if not self.allow_test_clock:
                raise Invalid("test-clock", "attested by a test clock")
        elif att["clock"] != "system":
            raise Invalid("bad-attestation", "clock %r" % att["clock"])
        t = att["admitted_at_ms"]
        if type(t) is not int or not 0 <= t <= MAX:
            raise Invalid("bad-attestation", "admitted_at_ms %r" % (t,))
        if self.last_t is not None and t < self.last_t:
            raise Invalid("time-decreased", "T %d below the previous %d" % (t, self.last_t))
        self.last_t = t
        return t

    def records(self, state, shards):
        """[(location, record)] of every record blob of a public state."""
        out = []
        top = self.git.tree(state)
        for name in top:
            if name not in ("format.json", "policy.json", "records"):
                raise Invalid("unexpected-entry", "state/%s" % name)
        if "records" not in top:
            return out

        def walk(oid, prefix, depth):
            for name, (mode, sub) in self.git.tree(oid).items():
                loc = prefix + name
                if depth < shards:
                    if mode != "40000" or len(name) != 2:
                        raise Invalid("bad-layout", "state/records/%s" % loc)
                    walk(sub, loc + "/", depth + 1)
                else:
                    if not mode.startswith("100"):
                        raise Invalid("bad-layout", "state/records/%s" % loc)
                    rec = parse_canonical(self.git.typed(sub, "blob"), "state/records/" + loc)
                    out.append((loc, rec))
        walk(top["records"][1], "", 0)
        return out

    def check_records(self, state, shards):
        if (state, shards) in self.record_cache:
            return self.record_cache[(state, shards)]
        out = []
        for loc, rec in self.records(state, shards):
            if not isinstance(rec, dict) or rec.get("kind") not in ("path", "sem", "family", "queue"):
                raise Invalid("bad-record", "state/records/%s: kind" % loc)
            if rec["kind"] == "queue":
                check_queue_record(rec, loc)
            h = resource_hash(rec["kind"] + ":" + rec["name"])
            want = "/".join([h[2 * k:2 * k + 2] for k in range(shards)] + [h + ".json"])
            if loc != want:
                raise Invalid("bad-layout", "record %s:%s at %s, not %s" % (rec["kind"], rec["name"], loc, want))
            out.append(rec)
        self.record_cache[(state, shards)] = out
        return out

    def check_exclusion(self, state, policy, t):
        # One resource per path: names and lease paths in NFC (FORMAT.md "Path identity"),
        # so no NFC/NFD twin can hold a second lease on the same file.
        for rec in self._records:
            if rec["kind"] != "path":
                continue
            for name in [rec["name"]] + [l.get("path", "") for l in rec.get("leases", [])]:
                if not unicodedata.is_normalized("NFC", name):
                    raise Invalid("path-not-canonical", "%s:%r is not in NFC" % (rec["kind"], name))
        live = []  # path leases live at t
        for rec in self._records:
            leases = [l for l in rec.get("leases", []) if l["expires_at"] >= t]
            if rec["kind"] == "sem":
                if len(leases) > rec["limit"]:
                    raise Invalid("exclusion", "semaphore %s: %d live leases, limit %d"
                                  % (rec["name"], len(leases), rec["limit"]))
            elif rec["kind"] == "path":
                # An intent (FORMAT.md "Intent") locks nothing: it is in nobody's way.
                live.extend(l for l in leases if l["mode"] != "intent")
        for i, a in enumerate(live):
            for b in live[i + 1:]:
                if a["holder"] != b["holder"] and "exclusive" in (a["mode"], b["mode"]) \
                        and overlap(a["path"], b["path"]):
                    raise Invalid("exclusion", "conflicting live leases %s (%s) and %s (%s)"
                                  % (a["id"], a["path"], b["id"], b["path"]))
        for fam in policy.get("families", []):
            on = [l for l in live if any(overlap(l["path"], m) for m in fam["members"])]
            if fam["policy"] == "exclusive":
                holders = {l["holder"] for l in on}
                if len(holders) > 1:
                    raise Invalid("exclusion", "family %s: %d live holders" % (fam["name"], len(holders)))
            else:
                for l in on:
                    if l["mode"] == "exclusive":
                        raise Invalid("exclusion", "family %s is shared: exclusive lease %s" % (fam["name"], l["id"]))


def main(argv):
    args = argv[1:]
    allow, ref = False, "refs/locks/state"
    while args and args[0].startswith("--"):
        a = args.pop(0)
        if a == "--allow-test-clock":
            allow = True
        elif a == "--ref" and args:
            ref = args.pop(0)
        else:
            args = []
            break
    if len(args) != 1:
        sys.stderr.write(__doc__.strip().splitlines()[-1] + "\n")
        return 64
    v = Verifier(args[0], allow, ref)
    try:
        verdicts = v.run()
    except StoreRead as e:
        sys.stderr.write(json.dumps({"error": "store-read", "detail": str(e)}) + "\n")
        return 2
    finally:
        v.git.close()
    for verdict in verdicts:
        verdict.pop("time", None)
        sys.stdout.write(canon(verdict).decode() + "\n")
    return 0 if all(x["ok"] for x in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
