#!/usr/bin/env python3
"""git-locks CLI benchmark: prints figures, asserts nothing.

  cli_bench.py PATH/TO/git-locks [--cycles N] [--leases N] [--only-claim]
               [--baseline PATH/TO/OLD/git-locks] [--gen-history PATH/TO/gitlocks-gen-history]
               [--history 1000,20000]

1. The median wall time of a `git-locks claim` + `release` cycle against bare
   `git update-ref --stdin` transactions (start/update/prepare/commit, the
   same -c flags and LC_ALL=C) on the same repository, measured interleaved
   so that machine load hits both alike; then where a claim's time goes
   (process start-up, setup, snapshot, planning and signing, object reads
   and writes, the compare-and-swap, the checkpoint: $GIT_LOCKS_TIMINGS).
2. A claim (+ release) on a store holding N live leases (default 100,000)
   against the same on an empty store, again interleaved, and the peak RSS of
   those claims (getrusage of the child via wait4).

The big store is built through the CLI itself: N/10,000 `git-locks batch`
transitions of 10,000 claims each (the planner's per-transition limit).
3. Anchored trust (issue 15): a claim with a warm trust checkpoint (the
   checkpoint at the tip: nothing to replay) against a claim WITHOUT the
   check, i.e. the binary of the commit before anchored trust (--baseline,
   e.g. a build of main before the change), on two stores of the same shape,
   interleaved. There is no switch that turns the check off; without
   --baseline the comparison is not printed.
4. A claim with no checkpoint on generated histories (--gen-history, the
   gitlocks-gen-history target; 1,000 and 20,000 commits by default): one
   full replay of the history, as `verify` does.
Goals (issue 3): claim <= 1.5x a bare update-ref transaction; claim on the
big store <= 1.3x the empty store; peak RSS <= 64 MiB. Issue 15: with a
checkpoint, a claim costs <= 1.1x a claim without the check.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ZERO = "0" * 40


def spawn(argv, env, stdin_bytes=None, cwd=None):
    """Runs argv; returns (wall seconds, exit status, peak RSS in KiB, stdout, stderr).
    CPU seconds (user + system, the child and the children it reaped) are
    appended to spawn.cpu."""
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    r_in, w_in = os.pipe()
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, env, file_actions=[
        (os.POSIX_SPAWN_DUP2, r_in, 0), (os.POSIX_SPAWN_DUP2, w_out, 1), (os.POSIX_SPAWN_DUP2, w_err, 2),
        (os.POSIX_SPAWN_CLOSE, r_out), (os.POSIX_SPAWN_CLOSE, r_err), (os.POSIX_SPAWN_CLOSE, w_in)])
    for fd in (r_in, w_out, w_err):
        os.close(fd)
    if stdin_bytes:
        os.write(w_in, stdin_bytes)
    os.close(w_in)
    with os.fdopen(r_out, "rb") as o, os.fdopen(r_err, "rb") as e:
        out, err = o.read(), e.read()
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    spawn.cpu.append(usage.ru_utime + usage.ru_stime)
    return wall, os.waitstatus_to_exitcode(status), usage.ru_maxrss, out, err


spawn.cpu = []


def last_cpu():
    return spawn.cpu[-1]


class Store:
    def __init__(self, binary, root, name):
        self.binary = binary
        self.path = os.path.join(root, name)
        subprocess.run(["git", "init", "-q", self.path], check=True)
        subprocess.run(["git", "-C", self.path, "config", "user.name", "bench"], check=True)
        self.env = dict(os.environ)
        self.env.pop("GIT_LOCKS_NOW_MS", None)
        self.env.pop("GIT_LOCKS_GIT", None)
        self.env["GIT_LOCKS_KEY"] = os.path.join(root, "bench.key")
        self.gl("init")

    def gl(self, *args, stdin=None, check=True):
        wall, code, rss, out, err = spawn([self.binary, "--repo", self.path, *args], self.env, stdin)
        if check and code != 0:
            sys.exit(f"git-locks {' '.join(args)} failed ({code}): {err.decode()}")
        return wall, rss, out

    def bare(self, old, new):
        """One bare compare-and-swap transaction of refs/bench/bare."""
        tx = f"start\nupdate refs/bench/bare {new} {old}\nprepare\ncommit\n".encode()
        env = dict(self.env, LC_ALL="C")
        wall, code, _, _, err = spawn(["git", "-C", self.path, "-c", "core.filesRefLockTimeout=0", "-c",
                                       "core.packedRefsTimeout=0", "update-ref", "--stdin"], env, tx)
        if code != 0:
            sys.exit(f"bare update-ref failed: {err.decode()}")
        return wall

    def tip(self):
        return subprocess.run(["git", "-C", self.path, "rev-parse", "refs/locks/state"], capture_output=True,
                              text=True, check=True).stdout.strip()


def ms(seconds):
    return f"{seconds * 1000:7.2f} ms"


def checkpoint_of(path):
    common = subprocess.run(["git", "-C", path, "rev-parse", "--path-format=absolute", "--git-common-dir"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return os.path.join(common, "git-locks", "trust", "local.json")


def breakdown(store, args):
    """Issue 18 goal 1: where a local claim's wall time goes. The phases come
    from the claim itself ($GIT_LOCKS_TIMINGS, tools/cli/timings.h: exclusive
    times from main() to the end of the command); process start-up and exit
    are the wall time of `git-locks --version` (same binary, same libraries,
    nothing else done); the rest of a claim's wall time is what neither saw
    (the exit of a process that did work, the parent's wait). The git
    children run concurrently: `starting git` is only their spawning, `git
    config` and `compare-and-swap` only the waits for them."""
    log = os.path.join(os.path.dirname(store.path), "timings.jsonl")
    env = dict(store.env, GIT_LOCKS_TIMINGS=log)
    walls, versions = [], []
    for i in range(args.cycles):
        wall, code, _, _, err = spawn([store.binary, "--repo", store.path, "claim", "--ttl", "10m", "bench/t"], env)
        if code != 0:
            sys.exit(f"claim failed: {err.decode()}")
        walls.append(wall)
        store.gl("release", "bench/t")
        versions.append(spawn([store.binary, "--version"], store.env)[0])
    with open(log) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    claims = [line for line in lines if line["op"] == "claim"]
    phases = sorted({p for line in claims for p in line["phases"]})
    wall, version = statistics.median(walls), statistics.median(versions)
    total = statistics.median(line["total_ms"] for line in claims) / 1000
    print(f"   breakdown of a claim ({len(claims)} runs, medians; wall {ms(wall)}):")
    print(f"     process start-up + exit     {ms(version)}   (git-locks --version)")
    for p in sorted(phases, key=lambda p: -statistics.median(line["phases"].get(p, 0) for line in claims)):
        v = statistics.median(line["phases"].get(p, 0) for line in claims) / 1000
        print(f"     {p:<27} {ms(v)}")
    print(f"     in main(), all phases       {ms(total)}")
    print(f"     unaccounted                 {ms(max(0.0, wall - total - version))}")


def trust_sections(binary, root, args):
    print("\n3. claim with a warm trust checkpoint vs a claim without the check")
    if not args.baseline:
        print("   (no --baseline binary given: the claim without the check is not measured)")
    else:
        new = Store(binary, root, "trust-new")
        old = Store(os.path.abspath(args.baseline), root, "trust-old")
        for s in (new, old):
            s.gl("claim", "--ttl", "10m", "warm")  # checkpoint written by this own publication
        with_check, without = [], []
        for _ in range(args.cycles):
            for store, times in ((new, with_check), (old, without)):
                times.append(store.gl("claim", "--ttl", "10m", "bench/trust")[0])
                store.gl("release", "bench/trust")
        w, o = statistics.median(with_check), statistics.median(without)
        print(f"   claim without the check       {ms(o)}   (the baseline binary: {args.baseline})")
        print(f"   claim, warm checkpoint        {ms(w)}   {w / o:5.2f}x without   (goal <= 1.10x)")
        print(f"   ({args.cycles} interleaved claim + release cycles per store, medians; every claim finds the")
        print("    checkpoint at the tip its own previous release wrote, so it replays no commit)")
    print("\n4. claim with no checkpoint: one full replay of the history")
    if not args.gen_history:
        print("   (no --gen-history given: not measured)")
        return
    for n in [int(x) for x in args.history.split(",") if x]:
        bundle = os.path.join(root, f"h{n}.bundle")
        subprocess.run([args.gen_history, "--commits", str(n), "--bundle", bundle, "--seed", "42"], check=True,
                       capture_output=True)
        repo = os.path.join(root, f"hist{n}")
        subprocess.run(["git", "init", "-q", repo], check=True)
        subprocess.run(["git", "-C", repo, "fetch", "-q", bundle, "refs/locks/state:refs/locks/state"], check=True)
        store = Store.__new__(Store)
        store.binary, store.path = binary, repo
        store.env = dict(os.environ)
        store.env.pop("GIT_LOCKS_NOW_MS", None)
        store.env["GIT_LOCKS_KEY"] = os.path.join(root, "bench.key")
        cold, warm = [], []
        for i in range(3):
            try:
                os.remove(checkpoint_of(repo))
            except FileNotFoundError:
                pass
            cold.append(store.gl("claim", "--ttl", "10m", f"bench/cold{i}")[0])
            warm.append(store.gl("claim", "--ttl", "10m", f"bench/warm{i}")[0])
        c, wm = statistics.median(cold), statistics.median(warm)
        print(f"   {n:>6,} commits: claim without checkpoint {ms(c)}, with the checkpoint it leaves {ms(wm)}"
              f"   ({n / max(c - wm, 1e-9):,.0f} commits/s replayed)")


def queries_section(empty, big, args):
    """Issue 16 goal 5: queries answered by index on a big store vs an empty one."""
    leases = {}
    for store in (empty, big):
        out = store.gl("--json", "claim", "--ttl", "1h", "bench/q")[2]
        lease = json.loads(out)["leases"][0]
        leases[store.path] = (lease["lease"], lease["generation"])
    rows = {"status PATH": lambda st: st.gl("--json", "status", "bench/q"),
            "fence": lambda st: st.gl("fence", "bench/q", str(leases[st.path][1])),
            "extend LEASE-ID": lambda st: st.gl("extend", "--ttl", "1h", leases[st.path][0])}
    print(f"\n5. queries on a store with {args.leases:,} live leases vs an empty store "
          f"({args.cycles} interleaved runs, medians; goal <= 1.3x each)")
    for label, run in rows.items():
        small, large = [], []
        for _ in range(args.cycles):
            small.append(run(empty)[0])
            large.append(run(big)[0])
        e, g = statistics.median(small), statistics.median(large)
        print(f"   {label:<16} empty {ms(e)}, {args.leases:,} leases {ms(g)}   {g / e:5.2f}x")


def hook_section(empty, big, args):
    """Issue 16 goal 4: the server hook's check of one pushed transition, on a
    store with many live leases vs an empty one. The hook is run as git runs
    pre-receive ("OLD NEW refs/locks/state" on stdin), on the store's own
    newest commit: it replays OLD -> NEW from the trusted OLD."""
    print(f"\n6. server hook: one pushed transition, {args.leases:,} live leases vs an empty store "
          f"({args.cycles} interleaved runs, medians; goal <= 1.3x)")
    lines = {}
    for store in (empty, big):
        store.gl("claim", "--ttl", "1h", "bench/hook")
        new = store.tip()
        old = subprocess.run(["git", "-C", store.path, "rev-parse", new + "^"], capture_output=True, text=True,
                             check=True).stdout.strip()
        lines[store.path] = f"{old} {new} refs/locks/state\n".encode()
    small, large = [], []
    for _ in range(args.cycles):
        for store, times in ((empty, small), (big, large)):
            times.append(store.gl("hook", "check", "pre-receive", stdin=lines[store.path])[0])
    e, g = statistics.median(small), statistics.median(large)
    print(f"   hook check       empty {ms(e)}, {args.leases:,} leases {ms(g)}   {g / e:5.2f}x")


def resume_section(empty, big, args):
    """Issue 16 goals 3-4 for writers: a claim right after another writer's
    commit replays that one commit from the trust checkpoint. The other
    writer publishes from the same clone with its own key; the checkpoint is
    then put back where it was, as if the commit had come from elsewhere."""
    print(f"\n7. claim after another writer's commit (one commit replayed from the checkpoint), "
          f"{args.leases:,} live leases vs an empty store ({args.cycles} interleaved runs, medians; goal <= 1.3x)")
    other_env = {}
    for store in (empty, big):
        other_env[store.path] = dict(store.env, GIT_LOCKS_KEY=store.env["GIT_LOCKS_KEY"] + ".other")
    small, large = [], []
    for i in range(args.cycles):
        for store, times in ((empty, small), (big, large)):
            checkpoint = checkpoint_of(store.path)
            with open(checkpoint, "rb") as f:
                saved = f.read()
            wall, code, _, _, err = spawn([store.binary, "--repo", store.path, "claim", "--ttl", "10m",
                                           f"bench/other{i}"], other_env[store.path])
            if code != 0:
                sys.exit(f"the other writer's claim failed ({code}): {err.decode()}")
            with open(checkpoint, "wb") as f:
                f.write(saved)
            times.append(store.gl("claim", "--ttl", "10m", f"bench/mine{i}")[0])
    e, g = statistics.median(small), statistics.median(large)
    print(f"   claim            empty {ms(e)}, {args.leases:,} leases {ms(g)}   {g / e:5.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--cycles", type=int, default=60)
    ap.add_argument("--leases", type=int, default=100_000)
    ap.add_argument("--baseline", help="git-locks built from the commit before anchored trust")
    ap.add_argument("--gen-history", help="gitlocks-gen-history (histories for the no-checkpoint claim)")
    ap.add_argument("--history", default="1000,20000")
    ap.add_argument("--only-trust", action="store_true", help="sections 3 and 4 only")
    ap.add_argument("--only-claim", action="store_true", help="section 1 only (the claim and its breakdown)")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="gitlocks-bench-")
    try:
        print(f"git-locks benchmark  ({subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f})")
        if args.only_trust:
            trust_sections(binary, root, args)
            return
        empty = Store(binary, root, "empty")
        # Two commits for the bare transactions to swing refs/bench/bare between.
        a = empty.tip()
        empty.gl("claim", "warmup")
        b = empty.tip()
        empty.gl("release", "warmup")
        subprocess.run(["git", "-C", empty.path, "update-ref", "refs/bench/bare", a], check=True)

        claims, releases, bares = [], [], []
        claim_cpu, bare_cpu = [], []
        state = a
        for _ in range(args.cycles):
            claims.append(empty.gl("claim", "--ttl", "10m", "bench/file")[0])
            claim_cpu.append(last_cpu())
            releases.append(empty.gl("release", "bench/file")[0])
            nxt = b if state == a else a
            bares.append(empty.bare(state, nxt))
            bare_cpu.append(last_cpu())
            state = nxt
        claim, release, bare = (statistics.median(x) for x in (claims, releases, bares))
        cycle = statistics.median(c + r for c, r in zip(claims, releases))
        print(f"\n1. claim + release cycle vs bare update-ref --stdin ({args.cycles} interleaved runs, medians)")
        print(f"   bare update-ref transaction   {ms(bare)}")
        print(f"   git-locks claim               {ms(claim)}   {claim / bare:5.2f}x bare   (goal <= 1.5x)")
        print(f"   git-locks release             {ms(release)}   {release / bare:5.2f}x bare")
        print(f"   claim + release cycle         {ms(cycle)}   {cycle / (2 * bare):5.2f}x two bare transactions")
        cc, bc = statistics.median(claim_cpu), statistics.median(bare_cpu)
        print(f"   CPU (user+sys, with children): claim {ms(cc)}, bare {ms(bc)}   {cc / bc:5.2f}x   (goal <= 2x)")
        breakdown(empty, args)
        if args.only_claim:
            return

        big = Store(binary, root, "big")
        start = time.perf_counter()
        per_batch = 10_000
        for first in range(0, args.leases, per_batch):
            lines = "".join(json.dumps({"op": "claim", "path": f"load/{i // 1000:03d}/f{i:06d}"}) + "\n"
                            for i in range(first, min(args.leases, first + per_batch)))
            big.gl("batch", "--ttl", "1h", "-", stdin=lines.encode())
        build = time.perf_counter() - start
        count = subprocess.run(["git", "-C", big.path, "count-objects"], capture_output=True, text=True).stdout.strip()
        print(f"\n2. claim on a store with {args.leases:,} live leases vs an empty store")
        print(f"   built in {build:.1f} s by {-(-args.leases // per_batch)} batch transitions ({count})")
        small_t, big_t, small_rss, big_rss, small_cpu, big_cpu = [], [], [], [], [], []
        for _ in range(args.cycles):
            for store, times, rss, cpu in ((empty, small_t, small_rss, small_cpu), (big, big_t, big_rss, big_cpu)):
                wall, peak, _ = store.gl("claim", "--ttl", "10m", "bench/other")
                times.append(wall)
                rss.append(peak)
                cpu.append(last_cpu())
                store.gl("release", "bench/other")
        e, g = statistics.median(small_t), statistics.median(big_t)
        print(f"   claim, empty store            {ms(e)}")
        print(f"   claim, {args.leases:,} leases        {ms(g)}   {g / e:5.2f}x empty   (goal <= 1.3x)")
        ec, gc = statistics.median(small_cpu), statistics.median(big_cpu)
        print(f"   CPU (user+sys, with children): empty {ms(ec)}, {args.leases:,} leases {ms(gc)}   {gc / ec:5.2f}x")
        print(f"   peak RSS of a claim           empty {max(small_rss) / 1024:.1f} MiB, "
              f"{args.leases:,} leases {max(big_rss) / 1024:.1f} MiB   (goal <= 64 MiB)")
        status_wall, status_rss, _ = big.gl("--json", "status")
        print(f"   (for scale: a full `status` of the big store takes {status_wall:.2f} s, "
              f"peak RSS {status_rss / 1024:.1f} MiB)")
        queries_section(empty, big, args)
        hook_section(empty, big, args)
        resume_section(empty, big, args)
        trust_sections(binary, root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
