#!/usr/bin/env python3
"""Benchmark of `git-locks verify` (issue 5): commits/s on generated histories
next to bare Ed25519 verifications/s measured in the same run, the ratio
(commits/s x signatures per commit / bare verifications/s; goal >= 0.5), and
peak RSS at two history lengths (goal: <= 64 MiB at 200,000 commits; the
replay keeps one commit id per 1,024 commits, and the mapped pack index,
~390 bytes per commit, is what grows — README, "What limits them").

usage: verify_bench.py GIT_LOCKS GEN_HISTORY ED25519_RATE [--commits 5000,20000]
                       [--rate-seconds 2] [--repeats 15]

Each size is measured on a plain history and on an attested one (guard
time on: two signatures per commit).

Times are CPU times of the child (user + sys), so a loaded machine does not
distort the ratio; wall time is printed too."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def child(argv, **kw):
    """Runs argv; returns (exit status, stdout, cpu seconds, wall seconds, peak RSS in KiB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if p.returncode not in (0,):
        sys.exit(f"{argv[0]} exited {p.returncode}: {err.decode()[-2000:]}")
    return out, err, ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli", help="git-locks")
    ap.add_argument("gen", help="gitlocks-gen-history")
    ap.add_argument("rate", help="gitlocks-ed25519-rate")
    ap.add_argument("--commits", default="5000,20000", help="history sizes, comma-separated")
    ap.add_argument("--rate-seconds", default="2", help="CPU seconds of the bare Ed25519 loop")
    ap.add_argument("--repeats", type=int, default=15, help="runs of the one-new-commit check per history")
    args = ap.parse_args()
    cli, gen, rate = args.cli, args.gen, args.rate
    sizes = [int(x) for x in args.commits.split(",") if x]
    tmp = tempfile.mkdtemp(prefix="gitlocks-verify-bench-")
    try:
        rows = []
        # A plain history verifies one packet signature per commit; an
        # attested one also the notary's signature of its attestation
        # (docs/FORMAT.md, "Attestations"): two per commit.
        for attested, n in [(a, n) for a in (False, True) for n in sizes]:
            kind = "attested" if attested else "plain"
            bundle = os.path.join(tmp, f"h{n}{kind}.bundle")
            _, _, gcpu, gwall, _ = child([gen, "--commits", str(n), "--bundle", bundle, "--seed", "42"] +
                                         (["--attested"] if attested else []))
            repo = os.path.join(tmp, f"r{n}{kind}")
            subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
            subprocess.run(["git", "-C", repo, "fetch", "-q", bundle, "refs/locks/state:refs/locks/state"], check=True)
            out, err, cpu, wall, rss = child([cli, "--repo", repo, "--json", "verify"], env=dict(os.environ))
            lines = out.splitlines()
            summary = json.loads(err.splitlines()[-1])
            assert len(lines) == n and summary["invalid"] == 0, summary
            if attested:
                # the tip carries an attestation next to its packet
                subprocess.run(["git", "-C", repo, "cat-file", "-e", "refs/locks/state:txn/attestation.json"],
                               check=True)
            rows.append({"commits": n, "kind": kind, "sigs": 2 if attested else 1, "cpu_s": cpu, "wall_s": wall,
                         "rss_kib": rss, "gen_cpu_s": gcpu})
        bare = json.loads(child([rate, args.rate_seconds])[0])["verifications_per_s"]
        print(f"bare Ed25519 verifications/s (one core, libsodium): {bare:,.0f}")
        for r in rows:
            cps = r["commits"] / r["cpu_s"]
            ratio = cps * r["sigs"] / bare
            print(f"verify {r['commits']:>6} {r['kind']:>8} commits: {cps:8,.0f} commits/s x {r['sigs']} signatures "
                  f"(cpu {r['cpu_s']:.2f}s, wall {r['wall_s']:.2f}s)"
                  f"  ratio {ratio:.2f} (goal >= 0.50)  peak RSS {r['rss_kib'] / 1024:.1f} MiB")
        plain = [r for r in rows if r["kind"] == "plain"]
        if len(plain) >= 2:
            a, b = plain[0], plain[-1]
            extra = (b["rss_kib"] - a["rss_kib"]) * 1024 / max(1, b["commits"] - a["commits"])
            print(f"peak RSS growth {a['commits']} -> {b['commits']} commits: {extra:.1f} bytes/commit "
                  f"(goal: <= 10 % growth from 20,000 to 200,000 commits)")
        # Goal 3: one new commit verified from a trusted commit (the
        # checkpoint's case) on the longest history vs on a 10-commit one.
        small = os.path.join(tmp, "h10.bundle")
        child([gen, "--commits", "10", "--bundle", small, "--seed", "42"])
        short = os.path.join(tmp, "r10")
        subprocess.run(["git", "init", "-q", "--bare", short], check=True)
        subprocess.run(["git", "-C", short, "fetch", "-q", small, "refs/locks/state:refs/locks/state"], check=True)
        longest = os.path.join(tmp, f"r{sizes[-1]}plain")
        parent = {r: subprocess.run(["git", "-C", r, "rev-parse", "refs/locks/state^"], capture_output=True,
                                    text=True, check=True).stdout.strip() for r in (short, longest)}
        cpu = {short: [], longest: []}
        for _ in range(args.repeats):
            for r in (short, longest):
                cpu[r].append(child([cli, "--repo", r, "--json", "verify", "--from", parent[r]])[2])
        a, b = statistics.median(cpu[short]), statistics.median(cpu[longest])
        print(f"one new commit from a trusted commit: 10-commit history {a * 1000:.1f} ms, {sizes[-1]:,}-commit "
              f"history {b * 1000:.1f} ms CPU (medians of {args.repeats}): {b / a:.2f}x (goal <= 2x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
