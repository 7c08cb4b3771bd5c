"""The independent reference verifier (refverify.py, written from
docs/FORMAT.md) against `git-locks --json verify`: on stores made by the real
CLI (claims, shared/exclusive, extend, release, sweep, semaphores, families,
batch, guard time with the test notary, a PRIVATE store; the waiters' queue,
as `claim --wait` writes it and, for the transitions a waiter makes only at
moments of its own choosing, as golden_queue_writer.py writes it) and on
histories tampered with Git plumbing, both must give every commit the
same ok/invalid, and on tampered stores both must flag the tampered commit.
Where only the reference's own rules can catch a forgery (exclusion, foreign
effects, canonical bytes, the queue's rules), its reason is asserted too: the
reference can fail."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))

import nacl.signing  # noqa: E402  Debian's python3-nacl (toolchains/setup.sh): required, never skipped

import golden_queue_writer  # noqa: E402
import refverify  # noqa: E402
import test_verify  # noqa: E402  its tamper corpus is replayed below with both verifiers
from support import CliTest, Repo, T0, skip  # noqa: E402
from test_guard_time import Notary  # noqa: E402
from test_verify import Plumbing  # noqa: E402

REFVERIFY = os.path.join(HERE, "refverify.py")
canon = refverify.canon


def seed_of(path):
    """The Ed25519 seed of an actor key file (JSON) or a notary key file (64 hex)."""
    with open(path) as f:
        text = f.read().strip()
    return bytes.fromhex(json.loads(text)["seed"] if text.startswith("{") else text)


def signed_packet(seed, packet):
    sig = nacl.signing.SigningKey(seed).sign(refverify.PACKET_DOMAIN + canon(packet)).signature
    return canon({"packet": packet, "sig": sig.hex()})


def signed_attestation(seed, att):
    sig = nacl.signing.SigningKey(seed).sign(refverify.ATTESTATION_DOMAIN + canon(att)).signature
    return canon({"attestation": att, "sig": sig.hex()})


class Agreement:
    """Both verifiers over one repository; the same verdict for every commit."""

    def both(self, repo, allow_test_clock=False, actor="dave"):
        # verify remembers a fully valid tip (fork detection); the reference
        # has no such memory, so each comparison starts without it.
        # Nor the trust checkpoint the writers keep (a rewrite below it is a
        # fork too): `--full` replays from the root.
        for memo in (os.path.join(repo.gitdir(), "git-locks", "verified-tip"),
                     os.path.join(repo.gitdir(), "git-locks", "trust", "local.json")):
            if os.path.exists(memo):
                os.remove(memo)
        flag = ["--allow-test-clock"] if allow_test_clock else []
        prod = repo.run(actor, "--json", *flag, "verify", "--full")
        self.assertIn(prod.code, (0, 1), prod)
        pv = [json.loads(line) for line in prod.out.splitlines()]
        rv = self.agree(repo, pv, prod.code, flag)
        return pv, rv

    def agree(self, repo, pv, product_exit, flag=()):
        """Runs the reference; asserts it gives every commit of `pv` the same ok/invalid."""
        ref = subprocess.run([sys.executable, REFVERIFY, *flag, repo.path], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(ref.stderr, "")
        rv = [json.loads(line) for line in ref.stdout.splitlines()]
        chain = subprocess.run(["git", "-C", repo.path, "rev-list", "--reverse", "--first-parent",
                                "refs/locks/state"], capture_output=True, text=True, check=True).stdout.split()
        self.assertEqual([v["commit"] for v in pv], chain)
        self.assertEqual([v["commit"] for v in rv], chain)
        table = "\n".join("%d %s product=%s/%s reference=%s/%s" % (
            i, c[:12], p["ok"], p.get("reason"), r["ok"], r.get("reason"))
            for i, (c, p, r) in enumerate(zip(chain, pv, rv)))
        self.assertEqual([v["ok"] for v in pv], [v["ok"] for v in rv], "verdicts differ:\n" + table)
        self.assertEqual(ref.returncode, 0 if all(v["ok"] for v in rv) else 1, ref)
        if product_exit is not None:
            self.assertEqual(product_exit, ref.returncode)
        return rv

    def assertBothFlag(self, repo, index, reason=None, **kw):
        """Both verifiers: every commit before `index` valid, `index` invalid (the reference with `reason`)."""
        pv, rv = self.both(repo, **kw)
        self.assertEqual([v["ok"] for v in rv[:index + 1]], [True] * index + [False],
                         [(v["ok"], v.get("reason")) for v in rv])
        if reason:
            self.assertEqual(rv[index]["reason"], reason, rv[index])
        self.assertTrue(pv[index]["reason"] and rv[index]["detail"])
        return pv, rv


class Scope(unittest.TestCase):
    """What Repo and Notary need of a test case, for a store shared by a whole class."""

    def __init__(self, cls):
        super().__init__()
        self.addCleanup = cls.addClassCleanup


class SharedStore(Agreement, CliTest):
    """One store per class, built once by `build(scope)`; every test starts from its recorded history."""

    @classmethod
    def setUpClass(cls):
        cls.r = Repo(Scope(cls))
        cls.r.now = T0
        cls.build(Scope(cls))
        cls.tip = cls.r.tip()

    def setUp(self):
        self.r.git("update-ref", "refs/locks/state", self.tip)
        self.f = Forge(self, self.r)

    @classmethod
    def init_with(cls, policy):
        """The owner creates the store with `policy` (written to a policy file)."""
        pfile = os.path.join(cls.r.root, "policy.json")
        with open(pfile, "w") as f:
            json.dump(policy, f)
        cls.run_ok("owner", "init", "--policy", pfile)

    @classmethod
    def run_ok(cls, actor, *args, env=None, expect=0):
        res = cls.r.run(actor, *args, env=env)
        if res.code != expect or (expect == 0 and res.err):
            raise AssertionError("%s %s: %r" % (actor, args, res))
        return res


class Forge:
    """Rewrites of a recorded history with Git plumbing."""

    def __init__(self, tc, repo):
        self.tc = tc
        self.repo = repo
        self.p = Plumbing(repo)
        self.ids = self.p.chain()
        self.trees = [self.p.tree_of(c) for c in self.ids]
        self.messages = [self.p.message(c) for c in self.ids]
        self.original = list(self.trees)

    def reset(self):
        self.trees = list(self.original)

    def packet(self, i):
        return json.loads(self.p.cat(self.p.get(self.trees[i], "txn/packet.json")))["packet"]

    def record_path(self, key):
        h = hashlib.sha256(key.encode()).hexdigest()
        return "state/records/%s/%s/%s.json" % (h[:2], h[2:4], h)

    def record(self, i, key):
        return json.loads(self.p.cat(self.p.get(self.trees[i], self.record_path(key))))

    def put(self, tree, path, data):
        return self.p.put(tree, path, self.p.blob(data))

    def with_record(self, tree, key, rec):
        return self.put(tree, self.record_path(key), canon(rec))

    def resign(self, tree, packet, actor):
        """`tree` with its packet's result set to its own state and signed by `actor`."""
        packet["result"] = self.p.get(tree, "state")
        return self.put(tree, "txn/packet.json", signed_packet(seed_of(self.repo.key(actor)), packet))

    def publish(self, trees=None, parents=None, messages=None):
        """A new chain (root first) with these trees; moves the ref; returns the commit ids."""
        trees = trees or self.trees
        messages = messages or self.messages + ["forged"] * (len(trees) - len(self.messages))
        return self.p.rebuild(trees, messages)


