"""Blocking acquisition (`claim --wait`, `run --wait`, `wait`) and the
errors a person reads: instants as ISO-8601 plus relative time, the TTL
bound named, the holder's name wherever a holder is mentioned."""

import datetime
import json
import os
import signal
import subprocess
import threading
import time
import unittest

from support import T0, CliTest


def iso(ms):
    """ISO-8601 UTC to the second, computed by Python, not by git-locks."""
    d = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def waiter_entries(r):
    d = os.path.join(r.gitdir(), "git-locks", "waiters")
    return sorted(n for n in os.listdir(d) if n.endswith(".json")) if os.path.isdir(d) else []


class ClaimWait(CliTest):
    def actor(self, r, name):
        return r.run(name, "--json", "whoami").json["actor"]

    def queued(self, r, proc, before=(), timeout=60):
        """Polls until an entry not in `before` is queued: a fixed sleep
        races a slow (sanitizer) build, where the waiter may not have
        queued yet. Returns the entries then."""
        deadline = time.monotonic() + timeout
        while not set(waiter_entries(r)) - set(before):
            self.assertIsNone(proc.poll(), "the waiter ended before it queued")
            self.assertLess(time.monotonic(), deadline, f"no new waiter queued in {timeout}s")
            time.sleep(0.05)
        return waiter_entries(r)

    def ticketed(self, r, proc, holder, timeout=60):
        """Polls until `holder`'s ticket is in the store's queue (a slow,
        sanitizer build takes it some time after it registered in the
        clone's queue)."""
        deadline = time.monotonic() + timeout
        while not any(t["holder_name"] == holder for t in r.run("x", "--json", "status").json["queue"]):
            self.assertIsNone(proc.poll(), "the waiter ended before it took a ticket")
            self.assertLess(time.monotonic(), deadline, f"{holder} took no ticket in {timeout}s")
            time.sleep(0.05)

    def test_timeout_is_wait_timeout_naming_the_last_holder(self):
        r = self.repo()
        self.claimed(r, "bob", "a")
        bob = self.actor(r, "bob")
        before, held = r.tip(), self.leases_and_queue(r)
        start = time.monotonic()
        res = r.run("alice", "claim", "--wait=400ms", "a")
        elapsed = time.monotonic() - start
        # The waiter took its place in the store's queue and left it: the
        # leases and the queue are as they were.
        self.assertEqual(self.actions_since(r, before), ["ticket", "ticket-drop"])
        self.assertEqual(self.leases_and_queue(r), held)
        self.assertEqual(res.code, 1, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("refused", "wait-timeout", "wait-timeout", "claim"))
        self.assertEqual(e["last_reason"], "held-path")
        self.assertEqual((e["holder"], e["holder_name"]), (bob, "bob"))
        self.assertEqual(e["expires_at_ms"], T0 + 60000)
        self.assertGreaterEqual(e["waited_ms"], 400)
        self.assertGreaterEqual(e["polls"], 2)
        self.assertGreaterEqual(elapsed, 0.4)
        self.assertTrue(e["detail"].startswith("timed out after "), e)
        self.assertIn("waiting for 'a'", e["detail"])
        self.assertIn(f"'a' is held exclusive by bob ({bob[:12]}) until {iso(T0 + 60000)}, in 1m", e["detail"])
        self.assertNotIn("attempts", e)  # no publication is pending: attempts counts update-ref runs

    def test_waits_until_released_and_writes_only_its_ticket_meanwhile(self):
        r = self.repo()
        self.claimed(r, "bob", "a")
        before = r.tip()
        waiter = r.popen("alice", "--json", "claim", "--wait", "a")
        self.queued(r, waiter)
        deadline = time.monotonic() + 60
        while r.tip() == before:  # its ticket
            self.assertLess(time.monotonic(), deadline, "the waiter took no ticket")
            time.sleep(0.05)
        time.sleep(0.8)
        self.assertIsNone(waiter.poll())
        self.assertEqual(self.actions_since(r, before), ["ticket"])  # waiting wrote only its ticket
        queue = r.run("x", "--json", "status").json["queue"]
        self.assertEqual([(t["seq"], t["holder_name"], t["wants"]) for t in queue],
                         [(1, "alice", [{"path": "a", "mode": "exclusive"}])])
        self.assertOk(r.run("bob", "release", "a"))
        out, err = waiter.communicate(timeout=60)
        self.assertEqual(waiter.returncode, 0, err)
        got = json.loads(out)
        self.assertEqual(got["leases"][0]["resource"], "path:a")
        self.assertGreaterEqual(got["waited_ms"], 800)
        self.assertEqual(r.run("x", "--json", "status").json["leases"][0]["name"], "alice")
        # Admitted, it left the queue in the same transition: a claim.
        self.assertEqual(got["action"], "claim")
        self.assertEqual([op["op"] for op in got["ops"]], ["claim", "ticket-drop"])
        self.assertEqual(r.run("x", "--json", "status").json["queue"], [])

    def test_free_path_is_claimed_at_once(self):
        r = self.repo()
        res = self.assertOk(r.run("alice", "--json", "claim", "--wait=5s", "a"))
        self.assertLess(res.json["waited_ms"], 5000)
        self.assertEqual(res.json["leases"][0]["resource"], "path:a")

    def test_waiters_are_admitted_in_arrival_order(self):
        r = self.repo()
        self.claimed(r, "bob", "a")
        first = r.popen("alice", "--json", "claim", "--wait=60s", "a")
        ahead = self.queued(r, first)
        second = r.popen("carol", "--json", "claim", "--wait=60s", "a")
        self.queued(r, second, ahead)
        self.assertOk(r.run("bob", "release", "a"))
        out, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 0, err)
        time.sleep(0.3)
        self.assertIsNone(second.poll(), "the later waiter must still wait behind the earlier one")
        self.assertEqual([l["name"] for l in r.run("x", "--json", "status").json["leases"]], ["alice"])
        self.assertOk(r.run("alice", "release", "a"))
        out, err = second.communicate(timeout=60)
        self.assertEqual(second.returncode, 0, err)
        self.assertEqual([l["name"] for l in r.run("x", "--json", "status").json["leases"]], ["carol"])

    def test_a_killed_waiter_holds_nobody_back(self):
        r = self.repo()
        self.claimed(r, "bob", "a", ttl="10m")
        before = r.tip()
        dead = r.popen("alice", "claim", "--wait", "a")
        left = self.queued(r, dead)
        deadline = time.monotonic() + 60
        while self.actions_since(r, before) != ["ticket"]:
            self.assertLess(time.monotonic(), deadline, "the waiter took no ticket")
            time.sleep(0.05)
        dead.send_signal(signal.SIGKILL)
        dead.communicate(timeout=30)
        self.assertEqual(waiter_entries(r), left)  # its entry is left behind
        self.assertEqual(len(left), 1)
        # Its ticket too, until it lapses (30 s on this clock): carol waits
        # after that, and drops it when she takes her own.
        r.now = T0 + 30_001
        dead_ticket = r.run("x", "--json", "status").json
        self.assertEqual(dead_ticket["queue"], [])  # lapsed: status lists live tickets only
        live = r.popen("carol", "--json", "claim", "--wait=60s", "a")
        self.queued(r, live, left)
        self.assertOk(r.run("bob", "release", "a"))
        out, err = live.communicate(timeout=60)
        self.assertEqual(live.returncode, 0, err)
        self.assertEqual(waiter_entries(r), [])  # cleaned on the way
        # carol's ticket transition dropped alice's lapsed one first.
        self.assertEqual(self.actions_since(r, before), ["ticket", "ticket", "release", "claim"])
        carols = r.git("log", "--format=%H", "-1", "--skip=2", "refs/locks/state").strip()
        body = json.loads(r.git("show", f"{carols}:txn/packet.json"))["packet"]["body"]
        self.assertEqual([op["op"] for op in body["ops"]], ["ticket-drop", "ticket"])

    def not_behind_a_waiter(self, r, first_path, second_path):
        """bob holds first_path and alice waits for it: carol's claim of
        second_path, which conflicts with neither, is tried and admitted at
        once."""
        self.claimed(r, "bob", first_path)
        waiter = r.popen("alice", "claim", "--wait=30s", first_path)
        try:
            self.queued(r, waiter)
            res = self.assertOk(r.run("carol", "--json", "claim", "--wait=5s", second_path))
            self.assertLess(res.json["waited_ms"], 5000)
        finally:
            waiter.kill()
            waiter.communicate()

    def test_other_paths_do_not_queue_behind_a_waiter(self):
        self.not_behind_a_waiter(self.repo(), "a", "b")

    def behind_a_waiter(self, r, first_path, second_path):
        """bob holds first_path; alice waits for it; carol then waits 1 s for
        second_path. Returns carol's error: a waiter that conflicts with
        alice's want by the planner's rules makes no attempt while she waits
        (waiting.h), so it times out with 0 polls and says why."""
        self.claimed(r, "bob", first_path)
        first = r.popen("alice", "claim", "--wait=60s", first_path)
        try:
            self.queued(r, first)
            self.ticketed(r, first, "alice")  # her ticket is in the store before carol starts
            with self.unchanged(r):
                res = r.run("carol", "claim", "--wait=1s", second_path)
            self.assertIsNone(first.poll(), "alice still waits")
        finally:
            first.kill()
            first.communicate()
        self.assertEqual(res.code, 1, res)
        return res.error

    def test_a_waiter_queues_behind_an_earlier_waiter_of_the_same_exclusive_family(self):
        # Two members that never overlap as paths: only the family relates the two wants.
        r = self.repo(policy={"families": [{"name": "db", "policy": "exclusive",
                                            "members": ["db/schema.sql", "migrations/"]}]})
        e = self.behind_a_waiter(r, "db/schema.sql", "migrations/001.sql")
        self.assertEqual((e["code"], e["reason"], e["polls"]), ("wait-timeout", "wait-timeout", 0), e)
        self.assertIn("behind earlier waiters of this clone", e["detail"])
        self.assertNotIn("last_reason", e)

    def test_a_path_outside_the_family_does_not_queue_behind_it(self):
        # The control: the same store, a path outside the family is tried (and admitted) at once.
        r = self.repo(policy={"families": [{"name": "db", "policy": "exclusive",
                                            "members": ["db/schema.sql", "migrations/"]}]})
        self.not_behind_a_waiter(r, "db/schema.sql", "docs/a.md")

    def test_two_spellings_of_one_path_queue_in_a_case_insensitive_store(self):
        r = self.repo(policy={"case_insensitive": True})
        e = self.behind_a_waiter(r, "Src/A.c", "SRC/a.C")
        self.assertEqual((e["code"], e["polls"]), ("wait-timeout", 0), e)
        self.assertIn("behind earlier waiters of this clone", e["detail"])

    def test_a_damaged_entry_of_a_live_waiter_is_passed_over_never_a_crash(self):
        # An earlier entry, held (flock) like a live waiter's, whose members
        # are of other types: it is no waiter of this ref, never a crash
        # (once: an uncaught exception reading its ref or mode).
        import fcntl
        r = self.repo()
        d = os.path.join(r.gitdir(), "git-locks", "waiters")
        os.makedirs(d, exist_ok=True)
        # Another ref, no readable resources: passed over. A path whose mode
        # is not "shared" is an exclusive want: the claim queues behind it.
        for doc, behind in (({"ref": 5, "resources": [{"path": "a"}]}, False),
                            ({"ref": "refs/locks/state", "resources": "a"}, False),
                            ({"ref": "refs/locks/state", "resources": [{"path": "a", "mode": 5}, {"sem": 7}, 3]}, True)):
            with self.subTest(doc=doc):
                path = os.path.join(d, "00000000000000000001-1-aaaa.json")
                with open(path, "w") as f:
                    f.write(json.dumps(doc) + "\n")
                    f.flush()
                    fcntl.flock(f, fcntl.LOCK_EX)
                    res = r.run("alice", "--json", "wait", "--timeout", "1s", "a")
                    self.assertEqual(res.code, 0, res)
                    self.assertTrue(res.json["claimable"])
                    res = r.run("alice", "--json", "claim", "--wait=1s", "--ttl", "10s", "a")
                    if behind:
                        self.assertEqual((res.code, res.error["reason"], res.error["polls"]), (1, "wait-timeout", 0), res)
                        self.assertIn("behind earlier waiters of this clone", res.error["detail"])
                    else:
                        self.assertEqual(res.code, 0, res)
                        self.assertOk(r.run("alice", "release", "a"))
                os.unlink(path)

    def test_a_duration_after_bare_wait_is_refused_as_ambiguous(self):
        r = self.repo()
        with self.unchanged(r):
            e = self.assertUsage(r.run("alice", "claim", "--wait", "30s", "a"), "usage")
        self.assertIn("write '--wait=30s'", e["detail"])
        with self.unchanged(r):
            e = self.assertUsage(r.run("alice", "claim", "--wait=soon", "a"), "usage")
        self.assertIn("--wait=soon", e["detail"])

    def test_a_refusal_waiting_cannot_cure_ends_the_wait_at_once(self):
        r = self.repo()
        with self.unchanged(r):
            start = time.monotonic()
            res = r.run("alice", "claim", "--wait=30s", "--ttl", "2h", "a")
            self.assertLess(time.monotonic() - start, 20)
        self.assertRefused(res, "guard-window")


