"""One queue for every clone (docs/FORMAT.md "Tickets", docs/CLI.md
"Waiting"): four clones of a store served by a real `git daemon` with the
server's pre-receive hook loop `claim --wait` / `release` on one path for
20 s. Read back from the server's own history with Git plumbing, every
admission is checked against the queue of its parent state: no holder is
admitted while another holder's ticket for the path is older than its own
(or, when it had none, while any other holder's ticket stood). Every clone
is admitted, and the history verifies on the server. Admission counts and
waits are the benchmark's (bench/wait_bench.py --remote), not asserted."""

import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_handoff import record_at  # noqa: E402
from test_remote import RemoteTest, server_verify  # noqa: E402

RESOURCE = "path:bench/a.c"
SECONDS = 20


class FairnessRemote(RemoteTest):
    def test_four_clones_are_admitted_in_ticket_order(self):
        srv, *hosts = self.store("daemon", "w0", "w1", "w2", "w3")
        keys = {h.name: self.assertOk(h.run("--json", "whoami")).json["actor"] for h in hosts}
        start = srv.history()[0]
        deadline = time.monotonic() + SECONDS
        admitted = {h.name: 0 for h in hosts}
        failures = []

        def loop(h):
            while time.monotonic() < deadline:
                r = h.run("--json", "claim", "--ttl", "60s", "--wait=120s", "bench/a.c", timeout=180)
                if r.code != 0:
                    failures.append((h.name, r.code, r.error))
                    return
                admitted[h.name] += 1
                time.sleep(0.05)
                r = h.run("release", "bench/a.c")
                if r.code != 0:
                    failures.append((h.name, "release", r.code, r.err))
                    return

        threads = [threading.Thread(target=loop, args=(h,)) for h in hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        self.assertEqual([n for n, c in admitted.items() if c == 0], [], admitted)

        by_key = {v: k for k, v in keys.items()}
        history = list(reversed(srv.history()))
        history = history[history.index(start):]
        checked = 0
        for parent, commit in zip(history, history[1:]):
            before = record_at(srv.bare, parent, RESOURCE)
            after = record_at(srv.bare, commit, RESOURCE)
            old = {l["id"] for l in before["leases"]} if before else set()
            new = [l for l in (after["leases"] if after else []) if l["id"] not in old]
            if not new:
                continue
            holder = new[0]["holder"]
            queue = record_at(srv.bare, parent, "queue:tickets")
            tickets = queue["tickets"] if queue else []
            own = [t["seq"] for t in tickets if t["holder"] == holder]
            place = min(own) if own else float("inf")
            ahead = [(by_key.get(t["holder"]), t["seq"]) for t in tickets if t["holder"] != holder and t["seq"] < place]
            self.assertEqual(ahead, [], f"{by_key.get(holder)} admitted at {commit[:12]} before older tickets")
            checked += 1
        self.assertEqual(checked, sum(admitted.values()))
        # The queue is empty at the end: every waiter dropped its ticket when admitted.
        end = record_at(srv.bare, history[-1], "queue:tickets")
        self.assertEqual(end["tickets"] if end else [], [])
        v = server_verify(self, srv, "--full")
        self.assertEqual(v.code, 0, v)