class LifecycleTest(SharedStore):
    """One public store with every kind of transition, then tampered copies of its history."""

    POLICY = {"families": [{"name": "db", "policy": "exclusive", "members": ["db/schema.sql", "db/migrations/"]},
                           {"name": "gen", "policy": "shared", "members": ["tools/gen/"]}]}
    NOTE = "q\"\\\x01\x1f\x7f\u2028\u00e9\U0001F600/"  # every escaping rule of the canonical form

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.init_with(cls.POLICY)

        def step(actor, *args, dt=1000, expect=0):
            r.now += dt
            cls.run_ok(actor, *args, expect=expect)

        step("alice", "claim", "--ttl", "60s", "--note", cls.NOTE, "src/a.c")              # 1
        step("bob", "claim", "--mode", "shared", "--ttl", "60s", "docs/")                   # 2
        step("carol", "claim", "--mode", "shared", "--ttl", "60s", "docs/x.md")             # 3
        step("alice", "extend", "--ttl", "90s", "src/a.c")                                  # 4
        step("carol", "sem", "acquire", "ci", "--limit", "2", "--ttl", "30s")               # 5
        step("bob", "sem", "acquire", "ci", "--limit", "2", "--ttl", "30s")                 # 6
        step("dave", "sem", "acquire", "ci", "--limit", "2", "--ttl", "30s", expect=1)      # full
        step("alice", "claim", "--ttl", "10s", "db/schema.sql")                             # 7
        step("bob", "claim", "--ttl", "10s", "db/migrations/1.sql", expect=1)               # family db
        step("bob", "claim", "--mode", "shared", "--ttl", "10s", "tools/gen/x")             # 8
        step("alice", "claim", "--mode", "shared", "--ttl", "10s", "tools/")                # 9
        step("carol", "claim", "--ttl", "10s", "tools/", expect=1)                          # held / family
        batch = os.path.join(r.root, "batch.jsonl")
        with open(batch, "w") as f:
            f.write('{"op":"claim","path":"lib/","ttl":"20s"}\n{"op":"sem-acquire","sem":"gpu","limit":1}\n'
                    '{"op":"release","path":"docs/"}\n')
        step("bob", "batch", "--ttl", "15s", batch)                                         # 10
        step("dave", "sweep", dt=31000)                                                     # 11
        step("dave", "claim", "--ttl", "10s", "db/")                                        # 12
        step("carol", "claim", "--ttl", "20s", "docs/x.md", dt=30000)                       # 13 reclaim
        step("alice", "release", "src/a.c")                                                 # 14

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 15)
        self.assertEqual(self.f.packet(13)["body"]["ops"][0]["reclaims"][0]["generation"], 1)

    def test_untouched_history_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertTrue(all(v["ok"] for v in rv), rv)
        self.assertEqual([v["command"] for v in pv],
                         ["init", "claim", "claim", "claim", "extend", "sem-acquire", "sem-acquire", "claim",
                          "claim", "claim", "batch", "sweep", "claim", "claim", "release"])
        # The reference's own encoder reproduces the stored note byte for byte.
        rec = self.f.record(1, "path:src/a.c")
        self.assertEqual(rec["leases"][0]["note"], self.NOTE)
        raw = self.f.p.cat(self.f.p.get(self.f.trees[1], self.f.record_path("path:src/a.c")))
        self.assertEqual(canon(rec), raw)
        self.assertIn(b'\\u0001\\u001f\x7f\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80/', raw)

    def test_tampered_state_blob(self):
        f = self.f
        rec = f.record(4, "path:src/a.c")
        rec["leases"][0]["expires_at"] += 1
        f.trees[4] = f.with_record(f.trees[4], "path:src/a.c", rec)
        f.publish()
        pv, rv = self.assertBothFlag(self.r, 4, "result-mismatch")
        self.assertEqual((pv[4]["reason"], pv[5]["reason"]), ("state-mismatch", "source-mismatch"))

    def test_forged_unsigned_commit(self):
        # A commit that removes alice's live lease, with a packet nobody signed.
        f = self.f
        tip = f.trees[-1]
        state = f.p.put(f.p.get(tip, "state"), f.record_path("path:db")[len("state/"):], None)
        packet = f.packet(14)
        packet.update(source=f.p.get(tip, "state"), result=state, instance="ab" * 32)
        tree = f.p.put(tip, "state", state, kind="tree")
        tree = f.put(tree, "txn/packet.json", canon({"packet": packet, "sig": "00" * 64}))
        f.publish(f.trees + [tree])
        self.assertBothFlag(self.r, 15, "bad-signature")

    def test_packet_resigned_by_another_key(self):
        f = self.f
        tree = f.trees[4]
        f.trees[4] = f.put(tree, "txn/packet.json", signed_packet(seed_of(self.r.key("bob")), f.packet(4)))
        f.publish()
        pv, rv = self.assertBothFlag(self.r, 4, "bad-signature")
        self.assertEqual(pv[4]["reason"], "bad-signature")
        self.assertTrue(all(v["ok"] for v in rv[5:]))

    def test_packet_resigned_as_another_actor(self):
        # bob's valid signature on alice's extend: only re-planning (product)
        # or the effect rule (reference) can see that bob touched alice's lease.
        f = self.f
        packet = f.packet(4)
        packet["actor"] = nacl.signing.SigningKey(seed_of(self.r.key("bob"))).verify_key.encode().hex()
        f.trees[4] = f.resign(f.trees[4], packet, "bob")
        f.publish()
        pv, rv = self.assertBothFlag(self.r, 4, "foreign-effect")
        self.assertEqual(pv[4]["reason"], "replay-refused")

    def test_replayed_packet(self):
        # alice's first claim, commit and all, published again at the tip.
        f = self.f
        f.publish(f.trees + [f.trees[1]])
        self.assertBothFlag(self.r, 15, "source-mismatch")

    def test_broken_chain(self):
        f = self.f
        keep = [i for i in range(15) if i != 6]
        f.p.rebuild([f.trees[i] for i in keep], [f.messages[i] for i in keep])
        self.assertBothFlag(self.r, 6, "source-mismatch")
        # A merge: the tip with a second parent.
        ids = f.publish()
        merge = f.p.git("commit-tree", f.trees[-1], "-p", ids[-2], "-p", ids[3], "-m", "merge").decode().strip()
        f.p.git("update-ref", "refs/locks/state", merge)
        self.assertBothFlag(self.r, 14, "parents")

    def test_non_canonical_packet_with_valid_signature(self):
        f = self.f
        raw = f.p.cat(f.p.get(f.trees[2], "txn/packet.json"))
        spaced = json.dumps(json.loads(raw), sort_keys=True).encode()  # ", " and ": "
        f.trees[2] = f.put(f.trees[2], "txn/packet.json", spaced)
        f.publish()
        self.assertBothFlag(self.r, 2, "non-canonical")

    def test_forged_exclusive_under_shared(self):
        # carol's shared claim below bob's live shared docs/ made exclusive, in
        # the body and the state, signed by carol: the exclusion invariant breaks.
        f = self.f
        packet = f.packet(3)
        packet["body"]["ops"][0]["mode"] = "exclusive"
        rec = f.record(3, "path:docs/x.md")
        rec["leases"][0]["mode"] = "exclusive"
        tree = f.with_record(f.trees[3], "path:docs/x.md", rec)
        f.trees[3] = f.resign(tree, packet, "carol")
        f.publish()
        self.assertBothFlag(self.r, 3, "exclusion")

    def test_forged_semaphore_over_limit(self):
        f = self.f
        packet = f.packet(6)
        packet["body"]["ops"][0]["limit"] = 1
        rec = f.record(6, "sem:ci")
        rec["limit"] = 1
        f.trees[6] = f.resign(f.with_record(f.trees[6], "sem:ci", rec), packet, "bob")
        f.publish()
        self.assertBothFlag(self.r, 6, "exclusion")

    def test_forged_exclusive_claim_in_shared_family(self):
        # alice's shared tools/ (a member's ancestor, bob's tools/gen/x live below) made exclusive.
        f = self.f
        packet = f.packet(9)
        packet["body"]["ops"][0]["mode"] = "exclusive"
        rec = f.record(9, "path:tools")
        rec["leases"][0]["mode"] = "exclusive"
        f.trees[9] = f.resign(f.with_record(f.trees[9], "path:tools", rec), packet, "alice")
        f.publish()
        self.assertBothFlag(self.r, 9, "exclusion")

    def test_forged_interval_and_claimed_time(self):
        f = self.f
        for index, change, reason in [
                (1, lambda p: p["interval"].__setitem__(1, p["interval"][1] + 1), "interval-mismatch"),
                (11, lambda p: p.__setitem__("claimed_at_ms", p["interval"][0] - 1), "time-outside-interval")]:
            with self.subTest(reason):
                g = f
                g.reset()
                packet = g.packet(index)
                change(packet)
                actor = {1: "alice", 11: "dave"}[index]
                g.trees[index] = g.put(g.trees[index], "txn/packet.json",
                                       signed_packet(seed_of(self.r.key(actor)), packet))
                g.publish()
                self.assertBothFlag(self.r, index, reason)

    def test_packet_fields(self):
        # Alice's claim (commit 7) re-signed by alice after one change: each must be refused.
        sha = hashlib.sha256(b"x").hexdigest()
        for name, change, reason in [
                ("unknown field", lambda p: p.update(x=1), "bad-packet"),
                ("no claimed_at_ms", lambda p: p.pop("claimed_at_ms"), "bad-packet"),
                ("format", lambda p: p.update(format="gitlocks-packet-v2"), "unknown-format"),
                ("store", lambda p: p.update(store=sha), "store-mismatch"),
                ("policy hash", lambda p: p.update(policy_hash=sha), "policy-mismatch"),
                ("epoch", lambda p: p.update(epoch=1), "bad-epoch"),
                ("action", lambda p: p.update(action="extend"), "action-mismatch"),
                # `command` names the CLI command (informational): a claim
                # recorded under another command name is still valid to both.
                ("command", lambda p: p.update(command="sweep"), None)]:
            with self.subTest(name):
                self.f.reset()
                packet = self.f.packet(7)
                change(packet)
                self.f.trees[7] = self.f.resign(self.f.trees[7], packet, "alice")
                self.f.publish()
                if reason:
                    self.assertBothFlag(self.r, 7, reason)
                else:
                    self.assertTrue(all(v["ok"] for v in self.both(self.r)[1]))

    def test_reclaim_guard_without_after(self):
        # carol's reclaim (commit 13) without its `after`, the interval widened
        # to the TTL window alone: the reclaimed lease's expiry still bounds T.
        # Without `after` the action is `claim` (docs/FORMAT.md): the forger
        # says so, so that only the interval is wrong.
        packet = self.f.packet(13)
        op = packet["body"]["ops"][0]
        del op["after"]
        packet["action"] = "claim"
        packet["interval"][0] = op["expires_at"] - 3_600_000
        self.f.trees[13] = self.f.resign(self.f.trees[13], packet, "carol")
        self.f.publish()
        self.assertBothFlag(self.r, 13, "interval-mismatch")

    def test_stolen_lease_by_sweep(self):
        # dave's sweep also drops alice's live src/a.c lease from the state
        # (not from the body), signed by dave: only the effect rule sees it.
        f = self.f
        rec = f.record(11, "path:src/a.c")
        self.assertGreater(rec["leases"][0]["expires_at"], f.packet(11)["claimed_at_ms"])
        rec["leases"] = []
        f.trees[11] = f.resign(f.with_record(f.trees[11], "path:src/a.c", rec), f.packet(11), "dave")
        f.publish()
        pv, rv = self.assertBothFlag(self.r, 11, "foreign-effect")
        self.assertEqual(pv[11]["reason"], "result-mismatch")


