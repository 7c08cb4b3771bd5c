"""Hand-off (docs/FORMAT.md "Hand-off", docs/CLI.md "handoff") through a real
`git daemon` with the server's pre-receive hook: a path passed back and forth
between two clones 8 times while a third clone tries to claim it all along.
The third never holds it, in any state of the server's history; each
hand-off gives the next generation; `fence` with a handed-off generation
fails. Expected values follow from the scenario (who handed what to whom),
read back from the server's own records with Git plumbing."""

import hashlib
import json
import os
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_remote import RemoteTest, server_verify  # noqa: E402

RESOURCE = "path:src/a.c"


def record_at(bare, commit, key):
    """The record of `key` in the state of `commit` (docs/FORMAT.md "Layout"), or None."""
    h = hashlib.sha256(key.encode()).hexdigest()
    r = subprocess.run(["git", "-C", bare, "cat-file", "blob", f"{commit}:state/records/{h[:2]}/{h[2:4]}/{h}.json"],
                       capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


class HandoffRemote(RemoteTest):
    def test_handoff_under_a_racing_third_writer(self):
        srv, alice, bob, carol = self.store("daemon", "alice", "bob", "carol")
        keys = {h.name: self.assertOk(h.run("--json", "whoami")).json["actor"] for h in (alice, bob, carol)}
        first = self.assertOk(alice.run("--json", "claim", "--ttl", "10m", "src/a.c")).json["leases"][0]
        self.assertEqual(first["generation"], 1)

        stop = threading.Event()
        tries = []  # (exit status, reason) of every claim carol made

        def race():
            while not stop.is_set():
                r = carol.run("--json", "claim", "--ttl", "10m", "src/a.c")
                tries.append((r.code, r.error.get("reason") if r.code else None))

        racer = threading.Thread(target=race)
        racer.start()
        handed = []  # (giver, receiver, the generation given up, the generation received)
        try:
            holder, generation = alice, 1
            for round_ in range(8):
                receiver = bob if holder is alice else alice
                r = self.assertOk(holder.run("--json", "handoff", "src/a.c", "--to", keys[receiver.name],
                                             "--to-name", receiver.name, "--ttl", "10m"))
                got = r.json["leases"][0]
                self.assertEqual(r.json["action"], "handoff")
                self.assertEqual(r.json["ops"][0]["generation"], generation)
                handed.append((holder.name, receiver.name, generation, got["generation"]))
                holder, generation = receiver, got["generation"]
        finally:
            stop.set()
            racer.join()

        # Carol tried all along and was refused every time, for the holder's lease.
        self.assertGreater(len(tries), 0)
        self.assertEqual({t for t in tries if t[0] != 0 and t[1] != "held-path"}, set(), tries)
        self.assertEqual([t for t in tries if t[0] == 0], [], "the third writer won the path")
        # Generations: each hand-off gives exactly the next one (no claim came between).
        self.assertEqual([h[3] for h in handed], list(range(2, 10)))
        self.assertEqual([(h[0], h[1]) for h in handed], [("alice", "bob"), ("bob", "alice")] * 4)
        # Every state of the server's history: src/a.c held by alice or bob,
        # never by carol, and never free between the first claim and the end.
        holders = []
        for commit in reversed(srv.history()):
            rec = record_at(srv.bare, commit, RESOURCE)
            if rec is None:
                continue
            live = [(l["holder"], l["generation"]) for l in rec["leases"]]
            self.assertEqual(len(live), 1, (commit, rec))
            holders.append(live[0])
        self.assertNotIn(keys["carol"], {h for h, _ in holders})
        self.assertEqual([g for _, g in holders], sorted(g for _, g in holders))
        self.assertEqual(sorted({g for _, g in holders}), list(range(1, 10)))
        # The fence: the last generation is live, every handed-off one is not.
        self.assertOk(carol.run("fence", "src/a.c", "9"))
        for g in (1, 5, 8):
            self.assertEqual(carol.run("fence", "src/a.c", str(g)).code, 1, g)
        # The giver can no longer release it; the holder can.
        self.assertRefused(bob.run("--json", "release", "src/a.c"), "not-holder")
        self.assertOk(alice.run("release", "src/a.c"))
        v = server_verify(self, srv, "--full")
        self.assertEqual(v.code, 0, v)

    def test_handoff_refusals_change_nothing(self):
        srv, alice, bob = self.store("daemon", "alice", "bob")
        bob_key = self.assertOk(bob.run("--json", "whoami")).json["actor"]
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        tip = srv.tip()
        # Not the holder: bob hands alice's lease to himself.
        self.assertRefused(bob.run("--json", "handoff", "src/a.c", "--to", bob_key), "not-holder")
        # Usage: no --to, a --to that is not a key, no lease named.
        for args in (["src/a.c"], ["src/a.c", "--to", "bob"], ["src/a.c", "--to", bob_key[:63]], ["--to", bob_key]):
            r = alice.run("--json", "handoff", *args)
            self.assertEqual(r.code, 64, (args, r))
            self.assertEqual(r.error["code"], "usage", r)
        # To oneself.
        alice_key = self.assertOk(alice.run("--json", "whoami")).json["actor"]
        r = alice.run("--json", "handoff", "src/a.c", "--to", alice_key)
        self.assertEqual(r.code, 64, r)
        self.assertEqual(r.error["code"], "usage", r)
        self.assertEqual(srv.tip(), tip, "a refused hand-off moves nothing")


if __name__ == "__main__":
    unittest.main()
