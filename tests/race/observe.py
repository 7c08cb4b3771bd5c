#!/usr/bin/env python3
"""Observation study: N worker processes loop claim -> critical section ->
release for a bounded time on overlapping paths, an exclusive family and a
counted semaphore. In the critical section each worker checks its fence and
appends enter/leave events to a shared O_APPEND log. The checker then proves:

  1. no two conflicting holders overlapped in time;
  2. the semaphore never had more holders than its limit;
  3. generations strictly increase per resource, in publication order;
  4. every holder acted with the then-current generation (`fence` said so);
  5. the final history replays consistently (`git-locks verify`).

  observe.py GIT_LOCKS_BIN [--workers N] [--seconds S] [--transport KIND] [--max-ops N]

By default every worker shares one local repository. With --transport
file|daemon|http the store lives on a real server on loopback
(tests/remote/servers.py: a bare repository over file://, `git daemon` with
receive-pack, or `git http-backend` behind lighttpd) whose pre-receive hook is
`git-locks hook install --server`, so every push is verified server-side. The
owner and each worker get a clone of their own (a separate repository and key)
with `git config locks.remote origin`, so every command fetches the server's
refs/locks/state and publishes by `git push --atomic --force-with-lease`. The
checks then run against the server's bare repository. --max-ops bounds the
acquisition attempts of each worker (default: unbounded locally, 300 remotely)
so a remote run is bounded in requests as well as in time.

Prints throughput and the distribution of replans (attempts - 1 of every
publication, from --json output and JSON errors). Exit 0 only if every check
ran and passed; a check that cannot run (no `verify`, no critical section) is
a failure, never a skip. The checker mirrors every overlap rule of the
planner; tests/race/observe_selftest.py feeds it a synthetic log of each
violation and expects it to fail.
"""

import argparse
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "remote"))

PATHS = ["a/", "a/b", "a/b/c", "a/d", "e", "e/f/"]
FAMILY = {"name": "db", "policy": "exclusive", "members": ["db/schema.sql", "db/migrations/"]}
FAMILY_PATHS = ["db/schema.sql", "db/migrations/001.sql", "db/migrations/002.sql"]
SEM, LIMIT = "pool", 2


def run(binary, repo, key, *args):
    env = dict(os.environ, GIT_LOCKS_KEY=key)
    env.pop("GIT_LOCKS_NOW_MS", None)
    return subprocess.run([binary, "--repo", repo, "--json", *args], capture_output=True, text=True, env=env)


def attempts_of(proc):
    try:
        if proc.returncode == 0:
            return json.loads(proc.stdout).get("attempts")
        return json.loads(proc.stderr.splitlines()[0]).get("attempts")
    except (ValueError, IndexError):
        return None


def worker(args):
    rnd = random.Random(args.worker)
    key = os.path.join(args.dir, f"w{args.worker}.key")
    fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(**ev):
        ev.update(worker=args.worker, t=time.monotonic_ns())
        os.write(fd, (json.dumps(ev, sort_keys=True) + "\n").encode())

    end = time.monotonic() + args.seconds
    ops = 0
    while time.monotonic() < end and (not args.max_ops or ops < args.max_ops):
        ops += 1
        kind = rnd.choice(["path", "path", "family", "sem"])
        if kind == "sem":
            res, resource = run(args.bin, args.repo, key, "sem", "acquire", SEM, "--limit", str(LIMIT), "--ttl", "60s"), f"sem:{SEM}"
            mode = "sem"
        else:
            path = rnd.choice(PATHS if kind == "path" else FAMILY_PATHS)
            mode = rnd.choice(["exclusive", "shared"]) if kind == "path" else "exclusive"
            res = run(args.bin, args.repo, key, "claim", "--mode", mode, "--ttl", "60s", path)
            resource = f"path:{path}"
        emit(ev="publish", op="acquire", code=res.returncode, attempts=attempts_of(res),
             reason=(json.loads(res.stderr.splitlines()[0]).get("reason") if res.returncode and res.stderr else None))
        if res.returncode != 0:
            time.sleep(rnd.uniform(0.001, 0.02))
            continue
        out = json.loads(res.stdout)
        lease = out["leases"][0]
        gen, lease_id = lease["generation"], lease.get("id") or lease.get("lease")
        fence = run(args.bin, args.repo, key, "fence", resource, str(gen))
        emit(ev="enter", resource=resource, mode=mode, generation=gen, holder=f"w{args.worker}",
             commit=out["commit"], fence=fence.returncode)
        time.sleep(rnd.uniform(0.002, 0.015))
        emit(ev="leave", resource=resource, mode=mode, generation=gen, holder=f"w{args.worker}")
        rel = run(args.bin, args.repo, key, "release", lease_id) if mode != "sem" else \
            run(args.bin, args.repo, key, "sem", "release", SEM, "--generation", str(gen))
        emit(ev="publish", op="release", code=rel.returncode, attempts=attempts_of(rel), reason=None)
    os.close(fd)


