"""`git-locks run`: admission before launch, renewal while the command runs,
release afterwards, the command's own exit status, signal forwarding."""

import json
import os
import pty
import select
import signal
import sys
import time
import unittest

from support import CliTest, binary


class Run(CliTest):
    def test_not_launched_when_admission_is_refused(self):
        r = self.repo()
        self.claimed(r, "bob", "f")
        marker = os.path.join(r.root, "launched")
        with self.unchanged(r):
            res = r.run("alice", "run", "--claim", "f", "--", "touch", marker)
        self.assertRefused(res, "held-path")
        self.assertEqual(res.error["op"], "run")
        self.assertFalse(os.path.exists(marker))

    def test_not_launched_when_admission_fails_operationally(self):
        r = self.repo()
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        open(lock, "w").close()
        marker = os.path.join(r.root, "launched")
        with self.unchanged(r):
            res = r.run("alice", "run", "--claim", "f", "--", "touch", marker)
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"], e["attempts"]),
                         ("store-write",) * 3 + ("run", 6), res)  # the held ref lock: 6 attempts (seed 000)
        self.assertFalse(os.path.exists(marker))
        self.assertTrue(os.path.exists(lock))

    def test_exit_status_environment_and_release(self):
        r = self.repo()
        out = os.path.join(r.root, "leases.json")
        res = r.run("alice", "run", "--claim", "f", "--shared", "d/", "--sem", "ci:2", "--",
                    "sh", "-c", f'printf "%s" "$GIT_LOCKS_LEASES" > {out}; exit 7')
        self.assertEqual(res.code, 7, res)
        with open(out) as f:
            leases = json.load(f)
        self.assertEqual(sorted(l["resource"] for l in leases), ["path:d", "path:f", "sem:ci"])
        self.assertEqual(r.run("alice", "--json", "status").json["leases"], [])
        actions = [json.loads(l)["action"] for l in r.run("x", "--json", "log").out.splitlines()]
        self.assertEqual(actions[:2], ["batch", "batch"])  # the release, then the admission

    def test_lease_is_kept_across_a_command_that_outlives_the_ttl(self):
        r = self.repo(now=None)  # real time: renewals must happen while it passes
        proc = r.popen("alice", "run", "--claim", "f", "--ttl", "1500ms", "--", "sh", "-c", "sleep 3.5; exit 3")
        time.sleep(2.6)  # well past the first expiry
        refused = self.claim(r, "bob", "f")
        leases = r.run("bob", "--json", "status", "f").json["leases"]
        _, err = proc.communicate(timeout=60)
        code = proc.returncode
        self.assertRefused(refused, "held-path")
        self.assertEqual(len(leases), 1)
        self.assertEqual(leases[0]["name"], "alice")
        self.assertEqual(code, 3, err)
        self.assertEqual(err, "")
        log = [json.loads(l) for l in r.run("x", "--json", "log").out.splitlines()]
        self.assertGreaterEqual(sum(1 for l in log if l["action"] == "extend"), 3)
        self.claimed(r, "bob", "f")  # released at the end

    def test_sigterm_is_forwarded_and_leases_released(self):
        r = self.repo(now=None)
        ready = os.path.join(r.root, "ready")
        proc = r.popen("alice", "run", "--claim", "f", "--", "sh", "-c",
                       f"trap 'exit 42' TERM; touch {ready}; while :; do sleep 0.05; done")
        deadline = time.monotonic() + 30
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 42, err)
        self.assertEqual(r.run("alice", "--json", "status").json["leases"], [])

    def test_renewal_failure_is_reported_at_once(self):
        r = self.repo(now=None)
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        # Admitted; then the store becomes unwritable before the first renewal.
        proc = r.popen("alice", "run", "--claim", "f", "--ttl", "1s", "--", "sh", "-c",
                       f"touch {lock}; sleep 2")
        _, err = proc.communicate(timeout=60)
        code = proc.returncode
        errors = [json.loads(l) for l in err.splitlines()]
        os.unlink(lock)
        self.assertEqual(code, 0)
        self.assertTrue(errors)
        self.assertTrue(all(e["op"] == "run" for e in errors))
        self.assertEqual((errors[0]["error"], errors[0]["code"], errors[0]["reason"]), ("store-write",) * 3, errors)
        self.assertIn("renewal failed", errors[0]["detail"])
        self.assertTrue(any("no longer held" in e["detail"] for e in errors), errors)

    def test_in_a_terminal_the_command_reads_it_and_gets_ctrl_c(self):
        # The command's process group is the terminal's foreground: it can
        # read the terminal (a background group would be stopped) and
        # Ctrl-C reaches it.
        r = self.repo(now=None)
        # Not a shell: dash defers a SIGINT that arrives between two commands.
        command = ("import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                   "print('got:' + sys.stdin.readline().strip(), flush=True); time.sleep(60)")
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execve(binary(), [binary(), "--repo", r.path, "run", "--claim", "f", "--", sys.executable, "-c",
                                     command], r.env("alice"))
            finally:
                os._exit(127)
        self.addCleanup(lambda: os.close(fd))

        def read_until(text, timeout=30):
            seen = b""
            deadline = time.monotonic() + timeout
            while text not in seen and time.monotonic() < deadline:
                if select.select([fd], [], [], 0.1)[0]:
                    try:
                        seen += os.read(fd, 4096)
                    except OSError:
                        break
            return seen

        os.write(fd, b"hello\n")
        seen = read_until(b"got:hello")
        if b"got:hello" not in seen:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            self.fail(f"the command never read the terminal: {seen!r}")
        os.write(fd, b"\x03")
        read_until(b"never", timeout=2)
        deadline = time.monotonic() + 30
        while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if status[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            self.fail("Ctrl-C did not end the command")
        self.assertEqual(os.waitstatus_to_exitcode(status[1]), 128 + signal.SIGINT)
        self.assertEqual(r.run("alice", "--json", "status").json["leases"], [])

    def test_usage(self):
        r = self.repo()
        with self.unchanged(r):
            self.assertUsage(r.run("alice", "run", "--", "true"))
            self.assertUsage(r.run("alice", "run", "--claim", "f"))
            self.assertUsage(r.run("alice", "run", "--sem", "nolimit", "--", "true"))
            self.assertUsage(r.run("alice", "run", "--claim", "a//b", "--", "true"), "bad-path")


if __name__ == "__main__":
    unittest.main()
