"""Fault cases (seed 000's test program), as an unprivileged user: every
writer (claim, batch, extend, release, sweep, run admission, sem acquire, sem
release, migrate) against a persistent ref lock, a permanent publication
failure injected by the logging wrapper, a read-only ref directory and a
read-only object directory; plus a transient lock owned by a helper process.

For each: the exit status and JSON error, the authority (ref and state tree)
unchanged, bounded publication attempts, identical candidates across lock
retries, and the number of new record blobs the failed candidate wrote."""

import json
import os
import subprocess
import sys
import time
import unittest

from faults import Unprivileged, authority, blobs, candidates, new_record_blobs
from support import CliTest, T0

LATER = T0 + 60_000
INJECTED = ("fatal: prepare: cannot lock ref 'refs/locks/state': injected \"permanent\" failure\n"
            "\tsecond line \\ with a backslash")


def format1_store(test, r):
    writer = os.environ.get("GITLOCKS_FORMAT1_WRITER")
    if not writer:
        test.fail("GITLOCKS_FORMAT1_WRITER is not set (run through ctest)")
    for actor, body in (("owner", "init"),
                        ("carol", json.dumps({"ops": [{"op": "claim", "path": "src/a.c", "mode": "exclusive",
                                                       "expires_at": T0 + 3_600_000}]}))):
        out = subprocess.run([writer, r.path, actor, str(T0), body], capture_output=True, text=True, check=True)
        r.git("update-ref", "refs/locks/state", out.stdout.strip())


# writer: (setup(user, repo, test), command args, new record blobs of its candidate)
def no_setup(u, r, t):
    pass


def claimed_x(u, r, t):
    u.ok("claim", "--ttl", "2s", "x")


def sem_held(u, r, t):
    u.ok("sem", "acquire", "ci", "--limit", "2")


def expired_x(u, r, t):
    claimed_x(u, r, t)
    r.now = LATER


def batch_file(u, r, t):
    path = os.path.join(r.root, "batch.jsonl")
    with open(path, "w") as f:
        f.write('{"op":"claim","path":"y"}\n{"op":"sem-acquire","sem":"s","limit":2}\n')
    os.chmod(path, 0o644)


def format1(u, r, t):
    format1_store(t, r)


WRITERS = {
    "claim": (no_setup, ["claim", "x"], 1),
    "batch": (batch_file, ["batch", "BATCH"], 2),
    "extend": (claimed_x, ["extend", "x"], 1),
    "release": (claimed_x, ["release", "x"], 1),
    "sweep": (expired_x, ["sweep"], 1),
    "run": (no_setup, ["run", "--claim", "x", "--", "touch", "MARKER"], 1),
    "sem acquire": (no_setup, ["sem", "acquire", "ci", "--limit", "2"], 1),
    "sem release": (sem_held, ["sem", "release", "ci"], 1),
    "migrate": (format1, ["migrate"], 0),  # records move unchanged: no new record blob
}


class Faults(CliTest):
    def prepare(self, writer):
        setup, args, records = WRITERS[writer]
        r = self.repo(init=writer != "migrate")
        u = Unprivileged(self, r)
        setup(u, r, self)
        u.open_up()
        u.reset_log()
        marker = os.path.join(r.root, "marker")
        args = [a.replace("BATCH", os.path.join(r.root, "batch.jsonl")).replace("MARKER", marker) for a in args]
        return r, u, args, records, marker

    def check_fault(self, writer, fault, expect_attempts):
        r, u, args, records, marker = self.prepare(writer)
        before, objs = authority(r), blobs(r)
        env = {}
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        if fault == "lock":
            with open(lock, "w") as f:
                f.write("pid 1 is publishing\n")
            lock_stat = os.stat(lock)
        elif fault == "injected":
            env = {"GIT_WRAPPER_FAIL": "message:" + INJECTED}
        elif fault == "read-only refs":
            u.read_only("refs/locks")
        elif fault == "read-only objects":
            u.read_only("objects")
        start = time.monotonic()
        res = u.run("--json", *args, env=env)
        elapsed = time.monotonic() - start
        op = writer
        self.assertEqual(res.code, 2, res)
        self.assertEqual(res.out, "")
        e = res.error
        self.assertEqual((e["error"], e["code"], e["op"]), ("store-write", "store-write", op), res)
        self.assertEqual(authority(r), before, "the authority moved")
        self.assertFalse(os.path.exists(marker), "a command was launched after a failed admission")
        log = r.update_ref_log()
        self.assertEqual(e.get("attempts", 0), expect_attempts, res)
        self.assertEqual(len(log), expect_attempts)
        cands = candidates(r)
        self.assertLessEqual(len(set(cands)), 1, "the candidate changed between attempts")
        self.assertEqual(len({stdin for _, stdin in log}), min(1, len(log)))  # identical transaction text
        if fault == "lock":
            self.assertGreaterEqual(elapsed, 0.1)  # five pauses of 20 ms
            self.assertLess(elapsed, 20)
            with open(lock) as f:
                self.assertEqual(f.read(), "pid 1 is publishing\n")
            after = os.stat(lock)
            self.assertEqual((after.st_ino, after.st_mtime_ns, after.st_size),
                             (lock_stat.st_ino, lock_stat.st_mtime_ns, lock_stat.st_size))
            self.assertIn("state.lock", e["detail"])
        if fault == "injected":
            self.assertIn(INJECTED, e["detail"])
        if fault == "read-only refs":
            self.assertIn("Permission denied", e["detail"])
        if fault == "read-only objects":
            self.assertEqual(log, [])
            self.assertEqual(blobs(r), objs)
        else:
            self.assertEqual(new_record_blobs(r, objs, cands[0]), records)
        return res

    def test_every_writer_every_fault(self):
        for writer in WRITERS:
            for fault, attempts in (("lock", 6), ("injected", 1), ("read-only refs", 1), ("read-only objects", 0)):
                with self.subTest(writer=writer, fault=fault):
                    self.check_fault(writer, fault, attempts)

    def test_transient_lock_released_by_a_helper_process(self):
        for writer in ("claim", "migrate"):
            with self.subTest(writer=writer):
                r, u, args, records, _ = self.prepare(writer)
                lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
                # The helper owns the lock: it creates it, waits for our first
                # attempt to run into it, then finishes "its update" and removes it.
                helper = subprocess.Popen([sys.executable, "-c", (
                    "import os,sys,time\n"
                    "fd=os.open(sys.argv[1],os.O_CREAT|os.O_EXCL|os.O_WRONLY,0o666);os.close(fd)\n"
                    "print('held',flush=True)\n"
                    "end=time.monotonic()+30\n"
                    "while time.monotonic()<end and os.path.getsize(sys.argv[2])==0: time.sleep(0.002)\n"
                    "os.unlink(sys.argv[1])\n"), lock, r.wrapper_log], stdout=subprocess.PIPE, text=True)
                self.assertEqual(helper.stdout.readline().strip(), "held")
                res = u.run("--json", *args)
                self.assertEqual(helper.wait(timeout=60), 0)
                self.assertEqual(res.code, 0, res)
                self.assertGreaterEqual(json.loads(res.out)["attempts"], 2)
                self.assertLessEqual(json.loads(res.out)["attempts"], 6)
                log = r.update_ref_log()
                self.assertEqual(len({stdin for _, stdin in log}), 1)  # the same candidate throughout
                self.assertEqual([s for s, _ in log][-1], 0)
                self.assertEqual(r.tip(), candidates(r)[0])


if __name__ == "__main__":
    unittest.main()
