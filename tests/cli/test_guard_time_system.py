"""Guard time on the notary's SYSTEM clock (SPEC §6, seed 002), end to end:
no test clock anywhere, no client or verifier passes --allow-test-clock.
Real time passes (about 3.5 s of sleep in all): claim, renew before expiry,
renewal after expiry refused by the notary's T, reclaim by another actor
after expiry, a stale generation refused by `fence` and by operations that
name it, and `verify` accepting the history. Every attested commit is checked
independently of git-locks: its attestation read from the commit tree with
git, its Ed25519 signature checked with PyNaCl under the pinned key, its
bindings compared with the commit's own and its parent's trees, and its
admission time T compared with the wall clock before and after the request.
A notary with the pinned key but a test clock behind a proxy that shows the
real notary's discovery is refused by a client without --allow-test-clock."""

import hashlib
import json
import os
import subprocess
import time
import unittest

import nacl.exceptions
import nacl.signing

from support import Repo
from test_guard_time import Notary, Proxy, post

MIN_TTL = 1000
MAX_TTL = 10000
# Margins for a loaded machine: the renewal must land before CLAIM_TTL has run
# out; the test then sleeps until RENEW_TTL after the renewal (about 3.5 s).
CLAIM_TTL = 3000
RENEW_TTL = 3500
ATT_DOMAIN = b"gitlocks/attestation/v1\0"
PACKET_DOMAIN = b"gitlocks/packet/v1\0"


def wall_floor():
    return time.time_ns() // 1_000_000


