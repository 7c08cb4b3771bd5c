#!/usr/bin/env python3
"""Claims bind the work: what the server's enforcement costs (issue 29).

A push of COMMITS commits that change PATHS paths in all (new files, PATHS
/ COMMITS per commit, none of them claimed) to a bare repository whose
store holds LEASES live exclusive claims, with the server hook
(`git-locks hook install --server`) vs the same push to the same repository
without it, measured side by side (interleaved runs, a fresh copy of the
server for every push, medians). Then `git-locks check` of the same range
in the pushing clone, natively and (with --node-bin) through the npm
package's bin on Node, side by side.

    bench/enforce_bench.py build/release/tools/cli/git-locks [--node-bin PATH]
        [--commits 2000] [--paths 50000] [--leases 10000] [--cycles 3]

Goals (issue 29): hook <= 1.5x no hook; Node >= 0.5x native speed.
Figures are printed, never compared with the goals here: CI runs this on a
tiny input as a smoke test of the driver only.
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


def run(argv, env=None, stdin=None, cwd=None, check=True):
    p = subprocess.run(argv, env=env, input=stdin, cwd=cwd, capture_output=True)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    return p


def timed(argv, env=None, cwd=None, expect=0):
    start = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - start
    if p.returncode != expect:
        sys.exit(f"{' '.join(map(str, argv))}: exit {p.returncode}, expected {expect}: "
                 f"{p.stderr.decode(errors='replace')[:2000]}")
    return wall


def fast_import_stream(commits, paths):
    """COMMITS commits on refs/heads/main, each adding PATHS/COMMITS files."""
    per = max(1, paths // commits)
    out = []
    n = 0
    for c in range(commits):
        msg = f"commit {c}\n".encode()
        out.append(b"commit refs/heads/main\n")
        out.append(f"mark :{c + 1}\n".encode())
        out.append(f"committer bench <bench@example.invalid> {1_700_000_000 + c} +0000\n".encode())
        out.append(f"data {len(msg)}\n".encode() + msg)
        if c:
            out.append(f"from :{c}\n".encode())
        for _ in range(per if c < commits - 1 else max(per, paths - n)):
            body = f"file {n}\n".encode()
            out.append(f"M 100644 inline work/d{n // 1000:03d}/f{n:06d}.txt\n".encode())
            out.append(f"data {len(body)}\n".encode() + body)
            n += 1
        out.append(b"\n")
    return b"".join(out), n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--node-bin", help="the npm package's bin (node_modules/.bin/git-locks)")
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--paths", type=int, default=50_000)
    ap.add_argument("--leases", type=int, default=10_000)
    ap.add_argument("--cycles", type=int, default=3)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="gitlocks-enforce-bench-")
    env = dict(os.environ, GIT_LOCKS_KEY=os.path.join(root, "alice.key"))
    env.pop("GIT_LOCKS_NOW_MS", None)
    try:
        print(f"git-locks enforcement benchmark ({run(['git', '--version']).stdout.decode().strip()}, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f})")
        # The server's repository: the store and its live claims.
        template = os.path.join(root, "template.git")
        run(["git", "init", "-q", "--bare", template])
        run([binary, "--repo", template, "init"], env=env)
        per_batch = 10_000
        for first in range(0, args.leases, per_batch):
            lines = "".join(json.dumps({"op": "claim", "path": f"claimed/{i // 1000:03d}/f{i:06d}"}) + "\n"
                            for i in range(first, min(args.leases, first + per_batch)))
            run([binary, "--repo", template, "batch", "--ttl", "1h", "-"], env=env, stdin=lines.encode())
        # The pushing clone: the history under test.
        client = os.path.join(root, "client")
        run(["git", "init", "-q", client])
        stream, made = fast_import_stream(args.commits, args.paths)
        run(["git", "-C", client, "fast-import", "--quiet"], stdin=stream)
        tip = run(["git", "-C", client, "rev-parse", "refs/heads/main"]).stdout.decode().strip()
        print(f"\n1. push of {args.commits:,} commits changing {made:,} paths to a store with {args.leases:,} "
              f"live claims: server hook vs no hook ({args.cycles} interleaved runs, medians; goal <= 1.5x)")
        hooked, plain = [], []
        for i in range(args.cycles):
            for with_hook, times in ((True, hooked), (False, plain)):
                server = os.path.join(root, f"server-{i}-{int(with_hook)}.git")
                shutil.copytree(template, server, symlinks=True)
                if with_hook:
                    run([binary, "--repo", server, "hook", "install", "--server"], env=env)
                times.append(timed(["git", "-C", client, "push", "-q", server, "refs/heads/main:refs/heads/main"],
                                   env=env))
                shutil.rmtree(server)
        h, p = statistics.median(hooked), statistics.median(plain)
        print(f"   git push, no hook      {p * 1000:9.1f} ms")
        print(f"   git push, server hook  {h * 1000:9.1f} ms   {h / p:5.2f}x   "
              f"({(h - p) / args.commits * 1000:.2f} ms per commit, "
              f"{args.commits / max(h - p, 1e-9):,.0f} commits/s checked)")

        # check of the same range in the clone, with the store fetched there.
        run(["git", "-C", client, "fetch", "-q", template, "+refs/locks/state:refs/locks/state"])
        run([binary, "--repo", client, "verify"], env=env)  # the clone's checkpoint, as after a first command
        rng = f"{tip}"  # the whole branch: every commit from the root
        native, node = [], []
        for _ in range(args.cycles):
            native.append(timed([binary, "--repo", client, "--json", "check", rng], env=env))
            if args.node_bin:
                node.append(timed([args.node_bin, "--repo", client, "--json", "check", rng], env=env))
        n = statistics.median(native)
        print(f"\n2. git-locks check of the same {args.commits:,} commits ({args.cycles} runs, medians; "
              f"goal: Node >= 0.5x native speed)")
        print(f"   native                 {n * 1000:9.1f} ms   ({args.commits / n:,.0f} commits/s)")
        if node:
            j = statistics.median(node)
            print(f"   Node (npm bin)         {j * 1000:9.1f} ms   ({args.commits / j:,.0f} commits/s)   "
                  f"{n / j:5.2f}x native speed")
        else:
            print("   Node (npm bin)         not measured (no --node-bin)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