class ReclaimWithoutReclaimsTest(SharedStore):
    """A claim admitted only after a conflicting lease expired is the action
    "reclaim" even when it replaces no lease of its own path (docs/FORMAT.md
    "action"): an expired lease below a directory, an expired family holder."""

    POLICY = {"families": [{"name": "db", "policy": "exclusive", "members": ["db/a.sql", "db/b.sql"]}]}

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.init_with(cls.POLICY)
        for dt, actor, path in [(1000, "alice", "e/x"), (11000, "bob", "e/"),              # 1, 2
                                (1000, "alice", "db/a.sql"), (11000, "bob", "db/b.sql")]:  # 3, 4
            r.now += dt
            cls.run_ok(actor, "claim", "--ttl", "10s", path)

    def test_both_verifiers_admit_it(self):
        f = self.f
        self.assertEqual(len(f.ids), 5)
        for i, expired in [(2, 1), (4, 3)]:
            op = f.packet(i)["body"]["ops"][0]
            self.assertEqual(f.packet(i)["action"], "reclaim")
            self.assertNotIn("reclaims", op)  # the expired lease is on another path
            self.assertEqual(op["after"], f.packet(expired)["body"]["ops"][0]["expires_at"])
        pv, rv = self.both(self.r)
        self.assertEqual([v["ok"] for v in rv], [True] * 5, rv)


class HandoffTest(SharedStore):
    """Hand-offs (docs/FORMAT.md "Hand-off"): a path and a semaphore slot handed
    on by their holders, both verifiers agree; a hand-off re-signed by one who
    does not hold the lease, and one whose state gives the lease to another key
    than the body names, are caught by the reference's effects rule."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.init_with({})
        bob = cls.run_ok("bob", "--json", "whoami").json["actor"]

        def step(actor, *args):
            r.now += 1000
            return cls.run_ok(actor, *args)
        step("alice", "claim", "--ttl", "60s", "src/a.c")                                   # 1
        step("alice", "handoff", "src/a.c", "--to", bob, "--to-name", "bob")                # 2
        step("carol", "sem", "acquire", "ci", "--limit", "2", "--ttl", "30s")               # 3
        slot = [l for l in step("carol", "--json", "status").json["leases"] if l["resource"] == "sem:ci"]
        step("carol", "handoff", "--to", bob, "--ttl", "20s", slot[0]["lease"])             # 4, by lease id
        step("bob", "release", "src/a.c")                                                   # 5
        cls.bob = bob

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 6)

    def test_untouched_history_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertEqual([v["ok"] for v in rv], [True] * 6, rv)
        self.assertEqual([v["command"] for v in pv], ["init", "claim", "handoff", "sem-acquire", "handoff", "release"])
        for i, key in [(2, "path:src/a.c"), (4, "sem:ci")]:
            self.assertEqual(self.f.packet(i)["action"], "handoff")
            holders = [l["holder"] for l in self.f.record(i, key)["leases"]]
            self.assertEqual(holders, [self.bob])

    def test_handoff_signed_by_one_who_does_not_hold_the_lease(self):
        f = self.f
        packet = f.packet(2)
        packet["actor"] = refverify_key(self.r, "carol")
        f.trees[2] = f.resign(f.trees[2], packet, "carol")
        f.publish()
        self.assertBothFlag(self.r, 2, "foreign-effect")

    def test_handoff_whose_state_gives_the_lease_to_another_key(self):
        f = self.f
        rec = f.record(2, "path:src/a.c")
        rec["leases"][0]["holder"] = refverify_key(self.r, "carol")
        f.trees[2] = f.resign(f.with_record(f.trees[2], "path:src/a.c", rec), f.packet(2), "alice")
        f.publish(f.trees[:3])
        self.assertBothFlag(self.r, 2, "foreign-effect")


class IntentTest(SharedStore):
    """Intents (docs/FORMAT.md "Intent") lock nothing: both verifiers accept
    intents over and under locks; an intent re-labelled exclusive (body and
    state, re-signed) over another holder's live lock breaks exclusion."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.init_with({})
        for actor, args in [("alice", ["claim", "--ttl", "60s", "src/a.c"]),                    # 1
                            ("bob", ["claim", "--mode", "intent", "--ttl", "60s", "src/a.c"]),    # 2
                            ("bob", ["claim", "--mode", "intent", "--ttl", "60s", "src/"]),       # 3
                            ("carol", ["claim", "--ttl", "60s", "src/b.c"])]:                    # 4
            r.now += 1000
            cls.run_ok(actor, *args)

    def test_untouched_history_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertEqual([v["ok"] for v in rv], [True] * 5, rv)
        self.assertEqual(self.f.record(2, "path:src/a.c")["leases"][1]["mode"], "intent")
        self.assertEqual(self.f.record(3, "path:src")["below"][refverify_key(self.r, "bob")]["i"], 1)

    def test_intent_relabelled_exclusive_over_a_live_lock(self):
        f = self.f
        packet = f.packet(2)
        packet["body"]["ops"][0]["mode"] = "exclusive"
        rec = f.record(2, "path:src/a.c")
        rec["leases"][1]["mode"] = "exclusive"
        f.trees[2] = f.resign(f.with_record(f.trees[2], "path:src/a.c", rec), packet, "bob")
        f.publish(f.trees[:3])
        self.assertBothFlag(self.r, 2, "exclusion")


