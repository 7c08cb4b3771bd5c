"""Shared helpers for the git-locks CLI suite: real repositories in temporary
directories, several identities (separate key files), a fixed clock."""

import base64
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
WRAPPER = os.path.join(HERE, "git_wrapper.sh")
T0 = 1_700_000_000_000  # GIT_LOCKS_NOW_MS base for tests that move time


def skip(reason):
    """Skips the test outside CI; under CI=true, where every tool is
    installed and configured, a skip would hide a check: it fails instead."""
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):  # unittest_ci.in_ci()
        raise AssertionError(f"{reason} (under CI=true this is a failure, not a skip)")
    raise unittest.SkipTest(reason)


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A quiet HTTP handler for the suite's stand-in notaries and proxies;
    `reply` sends one JSON body."""

    def log_message(self, *a):
        pass

    def reply(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

def binary():
    path = os.environ.get("GIT_LOCKS_BIN")
    if not path:
        skip("GIT_LOCKS_BIN is not set")
    return path


class Result:
    def __init__(self, proc):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    @property
    def errors(self):
        """The JSON error objects on stderr (every stderr line must be one)."""
        out = []
        for line in self.err.splitlines():
            if line.strip():
                out.append(json.loads(line))
        return out

    @property
    def error(self):
        errs = self.errors
        assert len(errs) == 1, f"expected one error line, got: {self.err!r}"
        return errs[0]

    @property
    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"<exit {self.code} out={self.out!r} err={self.err!r}>"


class Repo:
    """A git repository in a temporary directory, with named actors."""

    def __init__(self, testcase, name="repo"):
        self.root = tempfile.mkdtemp(prefix="gitlocks-cli-")
        testcase.addCleanup(shutil.rmtree, self.root, True)
        self.path = os.path.join(self.root, name)
        subprocess.run(["git", "init", "-q", self.path], check=True)
        self.git("config", "user.name", "Repo User")
        self.git("config", "user.email", "user@example.invalid")
        self.now = None  # None: the real clock
        self.wrapper_log = os.path.join(self.root, "update-ref.log")
        self.wrapper_state = os.path.join(self.root, "wrapper-state")
        os.mkdir(self.wrapper_state)

    def key(self, actor):
        return os.path.join(self.root, f"{actor}.key")

    def env(self, actor, extra=None):
        env = dict(os.environ)
        for var in ("GIT_LOCKS_KEY", "GIT_LOCKS_NOW_MS", "GIT_LOCKS_GIT", "GIT_DIR", "GIT_WORK_TREE"):
            env.pop(var, None)
        env["GIT_LOCKS_KEY"] = self.key(actor)
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = actor
        env["GIT_CONFIG_COUNT"] = "1"
        env["GIT_CONFIG_KEY_0"] = "user.name"
        env["GIT_CONFIG_VALUE_0"] = actor
        if self.now is not None:
            env["GIT_LOCKS_NOW_MS"] = str(self.now)
        env.update(extra or {})
        return env

    def run(self, actor, *args, stdin=None, env=None, timeout=60):
        proc = subprocess.run([binary(), "--repo", self.path, *args], input=stdin, capture_output=True,
                              text=True, env=self.env(actor, env), timeout=timeout)
        return Result(proc)

    def popen(self, actor, *args, env=None, **kw):
        return subprocess.Popen([binary(), "--repo", self.path, *args], env=self.env(actor, env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)

    def wrapped(self, **extra):
        """Environment that routes git through the logging wrapper."""
        env = {"GIT_LOCKS_GIT": WRAPPER, "GIT_WRAPPER_LOG": self.wrapper_log,
               "GIT_WRAPPER_STATE": self.wrapper_state}
        env.update(extra)
        return env

    def update_ref_log(self):
        """[(exit status, exact stdin)] of every update-ref run through the wrapper."""
        if not os.path.exists(self.wrapper_log):
            return []
        out = []
        with open(self.wrapper_log) as f:
            for line in f:
                status, _, data = line.rstrip("\n").partition(" ")
                out.append((int(status), base64.b64decode(data).decode()))
        return out

    def git(self, *args, check=True, env=None):
        return subprocess.run(["git", "-C", self.path, *args], capture_output=True, text=True, check=check,
                              env=env).stdout

    def tip(self):
        r = subprocess.run(["git", "-C", self.path, "rev-parse", "-q", "--verify", "refs/locks/state"],
                           capture_output=True, text=True)
        return r.stdout.strip() or None

    def gitdir(self):
        return os.path.join(self.path, ".git")


class CliTest(unittest.TestCase):
    maxDiff = None

    def repo(self, init=True, now=T0, policy=None):
        r = Repo(self)
        r.now = now
        if init:
            args = ["init"]
            if policy is not None:
                pfile = os.path.join(r.root, "policy.json")
                with open(pfile, "w") as f:
                    json.dump(policy, f)
                args += ["--policy", pfile]
            res = r.run("owner", *args)
            self.assertEqual(res.code, 0, res)
        return r

    def assertOk(self, res):
        self.assertEqual(res.code, 0, res)
        self.assertEqual(res.err, "", res)
        return res

    def assertRefused(self, res, code, reason=None):
        """Exit 1, and the exact code and reason (the reason is the code's
        name unless the core gave a sub-code)."""
        self.assertEqual(res.code, 1, res)
        e = res.error
        self.assertEqual(e["error"], "refused", res)
        self.assertEqual(e["code"], code, res)
        self.assertEqual(e["reason"], reason or code, res)
        return e

    def assertUsage(self, res, code=None):
        self.assertEqual(res.code, 64, res)
        e = res.error
        self.assertEqual(e["error"], "usage", res)
        self.assertEqual(e["reason"], e["code"], res)
        if code:
            self.assertEqual(e["code"], code, res)
        return e

    def claim(self, repo, actor, *paths, ttl="60s", mode=None, extra=()):
        args = ["--json", "claim", "--ttl", ttl, *extra]
        if mode:
            args += ["--mode", mode]
        return repo.run(actor, *args, *paths)

    def claimed(self, repo, actor, *paths, **kw):
        res = self.claim(repo, actor, *paths, **kw)
        self.assertOk(res)
        return res.json

    def actions_since(self, repo, commit):
        """The actions of the transitions after `commit` up to the tip,
        oldest first, as their commit subjects name them ("git-locks: ACTION")."""
        out = repo.git("log", "--reverse", "--format=%s", f"{commit}..refs/locks/state").split("\n")
        return [line.split(": ", 1)[1].split(" ", 1)[0] for line in out if line.startswith("git-locks: ")]

    def leases_and_queue(self, repo):
        """What a waiter that gave up must leave as it found: the leases
        (status) and an empty queue of tickets."""
        st = repo.run("x", "--json", "status").json
        return [(l["path"] if "path" in l else l.get("sem"), l["name"]) for l in st["leases"]], st.get("queue", [])

    def unchanged(self, repo):
        """Context manager: refs/locks/state must not move inside."""
        test = self

        class Guard:
            def __enter__(self):
                self.before = repo.tip()

            def __exit__(self, *exc):
                if exc[0] is None:
                    test.assertEqual(repo.tip(), self.before, "refs/locks/state moved")

        return Guard()
