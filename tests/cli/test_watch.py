"""`git-locks watch` (docs/CLI.md "watch"): one JSON line per change of the
store as the ref moves, writing nothing. A scripted history (claim, renew,
hand-off, release, force-release, a sweep of an expired lease) is watched
and the events are compared with `log --json`: the same commits in the same
order, each event the change that commit made. Filters, the watcher's own
lost lease, and an expiry seen on the clock alone are covered too."""

import json
import queue
import threading
import time

from support import T0, CliTest


class Lines:
    """A watch process's stdout, line by line, with a timeout."""

    def __init__(self, proc):
        self.proc = proc
        self.q = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.q.put(line)
        self.q.put(None)

    def next(self, timeout=20):
        line = self.q.get(timeout=timeout)
        assert line is not None, "watch ended: %s" % self.proc.stderr.read()
        return json.loads(line)


class WatchTest(CliTest):
    def setUp(self):
        self.r = self.repo()
        self.keys = {a: self.assertOk(self.r.run(a, "--json", "whoami")).json["actor"]
                     for a in ("owner", "alice", "bob", "carol", "dave")}

    def watch(self, actor, *args):
        proc = self.r.popen(actor, "--json", "watch", *args)
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.wait(), proc.stdout.close(),
                                 proc.stderr.close()))
        lines = Lines(proc)
        first = lines.next()
        self.assertEqual(first["event"], "watching")
        self.assertEqual(first["commit"], self.r.tip())
        return proc, lines

    def test_every_event_in_order_compared_with_log(self):
        start = self.r.tip()
        proc, lines = self.watch("carol", "--max-events", "9")
        r = self.r
        self.assertOk(r.run("alice", "claim", "--ttl", "10m", "src/a.c"))                            # claimed
        self.assertOk(r.run("alice", "extend", "--ttl", "20m", "src/a.c"))                           # renewed
        self.assertOk(r.run("alice", "handoff", "src/a.c", "--to", self.keys["bob"], "--to-name", "bob"))  # handed-off
        self.assertOk(r.run("bob", "release", "src/a.c"))                                            # released
        self.assertOk(r.run("carol", "claim", "--ttl", "10m", "docs/"))                              # claimed
        self.assertOk(r.run("owner", "release", "--force", "--reason", "gone home", "docs/"))        # force-released, lost
        self.assertOk(r.run("dave", "claim", "--ttl", "5s", "lib/x.c"))                              # claimed
        r.now = T0 + 6_000
        self.assertOk(r.run("owner", "sweep"))                                                       # expired
        events = [lines.next() for _ in range(9)]
        self.assertEqual(proc.wait(timeout=20), 0)
        log = [json.loads(line) for line in self.assertOk(r.run("owner", "--json", "log")).out.splitlines()]
        log.reverse()  # oldest first
        commits = [c["commit"] for c in log]
        self.assertEqual(commits[commits.index(start) + 1:], [e["commit"] for e in events if e["event"] != "lost"])
        by_commit = {c["commit"]: c for c in log}
        want = [("claimed", "alice", "src/a.c", "claim"), ("renewed", "alice", "src/a.c", "extend"),
                ("handed-off", "alice", "src/a.c", "handoff"), ("released", "bob", "src/a.c", "release"),
                ("claimed", "carol", "docs/", "claim"), ("force-released", "carol", "docs/", "release"),
                ("lost", "carol", "docs/", "release"), ("claimed", "dave", "lib/x.c", "claim"),
                ("expired", "dave", "lib/x.c", "sweep")]
        self.assertEqual([(e["event"], e["holder_name"], e["path"], by_commit[e["commit"]]["command"]) for e in events],
                         want)
        for e in events:  # each event's actor and time are its commit's
            self.assertEqual((e["actor"], e["time"]), (by_commit[e["commit"]]["actor"],
                                                       by_commit[e["commit"]]["admitted_at_ms"]))
        handed = events[2]
        self.assertEqual((handed["to"], handed["to_name"], handed["new_generation"]), (self.keys["bob"], "bob", 2))
        self.assertEqual((events[5]["by"], events[5]["reason"]), (self.keys["owner"], "gone home"))
        self.assertEqual(events[1]["expires_at"], T0 + 20 * 60_000)
        self.assertEqual(r.tip(), commits[-1], "watch writes nothing")

    def test_filters_and_no_writes(self):
        proc, lines = self.watch("owner", "--max-events", "2", "src/", "sem:ci")
        tip = self.r.tip()
        self.assertOk(self.r.run("alice", "claim", "docs/a.md"))
        self.assertOk(self.r.run("alice", "claim", "src/parser/"))
        self.assertOk(self.r.run("bob", "sem", "acquire", "ci", "--limit", "2"))
        events = [lines.next(), lines.next()]
        self.assertEqual(proc.wait(timeout=20), 0)
        self.assertEqual([(e["event"], e["resource"]) for e in events],
                         [("claimed", "path:src/parser"), ("claimed", "sem:ci")])
        self.assertEqual(events[1]["sem"], "ci")
        self.assertNotEqual(self.r.tip(), tip)

    def test_an_expiry_seen_on_the_clock_alone(self):
        self.r.now = None  # the real clock: the lease expires while the watch runs
        self.assertOk(self.r.run("alice", "claim", "--ttl", "1s", "src/a.c"))
        proc, lines = self.watch("alice", "--max-events", "2")
        tip = self.r.tip()
        expired, lost = lines.next(), lines.next()
        self.assertEqual(proc.wait(timeout=20), 0)
        self.assertEqual([expired["event"], expired["commit"], expired["path"]], ["expired", None, "src/a.c"])
        self.assertGreater(expired["time"], expired["expires_at"])
        self.assertEqual([lost["event"], lost["lease"]], ["lost", expired["lease"]])
        self.assertEqual(self.r.tip(), tip, "watch writes nothing: no sweep")

    def test_usage_and_sigterm(self):
        for args in (["--interval", "5ms"], ["--max-events", "0"], ["sem:"], ["a/../b"]):
            res = self.r.run("owner", "--json", "watch", *args)
            self.assertEqual(res.code, 64, (args, res))
            self.assertEqual(res.error["code"], "usage" if args[0] != "a/../b" else "bad-path", res)
        proc, lines = self.watch("owner")
        time.sleep(0.2)
        proc.terminate()
        self.assertEqual(proc.wait(timeout=20), 0)