class TicketTest(SharedStore):
    """The waiters' queue (docs/FORMAT.md "Tickets"). The waiting loop takes, renews and drops tickets
    when it chooses (WaitingLoopTest) and `git-locks batch` takes no queue op, so here the tickets,
    renewals and drops are written at chosen moments by golden_queue_writer.py (git plumbing, PyNaCl
    and the model of golden_store.py) and everything else by the real CLI, whose planner respects the
    queue it finds: a claim that passes a blocked ticket, queued-behind refusals of a claim and of a
    sem-acquire, admissions after lapsed tickets. Both verifiers agree commit by commit; then
    tampered copies (passes dropped or moved, a forged `behind`, a ticket given to another holder,
    a renewal or a drop by another, admissions ahead of a live ticket, a ticket closing a cycle)
    are flagged by both, the reference with the exact reason."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.init_with({})
        for actor in ("alice", "bob", "carol", "dave"):
            cls.run_ok(actor, "whoami")  # creates the key file
        cls.queued = {}

        def step(actor, *args, expect=0):
            r.now += 1000
            return cls.run_ok(actor, *args, expect=expect)

        def queue(actor, *ops):
            r.now += 1000
            cls.queue_op(actor, *ops)
        S = 1000
        step("alice", "claim", "--ttl", "60s", "src/a.c")                                     # 1 alice until 61 s
        queue("bob", ticket([want("src/a.c"), want("src/b.c")], r.now + 30 * S))           # 2 behind alice
        step("carol", "claim", "--ttl", "60s", "src/b.c")                                     # 3 passes bob's ticket
        queue("bob", {"op": "ticket-renew", "ticket": cls.ticket_of(2), "expires_at": r.now + 1000 + 30 * S})  # 4
        step("alice", "release", "src/a.c")                                                   # 5
        cls.refusals = [step("dave", "--json", "claim", "--ttl", "60s", "src/a.c", expect=1)]  # bob is not blocked
        step("carol", "sem", "acquire", "ci", "--limit", "1", "--ttl", "60s")                 # 6
        queue("dave", ticket([{"sem": "ci"}], r.now + 1000 + 5 * S))                         # 7 until 13 s
        step("carol", "sem", "release", "ci")                                                 # 8
        cls.refusals.append(step("alice", "--json", "sem", "acquire", "ci", "--limit", "1", "--ttl", "30s",
                                 expect=1))                                                   # dave's live ticket
        step("bob", "claim", "--ttl", "60s", "src/a.c")                                       # 9 his own place
        queue("bob", {"op": "ticket-drop", "ticket": cls.ticket_of(2)})                      # 10
        r.now += 1000
        step("alice", "sem", "acquire", "ci", "--limit", "1", "--ttl", "30s")                 # 11 after dave's lapse
        queue("alice", {"op": "ticket-drop", "ticket": cls.ticket_of(7)})                    # 12 dave's, lapsed
        queue("dave", ticket([want("docs/", "shared")], r.now + 1000 + 5 * S))               # 13 until 21 s
        r.now += 5000
        step("carol", "claim", "--ttl", "60s", "docs/x.md")                                   # 14 reclaim
        queue("bob", {"op": "ticket-drop", "ticket": cls.ticket_of(13)},
              ticket([want("src/b.c")], r.now + 1000 + 30 * S))                               # 15 behind carol

    @classmethod
    def queue_op(cls, actor, *ops):
        commit, packet = golden_queue_writer.publish(cls.r.path, seed_of(cls.r.key(actor)), actor, cls.r.now,
                                                     list(ops))
        return commit, packet

    @classmethod
    def ticket_of(cls, index):
        """The id of the ticket the commit at `index` took (its last op)."""
        chain = cls.r.git("rev-list", "--reverse", "refs/locks/state").split()
        packet = json.loads(cls.r.git("show", chain[index] + ":txn/packet.json"))["packet"]
        ops = packet["body"]["ops"]
        assert ops[-1]["op"] == "ticket", packet
        return hashlib.sha256(("%s\n%d\nqueue:tickets" % (packet["instance"], len(ops) - 1)).encode()).hexdigest()[:24]

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 16)

    def op(self, i, k=0):
        return self.f.packet(i)["body"]["ops"][k]

    def resign_with_interval(self, i, packet, actor):
        """Commit `i` with `packet`, its interval re-derived as a forger would (refverify's own
        derivation, so that only the rule under test can refuse it), signed by `actor`."""
        policy = json.loads(self.f.p.cat(self.f.p.get(self.f.trees[i - 1], "state/policy.json")))
        packet["interval"] = refverify.derive_interval(packet["body"], policy)
        self.assertLessEqual(packet["interval"][0], packet["claimed_at_ms"])
        self.assertLessEqual(packet["claimed_at_ms"], packet["interval"][1])
        self.f.trees[i] = self.f.resign(self.f.trees[i], packet, actor)

    def test_untouched_history_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertEqual([v["ok"] for v in rv], [True] * 16, rv)
        self.assertEqual([self.f.packet(i)["action"] for i in range(16)],
                         ["init", "claim", "ticket", "claim", "ticket-renew", "release", "sem-acquire", "ticket",
                          "sem-release", "claim", "ticket-drop", "sem-acquire", "ticket-drop", "ticket", "reclaim",
                          "ticket"])
        alice, bob, carol = (refverify_key(self.r, a) for a in ("alice", "bob", "carol"))
        # bob's ticket names alice, whose lease stood in its way; carol's claim passes it until
        # alice's lease expires, and that bounds the claim's interval.
        self.assertEqual(self.op(2)["behind"], [alice])
        claim = self.op(3)
        self.assertEqual(claim["passes"], [{"ticket": self.ticket_of(2), "until": self.op(1)["expires_at"]}])
        self.assertEqual(self.f.packet(3)["interval"][1], self.op(1)["expires_at"])
        # Once alice released, bob's live ticket holds the path: dave is refused; a full semaphore's
        # waiter holds the freed slot the same way.
        for res, code in zip(self.refusals, ("held-path", "full-semaphore")):
            self.assertEqual((res.error["code"], res.error["reason"]), (code, "queued-behind"), res)
        self.assertEqual(self.refusals[0].error["ticket"], self.ticket_of(2))
        # After a lapsed ticket: declared in `after` (a claim's action is then reclaim).
        self.assertEqual(self.op(11)["after"], self.op(7)["expires_at"])
        self.assertEqual(self.op(14)["after"], self.op(13)["expires_at"])
        self.assertEqual(self.op(12), {"op": "ticket-drop", "ticket": self.ticket_of(7),
                                       "expires_at": self.op(7)["expires_at"]})
        self.assertEqual(self.op(15, 1)["behind"], [carol])
        queue = self.f.record(15, "queue:tickets")
        self.assertEqual((queue["seq"], [t["holder"] for t in queue["tickets"]]), (4, [bob]))
        self.assertEqual(self.f.record(12, "queue:tickets"), {"kind": "queue", "name": "tickets", "seq": 2,
                                                               "tickets": []})

    def test_claim_whose_passes_were_dropped(self):
        packet = self.f.packet(3)
        del packet["body"]["ops"][0]["passes"]
        self.resign_with_interval(3, packet, "carol")
        self.f.publish()
        self.assertBothFlag(self.r, 3, "queued-behind")

    def test_claim_whose_pass_until_was_changed(self):
        for delta in (-1, 1):
            with self.subTest(delta=delta):
                self.f.reset()
                packet = self.f.packet(3)
                packet["body"]["ops"][0]["passes"][0]["until"] += delta
                self.resign_with_interval(3, packet, "carol")
                self.f.publish()
                self.assertBothFlag(self.r, 3, "passes-mismatch")

    def test_claim_passing_a_ticket_it_need_not_pass(self):
        # bob's own claim (9) declaring a pass of his own ticket: nothing to pass.
        packet = self.f.packet(9)
        packet["body"]["ops"][0]["passes"] = [{"ticket": self.ticket_of(2), "until": packet["claimed_at_ms"]}]
        self.resign_with_interval(9, packet, "bob")
        self.f.publish()
        self.assertBothFlag(self.r, 9, "passes-mismatch")

    def test_ticket_with_a_forged_behind(self):
        # bob's ticket without alice in `behind`, in the body and in the state alike.
        f = self.f
        packet = f.packet(2)
        packet["body"]["ops"][0]["behind"] = []
        queue = f.record(2, "queue:tickets")
        queue["tickets"][0]["behind"] = []
        f.trees[2] = f.resign(f.with_record(f.trees[2], "queue:tickets", queue), packet, "bob")
        f.publish()
        self.assertBothFlag(self.r, 2, "behind-mismatch")

    def test_ticket_whose_state_differs_from_its_op(self):
        carol = refverify_key(self.r, "carol")

        def second(q, seq):
            q["tickets"].append(dict(q["tickets"][0], seq=seq, id="ab" * 12))
            q["seq"] = 2
        for name, change, reason in [
                ("given to another holder", lambda q: q["tickets"][0].update(holder=carol), "queue-mismatch"),
                ("seq skipped", lambda q: (q.update(seq=2), q["tickets"][0].update(seq=2)), "queue-mismatch"),
                ("expiry moved", lambda q: q["tickets"][0].update(expires_at=q["tickets"][0]["expires_at"] + 1),
                 "queue-mismatch"),
                ("a second ticket", lambda q: second(q, 2), "queue-mismatch"),
                ("seqs out of order", lambda q: second(q, 1), "bad-record")]:
            with self.subTest(name):
                f = self.f
                f.reset()
                queue = f.record(2, "queue:tickets")
                change(queue)
                f.trees[2] = f.resign(f.with_record(f.trees[2], "queue:tickets", queue), f.packet(2), "bob")
                f.publish()
                self.assertBothFlag(self.r, 2, reason)

    def test_queue_changed_by_a_claim(self):
        # carol's claim (3) also drops bob's live ticket from the state.
        f = self.f
        queue = f.record(3, "queue:tickets")
        queue["tickets"] = []
        f.trees[3] = f.resign(f.with_record(f.trees[3], "queue:tickets", queue), f.packet(3), "carol")
        f.publish()
        self.assertBothFlag(self.r, 3, "queue-mismatch")

    def test_renewal_signed_by_another(self):
        packet = self.f.packet(4)
        packet["actor"] = refverify_key(self.r, "carol")
        self.f.trees[4] = self.f.resign(self.f.trees[4], packet, "carol")
        self.f.publish()
        self.assertBothFlag(self.r, 4, "foreign-effect")

    def test_drop_of_a_live_ticket_by_another(self):
        # bob's drop of his own ticket (10), signed by alice: without the ticket's expiry, and with it
        # (then T is outside the interval, as the ticket is live).
        for declare, reason in [(False, "foreign-effect"), (True, "time-outside-interval")]:
            with self.subTest(declare=declare):
                self.f.reset()
                packet = self.f.packet(10)
                packet["actor"] = refverify_key(self.r, "alice")
                if declare:
                    packet["body"]["ops"][0]["expires_at"] = self.op(4)["expires_at"]
                    packet["interval"] = [self.op(4)["expires_at"] + 1, refverify.MAX]
                self.f.trees[10] = self.f.resign(self.f.trees[10], packet, "alice")
                self.f.publish()
                self.assertBothFlag(self.r, 10, reason)

    def test_sem_acquire_ahead_of_a_live_ticket(self):
        # alice's sem-acquire (11) moved before dave's ticket lapsed, without `after`.
        packet = self.f.packet(11)
        del packet["body"]["ops"][0]["after"]
        packet["claimed_at_ms"] = self.f.packet(10)["claimed_at_ms"]
        self.assertLessEqual(packet["claimed_at_ms"], self.op(7)["expires_at"])
        self.resign_with_interval(11, packet, "alice")
        self.f.publish()
        self.assertBothFlag(self.r, 11, "queued-behind")

    def test_claim_ahead_of_a_live_ticket(self):
        # carol's reclaim (14) moved before dave's docs/ ticket lapsed, without `after`: a claim.
        packet = self.f.packet(14)
        del packet["body"]["ops"][0]["after"]
        packet["action"] = "claim"
        packet["claimed_at_ms"] = self.f.packet(13)["claimed_at_ms"]
        self.resign_with_interval(14, packet, "carol")
        self.f.publish()
        self.assertBothFlag(self.r, 14, "queued-behind")

    def test_ticket_closing_a_cycle(self):
        # bob holds src/a.c and waits for carol's src/b.c; carol's ticket for src/a.c would wait for
        # bob: a deadlock, which the writer (effects only) writes and both verifiers refuse. The
        # control: dave's ticket for src/b.c waits for carol and bob's older ticket, no cycle.
        self.r.now += 1000
        self.queue_op("dave", ticket([want("src/b.c", "shared")], self.r.now + 30000))
        pv, rv = self.both(self.r)
        self.assertEqual([v["ok"] for v in rv], [True] * 17, rv)
        self.r.now += 1000
        self.queue_op("carol", ticket([want("src/a.c")], self.r.now + 30000))
        pv, rv = self.assertBothFlag(self.r, 17, "deadlock")
        self.assertEqual(rv[17]["detail"].split()[-1], ",".join(refverify_key(self.r, a) for a in ("carol", "bob")))


class WaitingLoopTest(SharedStore):
    """The waiters' queue as the real waiting loop writes it (`claim --wait`, docs/CLI.md "Waiting"):
    a waiter's ticket, a claim refused queued-behind while the waiter is held still (SIGSTOP), its
    admission ([claim, ticket-drop]), a waiter for two paths passed by a claim of the free one while
    the other is held, then admitted for both, and a killed waiter's lapsed ticket dropped by sweep.
    Both verifiers agree on every commit; a pass removed from the claim is flagged by both."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.init_with({})
        for actor in ("alice", "bob", "carol", "dave"):
            cls.run_ok(actor, "whoami")  # creates the key file
        procs = []

        def waiter(actor, *paths):
            proc = r.popen(actor, "--json", "claim", "--ttl", "10m", "--wait=60s", *paths)
            procs.append(proc)
            deadline = time.monotonic() + 60
            while not any(t["holder_name"] == actor for t in cls.run_ok("owner", "--json", "status").json["queue"]):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("%s took no ticket: %r" % (actor, proc.communicate()))
                time.sleep(0.05)
            return proc

        def done(proc):
            out, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                raise AssertionError("waiter: exit %d %s" % (proc.returncode, err))
            return json.loads(out)
        try:
            cls.run_ok("bob", "claim", "--ttl", "10m", "src/a.c")                             # 1
            alice = waiter("alice", "src/a.c")                                                # 2 ticket
            alice.send_signal(signal.SIGSTOP)  # she cannot take the path when it frees
            try:
                cls.run_ok("bob", "release", "src/a.c")                                       # 3
                cls.refused = cls.run_ok("carol", "--json", "claim", "src/a.c", expect=1)     # queued behind her
                cls.run_ok("carol", "claim", "src/b.c")                                       # 4
            finally:
                alice.send_signal(signal.SIGCONT)
            cls.admitted = [done(alice)]                                                      # 5 claim + drop
            cls.run_ok("bob", "claim", "--ttl", "10m", "x")                                   # 6
            dave = waiter("dave", "x", "y")                                                   # 7 ticket behind bob
            cls.run_ok("carol", "claim", "--ttl", "10m", "y")                                 # 8 passes dave's
            cls.run_ok("bob", "release", "x")                                                 # 9
            cls.run_ok("carol", "release", "y")                                               # 10
            cls.admitted.append(done(dave))                                                   # 11 both + drop
            cls.run_ok("alice", "claim", "--ttl", "10m", "z")                                 # 12
            carol = waiter("carol", "z")                                                      # 13 ticket
            carol.kill()
            carol.communicate()
            r.now += 30_001  # after its expiry
            cls.run_ok("owner", "sweep")                                                      # 14 drops it
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 15)

    def test_untouched_history_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertEqual([v["ok"] for v in rv], [True] * 15, rv)
        f = self.f
        self.assertEqual([f.packet(i)["action"] for i in range(15)],
                         ["init", "claim", "ticket", "release", "claim", "claim", "claim", "ticket", "claim",
                          "release", "release", "batch", "claim", "ticket", "ticket-drop"])
        self.assertEqual((self.refused.error["code"], self.refused.error["reason"]), ("held-path", "queued-behind"))
        self.assertEqual([[op["op"] for op in a["ops"]] for a in self.admitted],
                         [["claim", "ticket-drop"], ["claim", "claim", "ticket-drop"]])
        dave = f.packet(7)["body"]["ops"][-1]
        self.assertEqual((dave["wants"], dave["behind"]),
                         ([{"path": "x", "mode": "exclusive"}, {"path": "y", "mode": "exclusive"}],
                          [refverify_key(self.r, "bob")]))
        self.assertEqual([p["until"] for p in f.packet(8)["body"]["ops"][0]["passes"]],
                         [f.packet(6)["body"]["ops"][0]["expires_at"]])
        self.assertEqual([op["op"] for op in f.packet(14)["body"]["ops"]], ["ticket-drop"])

    def test_claim_whose_pass_was_removed(self):
        packet = self.f.packet(8)
        del packet["body"]["ops"][0]["passes"]
        policy = json.loads(self.f.p.cat(self.f.p.get(self.f.trees[7], "state/policy.json")))
        packet["interval"] = refverify.derive_interval(packet["body"], policy)
        self.f.trees[8] = self.f.resign(self.f.trees[8], packet, "carol")
        self.f.publish()
        self.assertBothFlag(self.r, 8, "queued-behind")


