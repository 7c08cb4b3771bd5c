"""`git-locks watch` on a remote store (docs/CLI.md "watch"): the watcher's
clone fetches the server's refs/locks/state every --interval and reports
the changes other clones push through `git daemon`, in order, writing
nothing; a history the server holds that does not verify stops it (exit 2,
invalid-history)."""

import json
import os
import queue
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from servers import SilentProxy  # noqa: E402
from test_remote import RemoteTest  # noqa: E402
from support import binary  # noqa: E402


class WatchRemote(RemoteTest):
    def start_watch(self, host, *args):
        proc = subprocess.Popen([binary(), "--repo", host.path, "--json", "watch", *args], env=host.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()

        def pump():
            for line in proc.stdout:
                lines.put(json.loads(line))
            lines.put(None)
        threading.Thread(target=pump, daemon=True).start()

        def cleanup():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        self.addCleanup(cleanup)
        return proc, lines

    def test_changes_pushed_by_other_clones_arrive_in_order(self):
        srv, alice, bob, carol = self.store("daemon", "alice", "bob", "carol")
        bob_key = self.assertOk(bob.run("--json", "whoami")).json["actor"]
        proc, lines = self.start_watch(carol, "--interval", "200ms", "--max-events", "4")
        first = lines.get(timeout=30)
        self.assertEqual((first["event"], first["commit"]), ("watching", srv.tip()))
        pushed = []
        t0 = time.monotonic()
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        pushed.append(srv.tip())
        self.assertOk(alice.run("handoff", "src/a.c", "--to", bob_key, "--to-name", "bob"))
        pushed.append(srv.tip())
        self.assertOk(bob.run("extend", "--ttl", "20m", "src/a.c"))
        pushed.append(srv.tip())
        self.assertOk(bob.run("release", "src/a.c"))
        pushed.append(srv.tip())
        events = [lines.get(timeout=30) for _ in range(4)]
        elapsed = time.monotonic() - t0
        self.assertEqual(proc.wait(timeout=30), 0, proc.stderr.read())
        self.assertEqual([(e["event"], e["holder_name"], e["commit"]) for e in events],
                         [("claimed", "alice", pushed[0]), ("handed-off", "alice", pushed[1]),
                          ("renewed", "bob", pushed[2]), ("released", "bob", pushed[3])])
        self.assertEqual(events[1]["to"], bob_key)
        self.assertIsNone(carol.local_state(), "watch writes nothing to the clone's own refs/locks/state")
        sys.stderr.write("watch through git daemon: 4 pushes seen in %.2f s (interval 200 ms)\n" % elapsed)

    def test_an_invalid_history_stops_the_watch(self):
        srv, alice, carol = self.store("daemon", "alice", "carol", hook=False)
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        proc, lines = self.start_watch(carol, "--interval", "100ms")
        self.assertEqual(lines.get(timeout=30)["event"], "watching")
        # A commit on the server whose tree is its parent's but claims a new
        # packet's result: pushed past no hook (the server has none here).
        tip = srv.tip()
        tree = subprocess.run(["git", "-C", srv.bare, "rev-parse", tip + "^{tree}"], capture_output=True, text=True,
                              check=True).stdout.strip()
        forged = subprocess.run(["git", "-C", srv.bare, "commit-tree", tree, "-p", tip, "-m", "forged"],
                                capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["git", "-C", srv.bare, "update-ref", "refs/locks/state", forged, tip], check=True)
        self.assertEqual(proc.wait(timeout=30), 2)
        err = json.loads(proc.stderr.read().splitlines()[-1])
        self.assertEqual(err["code"], "invalid-history", err)
        self.assertIsNone(lines.get(timeout=30), "no event from an unverified commit")

    def test_a_server_that_stops_answering_stops_the_watch_after_the_timeout(self):
        srv, alice, carol = self.store("daemon", "alice", "carol")
        carol.git("config", "locks.timeout", "1s")  # read once, when the watch starts
        proc, lines = self.start_watch(carol, "--interval", "100ms")
        self.assertEqual(lines.get(timeout=30)["event"], "watching")
        proxy = SilentProxy.start("all")
        self.addCleanup(proxy.close)
        carol.git("remote", "set-url", "origin", proxy.url(srv.name))
        t0 = time.monotonic()
        self.assertEqual(proc.wait(timeout=30), 2)
        took = time.monotonic() - t0
        err = json.loads(proc.stderr.read().splitlines()[-1])
        self.assertEqual((err["error"], err["code"]), ("store-read", "store-read"), err)
        self.assertIn("did not finish within 1s (git config locks.timeout)", err["detail"])
        self.assertGreaterEqual(took, 1.0)
        self.assertLess(took, 15.0, "the timeout did not stop the fetch")
        self.assertGreaterEqual(proxy.accepted, 1)


if __name__ == "__main__":
    unittest.main()
