"""Publication (seed 000): the exact update-ref transaction, replans on a
moved root, bounded retries of a held ref lock, immediate store-write errors
for everything else, and exclusion under concurrent writers."""

import json
import os
import shutil
import stat
import subprocess
import threading
import time
import unittest

from support import CliTest, T0

ZERO = "0" * 40


class Transaction(CliTest):
    def test_exact_update_ref_input_and_candidate_commit(self):
        r = self.repo(init=False)
        self.assertOk(r.run("alice", "init", env=r.wrapped()))
        first = r.tip()
        self.assertOk(r.run("alice", "claim", "x", env=r.wrapped()))
        second = r.tip()
        log = r.update_ref_log()
        self.assertEqual(log, [
            (0, f"start\nupdate refs/locks/state {first} {ZERO}\nprepare\ncommit\n"),
            (0, f"start\nupdate refs/locks/state {second} {first}\nprepare\ncommit\n"),
        ])
        self.assertEqual(r.git("rev-parse", f"{second}^").strip(), first)
        self.assertEqual(r.git("ls-tree", "--name-only", second).split(), ["state", "txn"])
        packet = json.loads(r.git("cat-file", "-p", f"{second}:txn/packet.json"))
        self.assertEqual(packet["packet"]["command"], "claim")
        self.assertEqual(packet["packet"]["body"]["name"], "alice")

    def test_refusal_runs_no_transaction(self):
        r = self.repo()
        self.claimed(r, "alice", "x")
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "bob", "x", extra=()), "held-path")
            res = r.run("bob", "claim", "x", env=r.wrapped())
            self.assertRefused(res, "held-path")
        self.assertEqual(r.update_ref_log(), [])


class RefLock(CliTest):
    def test_persistent_lock_six_attempts_then_store_write(self):
        r = self.repo()
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        with open(lock, "w") as f:
            f.write("another writer\n")
        before = os.stat(lock)
        with self.unchanged(r):
            start = time.monotonic()
            res = r.run("alice", "claim", "x", env=r.wrapped())
            elapsed = time.monotonic() - start
        self.assertEqual(res.code, 2, res)
        self.assertEqual(res.out, "")
        e = res.error
        self.assertEqual((e["error"], e["code"], e["op"], e["attempts"]), ("store-write", "store-write", "claim", 6))
        self.assertIn("state.lock", e["detail"])
        self.assertIn("File exists", e["detail"])
        self.assertGreaterEqual(elapsed, 0.1)  # five pauses of 20 ms
        with open(lock) as f:
            self.assertEqual(f.read(), "another writer\n")
        after = os.stat(lock)
        self.assertEqual((before.st_ino, before.st_mtime_ns), (after.st_ino, after.st_mtime_ns))
        log = r.update_ref_log()
        self.assertEqual(len(log), 6)
        self.assertEqual({entry for entry in log}, {log[0]})  # the same candidate every time, 128 each
        self.assertEqual(log[0][0], 128)

    def test_transient_lock_is_waited_out(self):
        r = self.repo()
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        open(lock, "w").close()

        def release_after_first_attempt():  # the lock's owner finishes its own update
            deadline = time.monotonic() + 30
            while not r.update_ref_log() and time.monotonic() < deadline:
                time.sleep(0.002)
            os.unlink(lock)

        owner = threading.Thread(target=release_after_first_attempt)
        owner.start()
        res = r.run("alice", "--json", "claim", "x", env=r.wrapped())
        owner.join()
        self.assertOk(res)
        self.assertGreaterEqual(res.json["attempts"], 2)
        self.assertLessEqual(res.json["attempts"], 6)
        log = r.update_ref_log()
        self.assertEqual(len({stdin for _, stdin in log}), 1)  # nothing was rebuilt
        self.assertEqual(log[-1][0], 0)