def ticket(wants, expires_at):
    return {"op": "ticket", "wants": wants, "expires_at": expires_at}


def want(path, mode="exclusive"):
    return {"path": path, "mode": mode}


def refverify_key(repo, actor):
    """An actor's public key (hex), from its key file."""
    return nacl.signing.SigningKey(seed_of(repo.key(actor))).verify_key.encode().hex()


class GuardTimeStoreTest(SharedStore):
    """Guard time on the notary's test clock: activation, attested claims,
    renewal, reclaim, release, sweep, semaphores; then forged attestations."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.init_with({"min_ttl_ms": 1000, "max_ttl_ms": 60000})
        cls.notary = Notary(scope, r.root, "notary", "locks.test").start()
        cls.rogue = Notary(scope, r.root, "rogue", "locks.test")  # its key only
        r.git("config", "locks.notary", cls.notary.url)
        cls.notary.clock(T0 + 1000)
        st = cls.run_ok("owner", "--json", "status")
        cls.run_ok("owner", "guard-time", "enable", "--audience", "locks.test", "--service-key",
                   cls.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                   st.json["policy_hash"], "--operation-id", "op-1", "--allow-test-clock", "--json")
        r.now = None
        p = T0 + 10_000
        for t, actor, args in [(p, "alice", ["claim", "--ttl", "60000", "a/"]),
                               (p + 1, "bob", ["claim", "--mode", "shared", "--ttl", "30000", "b"]),
                               (p + 2, "carol", ["sem", "acquire", "ci", "--limit", "1", "--ttl", "20000"]),
                               (p + 30000, "alice", ["extend", "--ttl", "60000", "a/"]),
                               (p + 40000, "dave", ["sweep"]),
                               (p + 90001, "bob", ["claim", "--ttl", "10000", "a/"]),
                               (p + 90002, "bob", ["release", "a/"])]:
            cls.notary.clock(t)
            cls.run_ok(actor, *args, "--allow-test-clock", "--json", env={"GIT_LOCKS_PROPOSAL_MS": str(t)})

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 9)
        self.assertEqual(self.f.packet(7)["action"], "reclaim")

    def attestation(self, i):
        return json.loads(self.f.p.cat(self.f.p.get(self.f.trees[i], "txn/attestation.json")))["attestation"]

    def forge_attestation(self, i, change, key=None):
        att = self.attestation(i)
        change(att)
        seed = seed_of(key or self.notary.key)
        self.f.trees[i] = self.f.put(self.f.trees[i], "txn/attestation.json", signed_attestation(seed, att))
        self.f.publish()

    def test_untouched_agrees(self):
        pv, rv = self.both(self.r, allow_test_clock=True)
        self.assertTrue(all(v["ok"] for v in rv), rv)
        self.assertEqual(pv[1]["command"], "guard-time-enable")
        # The test clock is refused unless allowed: both flag the first attested commit.
        self.assertBothFlag(self.r, 1, "test-clock")

    def test_attestation_by_another_key(self):
        self.forge_attestation(3, lambda a: None, key=self.rogue.key)
        self.assertBothFlag(self.r, 3, "bad-attestation-signature", allow_test_clock=True)

    def test_attestation_claims_another_key(self):
        rogue = self.rogue
        self.forge_attestation(3, lambda a: a.update(service_key=rogue.service_key), key=rogue.key)
        self.assertBothFlag(self.r, 3, "pin-mismatch", allow_test_clock=True)

    def test_time_outside_interval(self):
        self.forge_attestation(2, lambda a: a.update(admitted_at_ms=a["interval"][1] + 1))
        self.assertBothFlag(self.r, 2, "time-outside-interval", allow_test_clock=True)

    def test_time_decreased(self):
        # bob's shared claim attested 2 ms before alice's (still inside its own interval).
        self.forge_attestation(3, lambda a: a.update(admitted_at_ms=a["admitted_at_ms"] - 2))
        self.assertBothFlag(self.r, 3, "time-decreased", allow_test_clock=True)

    def test_bindings(self):
        for field, value in [("packet_digest", "00" * 32), ("instance", "11" * 32), ("audience", "other.test"),
                             ("interval", [0, 2**53 - 1])]:
            with self.subTest(field):
                self.f.reset()
                self.forge_attestation(5, lambda a: a.update({field: value}))
                self.assertBothFlag(self.r, 5, allow_test_clock=True)

    def test_attestation_removed_or_moved(self):
        f = self.f
        moved = f.p.get(f.trees[4], "txn/attestation.json")
        f.trees[5] = f.p.put(f.trees[5], "txn/attestation.json", moved)
        f.publish()
        self.assertBothFlag(self.r, 5, "binding-mismatch", allow_test_clock=True)
        f.trees[5] = f.p.put(f.trees[5], "txn/attestation.json", None)
        f.publish()
        self.assertBothFlag(self.r, 5, "missing-attestation", allow_test_clock=True)


class GuardTimeMigrationStoreTest(SharedStore):
    """Guard time moved to another notary while the first is gone, then turned off (guard-time
    migrate|disable): each commit is judged by its result's pins; then forged switch-overs."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.run_ok("owner", "init")
        cls.first = Notary(scope, r.root, "first", "first.test").start()
        cls.second = Notary(scope, r.root, "second", "second.test").start()
        r.git("config", "locks.notary", cls.first.url)
        cls.first.clock(T0 + 1000)
        st = cls.run_ok("owner", "--json", "status")
        cls.run_ok("owner", "guard-time", "enable", "--audience", "first.test", "--service-key",
                   cls.first.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                   st.json["policy_hash"], "--operation-id", "op-1", "--allow-test-clock", "--json")     # 1
        r.now = None
        p = T0 + 10_000
        cls.first.clock(p)

        def attested(t, actor, *args):
            return cls.run_ok(actor, *args, "--allow-test-clock", "--json", env={"GIT_LOCKS_PROPOSAL_MS": str(t)})
        attested(p, "alice", "claim", "--ttl", "60000", "a")                                            # 2
        cls.first.stop()
        r.git("config", "locks.notary", cls.second.url)
        cls.second.clock(p + 100)
        h = cls.run_ok("owner", "--json", "status", "--allow-test-clock").json["policy_hash"]
        attested(p + 100, "owner", "guard-time", "migrate", "--audience", "second.test", "--service-key",
                 cls.second.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash", h)     # 3
        cls.second.clock(p + 200)
        attested(p + 200, "bob", "claim", "--ttl", "60000", "b")                                        # 4
        h = cls.run_ok("owner", "--json", "status", "--allow-test-clock").json["policy_hash"]
        attested(p - 1000, "owner", "guard-time", "disable", "--expected-policy-hash", h)                # 5: T = p + 200
        r.now = p + 1000
        cls.run_ok("carol", "claim", "--ttl", "30s", "c", "--allow-test-clock")                         # 6
        cls.p = p

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 7)

    def test_untouched_agrees(self):
        pv, rv = self.both(self.r, allow_test_clock=True)
        self.assertTrue(all(v["ok"] for v in rv), rv)
        self.assertEqual([(v["command"], v["time"]) for v in pv[2:]],
                         [("claim", self.p), ("guard-time-migrate", self.p + 100), ("claim", self.p + 200),
                          ("guard-time-disable", self.p + 200), ("claim", self.p + 1000)])

    def test_migration_attested_by_the_old_notary(self):
        # The migration's attestation re-made by the first notary, correctly signed by it.
        att = json.loads(self.f.p.cat(self.f.p.get(self.f.trees[3], "txn/attestation.json")))["attestation"]
        att.update(audience="first.test", service_key=self.first.service_key)
        self.f.trees[3] = self.f.put(self.f.trees[3], "txn/attestation.json",
                                     signed_attestation(seed_of(self.first.key), att))
        self.f.publish()
        pv, _ = self.assertBothFlag(self.r, 3, "pin-mismatch", allow_test_clock=True)
        self.assertEqual(pv[3]["reason"], "attestation-mismatch")

    def test_switch_off_below_the_last_attested_time(self):
        f = self.f
        packet = f.packet(5)
        self.assertEqual(packet["claimed_at_ms"], self.p + 200)
        packet["claimed_at_ms"] = self.p + 199
        f.trees[5] = f.resign(f.trees[5], packet, "owner")
        f.publish()
        pv, _ = self.assertBothFlag(self.r, 5, "time-decreased", allow_test_clock=True)
        self.assertEqual(pv[5]["reason"], "time-decreased")

    def test_switch_off_signed_by_another_key(self):
        f = self.f
        packet = f.packet(5)
        packet["actor"] = nacl.signing.SigningKey(seed_of(self.r.key("alice"))).verify_key.encode().hex()
        f.trees[5] = f.resign(f.trees[5], packet, "alice")
        f.publish()
        self.assertBothFlag(self.r, 5, allow_test_clock=True)


