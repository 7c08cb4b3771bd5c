"""Anchored trust (SPEC §7 "Acting on history", issue 15): every forgery is
made with real Git plumbing on top of an honest history, and the next honest
writer (claim, run) and reader (status, fence) refuse it — exit 2, store-read,
reason invalid-history, the forged commit named — leaving the ref exactly
where the forger put it. The clone's trust checkpoint is shared by linked
worktrees; a corrupted one costs a full replay, never correctness."""

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import T0, CliTest, Repo
from test_guard_time import P, SAFE_MAX, GuardTimeBase
from test_verify import Plumbing, canon

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
from servers import Server, clone  # noqa: E402

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat  # noqa: E402

PACKET_DOMAIN = b"gitlocks/packet/v1\x00"
ATTESTATION_DOMAIN = b"gitlocks/attestation/v1\x00"


def checkpoint_file(repo_path, remote=None):
    common = subprocess.run(["git", "-C", repo_path, "rev-parse", "--path-format=absolute", "--git-common-dir"],
                            capture_output=True, text=True, check=True).stdout.strip()
    base = os.path.join(common, "git-locks", "trust")
    return os.path.join(base, "remotes", remote + ".json") if remote else os.path.join(base, "local.json")


def seed_key(path):
    with open(path) as f:
        return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(json.load(f)["seed"]))


def public_hex(key):
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def forge_on_tip(p, replace, packet_from=None):
    """A commit on top of the tip: the tip's tree with `replace` ({path: bytes | tree id}) applied,
    and (when given) the txn/ of commit `packet_from`. Unsigned by anyone for this transition."""
    tip = p.chain()[-1]
    tree = p.tree_of(tip)
    if packet_from:
        tree = p.put(tree, "txn", p.get(p.tree_of(packet_from), "txn"), "tree")
    for path, value in replace.items():
        if isinstance(value, bytes):
            tree = p.put(tree, path, p.blob(value))
        else:
            tree = p.put(tree, path, value, "tree")
    commit = p.git("commit-tree", tree, "-p", tip, "-m", "forged").decode().strip()
    p.git("update-ref", "refs/locks/state", commit, tip)
    return commit


def fresh_clone_of(r, name):
    """A new clone of r's store (keys shared): it has never verified anything."""
    fresh = copy.copy(r)
    fresh.path = os.path.join(r.root, name)
    subprocess.run(["git", "init", "-q", fresh.path], check=True)
    fresh.git("fetch", "-q", r.path, "refs/locks/state:refs/locks/state")
    assert not os.path.exists(checkpoint_file(fresh.path))
    return fresh


def genuine_elsewhere(r, actor, *args, env=None):
    """The commit `actor`'s command `args` makes on the tip, made in a copy of the clone and fetched back
    unpublished: r's ref and trust checkpoint stay where they were."""
    shadow = tempfile.mkdtemp(prefix="shadow-", dir=r.root)
    os.rmdir(shadow)
    shutil.copytree(r.path, shadow, symlinks=True)
    other = copy.copy(r)
    other.path = shadow
    res = other.run(actor, *args, env=env)
    assert res.code == 0, res
    r.git("fetch", "-q", shadow, "refs/locks/state")
    commit = r.git("rev-parse", "FETCH_HEAD").strip()
    shutil.rmtree(shadow)
    return commit


def forge_result(p, genuine, key, edit_state, edit_packet=None, keep_attestation=True):
    """`genuine` (a commit on the tip, not published) with its state edited (`edit_state(tree) -> tree`) and
    its packet's result made to match, re-signed by `key`, on top of the tip: a transition right in every
    respect (parent, source, store, policy hash, time, body, a signer who may make it) except that its
    result is not what its body gives. Moves the ref there."""
    tip = p.chain()[-1]
    tree = p.tree_of(genuine)
    state = edit_state(p.get(tree, "state"))
    packet = json.loads(p.cat(p.get(tree, "txn/packet.json")))["packet"]
    assert packet["source"] == p.get(p.tree_of(tip), "state") and packet["actor"] == public_hex(key)
    packet["result"] = state
    if edit_packet:
        edit_packet(packet)
    signed = canon({"packet": packet, "sig": key.sign(PACKET_DOMAIN + canon(packet)).hex()})
    tree = p.put(p.put(tree, "state", state, "tree"), "txn/packet.json", p.blob(signed))
    if not keep_attestation:
        tree = p.put(tree, "txn/attestation.json", None)
    commit = p.git("commit-tree", tree, "-p", tip, "-m", p.message(genuine)).decode().strip()
    p.git("update-ref", "refs/locks/state", commit, tip)
    return commit


def with_policy(p, edit):
    """An edit_state for forge_result: policy.json rewritten by `edit(policy)`."""
    def apply(state):
        policy = json.loads(p.cat(p.get(state, "policy.json")))
        edit(policy)
        return p.put(state, "policy.json", p.blob(canon(policy)))
    return apply


def without_record(p, resource):
    """An edit_state for forge_result: the record of `resource` (format 2 layout) removed."""
    h = hashlib.sha256(resource.encode()).hexdigest()

    def apply(state):
        return p.put(state, f"records/{h[:2]}/{h[2:4]}/{h}.json", None)
    return apply


class Refusals:
    def assertInvalidHistory(self, res, op, commit, repo_tip, verdict=None):
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]),
                         ("store-read", "invalid-history", "invalid-history", op), res)
        self.assertEqual(e["commit"], commit, res)
        self.assertTrue(e["verdict"], res)
        if verdict:
            self.assertEqual(e["verdict"], verdict, res)
        self.assertIn(commit, e["detail"], res)
        self.assertIn(e["recovery"], e["detail"], res)
        self.assertEqual(res.out, "", res)
        self.assertEqual(repo_tip(), commit, "refs/locks/state is not where the forger put it")
        return e

    def refused_everywhere(self, r, forged, verdict=None):
        self.assertInvalidHistory(self.claim(r, "bob", "src/a.c"), "claim", forged, r.tip, verdict)
        self.assertInvalidHistory(r.run("bob", "--json", "status"), "status", forged, r.tip, verdict)
        self.assertInvalidHistory(r.run("bob", "--json", "fence", "src/a.c", "1"), "fence", forged,
                                  r.tip, verdict)
        self.assertEqual(r.tip(), forged)


