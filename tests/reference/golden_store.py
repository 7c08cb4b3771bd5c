"""An independent model of git-locks' stored state, written from
docs/FORMAT.md (and docs/PRIVATE.md for sealing), never from lib/.

It is what the golden checks stand on: canonical JSON, actor keys (PyNaCl
Ed25519), the record effects of the planner's ops (path, semaphore and
family records, intention markers, generations, lease ids), the sharded
state tree built with real `git hash-object -w` / `git mktree`, packets
signed under the documented prefix, and transition commits. Admission
decisions (refused or not) are not modelled: the vectors state them by hand.
The waiters' queue (FORMAT.md "Queue record", "Tickets") is modelled as far
as a state needs it: the effects of `ticket`, `ticket-renew` and
`ticket-drop` on the queue record, and what a proposal leaves to the planner
(a ticket's `behind`: the holders in its way, from `in_way`).

Used by tests/reference/golden_plan.py, tests/vectors/gen_plan_vectors.py
(the expected records of the planner vectors) and
tests/reference/golden_format1_writer.py (format-1 stores for migration) and
tests/reference/golden_queue_writer.py (the queue's transitions in CLI-made
stores, for test_reference.py).
"""
import hashlib
import json
import os
import subprocess

import nacl.signing

MAX_SAFE = 2**53 - 1
PACKET_PREFIX = b"gitlocks/packet/v1\0"
FORMATS = {1: "gitlocks-state-v1", 2: "gitlocks-state-v2"}
COMMITTER = ("git-locks", "git-locks@invalid")


# -- canonical JSON (FORMAT.md "Canonical JSON")