class PrivateStoreTest(SharedStore):
    """A PRIVATE store: the reference checks it structurally; verify by a
    member (full) and by a non-member (structural) must agree with it."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.run_ok("owner", "--json", "init", "--private")
        alice = cls.run_ok("alice", "--json", "whoami").json["actor"]
        cls.run_ok("owner", "--json", "member", "add", alice)
        for actor, args in [("alice", ["claim", "--ttl", "60s", "secret/a"]),
                            ("owner", ["claim", "--mode", "shared", "--ttl", "60s", "secret/b/"]),
                            ("alice", ["extend", "--ttl", "90s", "secret/a"]),
                            ("alice", ["release", "secret/a"])]:
            r.now += 1000
            cls.run_ok(actor, *args)

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 7)

    def test_untouched_agrees_member_and_structural(self):
        for actor, level in [("alice", "full"), ("dave", "structural")]:
            pv, rv = self.both(self.r, actor=actor)
            self.assertTrue(all(v["ok"] for v in rv), rv)
            self.assertEqual({v["level"] for v in pv[3:]}, {level})

    def test_resigned_and_replayed(self):
        f = self.f
        f.trees[4] = f.put(f.trees[4], "txn/packet.json", signed_packet(seed_of(self.r.key("alice")), f.packet(4)))
        f.publish()
        for actor in ("alice", "dave"):
            self.assertBothFlag(self.r, 4, "bad-signature", actor=actor)
        f.reset()
        f.publish(f.trees[:-1] + [f.trees[3]])
        for actor in ("alice", "dave"):
            self.assertBothFlag(self.r, 6, "source-mismatch", actor=actor)

    def test_member_change_signed_by_a_member(self):
        # The owner's member-add, re-signed by alice as its actor: not the owner.
        f = self.f
        packet = f.packet(1)
        packet["actor"] = nacl.signing.SigningKey(seed_of(self.r.key("alice"))).verify_key.encode().hex()
        f.trees[1] = f.resign(f.trees[1], packet, "alice")
        f.publish()
        self.assertBothFlag(self.r, 1, "not-owner", actor="dave")


class PolicySetStoreTest(SharedStore):
    """A public store whose owner changed the policy (policy set): both verifiers accept it, and refuse a
    policy-set signed by anyone else or changing a field that policy set cannot change."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.run_ok("owner", "init")
        r.now += 1000
        cls.run_ok("alice", "claim", "--ttl", "60s", "src/a.c")                              # 1
        r.now += 1000
        shown = json.loads(cls.run_ok("owner", "--json", "policy", "show").out)
        change = os.path.join(r.root, "change.json")
        with open(change, "w") as f:
            json.dump({"max_ttl_ms": 120000, "require_claim": {"paths": ["src/"]}, "enforce": ["refs/heads/main"]},
                      f)
        cls.run_ok("owner", "policy", "set", change, "--expected-policy-hash", shown["policy_hash"])  # 2
        r.now += 1000
        cls.run_ok("bob", "claim", "--ttl", "60s", "src/b.c")                                # 3
        r.now += 1000
        cls.run_ok("owner", "release", "--force", "--reason", "stuck", "src/b.c")            # 4

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 5)

    def test_untouched_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertTrue(all(v["ok"] for v in rv), rv)
        self.assertEqual([v["command"] for v in pv], ["init", "claim", "policy set", "claim", "release"])
        self.assertEqual(self.f.packet(2)["action"], "policy-set")
        self.assertEqual(self.f.packet(4)["action"], "force-release")

    def test_force_release_signed_by_a_key_that_is_not_an_admin(self):
        # The owner's force-release of bob's live lease, re-signed by alice as its actor.
        f = self.f
        packet = f.packet(4)
        packet["actor"] = nacl.signing.SigningKey(seed_of(self.r.key("alice"))).verify_key.encode().hex()
        f.trees[4] = f.resign(f.trees[4], packet, "alice")
        f.publish()
        self.assertBothFlag(self.r, 4, "not-admin")

    def test_policy_set_signed_by_another_key(self):
        f = self.f
        packet = f.packet(2)
        packet["actor"] = nacl.signing.SigningKey(seed_of(self.r.key("alice"))).verify_key.encode().hex()
        f.trees[2] = f.resign(f.trees[2], packet, "alice")
        f.publish()
        self.assertBothFlag(self.r, 2, "not-owner")

    def test_policy_set_changing_a_fixed_field(self):
        # The owner's own policy-set, re-made with a new owner in both the body and
        # policy.json: signed, chained and bound like the real one.
        f = self.f
        policy = json.loads(self.f.p.cat(self.f.p.get(f.trees[2], "state/policy.json")))
        policy["owner"] = nacl.signing.SigningKey(seed_of(self.r.key("alice"))).verify_key.encode().hex()
        packet = f.packet(2)
        packet["body"]["admin"]["policy"] = policy
        tree = f.put(f.trees[2], "state/policy.json", canon(policy))
        f.trees[2] = f.resign(tree, packet, "owner")
        f.publish()
        self.assertBothFlag(self.r, 2, "policy-changed")


