#!/usr/bin/python3
"""golden_format1_writer — writes store format 1 (gitlocks-state-v1) as
docs/FORMAT.md describes it ("Format versions and migration"), with git
plumbing and PyNaCl signatures, independently of the core: the stores that
`git-locks migrate` and the fault suite start from.

It writes the objects of one transition on top of refs/locks/state and
prints the new commit id; the test moves the ref with `git update-ref`.

  golden_format1_writer.py REPO ACTOR NOW_MS init
  golden_format1_writer.py REPO ACTOR NOW_MS BODY-JSON    ({"ops":[...]})

`init` creates the store (store id "aa…a", owner ACTOR, default policy,
body {"init":POLICY,"state_format":"gitlocks-state-v1"}). BODY-JSON holds
`claim` and `sem-acquire` ops on free resources (the writer models their
effects, not admission: it never refuses); `created_at` and `name` are
filled in as NOW_MS and ACTOR. The transition is admitted at T = NOW_MS
without guard time (`claimed_at_ms` = T)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_store as gs  # noqa: E402

STORE = "a" * 64
FORMAT = 1


def read_state(git, tip):
    """(policy bytes, policy, records) of the tip's format-1 state."""
    fmt = json.loads(git.run("cat-file", "blob", f"{tip}:state/format.json"))
    if fmt != {"format": gs.FORMATS[FORMAT]}:
        raise SystemExit(f"not a format-1 store: {fmt}")
    policy_bytes = git.run("cat-file", "blob", f"{tip}:state/policy.json").encode()
    records = []
    names = git.run("ls-tree", "-r", "--name-only", tip, "--", "state/records")
    for name in names.split():
        rec = json.loads(git.run("cat-file", "blob", f"{tip}:{name}"))
        if name.split("/")[1:] != gs.record_location(gs.record_key(rec), FORMAT):
            raise SystemExit(f"record {name} is not at its format-1 location")
        records.append(rec)
    return policy_bytes, json.loads(policy_bytes), records


def interval(policy, ops):
    """The exact admission interval of claims and acquisitions (FORMAT.md
    "Guards"): T + min_ttl <= expires_at <= T + max_ttl for every op, in the
    safe domain."""
    lo, hi = 0, gs.MAX_SAFE
    for op in ops:
        lo = max(lo, op["expires_at"] - policy["max_ttl_ms"])
        hi = min(hi, op["expires_at"] - policy["min_ttl_ms"])
    if lo > hi:
        raise SystemExit(f"empty interval [{lo}, {hi}]")
    return [lo, hi]


def main(argv):
    if len(argv) != 5:
        print("usage: golden_format1_writer.py REPO ACTOR NOW_MS init|BODY-JSON", file=sys.stderr)
        return 64
    repo, actor, now, arg = argv[1], argv[2], int(argv[3]), argv[4]
    git = gs.Git(repo)
    key = gs.actor_key(actor)
    me = gs.actor_hex(actor)
    tip = git.ref("refs/locks/state")
    instance = gs.sha256_hex(f"golden-f1:{actor}:{now}:{arg}")  # random in real writers; fixed here
    if arg == "init":
        if tip:
            raise SystemExit("the store already exists")
        policy = gs.default_policy(STORE, me)
        body = {"init": policy, "state_format": gs.FORMATS[FORMAT]}
        policy_hash = gs.sha256_hex(gs.canon(policy))
        source, command, action, iv = "", "init", "init", [0, gs.MAX_SAFE]
        records = []
    else:
        if not tip:
            raise SystemExit("no store: write `init` first")
        ops = json.loads(arg)["ops"]
        if any(op["op"] not in ("claim", "sem-acquire") for op in ops):
            raise SystemExit("only claim and sem-acquire ops are written")
        policy_bytes, policy, old = read_state(git, tip)
        policy_hash = gs.sha256_hex(policy_bytes)
        source = git.run("rev-parse", f"{tip}:state")
        body = {"created_at": now, "name": actor, "ops": ops}
        action = ops[0]["op"] if len(ops) == 1 else "batch"
        command = "sem" if action == "sem-acquire" else action
        iv = interval(policy, ops)
        state = gs.State(policy, old)
        state.apply(me, actor, instance, now, now, ops)
        records = state.sorted_records()
    if not iv[0] <= now <= iv[1]:
        raise SystemExit(f"T = {now} is outside the interval {iv}")
    result = git.state_tree(policy, records, fmt=FORMAT)
    packet = {"format": "gitlocks-packet-v1", "store": STORE, "actor": me, "command": command, "action": action,
              "instance": instance, "epoch": 0, "policy_hash": policy_hash, "source": source, "body": body,
              "interval": iv, "result": result, "claimed_at_ms": now}
    txn = git.tree({"packet.json": ("blob", git.blob(gs.signed_packet(packet, key)))})
    tree = git.tree({"state": ("tree", result), "txn": ("tree", txn)})
    print(git.commit(tree, tip, f"git-locks: {action} ({actor})", now))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
