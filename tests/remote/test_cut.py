"""The cut through real servers (docs/FORMAT.md "The cut", issue 33 item 3):
the owner's `checkpoint --cut` starts a new chain of refs/locks/state, so a
fresh clone's fetch transfers only what follows it; the history before it
stays on the server's refs/locks/archive/PREV. A clone that trusted the old
chain continues across the cut (fetching the archive), `verify --full`
replays from the root through the archive, the reference verifier agrees,
and the server's hook keeps the archive: created once with its cut, never
moved or deleted, and no cut without it.
"""

import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, HERE)

from test_remote import STATE, Host, RemoteTest, server_verify  # noqa: E402

REFVERIFY = os.path.join(HERE, "..", "reference", "refverify.py")


def parents(repo, commit):
    return subprocess.run(["git", "-C", repo, "rev-list", "--parents", "-n", "1", commit], capture_output=True,
                          text=True, check=True).stdout.split()[1:]


def has_object(repo, oid):
    return subprocess.run(["git", "-C", repo, "cat-file", "-e", oid], capture_output=True).returncode == 0


def summary_of(res):
    return json.loads(res.err.splitlines()[-1])


class Cut(RemoteTest):
    def owner_on_a_copy(self, srv, owner_host, name):
        """A host with the owner's key on a copy of the server without its hook (where the owner's genuine
        transitions are made before they are pushed to the real server by hand); and the copy's path."""
        shadow = os.path.join(self.root, name + ".git")
        # A push the hook just refused may still be removing its quarantine directory on the server.
        shutil.copytree(srv.bare, shadow, ignore=shutil.ignore_patterns("tmp_objdir-*"))
        shutil.rmtree(os.path.join(shadow, "hooks"))
        owner = Host(self, self.root, "owner-" + name, "file://" + shadow)
        owner.key = owner_host.key
        return owner, shadow

    def cut_through(self, kind):
        srv, alice, bob = self.store(kind, "alice", "bob")  # alice created the store: she owns it
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        self.assertOk(bob.run("claim", "--ttl", "10m", "src/b.c"))
        trusted_by_bob = srv.tip()  # bob's trust checkpoint: his own publication
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/c.c"))
        prev = srv.tip()
        old_chain = srv.history()[::-1]  # init, a, b, c
        self.assertEqual(len(old_chain), 4)

        # Only the owner cuts; anyone else is refused and nothing moves.
        refused = self.host(srv, "mallory").run("--json", "checkpoint", "--cut")
        self.assertEqual((refused.code, refused.error["reason"]), (1, "not-owner"), refused)
        self.assertEqual(srv.tip(), prev)
        archive = "refs/locks/archive/" + prev
        self.assertEqual(subprocess.run(["git", "-C", srv.bare, "rev-parse", "-q", "--verify", archive],
                                        capture_output=True).returncode, 1)

        out = self.assertOk(alice.run("--json", "checkpoint", "--cut")).json
        cut = srv.tip()
        self.assertEqual(out, {"op": "checkpoint", "commit": cut, "prev": prev, "cut": True, "archive": archive})
        self.assertEqual(parents(srv.bare, cut), [], "a cut has no parent")
        self.assertEqual(subprocess.run(["git", "-C", srv.bare, "rev-parse", archive], capture_output=True,
                                        text=True, check=True).stdout.strip(), prev)
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/d.c"))
        self.assertEqual(srv.history(), [srv.tip(), cut], "refs/locks/state: the cut and what follows it")

        # A fresh clone fetches the new chain only, starts at the cut, and has every lease of before it.
        carol = self.host(srv, "carol")
        v = self.assertOk(carol.run("--json", "verify"))
        s = summary_of(v)
        self.assertEqual((s["start"], s["start_commit"], s["commits"], s["cut_start"]),
                         ("checkpoint", cut, 1, None), s)
        for old in old_chain:
            self.assertFalse(has_object(carol.path, old), "the history before the cut was fetched")
        self.assertRefused(carol.run("--json", "claim", "src/a.c"), "held-path")
        self.assertOk(carol.run("claim", "--ttl", "10m", "src/e.c"))
        status = self.assertOk(carol.run("--json", "status")).json
        self.assertEqual(sorted(l["path"] for l in status["leases"]),
                         ["src/a.c", "src/b.c", "src/c.c", "src/d.c", "src/e.c"])

        # bob trusted the old chain: he continues from his checkpoint across the cut (fetching the
        # archive): claim c, the cut, claims d and e; not from the root.
        v = self.assertOk(bob.run("--json", "verify"))
        s = summary_of(v)
        self.assertEqual((s["start"], s["start_commit"], s["commits"]), ("trust-checkpoint", trusted_by_bob, 4), s)
        self.assertEqual([json.loads(l)["commit"] for l in v.out.splitlines()],
                         [prev, cut] + srv.history()[::-1][1:])
        self.assertOk(bob.run("claim", "--ttl", "10m", "src/f.c"))

        # The archive verifies end to end: carol's --full fetches it and replays from the root, and
        # the reference verifier reads the same chain across the cut.
        full = self.assertOk(carol.run("--json", "verify", "--full"))
        s = summary_of(full)
        whole = old_chain + srv.history()[::-1]
        self.assertEqual((s["start"], s["commits"], s["checkpoints"], s["cut_start"]),
                         ("root", len(whole), {"valid": 1, "invalid": 0}, None), s)
        self.assertEqual([json.loads(l)["commit"] for l in full.out.splitlines()], whole)
        ref = subprocess.run([sys.executable, REFVERIFY, "--ref", "refs/locks/remotes/origin/state", carol.path],
                             capture_output=True, text=True)
        self.assertEqual(ref.returncode, 0, ref)
        self.assertEqual([json.loads(l)["commit"] for l in ref.stdout.splitlines()], whole)
        self.assertOk(server_verify(self, srv, "--full"))

        # export: the chain since the cut by default; --archive adds the archive (fetched by a host that
        # has never had it), and that bundle verifies from the root elsewhere.
        dave = self.host(srv, "dave")
        for flag, heads in (([], [STATE]), (["--archive"], sorted([STATE, archive]))):
            bundle = os.path.join(self.root, f"{kind}{len(flag)}.bundle")
            out = self.assertOk(dave.run("--json", "export", "--bundle", bundle, *flag)).json
            self.assertEqual((out["tip"], out["archive"]), (srv.tip(), bool(flag)))
            listed = subprocess.run(["git", "bundle", "list-heads", bundle], capture_output=True, text=True,
                                    check=True).stdout.split()
            self.assertEqual(sorted(listed[1::2]), heads)
        elsewhere = os.path.join(self.root, f"{kind}-elsewhere")
        subprocess.run(["git", "init", "-q", elsewhere], check=True)
        subprocess.run(["git", "-C", elsewhere, "fetch", "-q", bundle, "refs/locks/*:refs/locks/*"], check=True)
        v = Host(self, self.root, "auditor", "file:///nonexistent", configure=False)
        v.path = elsewhere
        s = summary_of(self.assertOk(v.run("--json", "verify", "--full")))
        self.assertEqual((s["start"], s["commits"], s["cut_start"]), ("root", len(whole), None), s)
        return srv, alice, bob, carol, prev

    def test_git_daemon(self):
        self.cut_through("daemon")

    def test_smart_http(self):
        self.cut_through("http")

    def test_a_named_writer_cuts_by_policy_and_only_clones_pinning_it_start_there(self):
        """Checkpoints by policy (docs/FORMAT.md "Checkpoints by policy", issue 33 item 4) through git
        daemon and the server's hook: the owner's policy names bob and asks for a cut every 3 commits; bob's
        own claims make them, the hook keeps their archives. A fresh clone pinning bob
        (locks.checkpointSigners) starts at his cut and never fetches the history before it; one that does
        not pin him fetches that history and replays from the root. Both hold the same leases."""
        srv, alice, bob, carol = self.store("daemon", "alice", "bob", "carol")  # alice owns the store
        bob_key = json.loads(self.assertOk(bob.run("--json", "whoami")).out)["actor"]
        shown = json.loads(self.assertOk(alice.run("--json", "policy", "show")).out)
        pfile = os.path.join(self.root, "checkpoint-policy.json")
        with open(pfile, "w") as f:
            json.dump({"checkpoint": {"every": 3, "signers": [bob_key], "cut": True}}, f)
        self.assertOk(alice.run("--json", "policy", "set", pfile, "--expected-policy-hash", shown["policy_hash"]))
        # carol is not named: no checkpoint after hers, however many commits.
        for path in ("src/a.c", "src/b.c"):
            self.assertNotIn("checkpoint", self.assertOk(carol.run("--json", "claim", "--ttl", "10m", path)).json)
        prev = srv.tip()
        self.assertEqual(len(srv.history()), 4)  # init, policy set, 2 claims
        out = self.assertOk(bob.run("--json", "claim", "--ttl", "10m", "src/c.c")).json
        claim, cut = out["commit"], out["checkpoint"]
        self.assertEqual(srv.tip(), cut)
        self.assertEqual(parents(srv.bare, cut), [], "the policy asks for a cut")
        self.assertEqual(subprocess.run(["git", "-C", srv.bare, "rev-parse", "refs/locks/archive/" + claim],
                                        capture_output=True, text=True, check=True).stdout.strip(), claim)
        self.assertNotEqual(prev, claim)

        pinned = self.host(srv, "pinned")
        pinned.git("config", "locks.checkpointSigners", bob_key)
        v = self.assertOk(pinned.run("--json", "verify"))
        s = summary_of(v)
        self.assertEqual((s["start"], s["start_commit"], s["commits"]), ("checkpoint", cut, 0), s)
        self.assertFalse(has_object(pinned.path, claim), "the history before the cut was fetched")
        unpinned = self.host(srv, "unpinned")
        v = self.assertOk(unpinned.run("--json", "verify"))
        s = summary_of(v)
        self.assertEqual((s["start"], s["commits"]), ("root", 6), s)
        self.assertTrue(has_object(unpinned.path, claim), "the history before bob's cut was not fetched")
        leases = ["src/a.c", "src/b.c", "src/c.c"]
        for host in (pinned, unpinned):
            status = self.assertOk(host.run("--json", "status")).json
            self.assertEqual(sorted(l["path"] for l in status["leases"]), leases)
            self.assertRefused(host.run("--json", "claim", "src/a.c"), "held-path")
        self.assertOk(server_verify(self, srv, "--full"))
        # The reference verifier reads bob's cut as his checkpoint, which the policy lets him make.
        ref = subprocess.run([sys.executable, REFVERIFY, "--ref", "refs/locks/remotes/origin/state", unpinned.path],
                             capture_output=True, text=True)
        self.assertEqual(ref.returncode, 0, ref)
        self.assertEqual(len(ref.stdout.splitlines()), 6, ref)

    def test_a_clone_whose_checkpoint_is_in_a_lost_archive_refuses_the_tip(self):
        """The archive removed on the server behind the hook's back: a clone that trusted the old chain
        cannot join the cut to what it trusted, and refuses the tip as a rewrite, naming the archive."""
        srv, alice, bob = self.store("daemon", "alice", "bob")
        self.assertOk(bob.run("claim", "--ttl", "10m", "src/b.c"))
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/c.c"))
        prev = srv.tip()
        self.assertOk(alice.run("checkpoint", "--cut"))
        tip = srv.tip()
        subprocess.run(["git", "-C", srv.bare, "update-ref", "-d", "refs/locks/archive/" + prev], check=True)
        res = bob.run("--json", "claim", "--ttl", "10m", "src/d.c")
        self.assertEqual(res.code, 2, res)
        self.assertEqual((res.error["error"], res.error["code"], res.error["verdict"], res.error["archived"]),
                         ("store-read", "invalid-history", "rewrite", prev), res)
        self.assertIn("neither in this clone nor on the remote's refs/locks/archive/" + prev, res.error["detail"])
        self.assertEqual(srv.tip(), tip)

    def test_two_cuts_in_one_push_keep_both_archives(self):
        """The owner's two cuts made elsewhere and pushed at once: the hook wants the archive of each,
        not only of the old tip's."""
        srv, alice = self.store("daemon", "alice")
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        tip = srv.tip()
        owner, shadow = self.owner_on_a_copy(srv, alice, "shadow2")
        first = self.assertOk(owner.run("--json", "checkpoint", "--cut")).json
        self.assertOk(owner.run("claim", "--ttl", "10m", "src/b.c"))
        middle = subprocess.run(["git", "-C", shadow, "rev-parse", STATE], capture_output=True, text=True,
                                check=True).stdout.strip()
        second = self.assertOk(owner.run("--json", "checkpoint", "--cut")).json
        self.assertEqual((first["prev"], second["prev"]), (tip, middle))
        owner.git("remote", "set-url", "origin", srv.url)

        def push(*archives):
            return subprocess.run(["git", "-C", owner.path, "push", "--porcelain", "origin",
                                   "--force-with-lease=" + STATE + ":" + tip, "+" + second["commit"] + ":" + STATE,
                                   *[a + ":refs/locks/archive/" + a for a in archives]], capture_output=True, text=True)

        # Without the second archive the commits between the cuts never reach the server (nothing
        # pushed reaches them): the chain cannot be joined to the tip, and the hook says what to push.
        r = push(tip)
        self.assertNotEqual(r.returncode, 0, r)
        self.assertIn("pre-receive hook declined", r.stdout, r)
        self.assertIn(second["commit"] + " starts a chain at a cut after " + middle + ", whose history is not on "
                      "the server: push refs/locks/archive/" + middle + " at " + middle, r.stderr, r)
        self.assertEqual(srv.tip(), tip)
        # With those commits on the server already (under a ref of their own), the archive itself is
        # still required.
        r = subprocess.run(["git", "-C", owner.path, "push", "-q", "origin", middle + ":refs/heads/elsewhere"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r)
        r = push(tip)
        self.assertNotEqual(r.returncode, 0, r)
        self.assertIn(second["commit"] + " starts a new chain after " + middle + " (a cut) without keeping it: push "
                      "refs/locks/archive/" + middle, r.stderr, r)
        self.assertEqual(srv.tip(), tip)
        r = push(tip, middle)
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(srv.tip(), second["commit"])
        # A fresh clone starts at the second cut; --full walks across both: init, a, cut, b, cut.
        fresh = self.host(srv, "fresh")
        s = summary_of(self.assertOk(fresh.run("--json", "verify")))
        self.assertEqual((s["start"], s["start_commit"], s["commits"]), ("checkpoint", second["commit"], 0), s)
        s = summary_of(self.assertOk(fresh.run("--json", "verify", "--full")))
        self.assertEqual((s["start"], s["commits"], s["checkpoints"]), ("root", 5, {"valid": 2, "invalid": 0}), s)

    def test_the_server_keeps_the_archive(self):
        srv, alice, bob, carol, prev = self.cut_through("daemon")
        archive = "refs/locks/archive/" + prev
        tip = srv.tip()

        def push(host, *specs):
            return subprocess.run(["git", "-C", host.path, "push", "--porcelain", "origin", *specs],
                                  capture_output=True, text=True)

        def rejected(r, why):
            self.assertNotEqual(r.returncode, 0, r)
            self.assertIn("pre-receive hook declined", r.stdout, r)
            self.assertIn(why, r.stderr, r)
            self.assertEqual(srv.tip(), tip, "the server's ref moved")
            self.assertEqual(subprocess.run(["git", "-C", srv.bare, "rev-parse", archive], capture_output=True,
                                            text=True).stdout.strip(), prev, "the archive moved")

        moved = "an archive ref is created once, at the commit it names, and never moved or deleted"
        rejected(push(carol, ":" + archive), moved)
        rejected(push(carol, "+" + tip + ":" + archive), moved)
        rejected(push(carol, tip + ":refs/locks/archive/" + "0" * 40), moved)
        rejected(push(carol, tip + ":refs/locks/archive/" + tip),
                 "an archive ref is created only with the cut that starts a new chain after the commit it names")

        # The owner's genuine cut of the tip, made on a copy of the server: pushed without its archive
        # it is refused; with it, accepted, and bob continues across this cut too.
        owner, _ = self.owner_on_a_copy(srv, alice, "shadow")
        out = self.assertOk(owner.run("--json", "checkpoint", "--cut")).json
        self.assertEqual(out["prev"], tip)
        owner.git("remote", "set-url", "origin", srv.url)
        rejected(push(owner, "--force-with-lease=" + STATE + ":" + tip, "+" + out["commit"] + ":" + STATE),
                 "(a cut) without keeping it: push refs/locks/archive/" + tip)
        r = push(owner, "--force-with-lease=" + STATE + ":" + tip, "+" + out["commit"] + ":" + STATE,
                 tip + ":refs/locks/archive/" + tip)
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(srv.tip(), out["commit"])
        v = self.assertOk(bob.run("--json", "verify"))
        self.assertEqual(summary_of(v)["commits"], 1)
        self.assertOk(bob.run("claim", "--ttl", "10m", "src/g.c"))


if __name__ == "__main__":
    unittest.main()
