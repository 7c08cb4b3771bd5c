"""Claims bind the work on the server (SPEC §9, docs/CLI.md "Enforcing
claims"): the pre-receive hook of `git-locks hook install --server` refuses a
push to an enforced ref (refs/heads/* by default) that brings in a commit
changing a path under another holder's live exclusive claim, whatever the
client skipped (`--no-verify`, no hooks at all). Through file://,
`git daemon` and smart HTTP.

The expected verdicts follow from the scenario (who claimed what, who
signed which commit), never from the program's output."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_remote import RemoteTest  # noqa: E402
from support import binary  # noqa: E402


class ServerEnforcement(RemoteTest):
    def scenario(self, kind):
        srv, alice, bob = self.store(kind, "alice", "bob")
        self.srv, self.alice, self.bob = srv, alice, bob
        for h in (alice, bob):
            # Each signs with its own key (Git's SSH signing through git-locks),
            # and installs no hook: nothing on the client enforces anything.
            for k, v in (("gpg.format", "ssh"), ("gpg.ssh.program", binary()), ("user.signingKey", h.key),
                         ("commit.gpgSign", "true")):
                h.git("config", k, v)
        os.makedirs(os.path.join(alice.path, "src"))
        for name in ("x.c", "y.c"):
            with open(os.path.join(alice.path, "src", name), "w") as f:
                f.write(f"{name}\n")
        alice.git("add", ".")
        self.git(alice, "commit", "-q", "-m", "base")
        self.assertEqual(self.git(alice, "push", "-q", "origin", "HEAD:refs/heads/main").returncode, 0)
        self.git(bob, "fetch", "-q", "origin")
        self.git(bob, "checkout", "-q", "-b", "work", "origin/main")
        claimed = self.assertOk(alice.run("--json", "claim", "--ttl", "10m", "src/x.c")).json
        self.lease = claimed["leases"][0]["lease"]
        self.alice_key = self.assertOk(alice.run("--json", "whoami")).json["actor"]
        self.bob_key = self.assertOk(bob.run("--json", "whoami")).json["actor"]

    def git(self, host, *args, env=None):
        return subprocess.run(["git", "-C", host.path, *args], capture_output=True, text=True, env=host.env(env))

    def server_main(self):
        return subprocess.run(["git", "-C", self.srv.bare, "rev-parse", "refs/heads/main"], capture_output=True,
                              text=True, check=True).stdout.strip()

    def edit(self, host, rel, *flags, env=None):
        with open(os.path.join(host.path, rel), "w") as f:
            f.write(f"changed by {host.name} {flags}\n")
        self.git(host, "add", rel)
        p = self.git(host, "commit", "-q", "--no-verify", "-m", f"{host.name} edits {rel}", *flags, env=env)
        self.assertEqual(p.returncode, 0, p)

    def push(self, host):
        return self.git(host, "push", "--no-verify", "--porcelain", "origin", "HEAD:refs/heads/main")

    def assertPushRefused(self, host, path, signer):
        before = self.server_main()
        p = self.push(host)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertIn("pre-receive hook declined", p.stdout, p)
        self.assertEqual(self.server_main(), before, "the server's main moved")
        errs = [json.loads(l[len("remote: "):]) for l in p.stderr.splitlines() if l.startswith("remote: {")]
        self.assertEqual(len(errs), 1, p.stderr)
        e = errs[0]
        self.assertEqual((e["error"], e["code"], e["reason"]), ("refused", "held-path", "held-path"), e)
        self.assertEqual((e["path"], e["holder"], e["lease"], e["signer"]), (path, self.alice_key, self.lease, signer))
        self.assertIn("refs/heads/main", e["detail"])

    def life(self, kind):
        self.scenario(kind)
        alice, bob = self.alice, self.bob
        # bob's signed change of alice's claimed file, pushed past every client hook.
        self.edit(bob, "src/x.c")
        self.assertPushRefused(bob, "src/x.c", self.bob_key)
        # The same, unsigned.
        self.git(bob, "reset", "-q", "--hard", "origin/main")
        self.edit(bob, "src/x.c", "--no-gpg-sign")
        self.assertPushRefused(bob, "src/x.c", "")
        # Signed by bob with alice's name and e-mail: still bob.
        self.git(bob, "reset", "-q", "--hard", "origin/main")
        self.edit(bob, "src/x.c", env={"GIT_AUTHOR_NAME": "alice", "GIT_AUTHOR_EMAIL": "alice@example.invalid",
                                       "GIT_COMMITTER_NAME": "alice",
                                       "GIT_COMMITTER_EMAIL": "alice@example.invalid"})
        self.assertPushRefused(bob, "src/x.c", self.bob_key)
        # A free path, unsigned: lands.
        self.git(bob, "reset", "-q", "--hard", "origin/main")
        self.edit(bob, "src/y.c", "--no-gpg-sign")
        self.assertEqual(self.push(bob).returncode, 0)
        # The holder's own signed change lands.
        self.git(alice, "pull", "-q", "--no-rebase", "origin", "main")
        self.edit(alice, "src/x.c")
        p = self.push(alice)
        self.assertEqual(p.returncode, 0, p)
        # Once alice releases, bob's change lands.
        self.git(bob, "pull", "-q", "--no-rebase", "origin", "main")
        self.edit(bob, "src/x.c")
        self.assertPushRefused(bob, "src/x.c", self.bob_key)
        self.assertOk(alice.run("release", "src/x.c"))
        p = self.push(bob)
        self.assertEqual(p.returncode, 0, p)

    def test_file(self):
        self.life("file")

    def test_git_daemon(self):
        self.life("daemon")

    def test_smart_http(self):
        self.life("http")

    def test_a_release_pushed_with_the_work_frees_the_path(self):
        # The state and the branch in one atomic push: the work is judged on the
        # pushed (and verified) refs/locks/state.
        self.scenario("file")
        alice, bob = self.alice, self.bob
        self.edit(bob, "src/x.c")
        self.assertPushRefused(bob, "src/x.c", self.bob_key)
        # alice's release, written to her clone's cache of the remote store only.
        alice.git("config", "locks.remote", "")
        self.git(alice, "fetch", "-q", "origin", "+refs/locks/state:refs/locks/state")
        self.assertOk(alice.run("release", "src/x.c"))
        released = alice.local_state()
        # bob pushes the released state together with his work.
        self.git(bob, "fetch", "-q", alice.path, f"+{released}:refs/locks/state")
        p = self.git(bob, "push", "--no-verify", "--atomic", "origin", "refs/locks/state:refs/locks/state",
                     "HEAD:refs/heads/main")
        self.assertEqual(p.returncode, 0, p)
        self.assertEqual(self.srv.tip(), released)

    def test_enforced_refs_follow_locks_enforce(self):
        self.scenario("file")
        bob = self.bob
        self.edit(bob, "src/x.c")
        # refs/heads/* by default; a ref outside the patterns passes.
        p = self.git(bob, "push", "--no-verify", "origin", "HEAD:refs/review/bob")
        self.assertEqual(p.returncode, 0, p)
        subprocess.run(["git", "-C", self.srv.bare, "config", "locks.enforce", "refs/review/*"], check=True)
        # A new commit: a new ref brings in only what no ref has yet.
        self.edit(bob, "src/x.c", "--allow-empty-message")
        p = self.git(bob, "push", "--no-verify", "origin", "HEAD:refs/review/bob2")
        self.assertNotEqual(p.returncode, 0, p)
        # and refs/heads/* is then no longer enforced.
        p = self.push(bob)
        self.assertEqual(p.returncode, 0, p)

    def set_policy(self, host, **changes):
        """The owner's `policy set` of `changes`, through the server's hook."""
        shown = self.assertOk(host.run("--json", "policy", "show")).json
        pfile = os.path.join(host.path, "..", f"policy-{len(changes)}-{host.name}.json")
        with open(pfile, "w") as f:
            json.dump(changes, f)
        res = host.run("--json", "policy", "set", pfile, "--expected-policy-hash", shown["policy_hash"])
        self.assertOk(res)
        self.assertEqual(res.json["commit"], self.srv.tip())  # accepted by the server's pre-receive
        self.assertEqual(res.json["previous_policy_hash"], shown["policy_hash"])
        return res.json

    def assertClaimRequired(self, host, path):
        before = self.server_main()
        p = self.push(host)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertEqual(self.server_main(), before, "the server's main moved")
        errs = [json.loads(l[len("remote: "):]) for l in p.stderr.splitlines() if l.startswith("remote: {")]
        self.assertEqual(len(errs), 1, p.stderr)
        self.assertEqual((errs[0]["code"], errs[0]["reason"], errs[0]["path"]), ("not-holder", "claim-required", path))

    def test_the_owners_policy_requires_claims_names_the_enforced_refs_and_the_bots(self):
        self.scenario("file")
        alice, bob = self.alice, self.bob
        # The server's own configuration says refs/review/*; the store's policy wins.
        subprocess.run(["git", "-C", self.srv.bare, "config", "locks.enforce", "refs/review/*"], check=True)
        out = self.set_policy(alice, require_claim={"paths": ["src/"]}, enforce=["refs/heads/main"])
        self.assertEqual(out["policy"]["require_claim"], {"paths": ["src/"]})
        # bob may not change the policy: not the owner.
        shown = self.assertOk(bob.run("--json", "policy", "show")).json
        self.assertEqual(shown["policy_hash"], out["policy_hash"])
        pfile = os.path.join(bob.path, "..", "bob-policy.json")
        with open(pfile, "w") as f:
            json.dump({"bots": [self.bob_key]}, f)
        tip = self.srv.tip()
        res = bob.run("--json", "policy", "set", pfile, "--expected-policy-hash", shown["policy_hash"])
        self.assertEqual((res.code, res.error["code"], res.error["reason"]), (1, "not-holder", "not-owner"), res)
        self.assertEqual(self.srv.tip(), tip)
        # An unsigned change of a free path under src/ now needs a claim.
        self.edit(bob, "src/y.c", "--no-gpg-sign")
        self.assertClaimRequired(bob, "src/y.c")
        # Signed by bob, who holds nothing there: the same.
        self.git(bob, "reset", "-q", "--hard", "origin/main")
        self.edit(bob, "src/y.c")
        self.assertClaimRequired(bob, "src/y.c")
        # refs/review/* is no longer enforced (the policy names main only).
        p = self.git(bob, "push", "--no-verify", "origin", "HEAD:refs/review/bob")
        self.assertEqual(p.returncode, 0, p)
        # Once bob claims it, his signed change lands.
        self.assertOk(bob.run("claim", "--ttl", "10m", "src/y.c"))
        p = self.push(bob)
        self.assertEqual(p.returncode, 0, p)
        # A bot key lands without a claim, but not on alice's claimed file.
        self.set_policy(alice, bots=[self.bob_key])
        self.git(bob, "fetch", "-q", "origin")
        self.git(bob, "reset", "-q", "--hard", "origin/main")
        self.edit(bob, "src/new.c")
        p = self.push(bob)
        self.assertEqual(p.returncode, 0, p)
        self.edit(bob, "src/x.c")
        self.assertPushRefused(bob, "src/x.c", self.bob_key)
        # Every verifier agrees on the history with the policy changes.
        self.assertOk(bob.run("verify", "--full"))


if __name__ == "__main__":
    unittest.main()