def path_key(path):
    """The planner's resource key (lib/src/path.cpp): the components, with a
    directory's trailing `/` dropped, so `a/b` and `a/b/` are one resource."""
    return tuple(path[:-1].split("/") if path.endswith("/") else path.split("/"))


def paths_overlap(a, b):
    """SPEC §3 and `paths_overlap` in lib/src/path.cpp: equal, or one an
    ancestor of the other, component by component; a trailing `/` on either
    side does not matter (`a/b` against `a/b/c` and `e` against `e/f/` overlap,
    `a/b` against `a/bc` does not)."""
    ka, kb = path_key(a), path_key(b)
    n = min(len(ka), len(kb))
    return ka[:n] == kb[:n]


def families_of(path, families):
    """The families a path belongs to: it overlaps one of their members (as
    `families_of` in lib/src/plan_ops.cpp)."""
    return [f["name"] for f in families if any(paths_overlap(m, path) for m in f["members"])]


def conflict(a, b, families):
    """The planner's refusal reason that forbids holds `a` and `b` (enter
    events) at the same time, or None. Semaphores are counted separately."""
    if a["holder"] == b["holder"]:
        return None  # one holder never conflicts with itself
    ra, rb = a["resource"], b["resource"]
    if not (ra.startswith("path:") and rb.startswith("path:")):
        return None
    pa, pb = ra[len("path:"):], rb[len("path:"):]
    if paths_overlap(pa, pb) and "exclusive" in (a["mode"], b["mode"]):
        return "held-path"
    exclusive = {f["name"] for f in families if f["policy"] == "exclusive"}
    if exclusive & set(families_of(pa, families)) & set(families_of(pb, families)):
        return "family-policy"  # one holder at a time across all members, whatever the modes
    return None