class LocalTrustTest(CliTest, Refusals):
    def honest(self):
        r = self.repo(policy={"min_ttl_ms": 1000, "max_ttl_ms": 600000})
        r.now = T0 + 1000
        self.claimed(r, "alice", "src/a.c")
        return r, Plumbing(r)

    def test_deleted_lease_forgery_refused_then_recovered_by_the_owner(self):
        r, p = self.honest()
        honest_tip = p.chain()[-1]
        # bob's own signed claim of src/b.c on the tip, whose result also drops alice's live lease:
        # re-planning his body gives a state that still has it.
        genuine = genuine_elsewhere(r, "bob", "claim", "--ttl", "60s", "src/b.c")
        forged = forge_result(p, genuine, seed_key(r.key("bob")), without_record(p, "path:src/a.c"))
        self.refused_everywhere(r, forged, "result-mismatch")
        marker = os.path.join(r.root, "ran")
        run = r.run("bob", "--json", "run", "--ttl", "60s", "--claim", "src/b.c", "--", "touch", marker)
        self.assertInvalidHistory(run, "run", forged, r.tip)
        self.assertFalse(os.path.exists(marker), "run launched its command on invalid history")
        # verify names the recovery; the owner applies it; honest writers go on.
        v = r.run("owner", "verify")
        self.assertEqual(v.code, 1, v)
        recovery = f"git update-ref refs/locks/state {honest_tip} {forged}"
        self.assertIn(recovery, v.out)
        vj = r.run("owner", "--json", "verify")
        self.assertEqual(json.loads(vj.err.strip().splitlines()[-1])["recovery"], recovery)
        e = self.claim(r, "bob", "src/a.c").error
        self.assertEqual(e["recovery"], recovery)
        r.git(*recovery.split()[1:])
        self.assertRefused(self.claim(r, "bob", "src/a.c"), "held-path")  # alice's lease is back
        self.claimed(r, "bob", "src/b.c")

    def test_a_forged_cut_is_refused_and_recovery_names_the_commit_it_follows(self):
        """A cut (`checkpoint --cut`, docs/FORMAT.md "The cut") re-signed by alice, as its actor: no parent,
        `prev` the tip, right in every respect but the signer. Refused everywhere (only the owner
        checkpoints), and the recovery resets the ref to the commit the cut follows, not to nothing."""
        r, p = self.honest()
        tip = r.tip()
        genuine = genuine_elsewhere(r, "owner", "checkpoint", "--cut")
        self.assertEqual(p.git("rev-list", "--parents", "-n", "1", genuine).decode().split(), [genuine])
        tree = p.tree_of(genuine)
        packet = json.loads(p.cat(p.get(tree, "txn/packet.json")))["packet"]
        self.assertEqual(packet["body"]["admin"]["prev"], tip)
        alice = seed_key(r.key("alice"))
        packet["actor"] = public_hex(alice)
        signed = canon({"packet": packet, "sig": alice.sign(PACKET_DOMAIN + canon(packet)).hex()})
        forged = p.git("commit-tree", p.put(tree, "txn/packet.json", p.blob(signed)), "-m",
                       p.message(genuine)).decode().strip()
        p.git("update-ref", "refs/locks/state", forged, tip)
        self.refused_everywhere(r, forged, "replay-refused")
        recovery = f"git update-ref refs/locks/state {tip} {forged}"
        self.assertEqual(self.claim(r, "bob", "src/b.c").error["recovery"], recovery)
        v = r.run("owner", "--json", "verify")
        self.assertEqual(v.code, 1, v)
        self.assertEqual(json.loads(v.err.strip().splitlines()[-1])["recovery"], recovery)
        # The owner's genuine cut in its place: accepted, and writers go on from it.
        p.git("update-ref", "refs/locks/state", genuine, forged)
        self.claimed(r, "bob", "src/b.c")
        self.assertRefused(self.claim(r, "bob", "src/a.c"), "held-path")

    def test_checkpoint_every_n_publishes_only_when_n_commits_follow_the_newest(self):
        """`checkpoint --every N` for a scheduled job: a checkpoint only when N or more commits follow the
        newest one (a cut counts), else nothing is published and it says how far back the newest is."""
        r, p = self.honest()                                           # creation, alice's claim: 2 commits

        def every(n, published):
            before = r.tip()
            res = r.run("owner", "--json", "checkpoint", "--every", str(n))
            self.assertEqual(res.code, 0, res)
            self.assertEqual(r.tip() != before, published, res)
            return res.json

        out = every(3, False)                                          # 2 commits, none a checkpoint: 2 < 3
        self.assertEqual((out["commit"], out["since"], out["every"], out["prev"]), (None, 2, 3, r.tip()))
        out = every(2, True)                                           # 2 >= 2
        self.assertEqual((out["commit"], out["prev"]), (r.tip(), p.chain()[-2]))
        self.claimed(r, "bob", "src/b.c")
        self.claimed(r, "carol", "src/c.c")
        self.assertEqual(every(3, False)["since"], 2)                  # boundary - 1
        self.claimed(r, "dave", "src/d.c")
        every(3, True)                                                 # boundary: 3 >= 3
        self.assertEqual(every(1, False)["since"], 0)                  # the tip is a checkpoint
        # A cut counts as the newest checkpoint too.
        self.claimed(r, "erin", "src/e.c")
        self.assertEqual(r.run("owner", "--json", "checkpoint", "--cut").code, 0)
        self.assertEqual(every(1, False)["since"], 0)
        self.claimed(r, "erin", "src/f.c")
        self.assertEqual(every(2, False)["since"], 1)
        every(1, True)
        self.assertOk(r.run("owner", "verify", "--full"))
        for bad in ("0", "-1", "x", ""):
            self.assertUsage(r.run("owner", "--json", "checkpoint", "--every", bad))

    def test_recover_restores_the_last_valid_tip(self):
        r, p = self.honest()
        honest_tip = p.chain()[-1]
        nothing = r.run("bob", "--json", "recover")
        self.assertEqual((nothing.code, nothing.json), (0, {"op": "recover", "recovered": False, "tip": honest_tip}))
        forged = forge_on_tip(p, {"state": p.get(p.tree_of(p.chain()[0]), "state")})
        self.refused_everywhere(r, forged)
        dry = r.run("bob", "--json", "recover", "--dry-run")
        self.assertEqual(dry.code, 0, dry)
        self.assertEqual(dry.json, {"op": "recover", "recovered": False, "dry_run": True, "from": forged,
                                    "to": honest_tip, "first_invalid": forged, "verdict": "source-mismatch",
                                    "remote": None})
        self.assertEqual(r.tip(), forged)
        done = r.run("bob", "--json", "recover")
        self.assertEqual(done.code, 0, done)
        self.assertEqual((done.json["recovered"], done.json["from"], done.json["to"]), (True, forged, honest_tip))
        self.assertEqual(r.tip(), honest_tip)
        # Writers carry on: alice's lease is back, and new claims land on the restored tip.
        self.assertRefused(self.claim(r, "bob", "src/a.c"), "held-path")
        out = self.claimed(r, "bob", "src/b.c")
        self.assertEqual(p.chain()[-2], honest_tip)
        self.assertEqual(out["commit"], r.tip())

    def test_recover_refuses_when_the_root_is_invalid(self):
        r, p = self.honest()
        ids = p.chain()
        root_tree = p.tree_of(ids[0])
        broken = p.put(root_tree, "txn/packet.json", p.blob(b"{}"))
        new = p.rebuild([broken] + [p.tree_of(c) for c in ids[1:]], ["x"] * len(ids))
        # A clone that never trusted this history (no checkpoint) finds the root itself invalid.
        os.remove(checkpoint_file(r.path))
        res = r.run("owner", "--json", "recover")
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["commit"]), ("store-read", "store-read", new[0]), res)
        self.assertIn("itself is invalid", e["detail"])
        self.assertEqual(r.tip(), new[-1])

    def test_widened_ttl_bounds_refused(self):
        # bob's own claim of src/b.c, signed by him, whose result also raises max_ttl_ms: a policy change
        # by a transition that is not the owner's policy-set, caught by re-planning its body.
        r, p = self.honest()
        genuine = genuine_elsewhere(r, "bob", "claim", "--ttl", "60s", "src/b.c")
        forged = forge_result(p, genuine, seed_key(r.key("bob")),
                              with_policy(p, lambda pol: pol.update(max_ttl_ms=SAFE_MAX)))
        self.refused_everywhere(r, forged, "result-mismatch")
        # The same commit without the policy edit is valid: the re-planned result is what refused it.
        r.git("update-ref", "refs/locks/state", p.chain()[-2], forged)
        forge_result(p, genuine, seed_key(r.key("bob")), lambda state: state)
        self.assertOk(r.run("owner", "verify", "--full"))

    def test_replayed_packet_refused(self):
        r, p = self.honest()
        claim_commit = p.chain()[-1]
        r.now += 1000
        self.assertOk(r.run("alice", "release", "src/a.c"))
        # alice's signed claim again, on top of her release: a replay of a genuine packet.
        forged = forge_on_tip(p, {"state": p.get(p.tree_of(claim_commit), "state")}, packet_from=claim_commit)
        self.refused_everywhere(r, forged, "source-mismatch")

    def policy_set_by(self, r, p, signer):
        """The owner's kind of policy change (policy-set raising max_ttl_ms to 2 h, at the current policy hash,
        time-free) on top of the tip, complete in every respect, signed by `signer` as its actor."""
        tip = p.chain()[-1]
        packet = json.loads(p.cat(p.get(p.tree_of(tip), "txn/packet.json")))["packet"]
        raw = p.cat(p.get(p.tree_of(tip), "state/policy.json"))
        policy = json.loads(raw)
        policy["max_ttl_ms"] = 7_200_000
        state = p.put(p.get(p.tree_of(tip), "state"), "policy.json", p.blob(canon(policy)))
        key = seed_key(r.key(signer))
        actor = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        packet.update({"command": "policy set", "action": "policy-set", "actor": actor,
                       "source": p.get(p.tree_of(tip), "state"), "result": state, "interval": [0, 2**53 - 1],
                       "policy_hash": hashlib.sha256(raw).hexdigest(),
                       "body": {"admin": {"op": "policy-set", "expected_policy_hash": hashlib.sha256(raw).hexdigest(),
                                          "policy": policy}}})
        signed = canon({"packet": packet, "sig": key.sign(PACKET_DOMAIN + canon(packet)).hex()})
        return forge_on_tip(p, {"state": state, "txn/packet.json": signed})

    def test_admin_change_signed_by_a_non_owner_refused(self):
        r, p = self.honest()
        tip = p.chain()[-1]
        forged = self.policy_set_by(r, p, "alice")
        self.refused_everywhere(r, forged, "replay-refused")
        v = r.run("owner", "--json", "verify", "--full")
        self.assertEqual(v.code, 1, v)
        bad = [json.loads(l) for l in v.out.splitlines() if not json.loads(l)["ok"]]
        self.assertEqual([b["commit"] for b in bad], [forged])
        self.assertIn("only the store's owner", bad[0]["detail"])
        # The same transition signed by the owner is valid: the owner check is what refused it.
        r.git("update-ref", "refs/locks/state", tip, forged)
        owners = self.policy_set_by(r, p, "owner")
        self.assertOk(r.run("owner", "verify", "--full"))
        self.claimed(r, "bob", "src/b.c", ttl="2h")  # over the old max_ttl_ms (600 s), under the new one
        self.assertNotEqual(r.tip(), owners)

    def test_owner_checkpoint_verified_and_one_naming_another_commit_refused(self):
        """`git-locks checkpoint` (docs/FORMAT.md "Checkpoints"): the owner's signed checkpoint of the
        state at the tip, which every verifier checks follows the commit it names."""
        r, p = self.honest()
        first = p.chain()[0]
        tip = p.chain()[-1]
        state = p.get(p.tree_of(tip), "state")
        policy_hash = json.loads(r.run("bob", "--json", "policy", "show").out)["policy_hash"]
        # Anyone but the owner: refused, nothing published.
        self.assertRefused(r.run("alice", "--json", "checkpoint"), "not-holder", "not-owner")
        self.assertEqual(r.tip(), tip)
        # A forgery first: the owner's own checkpoint of the tip, unpublished, re-signed by the owner
        # naming the root instead of its parent. Right in every other respect.
        genuine = genuine_elsewhere(r, "owner", "checkpoint")
        forged = forge_result(p, genuine, seed_key(r.key("owner")), lambda s: s,
                              lambda packet: packet["body"]["admin"].update(prev=first))
        self.refused_everywhere(r, forged, "checkpoint-mismatch")
        r.git("update-ref", "refs/locks/state", tip, forged)
        # The owner's checkpoint: published, the state unchanged, and every verifier accepts it.
        res = r.run("owner", "--json", "checkpoint")
        self.assertEqual(res.code, 0, res)
        out = json.loads(res.out)
        self.assertEqual((out["op"], out["prev"], out["commit"]), ("checkpoint", tip, r.tip()))
        self.assertEqual(p.git("rev-parse", r.tip() + "^").decode().strip(), tip)
        self.assertEqual(p.get(p.tree_of(r.tip()), "state"), state)
        packet = json.loads(p.cat(p.get(p.tree_of(r.tip()), "txn/packet.json")))["packet"]
        self.assertEqual((packet["action"], packet["command"], packet["source"], packet["result"]),
                         ("checkpoint", "checkpoint", state, state))
        self.assertEqual(packet["body"],
                         {"admin": {"op": "checkpoint", "expected_policy_hash": policy_hash, "prev": tip}})
        self.assertOk(r.run("owner", "verify", "--full"))
        self.claimed(r, "bob", "src/b.c")

    def test_fresh_clone_starts_at_the_owners_checkpoint(self):
        """A clone that trusts nothing yet replays from the newest checkpoint of the owner (pinned by
        `git config locks.owner`, or trusted on first use); `verify --full` replays from the root."""
        r, p = self.honest()                                 # creation, alice's claim
        self.claimed(r, "bob", "src/b.c")
        self.assertOk(r.run("owner", "checkpoint"))          # commit 3
        checkpoint = r.tip()
        self.claimed(r, "carol", "src/c.c")
        self.claimed(r, "dave", "src/d.c")
        tip = r.tip()
        # A fresh clone's verify: the checkpoint and the 2 commits after it.
        fresh = fresh_clone_of(r, "fresh")
        v = fresh.run("erin", "--json", "verify")
        self.assertEqual(v.code, 0, v)
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["start_commit"], summary["commits"], summary["tip"]),
                         ("checkpoint", checkpoint, 2, tip), summary)
        self.assertEqual([json.loads(l)["commit"] for l in v.out.splitlines()],
                         p.git("rev-list", "--reverse", checkpoint + ".." + tip).decode().split())
        # Its first claim and status: the state of the whole history.
        self.claimed(fresh, "erin", "src/e.c")
        status = json.loads(fresh.run("erin", "--json", "status").out)
        self.assertEqual(sorted(l["path"] for l in status["leases"]),
                         ["src/a.c", "src/b.c", "src/c.c", "src/d.c", "src/e.c"])
        self.assertRefused(self.claim(fresh, "erin", "src/b.c"), "held-path")
        # --full replays all 7 commits and says the checkpoint matched.
        full = fresh.run("erin", "--json", "verify", "--full")
        self.assertEqual(full.code, 0, full)
        summary = json.loads(full.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["commits"], summary["checkpoints"]),
                         ("root", 7, {"valid": 1, "invalid": 0}), summary)
        # Pinned to the owner's key, another fresh clone starts there too; pinned to another key it
        # refuses the store (its root and its checkpoint are the owner's).
        pinned = fresh_clone_of(r, "pinned")
        owner_key = json.loads(r.run("owner", "--json", "whoami").out)["actor"]
        pinned.git("config", "locks.owner", owner_key.upper())
        v = pinned.run("erin", "--json", "verify")
        self.assertEqual(json.loads(v.err.splitlines()[-1])["start"], "checkpoint", v)
        # Pinned to another key after it trusted the store: the store is refused all the same (its
        # trusted tip replays nothing, and the owner is checked there too), and verify judges it from
        # the root: owner-mismatch, no reset offered.
        pinned.git("config", "locks.owner", "cd" * 32)
        res = self.claim(pinned, "erin", "src/g.c")
        self.assertEqual(res.code, 2, res)
        self.assertEqual((res.error["code"], res.error["verdict"], res.error["commit"]),
                         ("invalid-history", "owner-mismatch", tip), res)
        self.assertNotIn("recovery", res.error, res)
        v = pinned.run("erin", "--json", "verify")
        self.assertEqual(v.code, 1, v)
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["first_invalid"], summary["recovery"]),
                         ("root", p.chain()[0], None), summary)
        self.assertEqual(json.loads(v.out.splitlines()[0])["reason"], "owner-mismatch")
        self.assertEqual(r.tip(), tip)
        other = fresh_clone_of(r, "other")
        other.git("config", "locks.owner", "ab" * 32)
        res = self.claim(other, "erin", "src/f.c")
        self.assertEqual(res.code, 2, res)
        self.assertEqual((res.error["code"], res.error["verdict"]), ("invalid-history", "owner-mismatch"), res)
        other.git("config", "locks.owner", "not-a-key")
        self.assertUsage(self.claim(other, "erin", "src/f.c"))

    def test_rewrite_below_the_checkpoint_refused(self):
        r, p = self.honest()
        r.now += 1000
        self.claimed(r, "bob", "src/b.c")  # the checkpoint is now at this tip
        ids = p.chain()
        new = p.rebuild([p.tree_of(c) for c in ids], ["rewritten"] * len(ids))  # faithful, but not ours
        res = self.claim(r, "carol", "src/c.c")
        self.assertInvalidHistory(res, "claim", new[-1], r.tip, "rewrite")
        self.assertIn(ids[-1], res.error["detail"])
        self.assertEqual(res.error["recovery"], f"git update-ref refs/locks/state {ids[-1]} {new[-1]}")
        self.assertEqual(r.tip(), new[-1])

    def test_corrupted_checkpoint_full_replay_still_correct(self):
        r, p = self.honest()
        cp = checkpoint_file(r.path)
        with open(cp) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], "git-locks-trust-v1")
        self.assertEqual(doc["trust"]["commit"], r.tip())
        self.assertEqual(doc["trust"]["last_time"], T0 + 1000)
        for garbage in [b"{not json", b"", canon({"format": "git-locks-trust-v1", "trust": dict(doc["trust"],
                                                                                        commit="0" * 40)})]:
            with open(cp, "wb") as f:
                f.write(garbage)
            r.now += 1000
            out = self.claimed(r, "bob", f"src/{r.now}.c")
            with open(cp) as f:
                self.assertEqual(json.load(f)["trust"]["commit"], out["commit"])
        # A checkpoint lying about the last T (2^53-1) is not believed either: full replay.
        with open(cp) as f:
            doc = json.load(f)
        doc["trust"]["last_time"] = SAFE_MAX
        with open(cp, "wb") as f:
            f.write(canon(doc))
        r.now += 1000
        self.claimed(r, "bob", "src/z.c")
        # A corrupted checkpoint never hides a forgery.
        forged = forge_on_tip(p, {"state": p.get(p.tree_of(p.chain()[0]), "state")})
        with open(cp, "wb") as f:
            f.write(b"garbage")
        self.assertInvalidHistory(self.claim(r, "bob", "src/a.c"), "claim", forged, r.tip, "source-mismatch")

    def test_linked_worktrees_share_the_checkpoint(self):
        r, p = self.honest()
        r.git("commit", "-q", "--allow-empty", "-m", "base")
        wt = os.path.join(r.root, "wt")
        r.git("worktree", "add", "-q", wt)
        other = subprocess.run(["git", "-C", wt, "rev-parse", "--absolute-git-dir"], capture_output=True, text=True,
                               check=True).stdout.strip()
        self.assertNotEqual(other, r.gitdir())
        self.assertEqual(checkpoint_file(wt), checkpoint_file(r.path))
        res = subprocess.run([os.environ["GIT_LOCKS_BIN"], "--repo", wt, "--json", "claim", "--ttl", "60s", "x"],
                             capture_output=True, text=True, env=r.env("bob"))
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(checkpoint_file(r.path)) as f:
            self.assertEqual(json.load(f)["trust"]["commit"], json.loads(res.stdout)["commit"])