class RunWait(CliTest):
    def test_every_run_of_four_looping_workers_runs_its_command(self):
        # The loop: 4 workers, 8 runs each, one path. Without --wait
        # most runs were refused at once; with it every one runs.
        r = self.repo()
        log = os.path.join(r.root, "ran.log")
        results = []

        def worker(name):
            for i in range(8):
                res = r.run(name, "run", "--wait=300s", "--claim", "shared/env", "--",
                            "sh", "-c", f'echo "{name} {i}" >> {log}', timeout=400)
                results.append((name, i, res.code, res.err))

        threads = [threading.Thread(target=worker, args=(f"w{n}",)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(code for _, _, code, _ in results), [0] * 32, results)
        with open(log) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 32)
        self.assertEqual(r.run("x", "--json", "status").json["leases"], [])

    def test_run_wait_timeout_launches_nothing(self):
        r = self.repo()
        self.claimed(r, "bob", "f")
        marker = os.path.join(r.root, "launched")
        held = self.leases_and_queue(r)
        res = r.run("alice", "run", "--wait=300ms", "--claim", "f", "--", "touch", marker)
        self.assertEqual(self.leases_and_queue(r), held)  # its ticket taken and dropped
        self.assertEqual(res.code, 1, res)
        self.assertEqual((res.error["code"], res.error["last_reason"], res.error["holder_name"]),
                         ("wait-timeout", "held-path", "bob"))
        self.assertFalse(os.path.exists(marker))

    def test_wait_keeps_its_documented_code(self):
        r = self.repo()
        self.claimed(r, "bob", "a")
        with self.unchanged(r):
            e = self.assertRefused(r.run("alice", "wait", "--timeout", "300ms", "a"), "held-path")
        self.assertGreaterEqual(e["waited_ms"], 300)
        self.assertEqual(e["holder_name"], "bob")


