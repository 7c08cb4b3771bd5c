#!/usr/bin/env python3
"""The cost of the store's queue to an uncontended claim (issue 34): prints
figures, asserts nothing.

  ticket_bench.py PATH/TO/git-locks [--claims 40] [--tickets 16]

One local repository. Phase "without": --claims claims of fresh paths by
one key, each its own process (the queue record does not exist). Then
--tickets holders each hold a path and as many waiters (their own keys)
wait for those paths with `claim --wait`, each holding a ticket in the
store's queue. Phase "with": the same number of claims of other fresh
paths while those tickets are live and their waiters are stopped
(SIGSTOP: a waiting process wakes at every move of the ref, which costs CPU
but is not the ticket's cost): every claim reads the queue and checks each
ticket. Printed: the median and mean wall time of a claim in each
phase and their ratio. Goal: with / without <= 1.1. The two phases run in
one process, one after the other, alternating nothing else.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--claims", type=int, default=40)
    ap.add_argument("--tickets", type=int, default=16)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="gitlocks-ticket-bench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_LOCKS_") and k not in ("GIT_DIR", "GIT_WORK_TREE")}
    repo = os.path.join(root, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True)
    waiters = []

    def run(actor, *args, background=False):
        e = dict(env, GIT_LOCKS_KEY=os.path.join(root, f"{actor}.key"))
        argv = [a.binary, "--repo", repo, *args]
        if background:
            return subprocess.Popen(argv, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start = time.perf_counter()
        p = subprocess.run(argv, env=e, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{' '.join(args)} failed: {p.stderr}")
        return time.perf_counter() - start, p

    def phase(tag):
        times = [run("claimer", "claim", "--ttl", "10m", f"{tag}/file{i}.c")[0] for i in range(a.claims)]
        return statistics.median(times), statistics.mean(times)

    try:
        run("owner", "init")
        for i in range(3):  # warm the page cache and the key files
            run("claimer", "claim", "--ttl", "10m", f"warm/{i}.c")
        without = phase("without")
        for i in range(a.tickets):
            run(f"holder{i}", "claim", "--ttl", "10m", f"held/{i}.c")
            waiters.append(run(f"waiter{i}", "claim", "--wait=600s", f"held/{i}.c", background=True))
        deadline = time.monotonic() + 120
        while True:
            _, p = run("owner", "--json", "status")
            live = len(json.loads(p.stdout)["queue"])
            if live >= a.tickets:
                break
            if time.monotonic() > deadline:
                sys.exit(f"only {live} of {a.tickets} tickets were taken in 120 s")
            time.sleep(0.1)
        # The waiters hold still (SIGSTOP): their tickets stay live (30 s TTL,
        # longer than the phase) while no waiter process competes for the
        # CPU, so the phase measures what the tickets cost a claim.
        for w in waiters:
            w.send_signal(signal.SIGSTOP)
        with_tickets = phase("with")
        for w in waiters:
            w.send_signal(signal.SIGCONT)
        print(f"uncontended claims, {a.claims} per phase, one local repository")
        print(f"  without tickets: median {without[0] * 1000:.1f} ms, mean {without[1] * 1000:.1f} ms")
        print(f"  with {a.tickets} live tickets: median {with_tickets[0] * 1000:.1f} ms, "
              f"mean {with_tickets[1] * 1000:.1f} ms")
        ratio = with_tickets[0] / without[0]
        print(f"  ratio (median) {ratio:.2f}x: goal <= 1.1x {'met' if ratio <= 1.1 else 'MISSED'}")
    finally:
        for w in waiters:
            w.kill()
            w.wait()
        shutil.rmtree(root, True)


if __name__ == "__main__":
    main()