class PolicyCheckpointTest(CliTest, Refusals):
    """Checkpoints by policy (docs/FORMAT.md "Checkpoints by policy", issue 33 item 4): the policy's
    `checkpoint` names the keys that may checkpoint besides the owner and asks the owner and them for a
    checkpoint after their own transition once `every` commits follow the newest one. A fresh clone
    starts at another key's checkpoint only when it pins that key (git config locks.checkpointSigners)."""

    def store(self, every=3, **extra):
        r = self.repo(init=False)
        r.now = T0 + 1000
        bob = json.loads(r.run("bob", "--json", "whoami").out)["actor"]
        rule = {"every": every, "signers": [bob]}
        rule.update(extra)
        pfile = os.path.join(r.root, "policy.json")
        with open(pfile, "w") as f:
            json.dump({"min_ttl_ms": 1000, "max_ttl_ms": 600000, "checkpoint": rule}, f)
        self.assertOk(r.run("owner", "init", "--policy", pfile))
        return r, Plumbing(r), bob

    def packet(self, p, commit):
        return json.loads(p.cat(p.get(p.tree_of(commit), "txn/packet.json")))["packet"]

    def test_named_writers_checkpoint_every_n_commits_and_others_never(self):
        r, p, bob = self.store(every=3)
        shown = json.loads(r.run("owner", "--json", "policy", "show").out)["policy"]
        self.assertEqual(shown["checkpoint"], {"every": 3, "signers": [bob]})
        # alice is not named: her transitions never checkpoint, and her checkpoint is refused.
        for path in ("src/a.c", "src/b.c", "src/c.c"):
            self.assertNotIn("checkpoint", self.claimed(r, "alice", path))
        tip = r.tip()
        self.assertRefused(r.run("alice", "--json", "checkpoint"), "not-holder", "not-owner")
        self.assertEqual(r.tip(), tip)
        # bob is: 4 commits follow the root (none a checkpoint), so his claim is followed by his checkpoint.
        out = self.claimed(r, "bob", "src/d.c")
        claim = out["commit"]
        self.assertEqual(out["checkpoint"], r.tip())
        self.assertEqual(p.git("rev-parse", r.tip() + "^").decode().strip(), claim)
        packet = self.packet(p, r.tip())
        self.assertEqual((packet["action"], packet["actor"], packet["body"]["admin"]["prev"]),
                         ("checkpoint", bob, claim))
        # The next two commits are fewer than 3 since it; the third after it checkpoints again.
        self.assertNotIn("checkpoint", self.claimed(r, "bob", "src/e.c"))
        self.assertNotIn("checkpoint", self.claimed(r, "alice", "src/f.c"))
        out = self.claimed(r, "owner", "src/g.c")
        self.assertEqual(self.packet(p, out["checkpoint"])["actor"], self.packet(p, out["commit"])["actor"])
        full = r.run("carol", "--json", "verify", "--full")
        self.assertEqual(full.code, 0, full)
        self.assertEqual(json.loads(full.err.splitlines()[-1])["checkpoints"], {"valid": 2, "invalid": 0})
        # A fresh clone starts at the newest checkpoint, the owner's; one pinning only... the owner's is
        # always trusted. Behind it, bob's is started at only when pinned: made the newest by hand.
        self.assertEqual(r.run("bob", "--json", "checkpoint").code, 0)
        bobs = r.tip()
        unpinned = fresh_clone_of(r, "unpinned")
        v = unpinned.run("carol", "--json", "verify")
        self.assertEqual(v.code, 0, v)
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["start_commit"]), ("checkpoint", out["checkpoint"]), summary)
        pinned = fresh_clone_of(r, "pinned")
        pinned.git("config", "locks.checkpointSigners", "ab" * 32 + ", " + bob.upper())
        v = pinned.run("carol", "--json", "verify")
        self.assertEqual(v.code, 0, v)
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["start_commit"], summary["commits"]),
                         ("checkpoint", bobs, 0), summary)
        pinned.git("config", "locks.checkpointSigners", "not-a-key")
        self.assertUsage(self.claim(pinned, "carol", "src/h.c"))

    def test_a_checkpoint_by_a_key_the_policy_does_not_name_is_refused_everywhere(self):
        """bob's genuine checkpoint re-signed by carol, whom the policy does not name: right in every
        respect but the signer; refused by every writer and reader, and by verify."""
        r, p, bob = self.store(every=1000)
        self.claimed(r, "alice", "src/a.c")
        genuine = genuine_elsewhere(r, "bob", "checkpoint")
        self.assertEqual(self.packet(p, genuine)["actor"], bob)
        r.run("carol", "whoami")
        carol = seed_key(r.key("carol"))

        def resign(packet):
            packet["actor"] = public_hex(carol)
        tree = p.tree_of(genuine)
        packet = self.packet(p, genuine)
        resign(packet)
        signed = canon({"packet": packet, "sig": carol.sign(PACKET_DOMAIN + canon(packet)).hex()})
        tip = r.tip()
        forged = p.git("commit-tree", p.put(tree, "txn/packet.json", p.blob(signed)), "-p", tip, "-m",
                       p.message(genuine)).decode().strip()
        p.git("update-ref", "refs/locks/state", forged, tip)
        self.refused_everywhere(r, forged, "replay-refused")
        v = r.run("owner", "--json", "verify")
        self.assertEqual(v.code, 1, v)
        bad = json.loads(v.out.splitlines()[-1])
        self.assertEqual((bad["commit"], bad["reason"]), (forged, "replay-refused"))
        self.assertIn("or a checkpoint signer its policy names", bad["detail"])
        # bob's genuine one in its place is valid.
        p.git("update-ref", "refs/locks/state", genuine, forged)
        self.claimed(r, "alice", "src/b.c")

    def test_a_cut_naming_its_own_signer_is_not_started_at(self):
        """A cut signed by carol whose own state's policy names carol as a checkpoint signer: the chain
        starts there, so the policy vouching for carol is the cut's own word. Refused (not-owner) by a
        clone that does not pin carol, even with the owner pinned; accepted by one that pins her."""
        r, p, bob = self.store(every=1000)
        self.claimed(r, "alice", "src/a.c")
        r.run("carol", "whoami")
        carol = seed_key(r.key("carol"))
        carol_hex = public_hex(carol)
        genuine = genuine_elsewhere(r, "owner", "checkpoint", "--cut")
        tree = p.tree_of(genuine)
        policy = json.loads(p.cat(p.get(tree, "state/policy.json")))
        policy["checkpoint"]["signers"] = sorted([bob, carol_hex])
        raw = canon(policy)
        state = p.put(p.get(tree, "state"), "policy.json", p.blob(raw))
        packet = self.packet(p, genuine)
        packet.update(actor=carol_hex, source=state, result=state, policy_hash=hashlib.sha256(raw).hexdigest())
        packet["body"]["admin"]["expected_policy_hash"] = hashlib.sha256(raw).hexdigest()
        signed = canon({"packet": packet, "sig": carol.sign(PACKET_DOMAIN + canon(packet)).hex()})
        cut = p.git("commit-tree", p.put(p.put(tree, "state", state, "tree"), "txn/packet.json", p.blob(signed)),
                    "-m", p.message(genuine)).decode().strip()
        # A store holding only the cut's chain (its earlier history nowhere).
        owner = json.loads(r.run("owner", "--json", "whoami").out)["actor"]
        fresh = copy.copy(r)
        fresh.path = os.path.join(r.root, "only-the-cut")
        subprocess.run(["git", "init", "-q", fresh.path], check=True)
        fresh.git("fetch", "-q", r.path, cut + ":refs/locks/state")
        fresh.git("config", "locks.owner", owner)
        res = fresh.run("dave", "--json", "status")
        self.assertEqual(res.code, 2, res)
        self.assertEqual((res.error["code"], res.error["verdict"], res.error["commit"]),
                         ("invalid-history", "not-owner", cut), res)
        v = fresh.run("dave", "--json", "verify")
        self.assertEqual(v.code, 1, v)
        self.assertEqual(json.loads(v.out.splitlines()[0])["reason"], "not-owner")
        fresh.git("config", "locks.checkpointSigners", carol_hex)
        res = fresh.run("dave", "--json", "status")
        self.assertEqual(res.code, 0, res)
        self.assertEqual([l["path"] for l in res.json["leases"]], ["src/a.c"])


