"""golden_queue_writer — writes the waiters' queue's transitions (docs/FORMAT.md
"Queue record", "Tickets": `ticket`, `ticket-renew`, `ticket-drop`) on top
of a public format-2 store's refs/locks/state, with git plumbing and PyNaCl,
independently of the core.

The waiting loop (`claim --wait`) publishes queue ops only as its protocol
has it, and `git-locks batch` takes none (claim, extend, release,
sem-acquire and sem-release lines only), so the tests that need a ticket,
a renewal or a drop at a chosen moment in a store the real CLI otherwise
writes take them here. The
writer models effects, not admission (it never refuses): what it writes is
what golden_store.State says the ops do, with what a proposal leaves to the
planner filled in as the planner fills it in (a ticket's `behind`, a
renewal's `prev_expires_at`, the `expires_at` of another holder's ticket it
drops). `git-locks verify` replays every such commit like any other, so a
store that mixes these commits with the CLI's tests this model too.

    publish(repo, seed, name, now_ms, ops, command="claim") -> (commit, packet)

`seed` is the actor's Ed25519 seed (bytes), `name` its display name; the
transition is admitted at T = now_ms without guard time (`claimed_at_ms` =
T), and the ref moves to the new commit."""

import json
import os
import sys

import nacl.signing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_store as gs  # noqa: E402

QUEUE_OPS = ("ticket", "ticket-renew", "ticket-drop")


def interval(policy, ops):
    """FORMAT.md "Guards": a ticket's TTL window on its expiry; a renewal's too,
    with T <= its previous expiry and a later expiry; T > the expiry of another
    holder's ticket a drop declares; one's own drop is time-free."""
    lo, hi = 0, gs.MAX_SAFE
    mn, mx = policy["min_ttl_ms"], policy["max_ttl_ms"]
    for op in ops:
        if op["op"] in ("ticket", "ticket-renew"):
            lo = max(lo, op["expires_at"] - mx)
            hi = min(hi, op["expires_at"] - mn, gs.MAX_SAFE - mx)
        if op["op"] == "ticket-renew":
            hi = min(hi, op["prev_expires_at"])
            if op["expires_at"] <= op["prev_expires_at"]:
                hi = -1
        if op["op"] == "ticket-drop" and "expires_at" in op:
            lo = max(lo, op["expires_at"] + 1)
    return [lo, hi]


def action(ops):
    """Ticket-drops do not count: the other op's, "batch" for several, "ticket-drop" for none."""
    counted = [op["op"] for op in ops if op["op"] != "ticket-drop"]
    if not counted:
        return "ticket-drop"
    return counted[0] if len(counted) == 1 else "batch"


def publish(repo, seed, name, now, ops, command="claim"):
    if any(op["op"] not in QUEUE_OPS for op in ops):
        raise ValueError("only the queue's ops are written")
    git = gs.Git(repo)
    tip = git.ref("refs/locks/state")
    if json.loads(git.run("cat-file", "blob", f"{tip}:state/format.json")) != {"format": gs.FORMATS[2]}:
        raise ValueError("not a format-2 store")
    policy_bytes = git.run("cat-file", "blob", f"{tip}:state/policy.json").encode()
    policy = json.loads(policy_bytes)
    if "guard_time" in policy or "keyring" in policy:
        raise ValueError("a public store without guard time only")
    records = [json.loads(git.run("cat-file", "blob", f"{tip}:{path}"))
               for path in git.run("ls-tree", "-r", "--name-only", tip, "--", "state/records").split()]
    key = nacl.signing.SigningKey(seed)
    me = key.verify_key.encode().hex()
    instance = gs.sha256_hex(f"golden-queue:{tip}:{me}:{now}")  # random in real writers; fixed here
    ops = json.loads(json.dumps(ops))
    state = gs.State(policy, records)
    state.apply(me, name, instance, now, now, ops)  # fills in behind, prev_expires_at, expires_at
    iv = interval(policy, ops)
    if not iv[0] <= now <= iv[1]:
        raise ValueError(f"T = {now} is outside the interval {iv}")
    result = git.state_tree(policy, state.sorted_records())
    packet = {"format": "gitlocks-packet-v1", "store": policy["store"], "actor": me, "command": command,
              "action": action(ops), "instance": instance, "epoch": 0, "policy_hash": gs.sha256_hex(policy_bytes),
              "source": git.run("rev-parse", f"{tip}:state"),
              "body": {"created_at": now, "name": name, "ops": ops}, "interval": iv, "result": result,
              "claimed_at_ms": now}
    txn = git.tree({"packet.json": ("blob", git.blob(gs.signed_packet(packet, key)))})
    tree = git.tree({"state": ("tree", result), "txn": ("tree", txn)})
    commit = git.commit(tree, tip, f"git-locks: {packet['action']} ({name})", now)
    git.run("update-ref", "refs/locks/state", commit, tip)
    return commit, packet
