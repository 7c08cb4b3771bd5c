"""Helpers shared by the fault, race and bad-input modules: running
git-locks as an unprivileged user, the authority of a store, and the record
blobs a failed publication left behind."""

import json
import os
import shutil
import subprocess

from support import Result, binary

NOBODY = 65534


def authority(r):
    """(tip, state tree): what must not change after a fault."""
    tip = r.tip()
    return tip, (r.git("rev-parse", f"{tip}:state").strip() if tip else None)


def blobs(r):
    out = r.git("cat-file", "--batch-all-objects", "--batch-check")
    return {line.split()[0] for line in out.splitlines() if line.split()[1] == "blob"}


def candidates(r):
    """The new commit of every update-ref run through the wrapper, in order."""
    out = []
    for _, stdin in r.update_ref_log():
        for line in stdin.splitlines():
            if line.startswith("update refs/locks/state "):
                out.append(line.split()[2])
    return out


def new_record_blobs(r, before, candidate):
    """Record blobs of `candidate`'s state tree that were not in the repository before."""
    if candidate is None:
        return 0
    listing = r.git("ls-tree", "-r", candidate, "--", "state/records")
    return sum(1 for line in listing.splitlines() if line.split()[2] not in before)


class Unprivileged:
    """Runs git-locks in `r` as an unprivileged user: `nobody` through setpriv
    when the suite runs as root (root ignores file permissions), else the
    current user. Everything under the test's root stays writable by that
    user except what a test makes read-only."""

    def __init__(self, test, r):
        self.test, self.r = test, r
        self.root = os.geteuid() == 0
        self.home = os.path.join(r.root, "home")
        os.makedirs(self.home, exist_ok=True)
        self.key = os.path.join(self.home, "nobody.key")
        if self.root:
            if not shutil.which("setpriv"):
                # Never a skip: as root without setpriv every fault case would
                # run with root's disregard for file modes and prove nothing.
                test.fail("setpriv (util-linux, essential in Debian; toolchains/setup.sh checks it) is missing: "
                          "cannot drop root for the fault cases")
            with open(os.path.join(self.home, ".gitconfig"), "w") as f:
                f.write(f"[safe]\n\tdirectory = *\n\tdirectory = {r.path}\n")
            open(r.wrapper_log, "a").close()
        self.open_up()

    def open_up(self):
        if self.root:
            subprocess.run(["chmod", "-R", "a+rwX", self.r.root], check=True)
            if os.path.exists(self.key):
                os.chmod(self.key, 0o600)

    def read_only(self, rel):
        """Makes .git/<rel> (recursively) read-only for the unprivileged user."""
        path = os.path.join(self.r.gitdir(), rel)
        for root, dirs, _ in os.walk(path):
            os.chmod(root, 0o555)
            self.test.addCleanup(os.chmod, root, 0o777)

    def run(self, *args, env=None, stdin=None, timeout=120):
        extra = self.r.wrapped(GIT_LOCKS_KEY=self.key, HOME=self.home)
        extra.update(env or {})
        full = self.r.env("nobody", extra)
        cmd = [binary(), "--repo", self.r.path, *args]
        if self.root:
            cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=full, timeout=timeout)
        if self.root and os.path.exists(self.key) and os.stat(self.key).st_uid != NOBODY:
            os.chown(self.key, NOBODY, NOBODY)
        return Result(proc)

    def ok(self, *args, **kw):
        res = self.run("--json", *args, **kw)
        self.test.assertEqual(res.code, 0, res)
        self.reset_log()
        return json.loads(res.out)

    def reset_log(self):
        open(self.r.wrapper_log, "w").close()
        if self.root:
            os.chmod(self.r.wrapper_log, 0o666)
