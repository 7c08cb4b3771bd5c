"""Fault cases (seed 000's test program), as an unprivileged user: every
writer (claim, batch, extend, release, sweep, run admission, init, wait
--claim; every semaphore writer: sem acquire, extend of a slot, sem release,
batch sem-release, run --sem; the admin writers member add/remove and
guard-time enable; migrate) against a persistent ref lock, a permanent publication
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
from support import CliTest, T0, binary

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


class Writer:
    """One row of the matrix: `setup(user, repo, test)` returns the values
    substituted into `args` ({batch}, {marker} and whatever it adds); `init`
    is who creates the store first ("repo": the repository's owner as root,
    "self": the unprivileged user, who then owns it, "self private": the same
    with `init --private`, None: nobody); `records`
    is the number of new record blobs its candidate writes; `op` the JSON
    error's op."""

    def __init__(self, setup, args, records, op, init="repo"):
        self.setup, self.args, self.records, self.op, self.init = setup, args, records, op, init


def no_setup(u, r, t):
    return {}


def claimed_x(u, r, t):
    u.ok("claim", "--ttl", "2s", "x")
    return {}


def sem_held(u, r, t):
    lease = u.ok("sem", "acquire", "ci", "--limit", "2", "--ttl", "2s")["leases"][0]["lease"]
    return {"lease": lease}


def expired_x(u, r, t):
    claimed_x(u, r, t)
    r.now = LATER
    return {}


def batch_of(*lines, before=no_setup):
    def setup(u, r, t):
        subst = before(u, r, t)
        path = os.path.join(r.root, "batch.jsonl")
        with open(path, "w") as f:
            f.write("".join(json.dumps(line) + "\n" for line in lines))
        os.chmod(path, 0o644)
        return subst
    return setup


def format1(u, r, t):
    format1_store(t, r)
    return {}


def no_store(u, r, t):
    # refs/locks exists (empty, as git leaves it after a deleted ref), so the
    # planted lock and the read-only ref directory apply to the first ref too.
    os.makedirs(os.path.join(r.gitdir(), "refs", "locks"))
    return {}


def other_actor(r, name):
    res = r.run(name, "--json", "whoami")
    assert res.code == 0, res
    return res.json["actor"]


def private_store(u, r, t):
    return {"member": other_actor(r, "bob")}


def private_store_with_bob(u, r, t):
    bob = other_actor(r, "bob")
    u.ok("member", "add", bob)
    return {"member": bob}


def notary_running(u, r, t):
    """A real notary on loopback (its test clock) for guard-time enable."""
    n = GuardNotary(t, r.root)
    r.git("config", "locks.notary", n.url)
    st = u.ok("status")
    return {"audience": n.audience, "service_key": n.service_key, "policy_hash": st["policy_hash"]}