class ReadableErrors(CliTest):
    def actor(self, r, name):
        return r.run(name, "--json", "whoami").json["actor"]

    def test_held_path_names_holder_and_instant(self):
        r = self.repo()
        self.claimed(r, "bob", "src/a.c", ttl="10m")
        bob = self.actor(r, "bob")
        with self.unchanged(r):
            e = self.assertRefused(self.claim(r, "alice", "src/a.c"), "held-path")
        self.assertEqual(e["detail"], f"'src/a.c' is held exclusive by bob ({bob[:12]}) until {iso(T0 + 600000)}, in 10m")
        self.assertEqual((e["holder"], e["holder_name"], e["path"]), (bob, "bob", "src/a.c"))
        self.assertEqual((e["expires_at_ms"], e["checked_at_ms"]), (T0 + 600000, T0))

    def test_lease_below_a_directory_is_named(self):
        r = self.repo()
        self.claimed(r, "bob", "src/parser/lex.c", ttl="5m")
        bob = self.actor(r, "bob")
        with self.unchanged(r):
            e = self.assertRefused(self.claim(r, "alice", "src/"), "held-path")
        self.assertEqual(e["detail"], f"'src/parser/lex.c' (below 'src/') is held exclusive by bob ({bob[:12]}) "
                                      f"until {iso(T0 + 300000)}, in 5m")
        self.assertEqual((e["holder_name"], e["path"]), ("bob", "src/parser/lex.c"))

    def test_ttl_over_the_policy_maximum_names_the_bound(self):
        r = self.repo()
        with self.unchanged(r):
            e = self.assertRefused(self.claim(r, "alice", "a", ttl="2h"), "guard-window")
        self.assertEqual(e["detail"], "--ttl 2h exceeds this store's max_ttl 1h")
        self.assertEqual((e["ttl_ms"], e["max_ttl_ms"]), (7200000, 3600000))
        with self.unchanged(r):
            e = self.assertRefused(self.claim(r, "alice", "a", ttl="500ms"), "guard-window")
        self.assertEqual(e["detail"], "--ttl 500ms is below this store's min_ttl 1s")
        self.assertEqual((e["ttl_ms"], e["min_ttl_ms"]), (500, 1000))
        # The bounds themselves are admitted.
        self.claimed(r, "alice", "a", ttl="1h")
        self.claimed(r, "alice", "b", ttl="1s")

    def test_full_semaphore_names_holders_and_the_first_slot_to_free(self):
        r = self.repo()
        self.assertOk(r.run("bob", "sem", "acquire", "ci", "--limit", "2", "--ttl", "3m"))
        self.assertOk(r.run("carol", "sem", "acquire", "ci", "--limit", "2", "--ttl", "2m"))
        with self.unchanged(r):
            e = self.assertRefused(r.run("alice", "sem", "acquire", "ci", "--limit", "2"), "full-semaphore")
        self.assertIn("semaphore 'ci' is full (2/2): held by bob (", e["detail"])
        self.assertIn("carol (", e["detail"])
        self.assertIn(f"the first slot frees {iso(T0 + 120000)}, in 2m", e["detail"])
        self.assertEqual((e["holder_name"], e["expires_at_ms"]), ("carol", T0 + 120000))

    def test_family_holder_is_named(self):
        policy = {"families": [{"name": "db", "policy": "exclusive", "members": ["db/schema.sql", "db/migrations/"]}]}
        r = self.repo(policy=policy)
        self.claimed(r, "bob", "db/schema.sql", ttl="4m")
        with self.unchanged(r):
            e = self.assertRefused(self.claim(r, "alice", "db/migrations/"), "family-policy")
        self.assertIn("family 'db' is held by bob (", e["detail"])
        self.assertIn("through 'db/schema.sql'", e["detail"])
        self.assertIn(f"until {iso(T0 + 240000)}, in 4m", e["detail"])
        self.assertEqual((e["holder_name"], e["family"]), ("bob", "db"))


if __name__ == "__main__":
    unittest.main()