class ImmediateStoreWrite(CliTest):
    def assertStoreWriteAtOnce(self, res, r):
        self.assertEqual(res.code, 2, res)
        self.assertEqual(res.out, "")
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["attempts"]), ("store-write",) * 3 + (1,), res)
        self.assertEqual(len(r.update_ref_log()), 1)
        return e

    def test_reference_transaction_hook_rejection(self):
        r = self.repo()
        hook = os.path.join(r.gitdir(), "hooks", "reference-transaction")
        with open(hook, "w") as f:
            f.write('#!/bin/sh\nprintf \'policy says "no"\\n\\tand\\\\more\\n\' >&2\nexit 1\n')
        os.chmod(hook, 0o755)
        with self.unchanged(r):
            e = self.assertStoreWriteAtOnce(r.run("alice", "claim", "x", env=r.wrapped()), r)
        self.assertIn('policy says "no"\n\tand\\more\n', e["detail"])
        self.assertIn("ref updates aborted by hook", e["detail"])

    def test_injected_failures_do_not_replan(self):
        messages = [
            "fatal: prepare: cannot update ref 'refs/locks/state': trying to write ref 'refs/locks/state' "
            "with nonexistent object 1234567890123456789012345678901234567890",
            "fatal: prepare: cannot lock ref 'refs/locks/state': unable to resolve reference "
            "'refs/locks/state': reference broken",
            "fatal: prepare: cannot lock ref 'refs/locks/state': Unable to create "
            "'/x/.git/refs/locks/state.lock': Permission denied",
            "error: something nobody expected\n\"quoted\"",
            "fatal: prepare: cannot lock ref 'refs/locks/other': is at 1 but expected 2",
        ]
        for m in messages:
            with self.subTest(message=m):
                r = self.repo()
                with self.unchanged(r):
                    e = self.assertStoreWriteAtOnce(r.run("alice", "claim", "x", env=r.wrapped(GIT_WRAPPER_FAIL="message:" + m)), r)
                self.assertIn(m, e["detail"])

    def test_git_missing(self):
        r = self.repo()
        with self.unchanged(r):
            res = r.run("alice", "claim", "x", env={"GIT_LOCKS_GIT": os.path.join(r.root, "no-such-git")})
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("store-write",) * 3 + ("claim",), res)

    def run_unprivileged(self, r, writable=()):
        """`claim x` as a user who may read the repository but write only `writable` (relative to .git)."""
        if os.geteuid() != 0:
            for d in ("objects", "refs/locks"):
                if d not in writable:
                    path = os.path.join(r.gitdir(), d)
                    for root, dirs, _ in os.walk(path):
                        os.chmod(root, 0o555)
                        self.addCleanup(os.chmod, root, 0o755)
            return r.run("alice", "claim", "x", env=r.wrapped())
        if not shutil.which("setpriv"):
            self.fail("needs setpriv (util-linux) to drop root")
        home = os.path.join(r.root, "home")
        os.mkdir(home)
        with open(os.path.join(home, ".gitconfig"), "w") as f:
            f.write(f"[safe]\n\tdirectory = *\n\tdirectory = {r.path}\n")
        os.chmod(r.root, 0o755)
        subprocess.run(["chmod", "-R", "a+rX", r.root], check=True)
        for d in writable:
            subprocess.run(["chmod", "-R", "a+w", os.path.join(r.gitdir(), d)], check=True)
        key = os.path.join(home, "nobody.key")
        self.assertOk(r.run("nobody", "whoami", env={"GIT_LOCKS_KEY": key}))
        for p in (key, home):
            os.chown(p, 65534, 65534)
        open(r.wrapper_log, "w").close()
        os.chmod(r.wrapper_log, 0o666)
        os.chmod(r.wrapper_state, 0o777)
        env = r.env("nobody", r.wrapped(GIT_LOCKS_KEY=key, HOME=home))
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               os.environ["GIT_LOCKS_BIN"], "--repo", r.path, "claim", "x"],
                              capture_output=True, text=True, env=env)
        from support import Result
        return Result(proc)

    def test_read_only_ref_directory(self):
        r = self.repo()
        with self.unchanged(r):
            res = self.run_unprivileged(r, writable=("objects",))
        e = self.assertStoreWriteAtOnce(res, r)
        self.assertIn("Permission denied", e["detail"])

    def test_read_only_object_directory(self):
        r = self.repo()
        with self.unchanged(r):
            res = self.run_unprivileged(r, writable=())
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("store-write",) * 3 + ("claim",), res)
        self.assertNotIn("attempts", res.error)  # failed before publication
        self.assertEqual(r.update_ref_log(), [])


