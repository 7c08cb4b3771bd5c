"""Helpers of the install suites: a clean environment, `cmake --install`
into a scratch prefix, a scratch repository, and `git-locks web` started
from an installed binary (its JSON line read, its pages fetched)."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.request


def env_var(name):
    value = os.environ.get(name)
    if not value:
        raise AssertionError(f"{name} is not set (run the suite through ctest)")
    return value


def clean_env(prefix_bin=None, **extra):
    """The environment with nothing that would point git-locks, git or man
    elsewhere than the installed prefix: PATH starts with PREFIX/bin."""
    env = dict(os.environ)
    for var in ("GIT_LOCKS_KEY", "GIT_LOCKS_WEB_DIR", "GIT_LOCKS_GIT", "GIT_LOCKS_NOW_MS", "GIT_DIR",
                "GIT_WORK_TREE", "MANPATH", "GIT_EXEC_PATH", "GIT_PAGER", "MANOPT"):
        env.pop(var, None)
    if prefix_bin:
        env["PATH"] = prefix_bin + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env.update(extra)
    return env


def run(args, check=True, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    r = subprocess.run(args, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{args} exited {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def cmake_install(build_dir, prefix, component=None):
    args = ["cmake", "--install", build_dir, "--prefix", prefix]
    if component:
        args += ["--component", component]
    return run(args, timeout=300)


class Scratch(unittest.TestCase):
    """A temporary directory per test class (self.tmp), removed afterwards."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gitlocks-install-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)

    def new_repo(self, name, env):
        repo = os.path.join(self.tmp, name)
        run(["git", "init", "-q", repo], env=env)
        run(["git", "-C", repo, "config", "user.name", "Install Test"], env=env)
        run(["git", "-C", repo, "config", "user.email", "install@example.invalid"], env=env)
        return repo


class WebServer:
    """`BINARY web --port 0` in REPO: the JSON line it prints, and GETs."""

    def __init__(self, binary, repo, env):
        self.proc = subprocess.Popen([binary, "web", "--port", "0"], cwd=repo, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise AssertionError(f"git-locks web printed nothing; stderr: {self.proc.stderr.read()}")
        self.info = json.loads(line)
        self.base = f"http://127.0.0.1:{self.info['port']}"

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()