class CheckpointStoreTest(SharedStore):
    """A public store with the owner's checkpoint (FORMAT.md "Checkpoints"): both verifiers accept it,
    and refuse one that names another commit than its parent, signed and bound like the real one."""

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.run_ok("owner", "init")
        r.now += 1000
        cls.run_ok("alice", "claim", "--ttl", "60s", "src/a.c")                              # 1
        r.now += 1000
        cls.run_ok("owner", "checkpoint")                                                   # 2
        r.now += 1000
        cls.run_ok("bob", "claim", "--ttl", "60s", "src/b.c")                                # 3

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 4)

    def test_untouched_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertTrue(all(v["ok"] for v in rv), rv)
        self.assertEqual([v["command"] for v in pv], ["init", "claim", "checkpoint", "claim"])
        f = self.f
        packet = f.packet(2)
        self.assertEqual(packet["action"], "checkpoint")
        self.assertEqual(packet["body"]["admin"]["prev"], f.ids[1])
        # Nothing changes: the checkpoint's state is its parent's.
        self.assertEqual(f.p.get(f.trees[2], "state"), f.p.get(f.trees[1], "state"))
        self.assertEqual(packet["source"], packet["result"])

    def checkpoint_naming(self, prev):
        """The owner's checkpoint (commit 2) re-signed by the owner with `prev`, on its own parent; the ref
        moves to it."""
        f = self.f
        packet = f.packet(2)
        packet["body"]["admin"]["prev"] = prev
        tree = f.resign(f.trees[2], packet, "owner")
        commit = f.p.git("commit-tree", tree, "-p", f.ids[1], "-m", f.messages[2]).decode().strip()
        f.p.git("update-ref", "refs/locks/state", commit)

    def test_checkpoint_re_signed_unchanged_is_valid(self):
        # The control of the test below: the same construction with the true parent.
        self.checkpoint_naming(self.f.ids[1])
        pv, rv = self.both(self.r)
        self.assertEqual([v["ok"] for v in rv], [True] * 3, rv)

    def test_checkpoint_naming_another_commit(self):
        self.checkpoint_naming(self.f.ids[0])
        pv, rv = self.assertBothFlag(self.r, 2, "checkpoint-mismatch")
        self.assertEqual(pv[2]["reason"], "checkpoint-mismatch")

    def test_checkpoint_signed_by_another_key(self):
        f = self.f
        packet = f.packet(2)
        packet["actor"] = nacl.signing.SigningKey(seed_of(self.r.key("alice"))).verify_key.encode().hex()
        f.trees[2] = f.resign(f.trees[2], packet, "alice")
        commit = f.p.git("commit-tree", f.trees[2], "-p", f.ids[1], "-m", f.messages[2]).decode().strip()
        f.p.git("update-ref", "refs/locks/state", commit)
        self.assertBothFlag(self.r, 2, "not-owner")