class Replans(CliTest):
    def test_stale_retries_exhausted(self):
        r = self.repo()
        with self.unchanged(r):
            res = r.run("alice", "claim", "x", env=r.wrapped(GIT_WRAPPER_FAIL="stale"), timeout=120)
        self.assertRefused(res, "stale-retries-exhausted")
        self.assertEqual(res.error["attempts"], 201)  # the first plan and 200 replans
        self.assertEqual(len(r.update_ref_log()), 201)
        self.assertEqual(res.out, "")

    def race(self, r, cmd):
        """Wrapper environment in which another writer publishes just before our first update-ref."""
        bin_ = os.environ["GIT_LOCKS_BIN"]
        return r.wrapped(GIT_WRAPPER_RACE_CMD=f"GIT_LOCKS_KEY={r.key('bob')} '{bin_}' --repo '{r.path}' {cmd}")

    def test_creation_losing_to_an_existing_root(self):
        r = self.repo(init=False)
        res = self.assertOk(r.run("alice", "--json", "init", env=self.race(r, "init")))
        self.assertFalse(res.json["created"])
        self.assertEqual(res.json["commit"], r.tip())
        self.assertEqual([s for s, _ in r.update_ref_log()], [128])
        self.assertEqual(len(r.git("rev-list", "refs/locks/state").split()), 1)

    def test_moved_root_replans_then_refuses(self):
        r = self.repo()
        res = r.run("alice", "claim", "x", env=self.race(r, "claim x"))
        e = self.assertRefused(res, "held-path")
        self.assertEqual(e["attempts"], 1)

    def test_moved_root_replans_then_publishes_without_losing_the_other_update(self):
        r = self.repo()
        res = self.assertOk(r.run("alice", "--json", "claim", "x", env=self.race(r, "claim y")))
        self.assertEqual(res.json["attempts"], 2)
        log = r.update_ref_log()
        self.assertEqual([s for s, _ in log], [128, 0])
        self.assertNotEqual(log[0][1], log[1][1])  # a fresh candidate on the new root
        paths = sorted(l["path"] for l in r.run("alice", "--json", "status").json["leases"])
        self.assertEqual(paths, ["x", "y"])


class Concurrency(CliTest):
    N = 8

    def start_all(self, r, args_for):
        procs = [r.popen(f"w{i}", *args_for(i)) for i in range(self.N)]
        return [(p.wait(timeout=120), *p.communicate()) for p in procs]

    def test_same_path_exactly_one_wins(self):
        r = self.repo(now=None)
        before = r.tip()
        results = self.start_all(r, lambda i: ["--json", "claim", "--ttl", "5m", "contended"])
        winners = [i for i, (code, _, _) in enumerate(results) if code == 0]
        self.assertEqual(len(winners), 1, results)
        for i, (code, out, err) in enumerate(results):
            if i in winners:
                continue
            self.assertEqual(code, 1, (out, err))
            e = json.loads(err)
            self.assertIn(e["reason"], ("held-path",))
        leases = r.run("w0", "--json", "status").json["leases"]
        self.assertEqual(len(leases), 1)
        self.assertEqual(leases[0]["name"], f"w{winners[0]}")
        self.assertEqual(r.git("rev-parse", "refs/locks/state~1").strip(), before)

    def test_distinct_paths_no_lost_update(self):
        r = self.repo(now=None)
        before = r.tip()
        results = self.start_all(r, lambda i: ["claim", "--ttl", "5m", f"dir/file{i}"])
        self.assertEqual([c for c, _, _ in results], [0] * self.N, results)
        leases = r.run("w0", "--json", "status").json["leases"]
        self.assertEqual(sorted(l["path"] for l in leases), sorted(f"dir/file{i}" for i in range(self.N)))
        history = r.git("rev-list", "--first-parent", f"{before}..refs/locks/state").split()
        self.assertEqual(len(history), self.N)  # one commit per writer, none overwritten


if __name__ == "__main__":
    unittest.main()
