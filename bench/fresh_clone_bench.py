#!/usr/bin/env python3
"""Benchmark of a fresh clone's first claim (issue 33): a host that has never
verified the store (a new CI runner, a new agent machine) clones it through
`git daemon --enable=receive-pack` on 127.0.0.1 and claims one path, which
fetches refs/locks/state, verifies the history and publishes the claim.

Side by side in one run, on generated histories (gitlocks-gen-history
--seed 42):
  - a small store of SMALL commits without checkpoints (the baseline);
  - "cut": a store of COMMITS commits whose every checkpoint (after every
    EVERY-th commit) is a cut (--cut-every, docs/FORMAT.md "The cut"), its
    archives on refs/locks/archive/*: the fresh clone fetches and replays
    only what follows the newest cut;
  - "checkpointed": the same COMMITS commits with the owner's checkpoint
    after every EVERY-th commit, none of them a cut (--checkpoint-every):
    the fresh clone replays from the newest one but fetches everything;
  - "plain": the same COMMITS commits without checkpoints (a full replay:
    the cost for a store that has none).
For each: the first claim's wall time and CPU time (git-locks and the git
children it waited for: the fetch and the push), and the bytes the clone
fetched (its object database afterwards). Goal (issue 33): the cut store's
first claim within 1.2x of the small store's, bytes fetched printed for
both. Then `verify --full` on each large store's server repository (the
cut store's across its cuts, through the archive refs): CPU per commit,
the cut store's against the plain one's (goal: no slower). --stores picks which of them to run (the small one always runs:
every ratio is against it), e.g. --stores cut at 200,000 commits, where the
other two take minutes per clone.

usage: fresh_clone_bench.py GIT_LOCKS GEN_HISTORY [--commits 20000]
                            [--small 1000] [--checkpoint-every 1000] [--reps 3]
                            [--stores cut,checkpointed,plain]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "remote"))
from cli_bench import last_cpu, spawn  # noqa: E402
import servers  # noqa: E402

STATE = "refs/locks/state"


def object_bytes(repo):
    """Bytes of the repository's object database (packs and loose objects)."""
    out = subprocess.run(["git", "-C", repo, "count-objects", "-v"], capture_output=True, text=True,
                         check=True).stdout
    kib = dict(line.split(": ") for line in out.splitlines())
    return (int(kib["size"]) + int(kib["size-pack"])) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli", help="git-locks")
    ap.add_argument("gen", help="gitlocks-gen-history")
    ap.add_argument("--commits", type=int, default=20000, help="commits of the large stores")
    ap.add_argument("--small", type=int, default=1000, help="commits of the baseline store")
    ap.add_argument("--checkpoint-every", type=int, default=1000, help="a checkpoint after every N-th commit")
    ap.add_argument("--reps", type=int, default=3, help="fresh clones per store (medians are printed)")
    ap.add_argument("--stores", default="cut,checkpointed,plain", help="which large stores to run")
    args = ap.parse_args()
    large = [k for k in args.stores.split(",") if k]
    if any(k not in ("cut", "checkpointed", "plain") for k in large):
        sys.exit("--stores: a list of cut, checkpointed, plain")
    tmp = tempfile.mkdtemp(prefix="gitlocks-fresh-clone-bench-")
    servers_started = []
    try:
        every = ["--checkpoint-every", str(args.checkpoint_every)]
        options = {"small": (args.small, []), "cut": (args.commits, every + ["--cut-every", str(args.checkpoint_every)]),
                   "checkpointed": (args.commits, every), "plain": (args.commits, [])}
        rows = {}
        verify_full = {}
        for kind in ["small"] + large:
            commits, extra = options[kind]
            bundle = os.path.join(tmp, kind + ".bundle")
            gen = [args.gen, "--commits", str(commits), "--seed", "42", "--bundle", bundle] + extra
            subprocess.run(gen, check=True, capture_output=True)
            srv = servers.Server.start("daemon", os.path.join(tmp, kind))
            servers_started.append(srv)
            # refs/locks/state and, for the cut store, its archive refs.
            subprocess.run(["git", "-C", srv.bare, "fetch", "-q", bundle, "refs/locks/*:refs/locks/*"], check=True)
            os.remove(bundle)
            walls, cpus, fetched = [], [], []
            for rep in range(args.reps):
                host = servers.clone(srv.url, os.path.join(tmp, f"{kind}-host{rep}"), f"host{rep}")
                subprocess.run(["git", "-C", host, "config", "locks.remote", "origin"], check=True)
                env = dict(os.environ)
                for k in ("GIT_LOCKS_NOW_MS", "GIT_LOCKS_GIT", "GIT_LOCKS_REMOTE"):
                    env.pop(k, None)
                env["GIT_LOCKS_KEY"] = os.path.join(tmp, f"host{rep}.key")
                before = object_bytes(host)
                wall, code, _, out, err = spawn([args.cli, "--repo", host, "--json", "claim", "--ttl", "10m",
                                                 f"bench/{kind}-{rep}.txt"], env)
                if code != 0:
                    sys.exit(f"{kind}: the first claim failed ({code}): {err.decode()[-2000:]}")
                walls.append(wall)
                cpus.append(last_cpu())
                fetched.append(object_bytes(host) - before)
            rows[kind] = (commits, statistics.median(walls), statistics.median(cpus), statistics.median(fetched))
            if kind != "small":
                full = []
                for rep in range(args.reps):
                    wall, code, _, out, err = spawn([args.cli, "--repo", srv.bare, "--json", "verify", "--full",
                                                     "--quiet"], env)
                    if code != 0:
                        sys.exit(f"{kind}: verify --full failed ({code}): {err.decode()[-2000:]}")
                    full.append(last_cpu())
                verify_full[kind] = statistics.median(full)
        print(f"fresh clone + first claim through git daemon (medians of {args.reps}):")
        labels = {"small": "no checkpoint", "cut": f"a cut every {args.checkpoint_every}",
                  "checkpointed": f"a checkpoint every {args.checkpoint_every}", "plain": "no checkpoint"}
        for kind in ["small"] + large:
            commits, wall, cpu, nbytes = rows[kind]
            print(f"  {commits:>7,} commits, {labels[kind]:<26} wall {wall * 1000:9.1f} ms, CPU {cpu * 1000:9.1f} ms, "
                  f"fetched {nbytes / 1e6:8.2f} MB")
        small = rows["small"]
        for kind in large:
            row = rows[kind]
            goal = " (goal <= 1.2x)" if kind == "cut" else ""
            print(f"{kind} vs small store: wall {row[1] / small[1]:.2f}x, CPU {row[2] / small[2]:.2f}x{goal}; "
                  f"bytes fetched {row[3] / max(1, small[3]):.2f}x")
        print(f"verify --full on the server (medians of {args.reps}):")
        for kind in large:
            print(f"  {args.commits:>7,} commits, {labels[kind]:<26} CPU {verify_full[kind]:9.2f} s, "
                  f"{verify_full[kind] / args.commits * 1e6:7.1f} us/commit")
        if "cut" in verify_full and "plain" in verify_full:
            print(f"verify --full per commit, across cuts vs without: {verify_full['cut'] / verify_full['plain']:.2f}x "
                  f"(goal: no slower)")
    finally:
        for srv in servers_started:
            srv.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
