"""The store's queue of waiters (docs/FORMAT.md "Tickets", docs/CLI.md
"Waiting"): a waiter takes a ticket on its first refusal; a claim behind an
older live ticket of another holder is refused held-path, reason
queued-behind, naming it; a ticket that would close a cycle is refused
deadlock, naming both holders; `watch` reports queued and admitted; status
lists the queue. Waiters run as real processes; a waiter is held still with
SIGSTOP so that the path is free while its ticket stands."""

import json
import signal
import time

from support import T0, CliTest
from test_watch import Lines


class TicketTest(CliTest):
    def setUp(self):
        self.r = self.repo()
        self.keys = {a: self.assertOk(self.r.run(a, "--json", "whoami")).json["actor"]
                     for a in ("owner", "alice", "bob", "carol")}

    def waiter(self, actor, *args):
        proc = self.r.popen(actor, "--json", "claim", *args)
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.communicate()))
        return proc

    def queue_of(self):
        return self.assertOk(self.r.run("owner", "--json", "status")).json["queue"]

    def until_queued(self, proc, holder, timeout=60):
        deadline = time.monotonic() + timeout
        while not any(t["holder_name"] == holder for t in self.queue_of()):
            self.assertIsNone(proc.poll(), "the waiter ended before it took a ticket")
            self.assertLess(time.monotonic(), deadline, f"{holder} took no ticket in {timeout}s")
            time.sleep(0.05)
        return [t for t in self.queue_of() if t["holder_name"] == holder][0]

    def test_a_claim_queues_behind_a_waiter_of_another_holder(self):
        r = self.r
        self.claimed(r, "bob", "src/a.c", ttl="10m")
        alice = self.waiter("alice", "--wait=60s", "src/a.c")
        ticket = self.until_queued(alice, "alice")
        self.assertEqual((ticket["seq"], ticket["holder"], ticket["wants"], ticket["expires_at"]),
                         (1, self.keys["alice"], [{"path": "src/a.c", "mode": "exclusive"}], T0 + 30_000))
        human = self.assertOk(r.run("owner", "status")).out
        self.assertIn("  #1 alice (%s) waits for src/a.c (exclusive); its ticket lapses " % self.keys["alice"][:12],
                      human)
        alice.send_signal(signal.SIGSTOP)  # she cannot take the path when it frees
        try:
            self.assertOk(r.run("bob", "release", "src/a.c"))
            tip = r.tip()
            # The path is free; alice's ticket is older than anyone's claim.
            for who, path in (("carol", "src/a.c"), ("bob", "src/a.c"), ("carol", "src/")):
                res = r.run(who, "--json", "claim", path)
                self.assertRefused(res, "held-path", "queued-behind")
                e = res.error
                self.assertEqual((e["ticket"], e["ticket_seq"], e["holder"], e["holder_name"], e["expires_at_ms"]),
                                 (ticket["ticket"], 1, self.keys["alice"], "alice", T0 + 30_000), (who, path))
                self.assertIn("is waited for by alice (%s), ticket #1, queued before you" % self.keys["alice"][:12],
                              e["detail"])
            self.assertEqual(r.tip(), tip, "a refused claim changes nothing")
            # A path beside it is not behind her.
            self.assertOk(r.run("carol", "claim", "src/b.c"))
        finally:
            alice.send_signal(signal.SIGCONT)
        out, err = alice.communicate(timeout=60)
        self.assertEqual(alice.returncode, 0, err)
        got = json.loads(out)
        self.assertEqual((got["action"], [op["op"] for op in got["ops"]]), ("claim", ["claim", "ticket-drop"]))
        self.assertEqual(got["ops"][1]["ticket"], ticket["ticket"])
        self.assertEqual(self.queue_of(), [])
        v = r.run("owner", "--json", "verify", "--full")
        self.assertEqual(v.code, 0, v)

    def test_deadlock_names_both_holders_and_ends_the_second_wait(self):
        r = self.r
        self.claimed(r, "alice", "a.c", ttl="10m")
        self.claimed(r, "bob", "b.c", ttl="10m")
        alice = self.waiter("alice", "--wait=60s", "b.c")  # alice waits for bob
        self.until_queued(alice, "alice")
        tip = r.tip()
        res = r.run("bob", "--json", "claim", "--wait=60s", "a.c")  # bob waiting for alice closes the cycle
        self.assertRefused(res, "deadlock")
        self.assertEqual(res.code, 1)
        e = res.error
        a, b = self.keys["alice"][:12], self.keys["bob"][:12]
        self.assertIn(f"bob ({b}) waits for alice ({a}), who waits for bob ({b})", e["detail"])
        self.assertEqual((e["cycle"], e["cycle_length"]), (self.keys["bob"] + "," + self.keys["alice"], 2))
        self.assertEqual(r.tip(), tip, "the refused ticket wrote nothing")
        self.assertEqual([t["holder_name"] for t in self.queue_of()], ["alice"])
        # Bob lets go: alice is admitted.
        self.assertOk(r.run("bob", "release", "b.c"))
        out, err = alice.communicate(timeout=60)
        self.assertEqual(alice.returncode, 0, err)
        self.assertEqual(self.queue_of(), [])

    def test_watch_reports_queued_and_admitted_in_order_with_log(self):
        r = self.r
        self.claimed(r, "bob", "src/a.c", ttl="10m")
        start = r.tip()
        proc = r.popen("carol", "--json", "watch", "--max-events", "4", "src/")
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.wait(), proc.stdout.close(),
                                 proc.stderr.close()))
        lines = Lines(proc)
        self.assertEqual(lines.next()["event"], "watching")
        alice = self.waiter("alice", "--wait=60s", "src/a.c")
        ticket = self.until_queued(alice, "alice")
        self.assertOk(r.run("bob", "release", "src/a.c"))
        out, err = alice.communicate(timeout=60)
        self.assertEqual(alice.returncode, 0, err)
        events = [lines.next() for _ in range(4)]
        self.assertEqual(proc.wait(timeout=20), 0)
        self.assertEqual([(e["event"], e["holder_name"]) for e in events],
                         [("queued", "alice"), ("released", "bob"), ("admitted", "alice"), ("claimed", "alice")])
        self.assertEqual((events[0]["ticket"], events[0]["seq"], events[0]["wants"]),
                         (ticket["ticket"], 1, [{"path": "src/a.c", "mode": "exclusive"}]))
        self.assertEqual(events[2]["ticket"], ticket["ticket"])
        self.assertEqual(events[2]["commit"], events[3]["commit"])  # one transition
        log = [json.loads(line) for line in self.assertOk(r.run("owner", "--json", "log")).out.splitlines()]
        log.reverse()
        commits = [c["commit"] for c in log]
        self.assertEqual(commits[commits.index(start) + 1:], [events[0]["commit"], events[1]["commit"],
                                                             events[2]["commit"]])
        self.assertEqual([c["action"] for c in log[commits.index(start) + 1:]], ["ticket", "release", "claim"])

    def test_a_killed_waiters_ticket_lapses_and_sweep_drops_it(self):
        r = self.r
        self.claimed(r, "bob", "a.c", ttl="10m")
        alice = self.waiter("alice", "--wait=60s", "a.c")
        ticket = self.until_queued(alice, "alice")
        alice.kill()
        alice.communicate()
        self.assertEqual([t["ticket"] for t in self.queue_of()], [ticket["ticket"]])  # left behind, live
        res = self.assertOk(r.run("owner", "--json", "sweep"))
        self.assertEqual((res.json["swept"], res.json["commit"]), (0, None))  # not lapsed: kept
        self.assertEqual([t["ticket"] for t in self.queue_of()], [ticket["ticket"]])
        r.now = T0 + 30_001  # after its expiry
        before = r.tip()
        res = self.assertOk(r.run("owner", "--json", "sweep"))
        self.assertEqual([(op["op"], op["ticket"], op["expires_at"]) for op in res.json["ops"]],
                         [("ticket-drop", ticket["ticket"], T0 + 30_000)])
        self.assertEqual(self.actions_since(r, before), ["ticket-drop"])
        human = self.assertOk(r.run("owner", "sweep")).out
        self.assertIn("nothing to sweep: no lease or ticket has expired", human)
        v = r.run("owner", "--json", "verify", "--full")
        self.assertEqual(v.code, 0, v)

    def test_an_interrupted_waiter_leaves_the_queue(self):
        r = self.r
        self.claimed(r, "bob", "a.c", ttl="10m")
        for sig in (signal.SIGINT, signal.SIGTERM):
            before = r.tip()
            alice = self.waiter("alice", "--wait=60s", "a.c")
            self.until_queued(alice, "alice")
            alice.send_signal(sig)
            out, err = alice.communicate(timeout=60)
            self.assertEqual(alice.returncode, -sig, err)  # it ends as the signal says
            self.assertEqual(self.queue_of(), [], sig)
            self.assertEqual(self.actions_since(r, before), ["ticket", "ticket-drop"], sig)

    def test_doctor_names_a_lapsed_ticket(self):
        r = self.r
        self.claimed(r, "bob", "a.c", ttl="10m")
        alice = self.waiter("alice", "--wait=60s", "a.c")
        ticket = self.until_queued(alice, "alice")
        alice.kill()
        alice.communicate()
        self.assertNotIn("lapsed-ticket", r.run("owner", "doctor").out)
        r.now = T0 + 30_001
        res = r.run("owner", "--json", "doctor")
        self.assertEqual(res.code, 0, res)  # info only: healthy
        found = [f for f in res.json["findings"] if f["code"] == "lapsed-ticket"]
        self.assertEqual(len(found), 1, res.json)
        self.assertIn("ticket #1 (%s) of alice (%s) lapsed at %d" % (ticket["ticket"], self.keys["alice"][:12],
                                                                     T0 + 30_000), found[0]["detail"])