class GuardTimeTrustTest(GuardTimeBase, Refusals):
    def setUp(self):
        super().setUp()
        self.enabled()
        self.notary.clock(P)
        r = self.attested("alice", "claim", "--ttl", "60000", "a")
        self.assertEqual(r.code, 0, r)
        self.p = Plumbing(self.repo)

    def test_dropped_guard_time_refused_even_with_the_notary_down(self):
        # bob's own attested claim of b, re-signed by him with guard time gone from its result, his own
        # clock's reading instead of the notary's T and no attestation: judged as a commit without guard
        # time, it is refused because its body never gives that result.
        tip = self.p.chain()[-1]
        genuine = genuine_elsewhere(self.repo, "bob", "claim", "--ttl", "60000", "b", "--allow-test-clock",
                                    env={"GIT_LOCKS_PROPOSAL_MS": str(P)})
        att = json.loads(self.p.cat(self.p.get(self.p.tree_of(genuine), "txn/attestation.json")))
        at = att["attestation"]["admitted_at_ms"]
        key = seed_key(self.repo.key("bob"))
        forged = forge_result(self.p, genuine, key, with_policy(self.p, lambda pol: pol.pop("guard_time")),
                              edit_packet=lambda pk: pk.update(claimed_at_ms=at), keep_attestation=False)
        self.notary.stop()
        r = self.attested("bob", "claim", "--ttl", "60000", "c")
        self.assertInvalidHistory(r, "claim", forged, self.repo.tip, "result-mismatch")
        st = self.repo.run("bob", "--json", "status", "--allow-test-clock")
        self.assertInvalidHistory(st, "status", forged, self.repo.tip, "result-mismatch")
        # Unedited, the genuine commit is valid on this tip: the policy edit is what was refused.
        self.repo.git("update-ref", "refs/locks/state", genuine, forged)
        self.assertEqual(self.repo.run("bob", "--json", "status", "--allow-test-clock").code, 0)
        self.assertEqual(self.p.chain()[-2], tip)

    def test_end_of_time_and_unpinned_key_attestations_refused(self):
        tip = self.p.chain()[-1]
        stored = json.loads(self.p.cat(self.p.get(self.p.tree_of(tip), "txn/attestation.json")))
        rogue = Ed25519PrivateKey.generate()
        pinned = stored["attestation"]["service_key"]
        self.assertEqual(pinned, self.notary.service_key)
        end_of_time = dict(stored["attestation"], admitted_at_ms=SAFE_MAX)  # the pinned key's, not its signature
        unpinned = dict(stored["attestation"], service_key=public_hex(rogue))  # correctly signed by its own key
        for att, verdict in ((end_of_time, "bad-attestation-signature"), (unpinned, "attestation-mismatch")):
            with self.subTest(verdict=verdict):
                forged_att = canon({"attestation": att, "sig": rogue.sign(ATTESTATION_DOMAIN + canon(att)).hex()})
                forged = forge_on_tip(self.p, {"txn/attestation.json": forged_att}, packet_from=tip)
                # A forged "last T" of 2^53-1 would block every writer; it is invalid history instead.
                r = self.attested("bob", "claim", "--ttl", "60000", "b")
                e = self.assertInvalidHistory(r, "claim", forged, self.repo.tip, verdict)
                f = self.repo.run("bob", "--json", "fence", "a", "1", "--allow-test-clock")
                self.assertInvalidHistory(f, "fence", forged, self.repo.tip, verdict)
                self.assertEqual(e["last_valid"], tip)
                self.repo.git(*e["recovery"].split()[1:])  # the owner's recovery; the next forgery starts there
                self.assertEqual(self.repo.tip(), tip)
        self.assertEqual(self.attested("bob", "claim", "--ttl", "60000", "b").code, 0)

    def test_owner_checkpoint_attested_and_a_fresh_clone_starts_there(self):
        r = self.attested("alice", "checkpoint")  # the owner of this store
        self.assertEqual(r.code, 0, r)
        checkpoint = self.repo.tip()
        self.repo.git("cat-file", "-e", checkpoint + ":txn/attestation.json")  # the notary admitted it
        self.assertEqual(self.attested("bob", "claim", "--ttl", "60000", "b").code, 0)
        fresh = fresh_clone_of(self.repo, "fresh")
        v = fresh.run("carol", "--json", "--allow-test-clock", "verify")
        self.assertEqual(v.code, 0, v)
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["start_commit"], summary["commits"]),
                         ("checkpoint", checkpoint, 1), summary)

    def test_test_clock_accepted_only_with_allow_test_clock(self):
        # Nothing run with --allow-test-clock (the activation, alice's claim, this status) left a
        # checkpoint: it is still where `init` put it, so a command without the flag replays them.
        self.assertEqual(self.repo.run("bob", "--json", "status", "--allow-test-clock").code, 0)
        with open(checkpoint_file(self.repo.path)) as f:
            self.assertEqual(json.load(f)["trust"]["commit"], self.p.chain()[0])
        r = self.repo.run("bob", "--json", "status")
        self.assertEqual(r.code, 2, r)
        self.assertEqual((r.error["code"], r.error["verdict"]), ("invalid-history", "attestation-mismatch"), r)
        self.assertEqual(self.repo.run("bob", "--json", "status", "--allow-test-clock").code, 0)


