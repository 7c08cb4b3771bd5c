#!/usr/bin/env python3
"""git-locks remote-store benchmark: prints figures, asserts nothing.

  remote_bench.py PATH/TO/git-locks [--reps N] [--seconds S] [--clients 4,16] [--max-ops N]

e.g.  bench/remote_bench.py build/release/tools/cli/git-locks

Everything runs against `git daemon --enable=receive-pack` on 127.0.0.1
(tests/remote/servers.py), each writer in a clone of its own with
`git config locks.remote origin` (SPEC §8: a snapshot is a `git fetch` of
refs/locks/state, a publication `git push --atomic --force-with-lease`).

1. Latency, N interleaved repetitions (default 40), medians:
   - `git-locks claim` through the daemon (no server hook);
   - the same claim on a second repository of the same daemon whose
     pre-receive hook is `git-locks hook install --server`;
   - a bare `git push --atomic --porcelain --force-with-lease` of a new
     commit (one blob, one tree) on refs/heads/bench of the same repository:
     the protocol's own cost of a compare-and-swap over the network;
   - `git fetch` of refs/locks/state alone (the argv git-locks uses), from
     a clone that is one claim + release behind, and the same fetch with
     `-c protocol.version=0` (git's default is v2, whose extra ls-refs round
     trip costs one delayed-ACK wait, ~40 ms, over git:// on loopback);
   - a local claim (`git update-ref --stdin`, no network), for scale.
   Ratio claim / bare push, goal <= 1.5x. Each claim is followed by an
   untimed release, so the store stays small.
   Then a breakdown of where a claim's time goes: the same claims with
   GIT_TRACE2_EVENT set, which gives the lifetime of each git child of
   git-locks (config, fetch, push); the remainder is git-locks itself
   (start-up, snapshot read, planning, signing, writing objects).
2. Throughput: 4 and 16 concurrent clients (threads spawning the CLI, each
   client its own clone and key) looping claim -> release for S seconds
   (default 10) or --max-ops acquisitions each, on distinct paths (one per
   client) and on overlapping paths (3 paths, exclusive), each scenario on a
   fresh store with the server hook installed. Prints published commits/s
   (from the server's history), the distribution of replans (attempts - 1,
   from --json output and the JSON errors), refusals by reason, and
   operational failures by error kind with one example.
"""

import argparse
import collections
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "remote"))
from cli_bench import last_cpu, spawn  # noqa: E402
import servers  # noqa: E402

STATE = "refs/locks/state"
FETCH_ARGS = ["-c", "core.filesRefLockTimeout=1000", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
              "--no-auto-gc", "--no-recurse-submodules", "--no-show-forced-updates", "origin",
              f"+{STATE}:refs/locks/remotes/origin/state"]


def ms(seconds):
    return f"{seconds * 1000:7.2f} ms"


def git(path, *args, stdin=None):
    return subprocess.run(["git", "-C", path, *args], input=stdin, capture_output=True, text=True,
                          check=True).stdout.strip()


def clean_env(key):
    env = dict(os.environ)
    for k in ("GIT_LOCKS_NOW_MS", "GIT_LOCKS_GIT", "GIT_TRACE2_EVENT", "GIT_LOCKS_REMOTE"):
        env.pop(k, None)
    env["GIT_LOCKS_KEY"] = key
    return env


class Host:
    """One writer: a clone of a served repository with locks.remote = origin."""

    def __init__(self, binary, root, url, name, remote=True):
        self.binary, self.name = binary, name
        self.path = servers.clone(url, os.path.join(root, name), name) if url else os.path.join(root, name)
        if not url:
            subprocess.run(["git", "init", "-q", self.path], check=True)
            git(self.path, "config", "user.name", name)
        if remote:
            git(self.path, "config", "locks.remote", "origin")
        self.env = clean_env(os.path.join(root, name + ".key"))

    def gl(self, *args, env=None, check=True):
        wall, code, _, out, err = spawn([self.binary, "--repo", self.path, "--json", *args], env or self.env)
        if check and code != 0:
            sys.exit(f"{self.name}: git-locks {' '.join(args)} failed ({code}): {err.decode()}")
        return wall, code, out, err


