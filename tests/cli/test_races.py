"""Forced races (seed 000): many processes on one path, on disjoint paths and
on one semaphore; two `init` at once (the creation race); an adapter that
really moves refs/locks/state before every compare-and-swap proves the
200-replan bound. The long observation study is tests/race/observe.py."""

import json
import os
import subprocess

from support import CliTest, HERE, binary

MOVING_GIT = os.path.join(HERE, "..", "race", "moving_git.sh")
ROUNDS = 3
N = 6


def refusal(err):
    """(kind, code, reason, op) of the one JSON error line a refused racer printed."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    e = json.loads(lines[0])
    return e["error"], e["code"], e["reason"], e["op"]


class Races(CliTest):
    def all_at_once(self, r, args_for, n=N):
        procs = [r.popen(f"w{i}", *args_for(i)) for i in range(n)]
        return [(p.wait(timeout=120), *p.communicate()) for p in procs]

    def test_same_path_rounds(self):
        r = self.repo(now=None)
        for rnd in range(ROUNDS):
            with self.subTest(round=rnd):
                results = self.all_at_once(r, lambda i: ["--json", "claim", "--ttl", "5m", f"round{rnd}/"])
                codes = sorted(c for c, _, _ in results)
                self.assertEqual(codes, [0] + [1] * (N - 1), results)
                for code, out, err in results:
                    if code:
                        self.assertEqual(refusal(err), ("refused", "held-path", "held-path", "claim"), err)
                    else:
                        self.assertGreaterEqual(json.loads(out)["attempts"], 1)
                # Everybody else is refused below it while it is held; its holder is not.
                winner = next(i for i, (c, _, _) in enumerate(results) if c == 0)
                results = self.all_at_once(r, lambda i: ["claim", f"round{rnd}/f{i}"])
                self.assertEqual([c for c, _, _ in results], [0 if i == winner else 1 for i in range(N)], results)

    def test_disjoint_batches_lose_no_update(self):
        r = self.repo(now=None)
        before = r.tip()
        procs = []
        for i in range(N):
            p = r.popen(f"w{i}", "--json", "batch", "-", stdin=subprocess.PIPE)
            procs.append(p)
        outs = [p.communicate(input=f'{{"op":"claim","path":"d{i}/a"}}\n{{"op":"claim","path":"d{i}/b"}}\n',
                              timeout=120) for i, p in enumerate(procs)]
        self.assertEqual([p.returncode for p in procs], [0] * N, outs)
        attempts = [json.loads(o)["attempts"] for o, _ in outs]
        leases = r.run("w0", "--json", "status").json["leases"]
        self.assertEqual(sorted(l["path"] for l in leases), sorted(f"d{i}/{x}" for i in range(N) for x in "ab"))
        history = r.git("rev-list", "--first-parent", f"{before}..refs/locks/state").split()
        self.assertEqual(len(history), N)
        # Every replan of a writer follows a commit of another writer that landed after its
        # snapshot, so a writer plans at most N candidates (its own and one per other writer),
        # and tries each at most 6 times while the ref lock is held (seed 000).
        for a in attempts:
            self.assertTrue(1 <= a <= N * 6, attempts)
        # The N commits are exactly the N batches, each signed by its own writer.
        actors = sorted(json.loads(r.git("show", f"{c}:txn/packet.json"))["packet"]["actor"] for c in history)
        whoami = sorted(r.run(f"w{i}", "--json", "whoami").json["actor"] for i in range(N))
        self.assertEqual(actors, whoami)

    def test_semaphore_never_over_its_limit(self):
        r = self.repo(now=None)
        results = self.all_at_once(r, lambda i: ["sem", "acquire", "pool", "--limit", "2", "--ttl", "5m"])
        self.assertEqual(sorted(c for c, _, _ in results), [0, 0] + [1] * (N - 2), results)
        for c, _, err in results:
            if c:
                self.assertEqual(refusal(err), ("refused", "full-semaphore", "full-semaphore", "sem acquire"), err)
        leases = r.run("w0", "--json", "status").json["leases"]
        self.assertEqual(len([l for l in leases if l.get("sem") == "pool"]), 2)

    def test_concurrent_init_creates_one_root(self):
        for rnd in range(ROUNDS):
            with self.subTest(round=rnd):
                r = self.repo(init=False, now=None)
                results = self.all_at_once(r, lambda i: ["--json", "init"], n=4)
                self.assertEqual([c for c, _, _ in results], [0] * 4, results)
                created = [json.loads(o)["created"] for _, o, _ in results]
                self.assertEqual(created.count(True), 1, results)
                commits = {json.loads(o)["commit"] for _, o, _ in results}
                self.assertEqual(commits, {r.tip()})
                self.assertEqual(len(r.git("rev-list", "refs/locks/state").split()), 1)

    def test_a_ref_that_always_moves_exhausts_200_replans(self):
        r = self.repo()
        count = os.path.join(r.root, "count")
        before = r.tip()
        res = r.run("alice", "claim", "x", env={"GIT_LOCKS_GIT": MOVING_GIT, "MOVING_GIT_COUNT": count,
                                                "MOVING_GIT_WRITER": binary(), "MOVING_GIT_KEY": r.key("mover")},
                    timeout=300)
        self.assertRefused(res, "stale-retries-exhausted")
        self.assertEqual(res.error["attempts"], 201)  # the first plan and 200 replans
        with open(count) as f:
            self.assertEqual(len(f.read().split()), 201)
        self.assertEqual(res.out, "")
        # Every move was someone else's: our claim never landed.
        self.assertEqual(len(r.git("rev-list", f"{before}..refs/locks/state").split()), 201)
        leases = r.run("alice", "--json", "status").json["leases"]
        self.assertEqual(sorted(l["path"] for l in leases), sorted(f"mover/{i}" for i in range(201)))


if __name__ == "__main__":
    import unittest
    unittest.main()