def check_log(events, families, limits, order):
    """Checks 1-4 over an event log; pure, so the self-test
    (tests/race/observe_selftest.py) can feed it synthetic logs. `families` is
    the store policy's family list, `limits` {semaphore: limit}, `order`
    {commit: index in first-parent publication order}. Returns (intervals,
    {resource: grants}, {semaphore: peak}, problems)."""
    problems = []
    by = collections.defaultdict(dict)
    for ev in events:
        if ev["ev"] in ("enter", "leave"):
            slot = by[(ev["holder"], ev["resource"], ev["generation"])]
            if ev["ev"] in slot:
                problems.append(f"{ev['ev']} twice: {ev}")
            slot[ev["ev"]] = ev
    intervals = [v for v in by.values() if "enter" in v and "leave" in v]
    if len(intervals) != len(by):
        problems.append("an enter without a leave (or the reverse)")
    for v in intervals:
        if v["leave"]["t"] < v["enter"]["t"]:
            problems.append(f"left before entering: {v['enter']}")
    # 1. conflicting holders never overlapped; no hold broke a family's policy
    shared_families = {f["name"] for f in families if f["policy"] == "shared"}
    for v in intervals:
        e = v["enter"]
        if e["resource"].startswith("path:"):
            if e["mode"] not in ("exclusive", "shared"):
                problems.append(f"a path held in mode {e['mode']!r}: {e}")
            elif e["mode"] == "exclusive" and shared_families & set(families_of(e["resource"][5:], families)):
                problems.append(f"family-policy: an exclusive hold on a shared family's member: {e}")
    iv = sorted(intervals, key=lambda v: v["enter"]["t"])
    for i, x in enumerate(iv):
        for y in iv[i + 1:]:
            if y["enter"]["t"] >= x["leave"]["t"]:
                break
            reason = conflict(x["enter"], y["enter"], families)
            if reason:
                problems.append(f"overlap ({reason}): {x['enter']} and {y['enter']}")
    # 2. no semaphore ever had more holders than its limit
    peaks = {}
    for name in sorted({v["enter"]["resource"][4:] for v in intervals if v["enter"]["resource"].startswith("sem:")}):
        if name not in limits:
            problems.append(f"semaphore {name!r} is not one the study uses")
            continue
        held = [v for v in intervals if v["enter"]["resource"] == "sem:" + name]
        # At one instant a leave counts before an enter: intervals are half-open.
        edges = sorted([(v["enter"]["t"], 1) for v in held] + [(v["leave"]["t"], -1) for v in held])
        level = peak = 0
        for _, d in edges:
            level += d
            peak = max(peak, level)
        peaks[name] = peak
        if peak > limits[name]:
            problems.append(f"semaphore {name} held {peak} times at once (limit {limits[name]})")
    # 3. generations strictly increase per resource in publication order
    per = collections.defaultdict(list)
    for v in intervals:
        e = v["enter"]
        res = e["resource"]
        if res.startswith("path:"):
            res = "path:" + "/".join(path_key(res[5:]))  # `a/b` and `a/b/` are one resource
        per[res].append((order.get(e["commit"], -1), e["generation"]))
    for res, grants in per.items():
        grants.sort()
        if any(o < 0 for o, _ in grants):
            problems.append(f"{res}: a grant's commit is not in the first-parent history")
        gens = [g for _, g in grants]
        if any(b <= a for a, b in zip(gens, gens[1:])):
            problems.append(f"{res}: generations not strictly increasing: {gens}")
    # 4. every holder acted with the then-current generation
    stale = [v["enter"] for v in intervals if v["enter"]["fence"] != 0]
    if stale:
        problems.append(f"{len(stale)} holders failed their fence: {stale[:3]}")
    return intervals, per, peaks, problems


def check(events, binary, repo, key):
    order = {c: i for i, c in enumerate(subprocess.run(
        ["git", "-C", repo, "rev-list", "--first-parent", "--reverse", "refs/locks/state"],
        capture_output=True, text=True, check=True).stdout.split())}
    intervals, per, peaks, problems = check_log(events, [FAMILY], {SEM: LIMIT}, order)
    # 5. the final history replays consistently
    verify = run(binary, repo, key, "verify", "--full")
    if verify.returncode != 0:
        problems.append(f"verify failed: exit {verify.returncode}: {verify.stderr.strip()[:500]}")
    return intervals, per, peaks.get(SEM, 0), problems


def setup_local(args, tmp, policy, owner):
    """One local repository shared by every worker. Returns (check repo, worker repos, server)."""
    repo = os.path.join(tmp, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True)
    subprocess.run(["git", "-C", repo, "config", "user.name", "observer"], check=True)
    init = run(args.bin, repo, owner, "init", "--policy", policy)
    if init.returncode != 0:
        raise RuntimeError(f"init failed: {init.stderr}")
    return repo, [repo] * args.workers, None