def _check(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return
    if isinstance(v, int):
        if not -MAX_SAFE <= v <= MAX_SAFE:
            raise ValueError(f"unsafe integer {v}")
        return
    if isinstance(v, float):
        raise ValueError("floats are not canonical")
    if isinstance(v, list):
        for e in v:
            _check(e)
        return
    if isinstance(v, dict):
        for k, e in v.items():
            if not isinstance(k, str):
                raise ValueError("object keys are strings")
            _check(e)
        return
    raise ValueError(f"not JSON: {v!r}")


def canon(v):
    """Canonical bytes: keys sorted (code point order is UTF-8 byte order),
    no whitespace, only '"', '\\' and control characters escaped."""
    _check(v)
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


# -- actors (tests/vectors/README.md: seed = sha256("test-actor:" + NAME))

def actor_key(name):
    return nacl.signing.SigningKey(hashlib.sha256(("test-actor:" + name).encode()).digest())


def actor_hex(name):
    return actor_key(name).verify_key.encode().hex()


def default_policy(store, owner):
    """The policy of a new public store with default TTL bounds."""
    return {"format": "gitlocks-policy-v1", "store": store, "owner": owner,
            "min_ttl_ms": 1000, "max_ttl_ms": 3600000, "families": []}


# -- resources

def path_key(path):
    """Normalised resource key of a path: a trailing '/' names the same
    resource as the path without it."""
    p = path[:-1] if path.endswith("/") else path
    comps = p.split("/")
    if not p or any(c in ("", ".", "..") for c in comps) or "\0" in p:
        raise ValueError(f"bad path {path!r}")
    return p


def record_location(resource, fmt):
    h = sha256_hex(resource)
    if fmt == 1:
        return ["records", h[:2], h + ".json"]
    return ["records", h[:2], h[2:4], h + ".json"]


def record_key(rec):
    return rec["kind"] + ":" + rec["name"]


def lease_id(instance, op_index, resource):
    return sha256_hex(f"{instance}\n{op_index}\n{resource}")[:24]


# FORMAT.md "Queue record": the store's one queue of waiters.
QUEUE = "queue:tickets"


def ticket_id(instance, op_index):
    """A ticket's id: lease_id of the transition's instance, the op and `queue:tickets`."""
    return lease_id(instance, op_index, QUEUE)


def _covers(member, path):
    """A path belongs to a family when it overlaps a member: equal, or one an
    ancestor of the other, component by component (a trailing '/' aside)."""
    m = path_key(member).split("/")
    p = path_key(path).split("/")
    n = min(len(m), len(p))
    return m[:n] == p[:n]


def exclusive_families(policy, path):
    """The names of the exclusive families `path` belongs to."""
    return [f["name"] for f in policy.get("families", [])
            if f["policy"] == "exclusive" and any(_covers(m, path) for m in f["members"])]


def wants_conflict(policy, a, b):
    """FORMAT.md "Tickets" (`wants_conflict`): two wants ({"path","mode"} or {"sem"}) conflict when
    their paths overlap unless both are shared, when their paths are in one exclusive family, or
    when they name the same semaphore; a path and a semaphore never do."""
    if ("sem" in a) != ("sem" in b):
        return False
    if "sem" in a:
        return a["sem"] == b["sem"]
    if not (a["mode"] == "shared" and b["mode"] == "shared") and _covers(a["path"], b["path"]):
        return True
    return bool(set(exclusive_families(policy, a["path"])) & set(exclusive_families(policy, b["path"])))


class State:
    """The records of one state, keyed by resource key, and the effects of
    the planner's ops on them (FORMAT.md "Path record", "Lease",
    "Semaphore record", "Family record", "Body")."""

    def __init__(self, policy, records=None):
        self.policy = policy
        self.records = {record_key(r): json.loads(json.dumps(r)) for r in (records or [])}

    def sorted_records(self):
        return [self.records[k] for k in sorted(self.records)]

    # record helpers
    def _path_record(self, key):
        return self.records.setdefault("path:" + key, {"kind": "path", "name": key, "generation": 0,
                                                      "leases": [], "below": {}})

    def _drop_if_empty(self, resource):
        r = self.records.get(resource)
        if r is None:
            return
        if r["kind"] == "path" and r["generation"] == 0 and not r["leases"] and not r["below"]:
            del self.records[resource]
        if r["kind"] == "family" and not r["holders"]:
            del self.records[resource]

    def _ancestors(self, key):
        comps = key.split("/")
        return ["/".join(comps[:i]) for i in range(1, len(comps))]

    def _exclusive_families(self, path):
        return exclusive_families(self.policy, path)

    # FORMAT.md "Tickets": what stands in a want's way, live or not.
    def in_way(self, path, mode, who):
        """[(holder, expiry)] of what a claim of `path` in `mode` ("exclusive" or "shared") by `who`
        would meet: other holders' locks on the path or an ancestor (an exclusive claim meets
        either mode, a shared one exclusive locks; intents nothing), their markers on the path
        (x, and s for an exclusive claim, with the bound xu/su as expiry), and their entries in
        the path's exclusive families (until)."""
        key = path_key(path)
        excl = mode == "exclusive"
        out = []
        for a in self._ancestors(key) + [key]:
            for l in self.records.get("path:" + a, {}).get("leases", []):
                if l["holder"] != who and l["mode"] != "intent" and (excl or l["mode"] == "exclusive"):
                    out.append((l["holder"], l["expires_at"]))
        for h, m in self.records.get("path:" + key, {}).get("below", {}).items():
            if h == who:
                continue
            if m["x"] > 0:
                out.append((h, m["xu"]))
            if excl and m["s"] > 0:
                out.append((h, m["su"]))
        for fam in self._exclusive_families(path):
            for h, e in self.records.get("family:" + fam, {}).get("holders", {}).items():
                if h != who:
                    out.append((h, e["until"]))
        return out

    def behind(self, wants, who):
        """A ticket's `behind`: the keys (sorted, unique, not `who`) of the holders of what stands
        in its wants' way; for a semaphore, its holders while it holds `limit` leases or more."""
        keys = set()
        for w in wants:
            if "sem" in w:
                rec = self.records.get("sem:" + w["sem"])
                if rec and len(rec["leases"]) >= rec["limit"]:
                    keys |= {l["holder"] for l in rec["leases"] if l["holder"] != who}
            else:
                keys |= {h for h, _ in self.in_way(w["path"], w["mode"], who)}
        return sorted(keys)

    def _ticket(self, tid):
        for t in self.records.get(QUEUE, {}).get("tickets", []):
            if t["id"] == tid:
                return t
        raise KeyError(f"no ticket {tid}")

    # FORMAT.md "Path record": a marker counts exclusive ("x"), shared ("s")
    # and intent ("i") leases below; "i"/"iu" are present only while i > 0.
    # Intents hold no family.
    MARK = {"exclusive": ("x", "xu"), "shared": ("s", "su"), "intent": ("i", "iu")}

    def _add_lease_effects(self, key, lease):
        """Markers on every ancestor and the holder count of exclusive families."""
        n, u = self.MARK[lease["mode"]]
        for a in self._ancestors(key):
            m = self._path_record(a)["below"].setdefault(lease["holder"], {"x": 0, "xu": 0, "s": 0, "su": 0})
            m[n] = m.get(n, 0) + 1
            m[u] = max(m.get(u, 0), lease["expires_at"])
        if lease["mode"] == "intent":
            return
        for fam in self._exclusive_families(lease["path"]):
            rec = self.records.setdefault("family:" + fam, {"kind": "family", "name": fam, "holders": {}})
            h = rec["holders"].setdefault(lease["holder"], {"n": 0, "until": 0})
            h["n"] += 1
            h["until"] = max(h["until"], lease["expires_at"])

    def _extend_lease_effects(self, key, lease):
        u = self.MARK[lease["mode"]][1]
        for a in self._ancestors(key):
            m = self.records["path:" + a]["below"][lease["holder"]]
            m[u] = max(m[u], lease["expires_at"])
        if lease["mode"] == "intent":
            return
        for fam in self._exclusive_families(lease["path"]):
            h = self.records["family:" + fam]["holders"][lease["holder"]]
            h["until"] = max(h["until"], lease["expires_at"])

    def _remove_lease_effects(self, key, lease):
        n, u = self.MARK[lease["mode"]]
        for a in self._ancestors(key):
            rec = self.records["path:" + a]
            m = rec["below"][lease["holder"]]
            m[n] -= 1
            if m[n] == 0:
                m[u] = 0  # no lease of that mode left below
                if n == "i":
                    del m["i"], m["iu"]
            if m["x"] == 0 and m["s"] == 0 and m.get("i", 0) == 0:
                del rec["below"][lease["holder"]]
            self._drop_if_empty("path:" + a)
        if lease["mode"] == "intent":
            return
        for fam in self._exclusive_families(lease["path"]):
            rec = self.records["family:" + fam]
            h = rec["holders"][lease["holder"]]
            h["n"] -= 1
            if h["n"] == 0:
                del rec["holders"][lease["holder"]]
            self._drop_if_empty("family:" + fam)

    def _find(self, resource, lid):
        rec = self.records[resource]
        for i, l in enumerate(rec["leases"]):
            if l["id"] == lid:
                return rec, i
        raise KeyError(f"no lease {lid} on {resource}")

    # ops
    def apply(self, holder, name, instance, created_at, now, ops):
        """Applies a body's ops, admitted at T = now; returns the leases it
        created, in op order (tickets are no leases). Fills in, in the op
        dicts, what a proposal leaves to the planner for the queue's ops: a
        ticket's `behind`, a renewal's `prev_expires_at`, and the
        `expires_at` of another holder's ticket it drops."""
        created = []
        for i, op in enumerate(ops):
            kind = op["op"]
            if kind in ("ticket", "ticket-renew", "ticket-drop"):
                self._queue_op(holder, name, instance, created_at, i, op)
                continue
            if kind == "claim":
                created.append(self._claim(holder, name, instance, i, created_at, now, op))
            elif kind == "sem-acquire":
                created.append(self._sem_acquire(holder, name, instance, i, created_at, now, op))
            elif kind == "extend":
                res = "sem:" + op["sem"] if "sem" in op else "path:" + path_key(op["path"])
                rec, j = self._find(res, op["lease"])
                lease = rec["leases"][j]
                lease["expires_at"] = op["expires_at"]
                if rec["kind"] == "path":
                    self._extend_lease_effects(rec["name"], lease)
            elif kind in ("release", "sem-release"):
                res = "sem:" + op["sem"] if kind == "sem-release" else "path:" + path_key(op["path"])
                self._remove(res, op["lease"])
            elif kind == "handoff":
                # FORMAT.md "Hand-off": the signer's lease ends; the receiver holds the
                # resource at the next generation, as if it had claimed it.
                res = "sem:" + op["sem"] if "sem" in op else "path:" + path_key(op["path"])
                rec, j = self._find(res, op["lease"])
                mode = rec["leases"][j].get("mode")
                self._remove(res, op["lease"])
                terms = {k: op[k] for k in ("expires_at", "note") if k in op}
                if "sem" in op:
                    rec["generation"] += 1
                    lease = {"id": lease_id(instance, i, res), "holder": op["to"], "name": op["to_name"],
                             "generation": rec["generation"], "expires_at": op["expires_at"],
                             "created_at": created_at}
                    if "note" in op:
                        lease["note"] = op["note"]
                    rec["leases"].append(lease)
                    created.append(lease)
                else:
                    created.append(self._claim(op["to"], op["to_name"], instance, i, created_at, now,
                                               dict(terms, path=op["path"], mode=mode)))
            elif kind == "sweep":
                for s in op["leases"]:
                    self._remove("sem:" + s["sem"] if "sem" in s else "path:" + path_key(s["path"]), s["lease"])
            else:
                raise ValueError(f"unknown op {kind}")
        return created

    def _queue_op(self, holder, name, instance, created_at, i, op):
        """FORMAT.md "Tickets": a ticket is appended with the next seq; a renewal moves its expiry;
        a drop removes it. The record stays after its last ticket (its seq goes on)."""
        kind = op["op"]
        if kind == "ticket":
            op.setdefault("behind", self.behind(op["wants"], holder))
            q = self.records.setdefault(QUEUE, {"kind": "queue", "name": "tickets", "seq": 0, "tickets": []})
            q["seq"] += 1
            q["tickets"].append({"id": ticket_id(instance, i), "holder": holder, "name": name, "seq": q["seq"],
                                 "expires_at": op["expires_at"], "created_at": created_at,
                                 "wants": json.loads(json.dumps(op["wants"])), "behind": list(op["behind"])})
            return
        t = self._ticket(op["ticket"])
        if kind == "ticket-renew":
            op.setdefault("prev_expires_at", t["expires_at"])
            t["expires_at"] = op["expires_at"]
            return
        if t["holder"] != holder:
            op.setdefault("expires_at", t["expires_at"])
        self.records[QUEUE]["tickets"].remove(t)

    def _remove(self, resource, lid):
        rec, j = self._find(resource, lid)
        lease = rec["leases"].pop(j)
        if rec["kind"] == "path":
            self._remove_lease_effects(rec["name"], lease)
            self._drop_if_empty(resource)

    def _claim(self, holder, name, instance, i, created_at, now, op):
        key = path_key(op["path"])
        res = "path:" + key
        rec = self._path_record(key)
        excl = op["mode"] == "exclusive"
        # Expired leases on this very path that the new claim conflicts with
        # (or the holder's own) are replaced: a reclaim.
        intent = op["mode"] == "intent"
        for old in [l for l in rec["leases"] if l["expires_at"] < now and
                    (l["holder"] == holder or (not intent and l["mode"] != "intent" and
                                               (excl or l["mode"] == "exclusive")))]:
            rec["leases"].remove(old)
            self._remove_lease_effects(key, old)
        # FORMAT.md "Intent": a lock replaces its holder's own (live) intent on the path.
        for old in [l for l in rec["leases"] if l["holder"] == holder and l["mode"] == "intent" and not intent]:
            rec["leases"].remove(old)
            self._remove_lease_effects(key, old)
        rec["generation"] += 1
        lease = {"id": lease_id(instance, i, res), "holder": holder, "name": name, "mode": op["mode"],
                 "generation": rec["generation"], "expires_at": op["expires_at"], "created_at": created_at,
                 "path": op["path"]}
        if "note" in op:
            lease["note"] = op["note"]
        rec["leases"].append(lease)
        rec["leases"].sort(key=lambda l: l["generation"])
        self._add_lease_effects(key, lease)
        return lease

    def _sem_acquire(self, holder, name, instance, i, created_at, now, op):
        res = "sem:" + op["sem"]
        rec = self.records.setdefault(res, {"kind": "sem", "name": op["sem"], "limit": op["limit"],
                                            "generation": 0, "leases": []})
        # docs/CLI.md "Semaphores": expired slots are reclaimed by the next acquire, full or not.
        rec["leases"] = [l for l in rec["leases"] if l["expires_at"] >= now]
        rec["generation"] += 1
        lease = {"id": lease_id(instance, i, res), "holder": holder, "name": name,
                 "generation": rec["generation"], "expires_at": op["expires_at"], "created_at": created_at}
        if "note" in op:
            lease["note"] = op["note"]
        rec["leases"].append(lease)
        return lease


# -- Git objects through real git plumbing

class Git:
    """Writes blobs and trees into a repository with `git hash-object -w`
    and `git mktree`, caching identical objects."""

    def __init__(self, path):
        self.path = path
        self._blobs = {}
        self._trees = {}

    def run(self, *args, data=None, env=None):
        out = subprocess.run(["git", "-C", self.path, *args], input=data, capture_output=True,
                             env=dict(os.environ, LC_ALL="C", **(env or {})))
        if out.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {out.stderr.decode(errors='replace')}")
        return out.stdout.decode().strip()

    def ref(self, name):
        """The commit a ref points at, or None when it does not exist."""
        out = subprocess.run(["git", "-C", self.path, "rev-parse", "-q", "--verify", name + "^{commit}"],
                             capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else None

    def blob(self, data):
        if data not in self._blobs:
            self._blobs[data] = self.run("hash-object", "-w", "--stdin", data=data)
        return self._blobs[data]

    def tree(self, entries):
        """entries: {name: ("blob"|"tree", oid)}."""
        text = "".join(f"{'100644' if t == 'blob' else '040000'} {t} {oid}\t{name}\n"
                       for name, (t, oid) in sorted(entries.items()))
        if text not in self._trees:
            self._trees[text] = self.run("mktree", data=text.encode())
        return self._trees[text]

    def nested(self, files):
        """files: {(component, ...): blob oid} -> tree oid."""
        top = {}
        sub = {}
        for path, oid in files.items():
            if len(path) == 1:
                top[path[0]] = ("blob", oid)
            else:
                sub.setdefault(path[0], {})[path[1:]] = oid
        for name, inner in sub.items():
            top[name] = ("tree", self.nested(inner))
        return self.tree(top)

    def state_tree(self, policy, records, fmt=2):
        """The state tree (FORMAT.md "State tree") of a policy and records."""
        files = {("format.json",): self.blob(canon({"format": FORMATS[fmt]})),
                 ("policy.json",): self.blob(canon(policy))}
        for rec in records:
            files[tuple(record_location(record_key(rec), fmt))] = self.blob(canon(rec))
        return self.nested(files)

    def commit(self, tree, parent, message, t_ms):
        """A transition commit (FORMAT.md "Commit")."""
        when = f"{t_ms // 1000} +0000"
        env = {"GIT_AUTHOR_NAME": COMMITTER[0], "GIT_AUTHOR_EMAIL": COMMITTER[1], "GIT_AUTHOR_DATE": when,
               "GIT_COMMITTER_NAME": COMMITTER[0], "GIT_COMMITTER_EMAIL": COMMITTER[1],
               "GIT_COMMITTER_DATE": when}
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        return self.run(*args, env=env)


def signed_packet(packet, key):
    """txn/packet.json: {"packet":PACKET,"sig":HEX} with the Ed25519
    signature over "gitlocks/packet/v1\\0" + canonical PACKET."""
    sig = key.sign(PACKET_PREFIX + canon(packet)).signature
    return canon({"packet": packet, "sig": sig.hex()})
