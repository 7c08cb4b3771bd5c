"""The installed pre-commit and pre-push hooks refuse (or with --warn only
report) changes to paths under another holder's live exclusive claim."""

import json
import os
import subprocess
import unittest

from support import CliTest


class Hooks(CliTest):
    def setUp(self):
        self.r = self.repo()
        r = self.r
        os.makedirs(os.path.join(r.path, "src"))
        for name in ("a.c", "b.c"):
            self.write(f"src/{name}", "int x;\n")
        r.git("add", ".")
        r.git("commit", "-q", "-m", "base", env=r.env("owner"))

    def write(self, rel, text):
        with open(os.path.join(self.r.path, rel), "w") as f:
            f.write(text)

    def commit(self, actor, rel, *flags):
        self.write(rel, f"changed by {actor}\n")
        self.r.git("add", rel)
        return subprocess.run(["git", "-C", self.r.path, "commit", "-q", "-m", f"{actor} edits {rel}", *flags],
                              capture_output=True, text=True, env=self.r.env(actor))

    def head(self):
        return self.r.git("rev-parse", "HEAD").strip()

    def assertHookRefused(self, proc, expected):
        """git exits 1 after the hook; its stderr holds exactly one JSON error per offending
        (path, claimed resource) of `expected`, each `held-path` from `hook check`."""
        self.assertEqual(proc.returncode, 1, proc)
        errors = [json.loads(l) for l in proc.stderr.splitlines() if l.startswith("{")]
        self.assertEqual(len(errors), len(expected), proc.stderr)
        for e, (path, resource) in zip(errors, expected):
            self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("refused", "held-path", "held-path",
                                                                          "hook check"), e)
            self.assertIn(f"{path}: '{resource}' is held exclusive by ", e["detail"])
        return errors

    def remote_ref(self, remote, ref):
        r = subprocess.run(["git", "-C", remote, "rev-parse", "-q", "--verify", ref], capture_output=True, text=True)
        return r.stdout.strip() or None

    def test_pre_commit_blocks_another_holders_claimed_path(self):
        r = self.r
        self.assertOk(r.run("bob", "hook", "install"))
        self.claimed(r, "alice", "src/a.c")
        before = self.head()
        res = self.commit("bob", "src/a.c")
        self.assertEqual(res.returncode, 1, res)
        self.assertEqual(self.head(), before)
        errors = [json.loads(l) for l in res.stderr.splitlines() if l.startswith("{")]
        self.assertEqual(len(errors), 1, res.stderr)
        self.assertEqual((errors[0]["error"], errors[0]["reason"], errors[0]["op"]), ("refused", "held-path", "hook check"))
        self.assertIn("src/a.c", errors[0]["detail"])
        self.assertIn("alice", errors[0]["detail"])
        r.git("reset", "-q", "--hard")
        self.assertEqual(self.commit("bob", "src/b.c").returncode, 0)  # an unclaimed path
        self.assertEqual(self.commit("alice", "src/a.c").returncode, 0)  # the holder herself

    def test_directory_claims_and_shared_claims(self):
        r = self.r
        self.assertOk(r.run("bob", "hook", "install"))
        self.claimed(r, "alice", "src/", mode="shared")
        self.assertEqual(self.commit("bob", "src/a.c").returncode, 0)  # shared claims do not block
        self.claimed(r, "carol", "docs/")
        os.makedirs(os.path.join(r.path, "docs"))
        before = self.head()
        self.assertHookRefused(self.commit("bob", "docs/new.md"), [("docs/new.md", "docs/")])
        self.assertEqual(self.head(), before)

    def test_warn_only(self):
        r = self.r
        self.assertOk(r.run("bob", "hook", "install", "--warn"))
        self.claimed(r, "alice", "src/a.c")
        res = self.commit("bob", "src/a.c")
        self.assertEqual(res.returncode, 0, res)
        self.assertIn("warning", res.stderr)
        self.assertIn("src/a.c", res.stderr)

    def test_expired_claims_do_not_block(self):
        r = self.r
        self.assertOk(r.run("bob", "hook", "install"))
        self.claimed(r, "alice", "src/a.c", ttl="2s")
        r.now += 2001
        self.assertEqual(self.commit("bob", "src/a.c").returncode, 0)

    def test_pre_push(self):
        r = self.r
        remote = os.path.join(r.root, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        r.git("remote", "add", "origin", remote)
        r.git("push", "-q", "origin", "HEAD:refs/heads/main")
        r.git("fetch", "-q", "origin")
        self.assertOk(r.run("bob", "hook", "install"))
        # bob commits while the path is free (once alice holds it, the
        # reference-transaction hook would keep the commit off the branch).
        self.assertEqual(self.commit("bob", "src/b.c").returncode, 0)
        self.claimed(r, "alice", "src/b.c")
        main = self.remote_ref(remote, "refs/heads/main")
        push = subprocess.run(["git", "-C", r.path, "push", "-q", "origin", "HEAD:refs/heads/main"],
                              capture_output=True, text=True, env=r.env("bob"))
        self.assertHookRefused(push, [("src/b.c", "src/b.c")])
        self.assertEqual(self.remote_ref(remote, "refs/heads/main"), main)
        push = subprocess.run(["git", "-C", r.path, "push", "-q", "origin", "HEAD:refs/heads/topic"],
                              capture_output=True, text=True, env=r.env("bob"))
        # a new branch: its commits not yet on a remote
        self.assertHookRefused(push, [("src/b.c", "src/b.c")])
        self.assertIsNone(self.remote_ref(remote, "refs/heads/topic"))
        push = subprocess.run(["git", "-C", r.path, "push", "-q", "origin", "HEAD:refs/heads/main"],
                              capture_output=True, text=True, env=r.env("alice"))
        self.assertEqual(push.returncode, 0, push)
        self.assertEqual(self.remote_ref(remote, "refs/heads/main"), self.head())

    def test_install_keeps_foreign_hooks(self):
        r = self.r
        hook = os.path.join(r.gitdir(), "hooks", "pre-commit")
        with open(hook, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        self.assertUsage(r.run("bob", "hook", "install"))
        with open(hook) as f:
            self.assertEqual(f.read(), "#!/bin/sh\nexit 0\n")
        self.assertOk(r.run("bob", "hook", "install", "--force"))
        self.assertOk(r.run("bob", "hook", "install"))  # our own hook is updated in place
        self.assertTrue(os.access(hook, os.X_OK))


if __name__ == "__main__":
    unittest.main()