class GeneratedCheckpointsTest(unittest.TestCase):
    """`gitlocks-gen-history --checkpoint-every N` writes the owner's checkpoints into a generated history:
    both verifiers accept every commit, and the checkpoints are where the flag puts them."""

    def test_checkpoint_every_50_of_300_commits(self):
        gen = os.environ.get("GITLOCKS_GEN_HISTORY")
        if not gen:
            skip("GITLOCKS_GEN_HISTORY is not set")
        tmp = tempfile.mkdtemp(prefix="gitlocks-gen-checkpoints-")
        self.addCleanup(shutil.rmtree, tmp, True)
        bundle, repo = os.path.join(tmp, "h.bundle"), os.path.join(tmp, "r.git")
        subprocess.run([gen, "--commits", "300", "--checkpoint-every", "50", "--seed", "7", "--bundle", bundle],
                       check=True, capture_output=True)
        subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
        subprocess.run(["git", "-C", repo, "fetch", "-q", bundle, "refs/locks/state:refs/locks/state"], check=True)
        prod = subprocess.run([os.environ["GIT_LOCKS_BIN"], "--repo", repo, "--json", "verify", "--full"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(prod.returncode, 0, prod.stderr[-2000:])
        pv = [json.loads(line) for line in prod.stdout.splitlines()]
        ref = subprocess.run([sys.executable, REFVERIFY, repo], capture_output=True, text=True, timeout=120)
        self.assertEqual((ref.returncode, ref.stderr), (0, ""))
        rv = [json.loads(line) for line in ref.stdout.splitlines()]
        self.assertEqual(len(pv), 300)
        self.assertEqual([v["ok"] for v in rv], [True] * 300)
        # A checkpoint follows the 50th, 100th, ... commit: at indexes 50, 100, 150, 200 and 250 (the
        # 300th commit ends the history), each naming the commit before it.
        chain = [v["commit"] for v in pv]
        self.assertEqual([i for i, v in enumerate(pv) if v["command"] == "checkpoint"], [50, 100, 150, 200, 250])
        for i in (50, 100, 150, 200, 250):
            packet = json.loads(subprocess.run(["git", "-C", repo, "show", chain[i] + ":txn/packet.json"],
                                               capture_output=True, text=True, check=True).stdout)["packet"]
            self.assertEqual(packet["action"], "checkpoint")
            self.assertEqual(packet["body"]["admin"]["prev"], chain[i - 1])
            self.assertEqual(packet["source"], packet["result"])


class GeneratedCutsTest(unittest.TestCase):
    """`gitlocks-gen-history --cut-every M` (FORMAT.md "The cut"): checkpoints committed without a parent.
    With the archive in the repository both verifiers walk across every cut from the root; with only
    the chain since the newest cut (what a fetch of refs/locks/state brings) both start at the cut; and
    a cut re-signed by another key than the owner's is refused there by both."""

    def setUp(self):
        gen = os.environ.get("GITLOCKS_GEN_HISTORY")
        if not gen:
            skip("GITLOCKS_GEN_HISTORY is not set")
        self.tmp = tempfile.mkdtemp(prefix="gitlocks-gen-cuts-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        bundle, self.repo = os.path.join(self.tmp, "h.bundle"), os.path.join(self.tmp, "r.git")
        subprocess.run([gen, "--commits", "300", "--checkpoint-every", "50", "--cut-every", "100", "--seed", "7",
                        "--bundle", bundle], check=True, capture_output=True)
        subprocess.run(["git", "init", "-q", "--bare", self.repo], check=True)
        subprocess.run(["git", "-C", self.repo, "fetch", "-q", bundle, "refs/locks/*:refs/locks/*"], check=True)
        self.tail = os.path.join(self.tmp, "tail.git")
        subprocess.run(["git", "init", "-q", "--bare", self.tail], check=True)
        subprocess.run(["git", "-C", self.tail, "fetch", "-q", self.repo, "refs/locks/state:refs/locks/state"],
                       check=True)

    def product(self, repo, *args):
        r = subprocess.run([os.environ["GIT_LOCKS_BIN"], "--repo", repo, "--json", "verify", *args],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, GIT_LOCKS_KEY=os.path.join(self.tmp, "dave.key")))
        return r, [json.loads(line) for line in r.stdout.splitlines()]

    def reference(self, repo):
        r = subprocess.run([sys.executable, REFVERIFY, repo], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.stderr, "")
        return r, [json.loads(line) for line in r.stdout.splitlines()]

    def parents(self, repo, commit):
        return subprocess.run(["git", "-C", repo, "rev-list", "--parents", "-n", "1", commit], capture_output=True,
                              text=True, check=True).stdout.split()[1:]

    def packet(self, repo, commit):
        return json.loads(subprocess.run(["git", "-C", repo, "show", commit + ":txn/packet.json"],
                                         capture_output=True, text=True, check=True).stdout)["packet"]

    def test_both_walk_across_the_cuts_from_the_root(self):
        prod, pv = self.product(self.repo, "--full")
        self.assertEqual(prod.returncode, 0, prod.stderr[-2000:])
        ref, rv = self.reference(self.repo)
        self.assertEqual(ref.returncode, 0)
        self.assertEqual(len(pv), 300)
        self.assertEqual([v["commit"] for v in rv], [v["commit"] for v in pv])
        self.assertEqual([v["ok"] for v in rv], [True] * 300)
        # Checkpoints after the 50th, 100th, ... commit; those at 100 and 200 are cuts: no parent, and
        # `prev` the commit before them on the chain (the tip of the archive).
        self.assertEqual([i for i, v in enumerate(pv) if v["command"] == "checkpoint"], [50, 100, 150, 200, 250])
        chain = [v["commit"] for v in pv]
        for i in (50, 100, 150, 200, 250):
            self.assertEqual(self.packet(self.repo, chain[i])["body"]["admin"]["prev"], chain[i - 1])
            self.assertEqual(self.parents(self.repo, chain[i]), [] if i in (100, 200) else [chain[i - 1]], i)
        self.assertEqual(json.loads(prod.stderr.splitlines()[-1])["cut_start"], None)

    def test_both_start_at_the_newest_cut_without_the_archive(self):
        _, pv_full = self.product(self.repo, "--full")
        ref, rv = self.reference(self.tail)
        self.assertEqual(ref.returncode, 0)
        self.assertEqual([v["commit"] for v in rv], [v["commit"] for v in pv_full[200:]])
        self.assertEqual([v["ok"] for v in rv], [True] * 100)
        # The product without --full starts at the newest checkpoint (the one after the 250th commit,
        # re-executed from its parent, which is here); --full cannot go back past the cut here:
        # store-read, exit 2.
        prod, pv = self.product(self.tail)
        self.assertEqual(prod.returncode, 0, prod.stderr[-2000:])
        summary = json.loads(prod.stderr.splitlines()[-1])
        self.assertEqual((summary["start"], summary["start_commit"], summary["commits"]),
                         ("checkpoint", pv_full[250]["commit"], 49), summary)
        full, _ = self.product(self.tail, "--full")
        self.assertEqual(full.returncode, 2, full)
        self.assertEqual(json.loads(full.stderr.splitlines()[-1])["error"], "store-read")
        self.assertIn("the history before the cut " + pv_full[200]["commit"], full.stderr)

    def test_a_cut_signed_by_another_key_is_refused_by_both(self):
        _, pv_full = self.product(self.repo, "--full")
        cut = pv_full[200]["commit"]
        p = Plumbing(type("R", (), {"path": self.tail})())

        def cut_signed_by(name):
            packet = self.packet(self.tail, cut)
            seed = hashlib.sha256(("test-actor:" + name).encode()).digest()
            packet["actor"] = nacl.signing.SigningKey(seed).verify_key.encode().hex()
            tree = p.put(p.tree_of(cut), "txn/packet.json", p.blob(signed_packet(seed, packet)))
            forged = p.git("commit-tree", tree, "-m", "git-locks: checkpoint").decode().strip()
            p.git("update-ref", "refs/locks/state", forged)
            return forged

        # The control: re-signed with the owner's own key, the cut's tree comes back byte for byte (Ed25519
        # is deterministic), and both verifiers accept it at the start of the chain.
        control = cut_signed_by("owner")
        self.assertEqual(p.tree_of(control), p.tree_of(cut))
        self.assertEqual([v["ok"] for v in self.reference(self.tail)[1]], [True])
        prod, pv = self.product(self.tail)
        self.assertEqual((prod.returncode, [v["ok"] for v in pv]), (0, []), prod)  # the tip is the start
        forged = cut_signed_by("alice")
        ref, rv = self.reference(self.tail)
        self.assertEqual((ref.returncode, rv), (1, [{"commit": forged, "ok": False, "reason": "not-owner",
                                                     "detail": rv[0]["detail"]}]))
        # The owner's own signature over a cut that names another source than its own state: refused
        # by both where the chain starts (source-mismatch).
        packet = self.packet(self.tail, cut)
        packet["source"] = p.get(p.tree_of(pv_full[201]["commit"]), "state")  # the state after the cut
        seed = hashlib.sha256(b"test-actor:owner").digest()
        tree = p.put(p.tree_of(cut), "txn/packet.json", p.blob(signed_packet(seed, packet)))
        other = p.git("commit-tree", tree, "-m", "git-locks: checkpoint").decode().strip()
        p.git("update-ref", "refs/locks/state", other)
        ref, rv = self.reference(self.tail)
        self.assertEqual((ref.returncode, [(v["commit"], v["ok"], v.get("reason")) for v in rv]),
                         (1, [(other, False, "source-mismatch")]))
        prod, pv = self.product(self.tail)
        self.assertEqual((prod.returncode, [(v["commit"], v["ok"], v["reason"]) for v in pv]),
                         (1, [(other, False, "source-mismatch")]), prod)
        p.git("update-ref", "refs/locks/state", forged)
        # The product: not started at (it does not verify as a checkpoint), so judged where the chain
        # starts, and refused by the planner (only the owner checkpoints).
        prod, pv = self.product(self.tail)
        self.assertEqual(prod.returncode, 1, prod)
        self.assertEqual([(v["commit"], v["ok"], v["reason"]) for v in pv], [(forged, False, "replay-refused")])


class IdentityAndTimeTest(SharedStore):
    """Two rules the reference verifier once lacked (issue 30): local admission times never decrease,
    and one path is one resource (NFC), so an NFD twin cannot hold a second exclusive lease."""

    NFC, NFD = "caf\u00e9.md", "cafe\u0301.md"

    @classmethod
    def build(cls, scope):
        r = cls.r
        cls.run_ok("owner", "init")
        r.now += 1000
        cls.run_ok("alice", "claim", "--ttl", "60s", cls.NFC)                                  # 1
        r.now += 1000
        cls.run_ok("bob", "claim", "--ttl", "60s", "zz.md")                                   # 2
        r.now += 1000
        cls.run_ok("alice", "claim", "--ttl", "60s", "b.md")                                  # 3

    def setUp(self):
        super().setUp()
        self.assertEqual(len(self.f.ids), 4)

    def test_untouched_agrees_and_is_valid(self):
        pv, rv = self.both(self.r)
        self.assertTrue(all(v["ok"] for v in rv), rv)

    def test_local_admission_time_decreasing(self):
        # alice's last claim, admitted 1 ms before bob's: still inside its own interval
        # ([e - max_ttl, e - min_ttl] with e = T + 60 s), signed by alice.
        f = self.f
        packet = f.packet(3)
        packet["claimed_at_ms"] = f.packet(2)["claimed_at_ms"] - 1
        f.trees[3] = f.resign(f.trees[3], packet, "alice")
        f.publish()
        self.assertBothFlag(self.r, 3, "time-decreased")
        # An equal T is no decrease.
        f.reset()
        packet["claimed_at_ms"] = f.packet(2)["claimed_at_ms"]
        f.trees[3] = f.resign(f.trees[3], packet, "alice")
        f.publish()
        pv, rv = self.both(self.r)
        self.assertTrue(all(v["ok"] for v in rv), rv)

    def test_nfd_twin_of_a_held_path(self):
        # bob's claim of zz.md, re-made as a claim of the NFD spelling of alice's café.md: the record at
        # its own layout place, the body naming it, on the right source, signed by bob.
        f = self.f
        rec = f.record(2, "path:zz.md")
        rec["name"] = self.NFD
        rec["leases"][0]["path"] = self.NFD
        packet = f.packet(2)
        packet["body"]["ops"][0]["path"] = self.NFD
        tree = f.with_record(f.trees[1], "path:" + self.NFD, rec)
        f.trees[2] = f.resign(tree, packet, "bob")
        f.publish(f.trees[:3])
        self.assertBothFlag(self.r, 2, "path-not-canonical")


class ReferenceCliTest(unittest.TestCase):
    def test_exit_statuses(self):
        usage = subprocess.run([sys.executable, REFVERIFY], capture_output=True, text=True)
        self.assertEqual((usage.returncode, usage.stdout), (64, ""))
        empty = os.path.join(Repo(self).path)
        r = subprocess.run([sys.executable, REFVERIFY, empty], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertEqual(json.loads(r.stderr)["error"], "store-read")


class TamperCorpusTest(Agreement, test_verify.VerifyTest):
    """tests/cli/test_verify.py's tamper corpus, with the reference verifier
    run next to every `git-locks verify` it makes."""

    def verify(self, repo, *args, actor="dave", full=True):
        res, verdicts, summary = super().verify(repo, *args, actor=actor, full=full)
        if not args and full:
            # The same commits, the same verdicts; the exit status too unless
            # verify saw a fork (a rewrite of a tip it had verified), which the
            # memory-less reference cannot see.
            self.agree(repo, verdicts, None if summary and "fork" in summary else res.code)
        return res, verdicts, summary

    # Not about commit verdicts (bundles, --from, an unreadable ref): not repeated here.
    test_export_bundle = None
    test_export_without_store = None
    test_from_trusted_commit = None
    test_unreadable_store_exits_2 = None


if __name__ == "__main__":
    unittest.main()
