#!/usr/bin/env python3
"""Waiter fairness (issue 17): prints figures, asserts nothing.

  wait_bench.py PATH/TO/git-locks [--waiters 4] [--seconds 20] [--hold-ms 50]
                [--remote]

W waiters (each its own key) loop for S seconds on ONE path:
`git-locks claim --wait=120s PATH`, hold it for --hold-ms, `release PATH`.
Printed per waiter: admissions, the median and the longest wait (from the
start of its claim to its admission, wall time); then the totals and the
fairness figure min/max admissions. Goal: every waiter is admitted at least
once (no waiter starves). The same loop without --wait (a plain claim,
retried by the script at once, as a naive CI loop would) is run next to it
for comparison: its admissions per waiter show what waiting changes.

With --remote the store is a bare repository reached through file://, each
waiter in its own clone. Waiters take tickets in the store's queue
(docs/FORMAT.md "Tickets"), shared by every clone; the same loop is run
next to it with GIT_LOCKS_WAIT_TICKETS=0 (backoff and jitter only, the
behaviour before tickets). Goals of issue 34, printed per loop: each
waiter's admissions within +-20 % of the mean, and the longest wait at most
3 x the median wait.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def run(argv, env, cwd=None):
    start = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start, p


def setup(binary, root, waiters, remote):
    env = dict(os.environ)
    for var in ("GIT_LOCKS_KEY", "GIT_LOCKS_NOW_MS", "GIT_DIR", "GIT_WORK_TREE"):
        env.pop(var, None)
    repos = []
    if remote:
        bare = os.path.join(root, "server.git")
        subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
        for i in range(waiters + 1):
            clone = os.path.join(root, f"clone{i}")
            subprocess.run(["git", "clone", "-q", "file://" + bare, clone], check=True, capture_output=True)
            subprocess.run(["git", "-C", clone, "config", "locks.remote", "origin"], check=True)
            repos.append(clone)
    else:
        repo = os.path.join(root, "repo")
        subprocess.run(["git", "init", "-q", repo], check=True)
        repos = [repo] * (waiters + 1)

    def env_of(i):
        e = dict(env)
        e["GIT_LOCKS_KEY"] = os.path.join(root, f"w{i}.key")
        e["GIT_CONFIG_COUNT"] = "1"
        e["GIT_CONFIG_KEY_0"] = "user.name"
        e["GIT_CONFIG_VALUE_0"] = f"w{i}"
        return e

    _, p = run([binary, "--repo", repos[-1], "init"], env_of(waiters))
    if p.returncode != 0:
        sys.exit(f"init failed: {p.stderr}")
    return repos, env_of


def loop(binary, repos, env_of, waiters, seconds, hold_ms, wait, tickets=True):
    stats = {i: {"admitted": 0, "waits": [], "errors": 0, "refused": 0} for i in range(waiters)}
    deadline = time.monotonic() + seconds

    def worker(i):
        e = env_of(i)
        if not tickets:
            e["GIT_LOCKS_WAIT_TICKETS"] = "0"
        while time.monotonic() < deadline:
            argv = [binary, "--repo", repos[i], "claim", "--ttl", "60s"]
            if wait:
                argv.append("--wait=120s")
            took, p = run(argv + ["bench/path"], e)
            if p.returncode == 1:
                stats[i]["refused"] += 1
                continue
            if p.returncode != 0:
                stats[i]["errors"] += 1
                continue
            stats[i]["admitted"] += 1
            stats[i]["waits"].append(took)
            time.sleep(hold_ms / 1000)
            _, r = run([binary, "--repo", repos[i], "release", "bench/path"], e)
            if r.returncode != 0:
                stats[i]["errors"] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(waiters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats


def report(title, stats):
    print(title)
    print(f"  {'waiter':>6} {'admitted':>8} {'refused':>7} {'errors':>6} {'median wait':>11} {'longest wait':>12}")
    for i, s in stats.items():
        med = f"{statistics.median(s['waits']):.2f}s" if s["waits"] else "-"
        top = f"{max(s['waits']):.2f}s" if s["waits"] else "-"
        print(f"  {'w' + str(i):>6} {s['admitted']:>8} {s['refused']:>7} {s['errors']:>6} {med:>11} {top:>12}")
    counts = [s["admitted"] for s in stats.values()]
    waits = [w for s in stats.values() for w in s["waits"]]
    print(f"  total admissions {sum(counts)}; min/max per waiter {min(counts)}/{max(counts)}"
          f" (fairness {min(counts) / max(counts) if max(counts) else 0:.2f}); longest wait "
          f"{max(waits) if waits else 0:.2f}s; every waiter admitted: {'yes' if min(counts) > 0 else 'NO'}")
    if counts and waits:
        mean = sum(counts) / len(counts)
        spread = max(abs(c - mean) / mean for c in counts) if mean else 0
        median = statistics.median(waits)
        ratio = max(waits) / median if median else 0
        print(f"  goal: admissions within +-20% of the mean {mean:.1f}: worst {spread * 100:.0f}% "
              f"({'met' if spread <= 0.2 else 'MISSED'}); longest wait <= 3 x median {median:.2f}s: "
              f"{ratio:.1f}x ({'met' if ratio <= 3 else 'MISSED'})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--waiters", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--hold-ms", type=int, default=50)
    ap.add_argument("--remote", action="store_true")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="gitlocks-wait-bench-")
    try:
        where = "a remote store (file://, one clone per waiter)" if a.remote else "one local repository"
        print(f"{a.waiters} waiters, one path, {a.seconds:g} s each loop, hold {a.hold_ms} ms, {where}")
        repos, env_of = setup(a.binary, root, a.waiters, a.remote)
        report("claim --wait=120s / release (tickets in the store's queue):",
               loop(a.binary, repos, env_of, a.waiters, a.seconds, a.hold_ms, True))
        report("claim --wait=120s / release without tickets (GIT_LOCKS_WAIT_TICKETS=0, backoff only):",
               loop(a.binary, repos, env_of, a.waiters, a.seconds, a.hold_ms, True, tickets=False))
        report("plain claim retried at once / release (no --wait):",
               loop(a.binary, repos, env_of, a.waiters, a.seconds, a.hold_ms, False))
    finally:
        shutil.rmtree(root, True)


if __name__ == "__main__":
    main()