class PrivateTrustTest(CliTest, Refusals):
    def test_fresh_clone_of_a_private_store_starts_at_the_checkpoint_for_members_and_others(self):
        r = self.repo(init=False)
        self.assertOk(r.run("owner", "init", "--private"))
        self.assertOk(r.run("owner", "claim", "--ttl", "60s", "secret/a"))
        self.assertOk(r.run("owner", "checkpoint"))
        checkpoint = r.tip()
        self.assertOk(r.run("owner", "claim", "--ttl", "60s", "secret/b"))
        for who, level in (("owner", "full"), ("mallory", "structural")):
            fresh = fresh_clone_of(r, "fresh-" + who)
            v = fresh.run(who, "--json", "verify")
            self.assertEqual(v.code, 0, v)
            summary = json.loads(v.err.splitlines()[-1])
            self.assertEqual((summary["start"], summary["start_commit"], summary["commits"]),
                             ("checkpoint", checkpoint, 1), summary)
            self.assertEqual([json.loads(l)["level"] for l in v.out.splitlines()], [level])


    def test_a_packet_re_signed_by_a_non_member_refused_by_members_and_non_members(self):
        r = self.repo(init=False)
        self.assertOk(r.run("owner", "init", "--private"))
        keys = {a: self.assertOk(r.run(a, "--json", "whoami")).json["actor"] for a in ("alice", "mallory")}
        self.assertOk(r.run("owner", "member", "add", keys["alice"]))
        self.assertOk(r.run("alice", "claim", "secret/plan.md"))
        p = Plumbing(r)
        tip = p.chain()[-1]
        # alice's sealed claim, its packet now mallory's and signed by mallory (no member).
        packet = json.loads(p.cat(p.get(p.tree_of(tip), "txn/packet.json")))["packet"]
        packet["actor"] = keys["mallory"]
        mallory = seed_key(r.key("mallory"))
        self.assertEqual(public_hex(mallory), keys["mallory"])
        signed = canon({"packet": packet, "sig": mallory.sign(PACKET_DOMAIN + canon(packet)).hex()})
        forged = forge_on_tip(p, {"txn/packet.json": signed})
        # alice replays in full with her keys; mallory (no keys) structurally: both refuse it.
        e = self.assertInvalidHistory(self.claim(r, "alice", "secret/next.md"), "claim", forged, r.tip, "not-member")
        self.assertEqual(e["last_valid"], tip)
        self.assertInvalidHistory(r.run("owner", "--json", "status"), "status", forged, r.tip, "not-member")
        self.assertInvalidHistory(r.run("mallory", "--json", "status"), "status", forged, r.tip, "not-member")


