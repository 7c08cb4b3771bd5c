"""git-locks as Git's SSH signing program (gpg.format=ssh, gpg.ssh.program):
Git signs commits with the actor key through it, and OpenSSH's own verifier
(ssh-keygen, through git verify-commit) accepts those signatures for the key
`whoami` prints in OpenSSH form."""

import os
import re
import shutil
import subprocess

from support import CliTest, binary, skip

SSH_KEY = re.compile(r"^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]{43}$")


class Signing(CliTest):
    def setUp(self):
        if not shutil.which("ssh-keygen"):
            skip("ssh-keygen (openssh-client) is not installed")
        self.r = self.repo(init=False)
        r = self.r
        self.keys = {a: self.assertOk(r.run(a, "--json", "whoami")).json["ssh_key"] for a in ("alice", "bob")}
        for name in ("alice", "bob"):
            self.assertRegex(self.keys[name], SSH_KEY)
        r.git("config", "gpg.format", "ssh")
        r.git("config", "gpg.ssh.program", binary())
        r.git("config", "user.signingKey", r.key("alice"))
        r.git("config", "commit.gpgSign", "true")

    def env(self, **extra):
        """Git's environment without GIT_LOCKS_KEY: the key is user.signingKey."""
        env = {k: v for k, v in os.environ.items() if k not in ("GIT_LOCKS_KEY", "GIT_DIR", "GIT_WORK_TREE")}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
        env.update(extra)
        return env

    def commit(self, name, env=None):
        with open(os.path.join(self.r.path, name), "w") as f:
            f.write(name + "\n")
        self.r.git("add", name, env=env or self.env())
        proc = subprocess.run(["git", "-C", self.r.path, "commit", "-q", "-m", "add " + name], capture_output=True,
                              text=True, env=env or self.env())
        self.assertEqual(proc.returncode, 0, proc)
        return self.r.git("rev-parse", "HEAD").strip()

    def allowed_signers(self, *names):
        path = os.path.join(self.r.root, "allowed_signers_" + "_".join(names))
        with open(path, "w") as f:
            for n in names:
                f.write(f"{n}@example.invalid {self.keys[n]}\n")
        return path

    def verify(self, commit, signers, program="ssh-keygen"):
        return subprocess.run(["git", "-C", self.r.path, "-c", f"gpg.ssh.program={program}", "-c",
                               f"gpg.ssh.allowedSignersFile={signers}", "verify-commit", commit],
                              capture_output=True, text=True, env=self.env())

    def test_whoami_prints_the_key_in_openssh_form(self):
        res = self.assertOk(self.r.run("alice", "whoami"))
        self.assertIn("\nssh key: " + self.keys["alice"], res.out)
        line = os.path.join(self.r.root, "alice.pub")
        with open(line, "w") as f:
            f.write(self.keys["alice"] + "\n")
        fp = subprocess.run(["ssh-keygen", "-l", "-f", line], capture_output=True, text=True)
        self.assertEqual(fp.returncode, 0, fp)
        self.assertIn("(ED25519)", fp.stdout)

    def test_commits_are_signed_with_the_signing_key_and_verified_by_openssh(self):
        head = self.commit("a.txt")
        raw = self.r.git("cat-file", "commit", head)
        self.assertIn("\ngpgsig -----BEGIN SSH SIGNATURE-----\n", raw)
        self.assertIn("\n -----END SSH SIGNATURE-----\n", raw)
        ok = self.verify(head, self.allowed_signers("alice"))
        self.assertEqual(ok.returncode, 0, ok)
        self.assertIn('Good "git" signature for alice@example.invalid with ED25519 key', ok.stderr)
        bad = self.verify(head, self.allowed_signers("bob"))
        self.assertNotEqual(bad.returncode, 0, bad)
        # Git verifies through gpg.ssh.program too: git-locks runs ssh-keygen for it.
        through = self.verify(head, self.allowed_signers("alice"), program=binary())
        self.assertEqual(through.returncode, 0, through)
        self.assertIn('Good "git" signature for alice@example.invalid', through.stderr)
        log = subprocess.run(["git", "-C", self.r.path, "-c", "gpg.ssh.allowedSignersFile=" +
                              self.allowed_signers("alice", "bob"), "log", "--show-signature", "-1"],
                             capture_output=True, text=True, env=self.env())
        self.assertEqual(log.returncode, 0, log)
        self.assertIn('Good "git" signature for alice@example.invalid', log.stdout)

    def test_git_locks_key_overrides_the_signing_key(self):
        head = self.commit("b.txt", env=self.env(GIT_LOCKS_KEY=self.r.key("bob")))
        self.assertNotEqual(self.verify(head, self.allowed_signers("alice")).returncode, 0)
        ok = self.verify(head, self.allowed_signers("bob"))
        self.assertEqual(ok.returncode, 0, ok)
        self.assertIn('Good "git" signature for bob@example.invalid', ok.stderr)

    def test_a_missing_key_file_fails_the_commit_and_is_not_created(self):
        missing = os.path.join(self.r.root, "nobody.key")
        self.r.git("config", "user.signingKey", missing)
        with open(os.path.join(self.r.path, "c.txt"), "w") as f:
            f.write("c\n")
        self.r.git("add", "c.txt", env=self.env())
        proc = subprocess.run(["git", "-C", self.r.path, "commit", "-q", "-m", "c"], capture_output=True, text=True,
                              env=self.env())
        self.assertNotEqual(proc.returncode, 0, proc)
        self.assertIn("key file " + missing + " does not exist", proc.stderr)
        self.assertFalse(os.path.exists(missing))
        self.assertEqual(self.r.git("rev-parse", "-q", "--verify", "HEAD", check=False), "")

    def test_sign_writes_ssh_keygens_armor_and_other_operations_are_ssh_keygens(self):
        msg = os.path.join(self.r.root, "message")
        with open(msg, "wb") as f:
            f.write(b"signed by git-locks\n")
        res = subprocess.run([binary(), "-Y", "sign", "-n", "file", "-f", self.r.key("alice"), msg],
                             capture_output=True, text=True, env=self.env())
        self.assertEqual((res.returncode, res.stdout, res.stderr), (0, "", ""))
        self.assertEqual(os.stat(msg + ".sig").st_mode & 0o777, 0o644 & ~current_umask())
        with open(msg + ".sig") as f:
            sig = f.read()
        lines = sig.split("\n")
        self.assertEqual(lines[0], "-----BEGIN SSH SIGNATURE-----")
        self.assertEqual(lines[-2:], ["-----END SSH SIGNATURE-----", ""])
        self.assertTrue(all(len(line) == 70 for line in lines[1:-3]), sig)
        with open(msg, "rb") as f:
            check = subprocess.run([binary(), "-Y", "check-novalidate", "-n", "file", "-s", msg + ".sig"], stdin=f,
                                   capture_output=True, text=True, env=self.env())
        self.assertEqual(check.returncode, 0, check)
        self.assertIn('Good "file" signature with ED25519 key', check.stdout)
        with open(msg, "rb") as f:
            wrong_ns = subprocess.run([binary(), "-Y", "check-novalidate", "-n", "git", "-s", msg + ".sig"], stdin=f,
                                      capture_output=True, env=self.env())
        self.assertNotEqual(wrong_ns.returncode, 0)
        # Failures are ssh-keygen's: exit 255 and a line on stderr.
        res = subprocess.run([binary(), "-Y", "sign", "-f", self.r.key("alice"), msg], capture_output=True,
                             text=True, env=self.env())
        self.assertEqual(res.returncode, 255, res)
        self.assertIn("-n NAMESPACE is required", res.stderr)
        res = subprocess.run([binary(), "-Y", "find-principals", "-s", msg + ".sig"], capture_output=True, text=True,
                             env=self.env(PATH="/nonexistent"))
        self.assertEqual(res.returncode, 255, res)
        self.assertIn("install openssh-client", res.stderr)


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
