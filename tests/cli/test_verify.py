"""git-locks verify and export (SPEC §7): histories made by the CLI, then
rewritten with Git plumbing (hash-object, mktree, commit-tree, update-ref);
every tampering must be flagged at the right commit with a specific reason,
an untouched history must pass, rewritten history (a fork) must be caught."""

import json
import os
import subprocess
import unittest

from support import CliTest

# Required (Debian's python3-cryptography, installed by toolchains/setup.sh):
# the re-signing tamper cases must run, never skip.
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def raw_public(key):
    # public_bytes_raw() needs cryptography >= 40; Debian bookworm has 38.
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

PACKET_DOMAIN = b"gitlocks/packet/v1\x00"


def canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def public_hex(key):
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


class Plumbing:
    """Git plumbing on one repository, bytes in and out."""

    def __init__(self, repo):
        self.repo = repo

    def git(self, *args, data=None):
        r = subprocess.run(["git", "-C", self.repo.path, *args], input=data, capture_output=True, check=True)
        return r.stdout

    def chain(self):
        return self.git("rev-list", "--reverse", "refs/locks/state").decode().split()

    def tree_of(self, commit):
        return self.git("rev-parse", commit + "^{tree}").decode().strip()

    def message(self, commit):
        return self.git("log", "-1", "--format=%B", commit).decode()

    def ls(self, tree):
        out = []
        for rec in self.git("ls-tree", "-z", tree).split(b"\0"):
            if rec:
                meta, name = rec.decode().split("\t", 1)
                mode, kind, oid = meta.split()
                out.append([mode, kind, oid, name])
        return out

    def mktree(self, entries):
        data = "".join(f"{m} {k} {o}\t{n}\0" for m, k, o, n in entries).encode()
        return self.git("mktree", "-z", data=data).decode().strip()

    def blob(self, data):
        return self.git("hash-object", "-w", "--stdin", data=data).decode().strip()

    def cat(self, oid):
        return self.git("cat-file", "blob", oid)

    def get(self, tree, path):
        head, _, rest = path.partition("/")
        for m, k, o, n in self.ls(tree):
            if n == head:
                return o if not rest else self.get(o, rest)
        raise KeyError(path)

    def put(self, tree, path, oid, kind="blob"):
        """`tree` with `path` set to `oid` (None: removed)."""
        head, _, rest = path.partition("/")
        entries = [e for e in self.ls(tree) if e[3] != head]
        if rest:
            try:
                sub = self.get(tree, head)
            except KeyError:  # a new directory
                sub = self.mktree([])
            entries.append(["040000", "tree", self.put(sub, rest, oid, kind), head])
        elif oid is not None:
            entries.append(["040000" if kind == "tree" else "100644", kind, oid, head])
        return self.mktree(entries)

    def blobs(self, tree, prefix=""):
        for m, k, o, n in self.ls(tree):
            if k == "tree":
                yield from self.blobs(o, prefix + n + "/")
            else:
                yield prefix + n, o

    def rebuild(self, trees, messages):
        """A new chain with these commit trees, root first; moves the ref. Returns the new ids."""
        ids, parent = [], None
        for tree, msg in zip(trees, messages):
            args = ["commit-tree", tree, "-m", msg or "x"]
            if parent:
                args += ["-p", parent]
            parent = self.git(*args).decode().strip()
            ids.append(parent)
        self.git("update-ref", "refs/locks/state", parent)
        return ids