class RemoteTrustTest(unittest.TestCase, Refusals):
    """The forgeries through a real server: a forger's plain clone, plumbing
    and `git push` (forced for the rewrite); an honest host refuses each one,
    leaving the server's ref where the forger put it, and the owner's
    recovery (the push the error names) restores the store for the next."""

    def forgeries_through(self, kind):
        root = tempfile.mkdtemp(prefix="gitlocks-trust-")
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        server = Server.start(kind, root)
        self.addCleanup(server.close)
        a = Repo(self, "a")
        b = Repo(self, "b")
        for repo in (a, b):
            repo.git("remote", "add", "origin", server.url)
            repo.git("config", "locks.remote", "origin")
        self.assertEqual(a.run("owner", "init").code, 0)
        self.assertEqual(a.run("alice", "claim", "--ttl", "60s", "src/a.c").code, 0)
        self.assertEqual(a.run("alice", "claim", "--ttl", "60s", "src/b.c").code, 0)
        honest = server.history()[::-1]  # root first: init, claim a, claim b
        self.assertEqual(len(honest), 3)
        self.assertTrue(os.path.exists(checkpoint_file(a.path, "origin")))
        f = os.path.join(root, "forger")
        clone(server.url, f, "forger")
        fake = Repo.__new__(Repo)
        fake.path = f
        p = Plumbing(fake)

        def forged(build, force=False):
            subprocess.run(["git", "-C", f, "fetch", "-q", "-f", "origin", "refs/locks/state:refs/locks/state"],
                           check=True)
            commit = build()
            subprocess.run(["git", "-C", f, "push", "-q", *(["-f"] if force else []), "origin",
                            "refs/locks/state:refs/locks/state"], check=True)
            self.assertEqual(server.tip(), commit)
            return commit

        def refused(host, commit, verdict=None, last_valid=honest[-1]):
            res = host.run("bob", "--json", "claim", "--ttl", "60s", "src/a.c")
            e = self.assertInvalidHistory(res, "claim", commit, server.tip, verdict)
            self.assertEqual(e["last_valid"], last_valid, res)
            recovery = f"git push --force-with-lease=refs/locks/state:{commit} origin {last_valid}:refs/locks/state"
            self.assertEqual(e["recovery"], recovery, res)
            return e

        def recover(host, e):
            host.git(*e["recovery"].split()[1:])
            self.assertEqual(server.tip(), honest[-1])

        fake.root = root
        fake.now = None

        def policy_widened():
            # the forger's own claim, made in her clone without publishing, its result widened and re-signed.
            genuine = genuine_elsewhere(fake, "mallory", "claim", "--ttl", "60s", "src/m.c")
            return forge_result(p, genuine, seed_key(fake.key("mallory")),
                                with_policy(p, lambda pol: pol.update(max_ttl_ms=SAFE_MAX)))

        cases = [
            # alice's live leases gone: the root's state under her last packet.
            ("deleted-lease", lambda: forge_result(p, genuine_elsewhere(fake, "mallory", "claim", "--ttl", "60s",
                                                                         "src/m.c"),
                                                   seed_key(fake.key("mallory")), without_record(p, "path:src/a.c")),
             "result-mismatch"),
            ("widened-ttl", policy_widened, "result-mismatch"),
            # her first claim's packet and state again, on top of her second claim.
            ("replayed-packet", lambda: forge_on_tip(p, {"state": p.get(p.tree_of(honest[1]), "state")},
                                                     packet_from=honest[1]), "source-mismatch"),
        ]
        for name, build, verdict in cases:
            with self.subTest(kind=kind, forgery=name):
                commit = forged(build)
                e = refused(b, commit, verdict)  # a fresh clone: replayed from the root
                self.assertFalse(os.path.exists(checkpoint_file(b.path, "origin")))
                self.assertInvalidHistory(a.run("alice", "--json", "status"), "status", commit, server.tip,
                                          verdict)  # from its checkpoint
                if name == "widened-ttl":  # the owner's one command instead of the push the error names
                    res = a.run("owner", "--json", "recover")
                    self.assertEqual(res.code, 0, res)
                    self.assertEqual((res.json["recovered"], res.json["from"], res.json["to"], res.json["remote"]),
                                     (True, commit, honest[-1], "origin"))
                    self.assertEqual(server.tip(), honest[-1])
                else:
                    recover(a, e)
        # A corrupted checkpoint never hides a forgery: full replay, still refused.
        with self.subTest(kind=kind, forgery="corrupted-checkpoint"):
            with open(checkpoint_file(a.path, "origin"), "wb") as out:
                out.write(b'{"format":"git-locks-trust-v1","trust":')
            commit = forged(lambda: forge_on_tip(p, {"state": p.get(p.tree_of(honest[0]), "state")}))
            recover(a, refused(a, commit, "source-mismatch"))
            self.assertEqual(a.run("alice", "--json", "status").code, 0)  # and the checkpoint is whole again
            with open(checkpoint_file(a.path, "origin")) as cp:
                self.assertEqual(json.load(cp)["trust"]["commit"], honest[-1])
        # A faithful rewrite of the whole history, force-pushed below both hosts' checkpoints.
        with self.subTest(kind=kind, forgery="rewrite"):
            self.assertEqual(b.run("bob", "--json", "status").code, 0)  # b's checkpoint: the honest tip
            commit = forged(lambda: p.rebuild([p.tree_of(c) for c in honest], ["rewritten"] * 3)[-1], force=True)
            for host in (a, b):
                e = refused(host, commit, "rewrite")
                self.assertIn(honest[-1], e["detail"])
            recover(a, e)
        # Honest writers go on from the restored store.
        self.assertEqual(b.run("bob", "claim", "--ttl", "60s", "src/c.c").code, 0)
        self.assertRefusedHeld(b.run("bob", "--json", "claim", "--ttl", "60s", "src/a.c"))

    def assertRefusedHeld(self, res):
        self.assertEqual(res.code, 1, res)
        self.assertEqual((res.error["error"], res.error["reason"]), ("refused", "held-path"), res)

    def test_forgeries_through_git_daemon(self):
        self.forgeries_through("daemon")

    def test_forgeries_through_smart_http(self):
        self.forgeries_through("http")

    def test_fresh_clone_through_git_daemon_starts_at_the_checkpoint(self):
        """A clone of a remote store that has verified nothing replays from the owner's newest checkpoint:
        the checkpoint and what follows, and its first claim publishes through the server."""
        root = tempfile.mkdtemp(prefix="gitlocks-trust-")
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        server = Server.start("daemon", root)
        self.addCleanup(server.close)
        a = Repo(self, "a")
        a.git("remote", "add", "origin", server.url)
        a.git("config", "locks.remote", "origin")
        self.assertEqual(a.run("owner", "init").code, 0)
        for path in ("src/a.c", "src/b.c", "src/c.c"):
            self.assertEqual(a.run("alice", "claim", "--ttl", "60s", path).code, 0)
        self.assertEqual(a.run("owner", "checkpoint").code, 0)
        checkpoint = server.tip()
        self.assertEqual(a.run("alice", "claim", "--ttl", "60s", "src/d.c").code, 0)
        b = Repo(self, "b")
        b.git("remote", "add", "origin", server.url)
        b.git("config", "locks.remote", "origin")
        v = b.run("bob", "--json", "verify")
        self.assertEqual(v.code, 0, v)
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["start_commit"], summary["commits"], summary["tip"]),
                         ("checkpoint", checkpoint, 1, server.tip()), summary)
        res = b.run("bob", "--json", "claim", "--ttl", "60s", "src/e.c")
        self.assertEqual(res.code, 0, res)
        self.assertEqual(json.loads(res.out)["commit"], server.tip())
        res = b.run("bob", "--json", "claim", "--ttl", "60s", "src/a.c")
        self.assertEqual((res.code, res.error["reason"]), (1, "held-path"), res)


if __name__ == "__main__":
    unittest.main()