def wall_ceil():
    return -(-time.time_ns() // 1_000_000)


def canonical(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class SystemClockTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.repo = Repo(self)
        self.repo.now = None  # the real clock: GIT_LOCKS_NOW_MS is never set
        policy = os.path.join(self.repo.root, "policy.json")
        with open(policy, "w") as f:
            json.dump({"min_ttl_ms": MIN_TTL, "max_ttl_ms": MAX_TTL}, f)
        r = self.repo.run("alice", "--json", "init", "--policy", policy)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.notary = Notary(self, self.repo.root, "notary", "locks.system.test").start(test_clock=False)
        self.assertEqual(self.notary.banner["clock"], "system")
        self.repo.git("config", "locks.notary", self.notary.url)
        self.windows = {}  # commit -> (wall ms before the request, wall ms after it)

    def run_timed(self, actor, *args):
        """Runs a command; remembers the wall-clock window of the commit it published."""
        before_tip = self.repo.tip()
        lo = wall_floor()
        r = self.repo.run(actor, *args)
        hi = wall_ceil()
        tip = self.repo.tip()
        if tip != before_tip:
            self.windows[tip] = (lo, hi)
        return r, (lo, hi)

    def assertOkJson(self, r):
        self.assertEqual((r.code, r.err), (0, ""), r)
        return r.json

    def assertRefused(self, r, code, tip, reason=None):
        self.assertEqual(r.code, 1, r)
        e = r.error
        self.assertEqual((e["error"], e["code"], e["reason"]), ("refused", code, reason or code), r)
        self.assertEqual(r.out, "", r)
        self.assertEqual(self.repo.tip(), tip, "refs/locks/state moved on a refusal")
        return e

    def show(self, rev, path):
        return subprocess.run(["git", "-C", self.repo.path, "show", f"{rev}:{path}"], capture_output=True,
                              check=True).stdout

    def tree(self, rev):
        return self.repo.git("rev-parse", rev).strip()

    def check_attestation(self, commit):
        """The commit's attestation, checked without git-locks; returns T."""
        packet_bytes = self.show(commit, "txn/packet.json")
        stored = self.show(commit, "txn/attestation.json")
        doc = json.loads(stored)
        self.assertEqual(sorted(doc), ["attestation", "sig"])
        att = doc["attestation"]
        # The signature, under the pinned key, over the domain and canonical ATT.
        key = nacl.signing.VerifyKey(bytes.fromhex(self.notary.service_key))
        try:
            key.verify(ATT_DOMAIN + canonical(att), bytes.fromhex(doc["sig"]))
        except nacl.exceptions.BadSignatureError:
            self.fail(f"attestation of {commit} does not verify under the pinned key")
        self.assertEqual(att["format"], "gitlocks-attestation-v1")
        self.assertEqual(att["clock"], "system")
        self.assertEqual(att["audience"], self.notary.audience)
        self.assertEqual(att["service_key"], self.notary.service_key)
        # Bindings, from git: this commit's state tree, its one parent's, the packet's digest.
        parents = self.repo.git("rev-list", "--parents", "-n", "1", commit).split()[1:]
        self.assertEqual(len(parents), 1, commit)
        self.assertEqual(att["result"], self.tree(f"{commit}:state"))
        self.assertEqual(att["source"], self.tree(f"{parents[0]}:state"))
        self.assertEqual(att["packet_digest"], hashlib.sha256(packet_bytes).hexdigest())
        signed = json.loads(packet_bytes)
        packet = signed["packet"]
        try:  # the actor's signature over the packet, under its own key
            nacl.signing.VerifyKey(bytes.fromhex(packet["actor"])).verify(PACKET_DOMAIN + canonical(packet),
                                                                          bytes.fromhex(signed["sig"]))
        except nacl.exceptions.BadSignatureError:
            self.fail(f"packet of {commit} does not verify under its actor's key")
        self.assertNotIn("claimed_at_ms", packet)  # T is the notary's, never a client's
        for k in ("store", "actor", "command", "action", "instance", "epoch", "policy_hash", "source", "result",
                  "interval"):
            self.assertEqual(att[k], packet[k], (commit, k))
        t = att["admitted_at_ms"]
        lo, hi = self.windows[commit]
        self.assertTrue(lo <= t <= hi, f"T={t} of {commit} outside the wall-clock window [{lo}, {hi}]")
        self.assertTrue(att["interval"][0] <= t <= att["interval"][1], (commit, att["interval"], t))
        return t

    def test_claim_renew_reclaim_stale_generation_verify(self):
        st = self.assertOkJson(self.repo.run("alice", "--json", "status"))
        r, w = self.run_timed("alice", "--json", "guard-time", "enable", "--audience", self.notary.audience,
                              "--service-key", self.notary.service_key, "--disclosure", "GUARD_WINDOW",
                              "--expected-policy-hash", st["policy_hash"], "--operation-id", "sys-1")
        out = self.assertOkJson(r)
        self.assertEqual((out["op"], out["status"], out["commit"]), ("guard-time enable", "ACCEPTED", self.repo.tip()))
        enable_commit = out["commit"]

        # A TTL below the policy's MIN_TTL: the guard interval is empty, nothing is published.
        tip = self.repo.tip()
        r, _ = self.run_timed("alice", "--json", "claim", "--ttl", str(MIN_TTL - 1), "a")
        self.assertRefused(r, "guard-window", tip)

        # Claim: expires_at is the client's proposal (local clock + TTL), T the notary's.
        r, (lo, hi) = self.run_timed("alice", "--json", "claim", "--ttl", str(CLAIM_TTL), "a")
        claim = self.assertOkJson(r)
        self.assertEqual((claim["action"], claim["commit"]), ("claim", self.repo.tip()))
        [lease] = claim["leases"]
        self.assertEqual((lease["resource"], lease["generation"]), ("path:a", 1))
        e1 = lease["expires_at"]
        self.assertTrue(lo + CLAIM_TTL <= e1 <= hi + CLAIM_TTL, (lo, e1, hi))
        self.assertEqual(claim["admitted_at_ms"], self.check_attestation(claim["commit"]))

        # Another actor before expiry: held.
        tip = self.repo.tip()
        r, _ = self.run_timed("bob", "--json", "claim", "--ttl", "1500", "a")
        self.assertRefused(r, "held-path", tip)
        f = self.assertOkJson(self.repo.run("carol", "--json", "fence", "a", "1"))
        self.assertEqual((f["live"], f["generation"], f["lease"], f["expires_at"]), (True, 1, lease["lease"], e1))

        # Renew before expiry: same generation, a later expiry.
        r, (lo, hi) = self.run_timed("alice", "--json", "extend", "--ttl", str(RENEW_TTL), "a")
        ext = self.assertOkJson(r)
        self.assertEqual(ext["action"], "extend")
        [renewed] = ext["leases"]
        self.assertEqual((renewed["lease"], renewed["generation"]), (lease["lease"], 1))
        e2 = renewed["expires_at"]
        self.assertTrue(lo + RENEW_TTL <= e2 <= hi + RENEW_TTL and e2 > e1, (lo, e1, e2, hi))
        t_ext = self.check_attestation(ext["commit"])
        self.assertEqual(ext["admitted_at_ms"], t_ext)
        self.assertLessEqual(t_ext, e1)  # renewal at T <= prev_expires_at

        # Real time passes beyond the renewed expiry.
        time.sleep(max(0, e2 + 50 - wall_floor()) / 1000)
        self.assertGreater(wall_floor(), e2)

        # Renewing after expiry is refused by the notary's T, past prev_expires_at: alice's clock lags
        # (her proposal clock reads 500 ms before the expiry), so her own planner admits the renewal and
        # asks the notary, whose refusal (HTTP 422) is what comes back.
        tip = self.repo.tip()
        r = self.repo.run("alice", "--json", "extend", "--ttl", "2000", "a",
                          env={"GIT_LOCKS_PROPOSAL_MS": str(e2 - 500)})
        e = self.assertRefused(r, "guard-window", tip)
        self.assertIn("the notary's admission time is outside the guard interval", e["detail"])
        # Her clock right: her planner already refuses it, without asking the notary.
        self.notary.stop()
        r, _ = self.run_timed("alice", "--json", "extend", "--ttl", "2000", "a")
        e = self.assertRefused(r, "guard-window", tip)
        self.assertNotIn("notary", e["detail"])
        self.notary.start(test_clock=False)
        self.repo.git("config", "locks.notary", self.notary.url)

        # Reclaim by bob after expiry: the next generation, T strictly after the old expiry.
        r, (lo, hi) = self.run_timed("bob", "--json", "claim", "--ttl", "3000", "a")
        rec = self.assertOkJson(r)
        self.assertEqual(rec["action"], "reclaim")
        [bobs] = rec["leases"]
        self.assertEqual((bobs["resource"], bobs["generation"]), ("path:a", 2))
        self.assertNotEqual(bobs["lease"], lease["lease"])
        t_rec = self.check_attestation(rec["commit"])
        self.assertEqual(rec["admitted_at_ms"], t_rec)
        self.assertGreater(t_rec, e2)

        # The stale generation 1: fence refuses it, operations naming it are refused.
        tip = self.repo.tip()
        r = self.repo.run("carol", "--json", "fence", "a", "1")
        e = self.assertRefused(r, "stale-generation", tip)
        self.assertEqual(e["op"], "fence")
        f = self.assertOkJson(self.repo.run("carol", "--json", "fence", "a", "2"))
        self.assertEqual((f["live"], f["generation"], f["lease"]), (True, 2, bobs["lease"]))
        for args in (["extend", "--ttl", "2000", "--generation", "1", bobs["lease"]],
                     ["release", "--generation", "1", bobs["lease"]],
                     ["release", "--generation", "1", "a"]):
            r, _ = self.run_timed("bob", "--json", *args)
            self.assertRefused(r, "stale-generation", tip)
        # alice, the old holder, comes back with her generation 1: stale, for extend and release.
        for verb in (["extend", "--ttl", "2000"], ["release"]):
            r, _ = self.run_timed("alice", "--json", *verb, "--generation", "1", "a")
            e = self.assertRefused(r, "stale-generation", tip, reason="superseded")
            self.assertEqual(e["detail"], "no lease of yours on path:a at generation 1: superseded (generation now 2)")
        # Her old lease id no longer exists at all (the reclaim made a new lease).
        r, _ = self.run_timed("alice", "--json", "release", "--generation", "1", lease["lease"])
        self.assertRefused(r, "not-holder", tip)

        # Release with the current generation (time-free, still attested).
        r, _ = self.run_timed("bob", "--json", "release", "--generation", "2", "a")
        rel = self.assertOkJson(r)
        self.assertEqual(rel["action"], "release")
        self.check_attestation(rel["commit"])

        # Every commit from the activation on carries a system-clock attestation; T never decreases.
        chain = self.repo.git("rev-list", "--reverse", "refs/locks/state").split()
        self.assertEqual(chain[1:], [enable_commit, claim["commit"], ext["commit"], rec["commit"], rel["commit"]])
        self.assertEqual(subprocess.run(["git", "-C", self.repo.path, "cat-file", "-e",
                                         f"{chain[0]}:txn/attestation.json"], capture_output=True).returncode, 128)
        times = [self.check_attestation(c) for c in chain[1:]]
        self.assertEqual(times, sorted(times))
        # `log` shows each commit's admission time: the notary's T, as read from the attestation above.
        log = self.repo.run("dave", "--json", "log")
        self.assertEqual(log.code, 0, log)
        logged = {e["commit"]: e["admitted_at_ms"] for e in map(json.loads, log.out.splitlines())}
        self.assertEqual([logged[c] for c in chain[1:]], times)

        # The verifier accepts it without --allow-test-clock.
        v = self.repo.run("dave", "--json", "verify", "--full")
        self.assertEqual(v.code, 0, v)
        verdicts = [json.loads(line) for line in v.out.splitlines()]
        self.assertEqual([(x["commit"], x["ok"]) for x in verdicts], [(c, True) for c in chain])
        summary = json.loads(v.err)
        self.assertEqual((summary["ok"], summary["commits"], summary["invalid"], summary["tip"]),
                         (True, len(chain), 0, chain[-1]))

    def test_test_clock_attestation_under_the_pinned_key_is_refused(self):
        st = self.assertOkJson(self.repo.run("alice", "--json", "status"))
        r, _ = self.run_timed("alice", "--json", "guard-time", "enable", "--audience", self.notary.audience,
                              "--service-key", self.notary.service_key, "--disclosure", "GUARD_WINDOW",
                              "--expected-policy-hash", st["policy_hash"], "--operation-id", "sys-2")
        self.assertOkJson(r)
        # The same key and audience, but a test clock: only a proxy's discovery hides it.
        twin = Notary(self, self.repo.root, "twin", self.notary.audience, key=self.notary.key)
        twin.clock(wall_floor())
        twin.start()
        self.assertEqual(twin.banner["clock"], "test")
        proxy = Proxy(self, self.notary.url, lambda body: post(twin.url, body))
        tip = self.repo.tip()
        r = self.repo.run("alice", "--json", "--notary", proxy.url, "claim", "--ttl", "3000", "a")
        self.assertEqual(r.code, 2, r)
        e = r.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]),
                         ("store-write", "store-write", "store-write", "claim"), r)
        self.assertEqual(e["detail"], 'notary attestation rejected: test-clock: admitted by a notary running a '
                                      '"test" clock', r)
        self.assertEqual(r.out, "")
        self.assertEqual(self.repo.tip(), tip)
        # Through the real notary the same claim lands.
        r, _ = self.run_timed("alice", "--json", "claim", "--ttl", "3000", "a")
        self.check_attestation(self.assertOkJson(r)["commit"])


if __name__ == "__main__":
    unittest.main()