class VerifyTest(CliTest):
    def history(self):
        """owner init; alice claim; bob shared claim; alice extend; carol sem; bob release; alice release."""
        r = self.repo()
        steps = [
            ("alice", ["claim", "--ttl", "60s", "src/a.c"]),
            ("bob", ["claim", "--mode", "shared", "--ttl", "60s", "docs/"]),
            ("alice", ["extend", "--ttl", "90s", "src/a.c"]),
            ("carol", ["sem", "acquire", "ci", "--limit", "2", "--ttl", "30s"]),
            ("bob", ["release", "docs/"]),
            ("alice", ["release", "src/a.c"]),
        ]
        for actor, args in steps:
            r.now += 1000
            self.assertOk(r.run(actor, *args))
        return r, Plumbing(r)

    def verify(self, repo, *args, actor="dave", full=True):
        """verify --json; from the root (--full) unless `full` is off or --from is given: the
        writers of history() keep the clone's trust checkpoint at its tip."""
        if full and "--from" not in args:
            args = ("--full",) + args
        res = repo.run(actor, "--json", "verify", *args)
        verdicts = [json.loads(line) for line in res.out.splitlines()]
        summary = json.loads(res.err.strip().splitlines()[-1]) if res.err.strip() else None
        return res, verdicts, summary

    def assertFlagged(self, repo, index, reason, ids=None):
        res, verdicts, summary = self.verify(repo)
        self.assertEqual(res.code, 1, res)
        bad = [i for i, v in enumerate(verdicts) if not v["ok"]]
        self.assertTrue(bad, res)
        self.assertEqual(bad[0], index, verdicts[bad[0]])
        self.assertEqual(verdicts[index]["reason"], reason, verdicts[index])
        self.assertTrue(verdicts[index]["detail"])
        self.assertTrue(all(v["ok"] for v in verdicts[:index]))
        if ids:
            self.assertEqual([v["commit"] for v in verdicts], ids)
            self.assertEqual(summary["first_invalid"], ids[index])
        self.assertFalse(summary["ok"])
        return verdicts

    def key_of(self, repo, actor):
        with open(repo.key(actor)) as f:
            seed = bytes.fromhex(json.loads(f.read())["seed"])
        return Ed25519PrivateKey.from_private_bytes(seed)

    def signed(self, key, packet):
        return canon({"packet": packet, "sig": key.sign(PACKET_DOMAIN + canon(packet)).hex()})

    def packet_of(self, p, commit):
        return json.loads(p.cat(p.get(p.tree_of(commit), "txn/packet.json")))

    # --- log on a forged history -----------------------------------------

    def test_log_shows_a_forged_commit_and_verify_flags_it(self):
        # `log` reads the history as it is (verified or not): a commit whose
        # packet says anything, signed by its actor, is listed, never a crash
        # (once: an uncaught exception on a field that was not a string).
        r, p = self.history()
        tip = r.tip()
        genuine = self.packet_of(p, tip)["packet"]
        key = self.key_of(r, "alice")
        cases = [("actor", 5), ("action", 5), ("command", ["x"]), ("body", 5), ("body", None),
                 ("body", {"name": 7, "ops": [{"op": 1, "path": 2}, 3, {"op": "force-release", "sem": "s",
                                                                         "reason": 4}]})]
        for field, value in cases + [("body", "missing")]:
            with self.subTest(field=field, value=value):
                packet = json.loads(json.dumps(genuine))
                if value == "missing":
                    del packet[field]
                else:
                    packet[field] = value
                tree = p.put(p.tree_of(tip), "txn/packet.json", p.blob(self.signed(key, packet)))
                forged = p.git("commit-tree", tree, "-p", tip, "-m", "forged").decode().strip()
                p.git("update-ref", "refs/locks/state", forged)
                human = r.run("dave", "log", "--limit", "2")
                self.assertEqual(human.code, 0, human)
                self.assertEqual(human.err, "")
                self.assertEqual(len(human.out.splitlines()), 2)
                self.assertTrue(human.out.startswith(forged[:12]), human.out)
                res = r.run("dave", "--json", "log", "--limit", "1")
                self.assertEqual(res.code, 0, res)
                line = json.loads(res.out)
                self.assertEqual(line["commit"], forged)
                for name in ("actor", "command", "action"):
                    shown = packet.get(name)
                    self.assertEqual(line[name], shown if isinstance(shown, str) else "")
                body = packet.get("body", {})
                self.assertEqual(line["body"], body)
                self.assertEqual(line["name"], body["name"] if isinstance(body, dict) and
                                 isinstance(body.get("name"), str) else "")
                res, verdicts, summary = self.verify(r)
                self.assertEqual(res.code, 1, res)
                self.assertFalse(verdicts[-1]["ok"])
                self.assertTrue(all(v["ok"] for v in verdicts[:-1]))
                p.git("update-ref", "refs/locks/state", tip)

    # --- untouched --------------------------------------------------------
    # --- untouched --------------------------------------------------------

    def test_untouched_history_passes(self):
        r, p = self.history()
        res, verdicts, summary = self.verify(r)
        self.assertEqual(res.code, 0, res)
        self.assertEqual([v["commit"] for v in verdicts], p.chain())
        self.assertTrue(all(v["ok"] and v["level"] == "full" for v in verdicts))
        self.assertEqual([v["command"] for v in verdicts],
                         ["init", "claim", "claim", "extend", "sem-acquire", "release", "release"])
        for line in res.out.splitlines():  # canonical: sorted keys, no spaces
            self.assertEqual(line.encode(), canon(json.loads(line)))
        self.assertEqual(summary["commits"], 7)
        self.assertEqual(summary["invalid"], 0)
        self.assertTrue(summary["ok"])
        self.assertEqual(summary["tip"], r.tip())
        human = r.run("dave", "verify", "--full")
        self.assertEqual(human.code, 0, human)
        self.assertEqual(human.err, "")
        lines = human.out.splitlines()
        self.assertEqual(len(lines), 8)
        self.assertEqual(lines[-1], f"verified 7 commit(s) from the root up to {r.tip()}: all valid")

    def test_expected_owner_and_pins(self):
        # The pins the page and the npm module apply, from the core, here too (issue 30).
        r, p = self.history()
        owner = public_hex(self.key_of(r, "owner"))
        other = ("1" if owner[0] == "0" else "0") + owner[1:]
        ids = p.chain()
        res, verdicts, summary = self.verify(r, "--expect-owner", owner.upper(), full=False)
        self.assertEqual(res.code, 0, res)
        self.assertEqual(len(verdicts), 7)  # from the root, although the checkpoint is at the tip
        res, verdicts, summary = self.verify(r, "--expect-owner", other, full=False)
        self.assertEqual(res.code, 1, res)
        self.assertEqual([(v["commit"], v["ok"]) for v in verdicts], [(c, c != ids[0]) for c in ids])
        self.assertEqual((verdicts[0]["reason"], verdicts[0]["detail"]),
                         ("owner-mismatch", f"the store's owner is {owner}, expected {other}"))
        self.assertEqual(summary["first_invalid"], ids[0])
        # The history is valid, just not the expected store's: no reset is offered as a repair.
        self.assertIsNone(summary["recovery"])
        self.assertIn("not the expected store", summary["note"])
        pins = "notary.example:" + "ab" * 32
        res, verdicts, summary = self.verify(r, "--expect-pins", pins, full=False)
        self.assertEqual(res.code, 1, res)
        self.assertEqual([v["ok"] for v in verdicts], [True] * 6 + [False])
        self.assertEqual((verdicts[6]["reason"], verdicts[6]["detail"]),
                         ("pins-mismatch", "the expected notary pins (notary.example / " + "ab" * 32 +
                          ") are not in force: the store has no guard time"))
        # Bad values are usage errors (exit 64).
        for args in (["--expect-owner", "xyz"], ["--expect-owner", owner + "0"], ["--expect-pins", "ab" * 32],
                     ["--expect-pins", ":" + "ab" * 32], ["--expect-pins", "a:b"],
                     ["--expect-owner", owner, "--from", ids[2]]):
            res = r.run("dave", "--json", "verify", *args)
            self.assertEqual(res.code, 64, (args, res))
            self.assertEqual(res.error["error"], "usage", res)

    # --- from the checkpoint ------------------------------------------------

    def test_verify_resumes_from_the_checkpoint(self):
        r, p = self.history()
        ids = p.chain()
        cp_file = os.path.join(r.gitdir(), "git-locks", "trust", "local.json")
        with open(cp_file, "rb") as f:
            old_checkpoint = f.read()
        self.assertEqual(json.loads(old_checkpoint)["trust"]["commit"], ids[-1])
        # The writers left the checkpoint at the tip: nothing new to replay.
        res, verdicts, summary = self.verify(r, full=False)
        self.assertEqual((res.code, verdicts), (0, []), res)
        self.assertEqual((summary["commits"], summary["checkpoint"], summary["from"], summary["ok"]),
                         (0, ids[-1], None, True))
        # Two honest commits the checkpoint has not seen (it is put back where it was).
        for path in ("lib/x", "lib/y"):
            r.now += 1000
            self.assertOk(r.run("erin", "claim", "--ttl", "60s", path))
        with open(cp_file, "wb") as f:
            f.write(old_checkpoint)
        res, verdicts, summary = self.verify(r, full=False)
        self.assertEqual(res.code, 0, res)
        self.assertEqual([v["commit"] for v in verdicts], p.chain()[-2:])
        self.assertEqual((summary["commits"], summary["checkpoint"]), (2, ids[-1]))
        with open(cp_file) as f:
            self.assertEqual(json.load(f)["trust"]["commit"], r.tip())  # moved on
        human = r.run("dave", "verify")
        self.assertEqual(human.code, 0, human)
        self.assertEqual(human.out.splitlines(), [f"verified 0 new commit(s) since the trust checkpoint at "
                                                  f"{r.tip()[:12]} (`--full` replays from the root) up to {r.tip()}: "
                                                  "all valid"])
        full = self.verify(r)
        self.assertEqual((full[2]["commits"], full[2]["checkpoint"]), (9, None))
        # A forgery on top of the checkpoint: the one new commit, flagged; the checkpoint stays.
        tip = r.tip()
        forged = p.git("commit-tree", p.tree_of(tip), "-p", tip, "-m", "replayed").decode().strip()
        p.git("update-ref", "refs/locks/state", forged, tip)
        res, verdicts, summary = self.verify(r, full=False)
        self.assertEqual(res.code, 1, res)
        self.assertEqual([(v["commit"], v["ok"]) for v in verdicts], [(forged, False)])
        self.assertEqual((summary["checkpoint"], summary["first_invalid"]), (tip, forged))
        self.assertEqual(summary["recovery"], f"git update-ref refs/locks/state {tip} {forged}")
        with open(cp_file) as f:
            self.assertEqual(json.load(f)["trust"]["commit"], tip)
        self.assertUsage(r.run("dave", "verify", "--full", "--from", ids[2]))

    def test_progress_on_a_terminal_only(self):
        """git-style progress on stderr when it is a terminal (GIT_PROGRESS_DELAY=0: at once),
        never with --quiet, after the delay only, or when stderr is not a terminal."""
        import pty
        r, p = self.history()

        def run_tty(*args, delay="0"):
            master, slave = pty.openpty()
            proc = subprocess.Popen([os.environ["GIT_LOCKS_BIN"], "--repo", r.path, "--json", "verify", "--full",
                                     *args], stdout=subprocess.PIPE, stderr=slave,
                                    env=r.env("dave", {"GIT_PROGRESS_DELAY": delay}))
            os.close(slave)
            out = proc.stdout.read()
            proc.wait(60)
            proc.stdout.close()
            tty = b""
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child side is closed and drained
                    break
                if not chunk:
                    break
                tty += chunk
            os.close(master)
            return proc.returncode, out.decode(), tty.decode()

        code, out, tty = run_tty()
        self.assertEqual(code, 0, tty)
        self.assertEqual(len(out.splitlines()), 7)  # the verdicts are untouched on stdout
        self.assertIn("\rVerifying commits: 100% (7/7), done.", tty)
        self.assertIn('"commits":7', tty.replace(" ", ""))
        for args, delay in ((("--quiet",), "0"), ((), "60")):
            code, out, tty = run_tty(*args, delay=delay)
            self.assertEqual((code, len(out.splitlines())), (0, 7), tty)
            self.assertNotIn("Verifying", tty)
            self.assertIn('"ok":true', tty.replace(" ", ""))
        piped = r.run("dave", "--json", "verify", "--full", env={"GIT_PROGRESS_DELAY": "0"})
        self.assertEqual(piped.code, 0, piped)
        self.assertEqual(len(piped.err.splitlines()), 1)  # the summary only
        self.assertNotIn("Verifying", piped.err)

    def test_from_trusted_commit(self):
        r, p = self.history()
        ids = p.chain()
        res, verdicts, summary = self.verify(r, "--from", ids[3])
        self.assertEqual(res.code, 0, res)
        self.assertEqual([v["commit"] for v in verdicts], ids[4:])
        self.assertEqual(summary["from"], ids[3])
        bad = r.run("dave", "verify", "--from", "0" * 40)
        self.assertUsage(bad)

    def test_unreadable_store_exits_2(self):
        r, p = self.history()
        p.git("update-ref", "refs/locks/state", p.blob(b"not a commit\n"))
        res = r.run("dave", "--json", "verify")
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("store-read",) * 3 + ("verify",), res)
        self.assertEqual(res.out, "")

    # --- tampering --------------------------------------------------------

    def test_one_byte_of_a_record(self):
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        path, oid = next((n, o) for n, o in p.blobs(trees[3]) if n.startswith("state/") and "generation" in p.cat(o).decode())
        data = bytearray(p.cat(oid))
        i = data.index(b'"generation":') + len(b'"generation":')
        data[i] = ord("7") if data[i] != ord("7") else ord("8")
        trees[3] = p.put(trees[3], path, p.blob(bytes(data)))
        new = p.rebuild(trees, [p.message(c) for c in ids])
        v = self.assertFlagged(r, 3, "state-mismatch", new)
        self.assertEqual(v[4]["reason"], "source-mismatch")  # the next commit no longer chains

    def test_swapped_packets(self):
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        a, b = p.get(trees[2], "txn/packet.json"), p.get(trees[3], "txn/packet.json")
        trees[2], trees[3] = p.put(trees[2], "txn/packet.json", b), p.put(trees[3], "txn/packet.json", a)
        new = p.rebuild(trees, [p.message(c) for c in ids])
        self.assertFlagged(r, 2, "source-mismatch", new)

    def test_dropped_commit(self):
        r, p = self.history()
        ids = p.chain()
        keep = ids[:2] + ids[3:]
        new = p.rebuild([p.tree_of(c) for c in keep], [p.message(c) for c in keep])
        self.assertFlagged(r, 2, "source-mismatch", new)

    def test_reordered_commits(self):
        r, p = self.history()
        ids = p.chain()
        order = ids[:4] + [ids[5], ids[4]] + ids[6:]
        new = p.rebuild([p.tree_of(c) for c in order], [p.message(c) for c in order])
        self.assertFlagged(r, 4, "source-mismatch", new)

    def test_stray_file_in_commit_tree(self):
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        trees[4] = p.put(trees[4], "README", p.blob(b"hello\n"))
        new = p.rebuild(trees, [p.message(c) for c in ids])
        v = self.assertFlagged(r, 4, "unexpected-entry", new)
        self.assertIn("README", v[4]["detail"])

    def test_replaced_policy(self):
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        pol = json.loads(p.cat(p.get(trees[2], "state/policy.json")))
        pol["max_ttl_ms"] = pol["max_ttl_ms"] * 10
        trees[2] = p.put(trees[2], "state/policy.json", p.blob(canon(pol)))
        new = p.rebuild(trees, [p.message(c) for c in ids])
        self.assertFlagged(r, 2, "state-mismatch", new)

    def test_packet_signed_by_another_key(self):
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        packet = self.packet_of(p, ids[3])["packet"]  # alice's extend, signed by bob
        trees[3] = p.put(trees[3], "txn/packet.json", p.blob(self.signed(self.key_of(r, "bob"), packet)))
        new = p.rebuild(trees, [p.message(c) for c in ids])
        self.assertFlagged(r, 3, "bad-signature", new)

    def test_packet_resigned_as_another_actor(self):
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        packet = self.packet_of(p, ids[3])["packet"]
        bob = self.key_of(r, "bob")
        packet["actor"] = raw_public(bob).hex()  # bob extends alice's lease
        trees[3] = p.put(trees[3], "txn/packet.json", p.blob(self.signed(bob, packet)))
        new = p.rebuild(trees, [p.message(c) for c in ids])
        v = self.assertFlagged(r, 3, "replay-refused", new)
        self.assertIn("not-holder", v[3]["detail"])

    def test_changed_generation_with_valid_signature(self):
        # The actor's own key re-signs a packet whose result carries a forged
        # generation: signature and chain are fine, re-planning is not.
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        state = p.get(trees[3], "state")
        path, oid = next((n, o) for n, o in p.blobs(state) if "generation" in p.cat(o).decode())
        rec = json.loads(p.cat(oid))
        for lease in rec["leases"]:
            lease["generation"] += 5
        state = p.put(state, path, p.blob(canon(rec)))
        trees[3] = p.put(trees[3], "state", state, kind="tree")
        stored = self.packet_of(p, ids[3])
        packet = stored["packet"]
        packet["result"] = state
        actor = "alice"
        self.assertEqual(packet["actor"], raw_public(self.key_of(r, actor)).hex())
        trees[3] = p.put(trees[3], "txn/packet.json", p.blob(self.signed(self.key_of(r, actor), packet)))
        new = p.rebuild(trees, [p.message(c) for c in ids])
        self.assertFlagged(r, 3, "result-mismatch", new)

    # --- fork detection ---------------------------------------------------

    def test_fork_detection_and_accept_rewrite(self):
        r, p = self.history()
        res, _, summary = self.verify(r)
        self.assertEqual(res.code, 0, res)
        memo = os.path.join(r.gitdir(), "git-locks", "verified-tip")
        with open(memo) as f:
            self.assertEqual(f.read().strip(), summary["tip"])
        old_tip = summary["tip"]
        # A new legitimate transition descends from it.
        r.now += 1000
        self.assertOk(r.run("bob", "claim", "--ttl", "60s", "lib/"))
        res, _, summary = self.verify(r)
        self.assertEqual(res.code, 0, res)
        old_tip = summary["tip"]
        # Rewritten history: the same trees, new commits (a valid chain).
        ids = p.chain()
        new = p.rebuild([p.tree_of(c) for c in ids[:-1]], ["rewritten"] * (len(ids) - 1))
        res, verdicts, summary = self.verify(r)
        self.assertEqual(res.code, 1, res)
        self.assertTrue(all(v["ok"] for v in verdicts))
        self.assertFalse(summary["ok"])
        self.assertEqual(summary["fork"], {"verified_tip": old_tip, "tip": new[-1]})
        human = r.run("dave", "verify")
        self.assertEqual(human.code, 1, human)
        self.assertIn(old_tip, human.out)
        self.assertIn(new[-1], human.out)
        self.assertIn("rewritten", human.out)
        with open(memo) as f:
            self.assertEqual(f.read().strip(), old_tip)  # not forgotten without consent
        # Explicit acceptance resets the memory and says so.
        acc = r.run("dave", "verify", "--accept-rewrite")
        self.assertEqual(acc.code, 0, acc)
        self.assertIn("accepted rewrite: forgot the last verified tip " + old_tip, acc.out)
        with open(memo) as f:
            self.assertEqual(f.read().strip(), new[-1])
        res, _, summary = self.verify(r)
        self.assertEqual(res.code, 0, res)
        self.assertNotIn("fork", summary)

    def test_rollback_is_a_fork(self):
        r, p = self.history()
        self.assertEqual(self.verify(r)[0].code, 0)
        ids = p.chain()
        p.git("update-ref", "refs/locks/state", ids[-3])  # hides two transitions
        res, _, summary = self.verify(r)
        self.assertEqual(res.code, 1, res)
        self.assertEqual(summary["fork"], {"verified_tip": ids[-1], "tip": ids[-3]})

    def test_invalid_history_is_not_remembered(self):
        r, p = self.history()
        ids = p.chain()
        trees = [p.tree_of(c) for c in ids]
        trees[6] = p.put(trees[6], "stray", p.blob(b"x"))
        p.rebuild(trees, [p.message(c) for c in ids])
        self.assertFlagged(r, 6, "unexpected-entry")
        self.assertFalse(os.path.exists(os.path.join(r.gitdir(), "git-locks", "verified-tip")))

    # --- export -----------------------------------------------------------

    def test_export_bundle(self):
        r, p = self.history()
        out = os.path.join(r.root, "store.bundle")
        res = r.run("dave", "--json", "export", "--bundle", out)
        self.assertOk(res)
        self.assertEqual(res.json, {"bundle": out, "ref": "refs/locks/state", "tip": r.tip(), "archive": False})
        p.git("bundle", "verify", out)
        heads = p.git("bundle", "list-heads", out).decode().split()
        self.assertEqual(heads, [r.tip(), "refs/locks/state"])
        # The bundle is a complete store: a clone of it verifies.
        clone = os.path.join(r.root, "clone")
        subprocess.run(["git", "init", "-q", clone], check=True)
        subprocess.run(["git", "-C", clone, "fetch", "-q", out, "refs/locks/state:refs/locks/state"], check=True)
        v = subprocess.run([os.environ["GIT_LOCKS_BIN"], "--repo", clone, "verify"], capture_output=True, text=True,
                           env=r.env("dave"))
        self.assertEqual(v.returncode, 0, v.stderr)
        self.assertUsage(r.run("dave", "export"))

    def test_export_without_store(self):
        r = self.repo(init=False)
        bundle = os.path.join(r.root, "x.bundle")
        res = r.run("dave", "export", "--bundle", bundle)
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("store-read", "store-read", "store-read",
                                                                      "export"), res)
        self.assertEqual(e["detail"], "no lock store in this repository (refs/locks/state is missing): run "
                                      "`git-locks init`")
        self.assertEqual(res.out, "")
        self.assertFalse(os.path.exists(bundle))


if __name__ == "__main__":
    unittest.main()