def setup_remote(args, tmp, policy, owner):
    """A server on loopback, a hook that verifies every push, and one clone
    (host repository) per writer, each with locks.remote = origin."""
    import servers  # tests/remote/servers.py
    if args.transport == "http" and not os.access(servers.LIGHTTPD, os.X_OK):
        # toolchains/setup.sh installs it: missing is a failure, never a skip.
        raise RuntimeError(f"the http transport needs lighttpd ({servers.LIGHTTPD} is missing)")
    srv = servers.Server.start(args.transport, tmp)
    try:
        hook = run(args.bin, srv.bare, owner, "hook", "install", "--server")
        if hook.returncode != 0:
            raise RuntimeError(f"hook install --server failed: exit {hook.returncode}: {hook.stderr}")

        def host(name):
            path = servers.clone(srv.url, os.path.join(tmp, f"{name}-host"), name)
            subprocess.run(["git", "-C", path, "config", "locks.remote", "origin"], check=True)
            return path

        init = run(args.bin, host("owner"), owner, "init", "--policy", policy)
        if init.returncode != 0:
            raise RuntimeError(f"init through a clone failed: exit {init.returncode}: {init.stderr}")
        if not srv.tip():
            raise RuntimeError("init through a clone succeeded but the server has no refs/locks/state")
        return srv.bare, [host(f"w{i}") for i in range(args.workers)], srv
    except BaseException:
        srv.close()
        raise


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--transport", choices=["file", "daemon", "http"],
                    help="a store on a server on loopback instead of one local repository")
    ap.add_argument("--max-ops", type=int, help="acquisition attempts per worker at most (0: unbounded)")
    ap.add_argument("--worker", type=int)
    ap.add_argument("--repo")
    ap.add_argument("--dir")
    ap.add_argument("--log")
    args = ap.parse_args()
    if args.max_ops is None:
        args.max_ops = 300 if args.transport else 0
    if args.worker is not None:
        return worker(args)
    args.bin = os.path.abspath(args.bin)
    tmp = tempfile.mkdtemp(prefix="gitlocks-observe-")
    srv = None
    try:
        policy = os.path.join(tmp, "policy.json")
        with open(policy, "w") as f:
            json.dump({"families": [FAMILY]}, f)
        owner = os.path.join(tmp, "owner.key")
        try:
            repo, hosts, srv = (setup_remote if args.transport else setup_local)(args, tmp, policy, owner)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
            print("set-up failed:", e)
            return 1
        log = os.path.join(tmp, "events.jsonl")
        start = time.monotonic()
        procs = [subprocess.Popen([sys.executable, __file__, args.bin, "--worker", str(i), "--repo", hosts[i],
                                   "--dir", tmp, "--log", log, "--seconds", str(args.seconds),
                                   "--max-ops", str(args.max_ops)])
                 for i in range(args.workers)]
        codes = [p.wait() for p in procs]
        elapsed = time.monotonic() - start
        if any(codes):
            print("a worker failed:", codes)
            return 1
        with open(log) as f:
            events = [json.loads(line) for line in f]
        # Remote: every check reads the server's bare repository, the authority.
        intervals, per, peak, problems = check(events, args.bin, repo, owner)
        pubs = [e for e in events if e["ev"] == "publish"]
        acquired = sum(1 for e in pubs if e["op"] == "acquire" and e["code"] == 0)
        refused = collections.Counter(e["reason"] for e in pubs if e["op"] == "acquire" and e["code"] == 1)
        failed = [e for e in pubs if e["code"] not in (0, 1)]
        failed += [e for e in pubs if e["op"] == "release" and e["code"] != 0]
        if failed:
            problems.append(f"{len(failed)} publications failed operationally: {failed[:3]}")
        replans = collections.Counter((e["attempts"] or 1) - 1 for e in pubs if e["attempts"] is not None)
        commits = len(subprocess.run(["git", "-C", repo, "rev-list", "refs/locks/state"], capture_output=True,
                                     text=True).stdout.split())
        if args.transport:
            print(f"transport: {args.transport} ({srv.url}), {args.workers} clones, server hook verifies every "
                  f"push; at most {args.max_ops} acquisitions per worker")
        print(f"workers x seconds: {args.workers} x {args.seconds:g} (wall {elapsed:.1f}s)")
        print(f"critical sections: {len(intervals)} ({len(intervals) / elapsed:.1f}/s); "
              f"acquisitions refused: {dict(refused)}; commits: {commits} ({commits / elapsed:.1f}/s)")
        print(f"resources: {len(per)}; semaphore peak: {peak}/{LIMIT}")
        print("replans per publication (replans: count): " +
              ", ".join(f"{k}: {v}" for k, v in sorted(replans.items())))
        for p in problems:
            print("PROBLEM:", p)
        if problems and srv and os.path.exists(srv.log):
            with open(srv.log, errors="replace") as f:
                tail = f.read()[-2000:]
            if tail.strip():
                print(f"server log ({srv.log}), last lines:\n{tail}")
        if not intervals:
            print("PROBLEM: no critical section was entered: nothing was checked")
        if problems or not intervals:
            return 1
        print("all five checks passed")
        return 0
    finally:
        if srv:
            srv.close()
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    sys.exit(main())