class GuardNotary:
    audience = "locks.faults.test"

    def __init__(self, test, root):
        key, state = os.path.join(root, "notary.key"), os.path.join(root, "notary-state")
        out = subprocess.run([binary(), "notary", "keygen", "--out", key], capture_output=True, text=True)
        test.assertEqual(out.returncode, 0, out.stderr)
        self.service_key = json.loads(out.stdout)["service_key"]
        os.makedirs(state, mode=0o700)
        with open(os.path.join(state, "test-clock-ms"), "w") as f:
            f.write(str(T0 + 1000))
        self.proc = subprocess.Popen([binary(), "notary", "serve", "--key", key, "--state", state, "--listen",
                                      "127.0.0.1:0", "--audience", self.audience, "--test-clock"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        test.addCleanup(self.stop)
        self.url = "http://" + json.loads(self.proc.stdout.readline())["listening"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stdout.close()


ENABLE = ["guard-time", "enable", "--audience", "{audience}", "--service-key", "{service_key}", "--disclosure",
          "GUARD_WINDOW", "--expected-policy-hash", "{policy_hash}", "--operation-id", "op-1", "--allow-test-clock"]

WRITERS = {
    "claim": Writer(no_setup, ["claim", "x"], 1, "claim"),
    "batch": Writer(batch_of({"op": "claim", "path": "y"}, {"op": "sem-acquire", "sem": "s", "limit": 2}),
                    ["batch", "{batch}"], 2, "batch"),
    "extend": Writer(claimed_x, ["extend", "x"], 1, "extend"),
    "release": Writer(claimed_x, ["release", "x"], 1, "release"),
    "sweep": Writer(expired_x, ["sweep"], 1, "sweep"),
    "run": Writer(no_setup, ["run", "--claim", "x", "--", "touch", "{marker}"], 1, "run"),
    "init": Writer(no_store, ["init"], 0, "init", init=None),  # a root state: policy, no records
    "wait --claim": Writer(no_setup, ["wait", "--timeout", "1s", "--claim", "x"], 1, "wait"),
    # every semaphore writer: acquire, extend, release, batch release, run --sem
    "sem acquire": Writer(no_setup, ["sem", "acquire", "ci", "--limit", "2"], 1, "sem acquire"),
    "sem extend": Writer(sem_held, ["extend", "{lease}"], 1, "extend"),
    "sem release": Writer(sem_held, ["sem", "release", "ci"], 1, "sem release"),
    "batch sem-release": Writer(batch_of({"op": "sem-release", "sem": "ci"}, before=sem_held),
                                ["batch", "{batch}"], 1, "batch"),
    "run --sem": Writer(no_setup, ["run", "--sem", "ci:2", "--", "touch", "{marker}"], 1, "run"),
    # owner-signed admin transitions: the policy changes, no record does
    "member add": Writer(private_store, ["member", "add", "{member}"], 0, "member add", init="self private"),
    "member remove": Writer(private_store_with_bob, ["member", "remove", "{member}"], 0, "member remove",
                            init="self private"),
    "guard-time enable": Writer(notary_running, ENABLE, 0, "guard-time enable", init="self"),
    "migrate": Writer(format1, ["migrate"], 0, "migrate", init=None),  # records move unchanged: no new blob
}


class Faults(CliTest):
    def prepare(self, writer):
        w = WRITERS[writer]
        r = self.repo(init=w.init == "repo")
        u = Unprivileged(self, r)
        if w.init and w.init.startswith("self"):
            u.ok("init", *(["--private"] if w.init == "self private" else []))
        marker = os.path.join(r.root, "marker")
        subst = {"batch": os.path.join(r.root, "batch.jsonl"), "marker": marker}
        subst.update(w.setup(u, r, self))
        u.open_up()
        u.reset_log()
        args = [a.format(**subst) for a in w.args]
        return r, u, args, w.records, marker

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
        op = WRITERS[writer].op
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
        self.assertEqual(len(cands), expect_attempts, log)
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
                helper.stdout.close()
                self.assertEqual(res.code, 0, res)
                self.assertGreaterEqual(json.loads(res.out)["attempts"], 2)
                self.assertLessEqual(json.loads(res.out)["attempts"], 6)
                log = r.update_ref_log()
                self.assertEqual(len({stdin for _, stdin in log}), 1)  # the same candidate throughout
                self.assertEqual([s for s, _ in log][-1], 0)
                self.assertEqual(r.tip(), candidates(r)[0])


class GitEnvironment(CliTest):
    """Seed 000: git runs in the C locale whatever the user's, with zero ref-lock timeouts whatever the
    repository's; a lock freed by a writer that moved the root meanwhile costs a fresh plan, not a failure."""

    # A translated environment that Debian's git honours without any generated locale.
    GERMAN = {"LANGUAGE": "de", "LANG": "de_DE.UTF-8", "LC_ALL": "C.UTF-8"}

    def test_c_locale_and_zero_lock_timeouts_whatever_the_environment(self):
        r = self.repo()
        r.now = T0 + 1000
        self.claimed(r, "alice", "a")
        # Settings that would add a 3 s wait to every attempt if git-locks left them in force.
        r.git("config", "core.filesRefLockTimeout", "3000")
        r.git("config", "core.packedRefsTimeout", "3000")
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        with open(lock, "w") as f:
            f.write("held\n")
        # The precondition: in this environment git itself speaks German about the same lock.
        plain = subprocess.run(["git", "-C", r.path, "update-ref", "refs/locks/state", r.tip(), r.tip()],
                               capture_output=True, text=True, env=dict(os.environ, **self.GERMAN))
        self.assertNotEqual(plain.returncode, 0)
        self.assertIn("state.lock", plain.stderr)
        self.assertNotIn("File exists", plain.stderr, "git is not translated here: the test would prove nothing")
        args_log = os.path.join(r.root, "args.log")
        start = time.monotonic()
        res = r.run("bob", "--json", "claim", "b", env=dict(r.wrapped(GIT_WRAPPER_ARGS_LOG=args_log), **self.GERMAN))
        elapsed = time.monotonic() - start
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["attempts"]), ("store-write", "store-write", 6), res)
        self.assertIn("File exists", e["detail"])  # git's own words, in English: the C locale
        self.assertLess(elapsed, 3, "a repository lock timeout was in force")
        with open(args_log) as f:
            runs = [line.rstrip("\n").split("\t") for line in f]
        self.assertEqual(len(runs), 6)
        for run in runs:
            self.assertEqual(run[0], "LC_ALL=C")
            i = run.index("update-ref")
            self.assertEqual(run[i - 4:i], ["-c", "core.filesRefLockTimeout=0", "-c", "core.packedRefsTimeout=0"])
        with open(lock) as f:
            self.assertEqual(f.read(), "held\n")  # another writer's lock is never removed

    def test_lock_freed_and_root_moved_meanwhile_replans(self):
        r = self.repo()
        r.now = T0 + 1000
        self.claimed(r, "alice", "a")
        tip = r.tip()
        # carol's claim of c on the same tip, made in a copy of the clone: the update the lock's owner finishes.
        shadow = os.path.join(r.root, "shadow")
        subprocess.run(["cp", "-a", r.path, shadow], check=True)
        other = subprocess.run([binary(), "--repo", shadow, "--json", "claim", "c"], capture_output=True,
                               text=True, env=r.env("carol"))
        self.assertEqual(other.returncode, 0, other.stderr)
        carol = json.loads(other.stdout)["commit"]
        r.git("fetch", "-q", shadow, "refs/locks/state")
        self.assertEqual(r.git("rev-parse", "FETCH_HEAD").strip(), carol)
        ref = os.path.join(r.gitdir(), "refs", "locks", "state")
        lock = ref + ".lock"
        open(r.wrapper_log, "w").close()
        # The owner holds the lock until bob's first attempt runs into it, then writes carol's commit
        # into it and renames it over the ref, as git's files backend does.
        helper = subprocess.Popen([sys.executable, "-c", (
            "import os,sys,time\n"
            "fd=os.open(sys.argv[1],os.O_CREAT|os.O_EXCL|os.O_WRONLY,0o666)\n"
            "print('held',flush=True)\n"
            "end=time.monotonic()+30\n"
            "while time.monotonic()<end and os.path.getsize(sys.argv[3])==0: time.sleep(0.002)\n"
            "os.write(fd,(sys.argv[4]+'\\n').encode());os.close(fd)\n"
            "os.rename(sys.argv[1],sys.argv[2])\n"), lock, ref, r.wrapper_log, carol],
            stdout=subprocess.PIPE, text=True)
        self.assertEqual(helper.stdout.readline().strip(), "held")
        res = r.run("bob", "--json", "claim", "b", env=dict(r.wrapped(), **self.GERMAN))
        self.assertEqual(helper.wait(timeout=60), 0)
        helper.stdout.close()
        self.assertEqual(res.code, 0, res)
        log = r.update_ref_log()
        self.assertGreaterEqual(len(log), 3, log)  # the lock, the moved root, the new plan
        self.assertEqual(log[-1][0], 0)
        self.assertIn(tip, log[0][1])  # the first candidate expected alice's tip
        self.assertIn(carol, log[-1][1])  # the last, replanned, expects carol's
        parent = r.git("rev-parse", r.tip() + "^").strip()
        self.assertEqual(parent, carol)  # nothing lost: carol's claim is below bob's
        st = r.run("dave", "--json", "status").json
        self.assertEqual(sorted(l["path"] for l in st["leases"]), ["a", "b", "c"])


if __name__ == "__main__":
    unittest.main()
