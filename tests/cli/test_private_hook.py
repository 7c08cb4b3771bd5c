"""The server's pre-receive hook on a PRIVATE store (docs/PRIVATE.md,
"Verification"). The server holds no member key, so it verifies
structurally, and structural verification still refuses: a commit signed by
a key that is neither the owner nor a member of the source's epoch; a sealed
(non-admin) commit that changes any byte of the public policy, however
correctly a member signed it; an admin commit (a policy change) signed by a
member who is not the owner. Forgeries are made with real Git plumbing and
pushed with `git push` to a bare repository; honest pushes still land."""

import json
import os
import subprocess
import tempfile
import unittest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from support import CliTest, Result, binary

PACKET_DOMAIN = b"gitlocks/packet/v1\x00"  # docs/FORMAT.md: the packet signature's prefix
STATE = "refs/locks/state"


def canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class PrivateServerHook(CliTest):
    def setUp(self):
        self.r = self.repo(init=False)
        self.assertOk(self.r.run("owner", "init", "--private"))
        self.keys = {a: self.whoami(a) for a in ("owner", "alice", "bob", "mallory")}
        self.assertOk(self.r.run("owner", "member", "add", self.keys["alice"]))
        self.assertOk(self.r.run("alice", "claim", "secret/plan.md"))
        self.bare = os.path.join(self.r.root, "server.git")
        subprocess.run(["git", "init", "-q", "--bare", self.bare], check=True)
        hook = Result(subprocess.run([binary(), "--repo", self.bare, "--json", "hook", "install", "--server"],
                                     capture_output=True, text=True))
        self.assertOk(hook)
        self.assertEqual(hook.json["server"], True)
        self.assertEqual(self.push(self.r.tip()).returncode, 0)
        self.good = self.server_tip()
        self.assertEqual(self.good, self.r.tip())

    def whoami(self, actor):
        res = self.r.run(actor, "--json", "whoami")
        self.assertOk(res)
        return res.json["actor"]

    def server_tip(self):
        return subprocess.run(["git", "--git-dir", self.bare, "rev-parse", STATE], capture_output=True,
                              text=True, check=True).stdout.strip()

    def push(self, commit):
        return subprocess.run(["git", "-C", self.r.path, "push", "--porcelain", self.bare, f"{commit}:{STATE}"],
                              capture_output=True, text=True)

    def git(self, *args, env=None, stdin=None):
        return subprocess.run(["git", "-C", self.r.path, *args], input=stdin, capture_output=True, text=True,
                              check=True, env=env).stdout

    def forge(self, commit, signer, policy=None):
        """`commit` again, on its own parent, its packet's actor `signer` and
        signed by `signer`'s key; with `policy` (a function of the policy
        document) its state's policy.json is replaced and the packet's result
        follows it. Plumbing only: read-tree, update-index, write-tree,
        commit-tree."""
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, GIT_INDEX_FILE=os.path.join(d, "index"))
            self.git("read-tree", commit, env=env)
            packet = json.loads(self.git("cat-file", "blob", f"{commit}:txn/packet.json"))["packet"]
            if policy is not None:
                doc = json.loads(self.git("cat-file", "blob", f"{commit}:state/policy.json"))
                policy(doc)
                blob = self.git("hash-object", "-w", "--stdin", stdin=canon(doc).decode()).strip()
                self.git("update-index", "--cacheinfo", f"100644,{blob},state/policy.json", env=env)
                packet["result"] = self.git("write-tree", "--prefix=state/", env=env).strip()
            packet["actor"] = self.keys[signer]
            with open(self.r.key(signer)) as f:
                key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(json.load(f)["seed"]))
            sig = key.sign(PACKET_DOMAIN + canon(packet)).hex()
            blob = self.git("hash-object", "-w", "--stdin", stdin=canon({"packet": packet, "sig": sig}).decode())
            self.git("update-index", "--cacheinfo", f"100644,{blob.strip()},txn/packet.json", env=env)
            tree = self.git("write-tree", env=env).strip()
        message = self.git("log", "-1", "--format=%B", commit)
        return self.git("commit-tree", "-p", f"{commit}^", "-m", message, tree).strip()

    def assertPushRejected(self, forged, command, reason):
        """git push exits 1; the hook's one JSON error line names the forged
        commit and the verdict reason; the server's ref has not moved."""
        p = self.push(forged)
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("pre-receive hook declined", p.stdout, p)
        lines = [l[len("remote: "):] for l in p.stderr.splitlines() if l.startswith("remote: {")]
        self.assertEqual(len(lines), 1, p.stderr)
        e = json.loads(lines[0])
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("store-read", "invalid", "invalid",
                                                                          "hook check"), e)
        self.assertTrue(e["detail"].startswith(
            f"push rejected by the server's git-locks hook: {STATE}: commit {forged} ({command}) is not a valid "
            f"transition: {reason}: "), e["detail"])
        self.assertEqual(self.server_tip(), self.good, "the server's ref moved")
        return e

    def test_a_packet_re_signed_by_a_non_member_is_rejected(self):
        self.assertOk(self.r.run("alice", "claim", "secret/next.md"))
        honest = self.r.tip()
        e = self.assertPushRejected(self.forge(honest, "mallory"), "claim", "not-member")
        self.assertIn(self.keys["mallory"], e["detail"])
        self.assertEqual(self.push(honest).returncode, 0)
        self.assertEqual(self.server_tip(), honest)

    def test_a_sealed_commit_that_changes_the_public_policy_is_rejected(self):
        self.assertOk(self.r.run("alice", "claim", "secret/next.md"))
        honest = self.r.tip()

        def wider(doc):
            doc["max_ttl_ms"] = doc["max_ttl_ms"] * 24

        def with_mallory(doc):
            doc["members"].append(self.keys["mallory"])
            doc["keyring"][str(doc["epoch"])][self.keys["mallory"]] = doc["keyring"][str(doc["epoch"])][
                self.keys["alice"]]

        # Signed by alice, a member, and by the owner: a sealed body is never an admin commit.
        for edit in (wider, with_mallory):
            for signer in ("alice", "owner"):
                with self.subTest(edit=edit.__name__, signer=signer):
                    self.assertPushRejected(self.forge(honest, signer, policy=edit), "claim", "policy-changed")
        self.assertEqual(self.push(honest).returncode, 0)
        self.assertEqual(self.server_tip(), honest)

    def test_a_policy_change_signed_by_a_member_who_is_not_the_owner_is_rejected(self):
        self.assertOk(self.r.run("owner", "member", "add", self.keys["bob"]))  # member-add, then rekey
        rekey = self.r.tip()
        member_add = self.git("rev-parse", f"{rekey}^").strip()
        self.assertEqual(self.git("rev-parse", f"{member_add}^").strip(), self.good)
        self.assertPushRejected(self.forge(member_add, "alice"), "member", "not-owner")
        self.assertEqual(self.push(rekey).returncode, 0)
        self.assertEqual(self.server_tip(), rekey)
        # bob, a member now, writes through the hook.
        self.assertOk(self.r.run("bob", "claim", "secret/bob.md"))
        self.assertEqual(self.push(self.r.tip()).returncode, 0)
        self.assertEqual(self.server_tip(), self.r.tip())


if __name__ == "__main__":
    unittest.main()