def trace_children(path):
    """Lifetimes (seconds) of the top-level git processes in a GIT_TRACE2_EVENT file, by subcommand."""
    starts, life = {}, collections.defaultdict(float)
    with open(path) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            sid = ev.get("sid", "")
            if "/" in sid:
                continue  # a child of a git child (pack-objects, index-pack, ...): inside its parent's time
            if ev.get("event") == "start":
                argv = [a for a in ev.get("argv", [])[1:]]
                while argv and argv[0] in ("-C", "-c"):
                    argv = argv[2:]
                starts[sid] = argv[0] if argv else "?"
            elif ev.get("event") == "atexit" and sid in starts:
                life[starts[sid]] += ev.get("t_abs", 0.0)
    return life


def latency(binary, root, reps, kind="daemon"):
    srv = servers.Server.start(kind, root, "plain.git")
    try:
        # A second repository served by the same server, with the server hook.
        hooked_bare = os.path.join(os.path.dirname(srv.bare), "hooked.git")
        subprocess.run(["git", "init", "-q", "--bare", hooked_bare], check=True)
        subprocess.run(["git", "-C", hooked_bare, "config", "http.receivepack", "true"], check=True)
        hooked_url = srv.url.rsplit("/", 1)[0] + "/hooked.git"
        owner_env = clean_env(os.path.join(root, "owner.key"))
        r = subprocess.run([binary, "--repo", hooked_bare, "hook", "install", "--server"], env=owner_env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"hook install --server failed: {r.stderr}")

        plain = Host(binary, root, srv.url, "plain")
        hooked = Host(binary, root, hooked_url, "hooked")
        watcher = Host(binary, root, srv.url, "watcher")
        watcher0 = Host(binary, root, srv.url, "watcher0")
        local = Host(binary, root, None, "local", remote=False)
        tracer = Host(binary, root, srv.url, "tracer")
        for h in (plain, hooked, local):
            h.gl("init")
            h.gl("claim", "warmup")
            h.gl("release", "warmup")

        # The bare pushes: a chain of commits, each with a tree of one fresh blob.
        pusher = servers.clone(srv.url, os.path.join(root, "pusher"), "pusher")
        commits, parent = [], None
        for i in range(reps + 2):
            blob = git(pusher, "hash-object", "-w", "--stdin", stdin=f"bench {i} {random.random()}\n")
            tree = git(pusher, "mktree", stdin=f"100644 blob {blob}\tfile\n")
            parent = git(pusher, "commit-tree", tree, "-m", f"bench {i}", *(["-p", parent] if parent else []))
            commits.append(parent)
        push_env = dict(os.environ, LC_ALL="C")

        def bare_push(old, new):
            wall, code, _, out, err = spawn(["git", "-C", pusher, "push", "--atomic", "--porcelain",
                                             f"--force-with-lease=refs/heads/bench:{old or ''}", "origin",
                                             f"{new}:refs/heads/bench"], push_env)
            if code != 0:
                sys.exit(f"bare push failed ({code}): {out.decode()} {err.decode()}")
            return wall

        bare_push(None, commits[0])  # warm-up, and the ref exists from here on
        fetch_env = dict(os.environ, LC_ALL="C")
        t = collections.defaultdict(list)
        cpu = collections.defaultdict(list)
        for i in range(reps):
            t["claim"].append(plain.gl("claim", "--ttl", "10m", "bench/file")[0])
            cpu["claim"].append(last_cpu())
            t["release"].append(plain.gl("release", "bench/file")[0])
            t["bare"].append(bare_push(commits[i], commits[i + 1]))
            cpu["bare"].append(last_cpu())
            wall, code, _, _, err = spawn(["git", "-C", watcher.path, *FETCH_ARGS], fetch_env)
            if code != 0:
                sys.exit(f"git fetch failed: {err.decode()}")
            t["fetch"].append(wall)
            wall, code, _, _, err = spawn(["git", "-C", watcher0.path, "-c", "protocol.version=0", *FETCH_ARGS],
                                          fetch_env)
            if code != 0:
                sys.exit(f"git fetch (protocol v0) failed: {err.decode()}")
            t["fetch0"].append(wall)
            t["hooked"].append(hooked.gl("claim", "--ttl", "10m", "bench/file")[0])
            hooked.gl("release", "bench/file")
            t["local"].append(local.gl("claim", "--ttl", "10m", "bench/file")[0])
            local.gl("release", "bench/file")

        # Breakdown: the same claim with trace2 on (a little slower), children's lifetimes.
        parts = collections.defaultdict(list)
        for i in range(max(10, reps // 2)):
            trace = os.path.join(root, f"trace-{i}.json")
            env = dict(tracer.env, GIT_TRACE2_EVENT=trace)
            wall, code, out, err = tracer.gl("claim", "--ttl", "10m", "bench/traced", env=env, check=False)
            if code != 0:
                sys.exit(f"traced claim failed ({code}): {err.decode()}")
            kids = trace_children(trace)
            parts["wall"].append(wall)
            for name in ("config", "fetch", "push", "update-ref"):
                parts[name].append(kids.get(name, 0.0))
            parts["other git"].append(sum(v for k, v in kids.items()
                                          if k not in ("config", "fetch", "push", "update-ref")))
            tracer.gl("release", "bench/traced")

        med = {k: statistics.median(v) for k, v in t.items()}
        through = "git daemon" if kind == "daemon" else "smart HTTP (git http-backend behind lighttpd)"
        print(f"\n1. claim through {through} on loopback vs a bare git push ({reps} interleaved runs, medians)")
        print(f"   bare git push --atomic --force-with-lease   {ms(med['bare'])}")
        print(f"   git-locks claim (remote, no server hook)     {ms(med['claim'])}   "
              f"{med['claim'] / med['bare']:5.2f}x bare push   (goal <= 1.5x)")
        print(f"   git-locks claim (remote, server hook)        {ms(med['hooked'])}   "
              f"{med['hooked'] / med['bare']:5.2f}x bare push")
        print(f"   git-locks release (remote, no hook)          {ms(med['release'])}   "
              f"{med['release'] / med['bare']:5.2f}x bare push")
        print(f"   git fetch of refs/locks/state alone          {ms(med['fetch'])}")
        print(f"   the same fetch with protocol.version=0       {ms(med['fetch0'])}   "
              "(v2: one more round trip, ls-refs)")
        print(f"   git-locks claim (local store, for scale)     {ms(med['local'])}")
        print(f"   fetch + bare push (the protocol floor of a snapshot + CAS) "
              f"{ms(med['fetch'] + med['bare'])}   claim is {med['claim'] / (med['fetch'] + med['bare']):4.2f}x that")
        cc, bc = statistics.median(cpu["claim"]), statistics.median(cpu["bare"])
        print(f"   CPU (user+sys, with children): claim {ms(cc)}, bare push {ms(bc)}   {cc / bc:5.2f}x")
        p = {k: statistics.median(v) for k, v in parts.items()}
        kids = p["config"] + p["fetch"] + p["push"] + p["update-ref"] + p["other git"]
        n = len(parts["wall"])
        print(f"   where a claim's time goes (GIT_TRACE2_EVENT on, {n} runs, medians of each part):")
        print(f"     whole claim                 {ms(p['wall'])}")
        for name in ("fetch", "push", "config", "update-ref", "other git"):
            if p[name] > 0:
                print(f"     git {name:<24}{ms(p[name])}   {100 * p[name] / p['wall']:4.1f} %")
        print(f"     git-locks itself (rest)     {ms(max(0.0, p['wall'] - kids))}   "
              f"{100 * max(0.0, p['wall'] - kids) / p['wall']:4.1f} %  (start-up, snapshot, planning, signing, objects)")
    finally:
        srv.close()


def throughput(binary, root, srv, n, overlapping, seconds, max_ops):
    name = f"tp-{n}-{'overlap' if overlapping else 'distinct'}"
    bare = os.path.join(os.path.dirname(srv.bare), name + ".git")
    subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
    url = srv.url.rsplit("/", 1)[0] + f"/{name}.git"
    r = subprocess.run([binary, "--repo", bare, "hook", "install", "--server"],
                       env=clean_env(os.path.join(root, "owner.key")), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"hook install --server failed: {r.stderr}")
    scen = os.path.join(root, name)
    os.makedirs(scen)
    hosts = [Host(binary, scen, url, f"c{i}") for i in range(n)]
    hosts[0].gl("init")
    before = len(git(bare, "rev-list", STATE).split())
    pool = ["shared/a", "shared/b", "shared/c"]
    results = []  # (op, exit code, attempts, error kind, detail)
    lock = threading.Lock()

    def attempts_and_error(code, out, err):
        try:
            if code == 0:
                return json.loads(out).get("attempts"), None, None
            e = json.loads(err.decode().splitlines()[0])
            return e.get("attempts"), e.get("error"), e.get("reason") or e.get("detail")
        except (ValueError, IndexError):
            return None, None, err.decode()[:300]

    def client(i):
        h, rnd = hosts[i], random.Random(i)
        end = time.monotonic() + seconds
        ops = 0
        while time.monotonic() < end and ops < max_ops:
            ops += 1
            path = rnd.choice(pool) if overlapping else f"own/c{i}"
            _, code, out, err = h.gl("claim", "--ttl", "10m", path, check=False)
            a, kind, why = attempts_and_error(code, out, err)
            with lock:
                results.append(("claim", code, a, kind, why))
            if code != 0:
                time.sleep(rnd.uniform(0.001, 0.01))
                continue
            _, code, out, err = h.gl("release", path, check=False)
            a, kind, why = attempts_and_error(code, out, err)
            with lock:
                results.append(("release", code, a, kind, why))

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.monotonic() - start
    commits = len(git(bare, "rev-list", STATE).split()) - before
    ok = sum(1 for r in results if r[1] == 0)
    refused = collections.Counter(r[4] for r in results if r[1] == 1 and r[3] != "stale-retries-exhausted")
    exhausted = sum(1 for r in results if r[1] == 1 and r[3] == "stale-retries-exhausted")
    failed = [r for r in results if r[1] not in (0, 1)]
    failed_by = collections.Counter(f"{r[3]} (exit {r[1]})" for r in failed)
    replans = [(r[2] or 1) - 1 for r in results if r[2] is not None]
    hist = collections.Counter(replans)
    verify = subprocess.run([binary, "--repo", bare, "verify", "--full"], env=clean_env(os.path.join(root, "owner.key")),
                            capture_output=True, text=True)
    label = f"{n:2d} clients, {'overlapping (3 paths)' if overlapping else 'distinct paths'}"
    print(f"\n   {label}: {elapsed:.1f} s wall, {len(results)} commands, {ok} published, "
          f"{commits} commits on the server = {commits / elapsed:.1f} commits/s")
    if replans:
        qs = statistics.quantiles(replans, n=10) if len(replans) > 1 else [replans[0]] * 9
        print(f"     replans per command: median {statistics.median(replans):g}, p90 {qs[8]:g}, max {max(replans)}; "
              "histogram " + ", ".join(f"{k}: {v}" for k, v in sorted(hist.items())))
    print(f"     refused: {dict(refused) or 'none'}; stale-retries-exhausted: {exhausted}; "
          f"operational failures: {len(failed)} {dict(failed_by) if failed else ''}")
    for r in failed[:2]:
        print(f"       e.g. {r[0]}: exit {r[1]} {r[3]}: {str(r[4])[:400]}")
    print(f"     server history verifies: {'yes' if verify.returncode == 0 else 'NO: ' + verify.stderr.strip()[:400]}")
    return commits / elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", default="4,16")
    ap.add_argument("--max-ops", type=int, default=400, help="acquisitions per client at most, per scenario")
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--transports", default="daemon,http", help="section 1 through these servers (daemon, http)")
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="gitlocks-rbench-")
    try:
        print(f"git-locks remote benchmark  ({subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f})")
        if not args.skip_latency:
            for kind in args.transports.split(","):
                latency(binary, os.path.join(root, "latency-" + kind), args.reps, kind)
        if not args.skip_throughput:
            print(f"\n2. throughput through git daemon, server hook installed "
                  f"({args.seconds:g} s or {args.max_ops} acquisitions per client)")
            tp = os.path.join(root, "throughput")
            srv = servers.Server.start("daemon", tp, "base.git")
            rates = {}
            try:
                for n in (int(x) for x in args.clients.split(",")):
                    for overlapping in (False, True):
                        rates[(n, overlapping)] = throughput(binary, tp, srv, n, overlapping, args.seconds,
                                                             args.max_ops)
            finally:
                srv.close()
            counts = sorted({n for n, _ in rates})
            if len(counts) >= 2:
                lo, hi = counts[0], counts[-1]
                for overlapping in (False, True):
                    print(f"\n   {hi} vs {lo} clients, {'overlapping' if overlapping else 'distinct'} paths: "
                          f"{rates[(hi, overlapping)] / rates[(lo, overlapping)]:.2f}x the commits/s"
                          + ("   (goal >= 0.8x)" if not overlapping else ""))
        print(f"\n(load average at the end {os.getloadavg()[0]:.2f})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
