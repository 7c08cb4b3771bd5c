"""`git-locks run`: admission before launch, renewal while the command runs,
release afterwards, the command's own exit status, signal forwarding, and a
lost lease stopping the command (SIGTERM to its process group, SIGKILL after
--grace) or not (--on-lost keep)."""

import json
import os
import pty
import select
import signal
import sys
import threading
import time
import unittest

from support import CliTest, binary


def wait_for_file(path, timeout=30):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)


def lines_of(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split()


def errors_of(stderr):
    """git-locks' error lines on a stderr it shares with the command (whose
    shell may print "Terminated")."""
    return [json.loads(l) for l in stderr.splitlines() if l.startswith("{")]


def alive(pid):
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Watch:
    """A `git-locks run` in the background whose stderr is read as it comes:
    each error line with the monotonic time it was read."""

    def __init__(self, test, proc):
        self.proc = proc
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        test.addCleanup(self._stop)

    def _read(self):
        for line in self.proc.stderr:
            for e in errors_of(line):
                with self.cond:
                    self.lines.append((time.monotonic(), e))
                    self.cond.notify_all()

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.thread.join(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()

    def first(self, code, timeout=30):
        """(time read, error) of the first error line with `code`."""
        with self.cond:
            found = self.cond.wait_for(lambda: [x for x in self.lines if x[1]["code"] == code], timeout)
        if not found:
            raise AssertionError(f"no {code} error within {timeout}s: {self.lines}")
        return found[0]

    def finish(self, timeout=60):
        """(exit status, time it exited, every error line)."""
        code = self.proc.wait(timeout=timeout)
        ended = time.monotonic()
        self.thread.join(timeout=10)
        return code, ended, [e for _, e in self.lines]


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
        # TTL 3 s, renewed every second: a renewal may take up to 2 s (ASan on
        # a loaded 2-core machine took more than the 1 s a 1.5 s TTL left).
        proc = r.popen("alice", "run", "--claim", "f", "--ttl", "3s", "--", "sh", "-c", "sleep 7; exit 3")
        time.sleep(5.2)  # well past the first expiry
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

    def test_renewal_failure_is_reported_at_once_and_expiry_stops_the_command(self):
        r = self.repo(now=None)
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        self.addCleanup(lambda: os.path.exists(lock) and os.unlink(lock))
        events = os.path.join(r.root, "events")
        leases = os.path.join(r.root, "leases.json")
        # Admitted; then the store becomes unwritable before the first
        # renewal, so the lease expires 2s later. Left alone, the command
        # would finish after about 15s.
        script = (f'trap "echo term >> {events}; exit 143" TERM; printf "%s" "$GIT_LOCKS_LEASES" > {leases}; '
                  f"touch {lock}; echo started >> {events}; "
                  f"i=0; while [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; echo finished >> {events}")
        proc = r.popen("alice", "run", "--claim", "f", "--ttl", "2s", "--", "sh", "-c", script)
        _, err = proc.communicate(timeout=60)
        errors = errors_of(err)
        with open(leases) as f:
            lease = json.load(f)[0]["lease"]
        self.assertEqual(lines_of(events), ["started", "term"], errors)
        self.assertEqual(proc.returncode, 1, errors)
        self.assertTrue(all(e["op"] == "run" for e in errors))
        self.assertEqual((errors[0]["error"], errors[0]["code"], errors[0]["reason"]), ("store-write",) * 3, errors)
        self.assertIn("renewal failed", errors[0]["detail"])
        # The loss is the last line: reported once, after the failed renewals.
        lost = errors[-1]
        self.assertEqual([e for e in errors if e["code"] == "lease-lost"], [lost])
        self.assertEqual((lost["error"], lost["code"], lost["reason"], lost["lease"], lost["resource"],
                          lost["on_lost"]), ("refused", "lease-lost", "expired", lease, "path:f", "terminate"), lost)
        self.assertLess(lost["expires_at_ms"], lost["checked_at_ms"])
        self.assertIn("SIGTERM", lost["detail"])

    def test_a_force_released_lease_stops_the_command(self):
        r = self.repo(now=None)
        events = os.path.join(r.root, "events")
        leases = os.path.join(r.root, "leases.json")
        ready = os.path.join(r.root, "ready")
        script = (f'trap "echo term >> {events}; exit 143" TERM; printf "%s" "$GIT_LOCKS_LEASES" > {leases}; '
                  f"touch {ready}; i=0; while [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; "
                  f"echo finished >> {events}")
        proc = r.popen("alice", "run", "--claim", "f", "--ttl", "3s", "--", "sh", "-c", script)
        wait_for_file(ready)
        self.assertOk(r.run("owner", "--json", "release", "--force", "--reason", "landed elsewhere", "f"))
        _, err = proc.communicate(timeout=60)
        errors = errors_of(err)
        with open(leases) as f:
            lease = json.load(f)[0]["lease"]
        owner = r.run("owner", "--json", "whoami").json["actor"]
        self.assertEqual(lines_of(events), ["term"], errors)
        self.assertEqual(proc.returncode, 1, errors)
        self.assertEqual(len(errors), 1, errors)
        e = errors[0]
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"], e["lease"], e["resource"], e["on_lost"]),
                         ("refused", "lease-lost", "force-released", "run", lease, "path:f", "terminate"), e)
        self.assertEqual((e["released_by"], e["released_by_name"], e["release_reason"]),
                         (owner, "owner", "landed elsewhere"), e)
        self.assertIn("force-released by owner: landed elsewhere", e["detail"])

    def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(self):
        r = self.repo(now=None)
        ready = os.path.join(r.root, "ready")
        pids = os.path.join(r.root, "pids")
        # The command and a process it started ignore SIGTERM; left alone
        # they would run about 20s and 60s.
        script = (f"trap '' TERM; sleep 60 & echo $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; touch {ready}; "
                  f"i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done")
        proc = r.popen("alice", "run", "--claim", "f", "--ttl", "1500ms", "--grace", "3s", "--", "sh", "-c", script)
        watch = Watch(self, proc)
        wait_for_file(ready)
        command, started = (int(p) for p in lines_of(pids))
        self.addCleanup(lambda: [alive(p) and os.kill(p, signal.SIGKILL) for p in (command, started)])
        self.assertOk(r.run("owner", "--json", "release", "--force", "--reason", "taken back", "f"))
        lost_at, lost = watch.first("lease-lost")
        self.assertTrue(alive(command))  # SIGTERM did not stop it
        code, ended, errors = watch.finish()
        self.assertEqual((lost["reason"], lost["on_lost"]), ("force-released", "terminate"), lost)
        self.assertEqual(code, 1, errors)
        # Not before the grace, and soon after it.
        self.assertGreaterEqual(ended - lost_at, 3 - 0.25, errors)
        self.assertLess(ended - lost_at, 3 + 5, errors)
        # The whole process group is gone, not only the command.
        deadline = time.monotonic() + 5
        while (alive(command) or alive(started)) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual((alive(command), alive(started)), (False, False))

    def test_on_lost_keep_lets_the_command_finish_and_reports_the_loss(self):
        r = self.repo(now=None)
        lock = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        self.addCleanup(lambda: os.path.exists(lock) and os.unlink(lock))
        events = os.path.join(r.root, "events")
        go = os.path.join(r.root, "go")
        script = (f'trap "echo term >> {events}; exit 143" TERM; touch {lock}; '
                  f"i=0; while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
                  f"echo finished >> {events}; exit 5")
        proc = r.popen("alice", "run", "--claim", "f", "--ttl", "1s", "--on-lost", "keep", "--grace", "0",
                       "--", "sh", "-c", script)
        watch = Watch(self, proc)
        _, lost = watch.first("lease-lost")
        time.sleep(1)  # well past a grace of 0
        still_running = proc.poll() is None
        os.unlink(lock)
        open(go, "w").close()
        code, _, errors = watch.finish()
        self.assertTrue(still_running, errors)
        self.assertEqual(lines_of(events), ["finished"], errors)
        self.assertEqual(code, 1, errors)  # the loss, not the command's 5
        self.assertEqual((lost["error"], lost["reason"], lost["resource"], lost["on_lost"]),
                         ("refused", "expired", "path:f", "keep"), lost)
        self.assertEqual([e for e in errors if e["code"] == "lease-lost"], [lost])

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
            self.assertUsage(r.run("alice", "run", "--claim", "f", "--on-lost", "ignore", "--", "true"))
            self.assertUsage(r.run("alice", "run", "--claim", "f", "--grace", "soon", "--", "true"))


if __name__ == "__main__":
    unittest.main()
