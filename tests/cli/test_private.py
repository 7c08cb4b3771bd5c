"""PRIVATE stores end to end (docs/PRIVATE.md): members read and write sealed
records; a non-member and the Git host see no path, note, holder name or
expiry; tampered or swapped ciphertexts are rejected; removal starts an epoch
the removed member cannot open; a pending keyring transition blocks writers
(and guard time) until `member rekey`."""

import hashlib
import json
import os
import subprocess
import tempfile
import unittest

# Debian's python3-cryptography (toolchains/setup.sh): forged commits are
# re-signed with the actor's own key, so only the sealed records are wrong.
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from support import CliTest, T0

PACKET_DOMAIN = b"gitlocks/packet/v1\x00"  # docs/FORMAT.md: the packet signature's prefix

SECRET_PATHS = ["secret/q3-budget.xlsx", "secret/forecast/2027-plan.csv"]
NOTE = "merger-talks-with-initech"
NAMES = {"owner": "Olivia Ownerperson", "alice": "Alice Liddell-Quux", "bob": "Bob Bobbington",
         "mallory": "Mallory Malvolio"}
FAMILIES = {"families": [{"name": "finance-room", "policy": "exclusive",
                          "members": ["secret/q3-budget.xlsx", "secret/forecast/"]}]}


def canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def named(actor):
    return {"GIT_CONFIG_VALUE_0": NAMES[actor]}


class PrivateTest(CliTest):
    def setUp(self):
        self.r = self.repo(init=False)
        pfile = os.path.join(self.r.root, "policy.json")
        with open(pfile, "w") as f:
            json.dump(FAMILIES, f)
        res = self.run_as("owner", "--json", "init", "--private", "--policy", pfile)
        self.assertOk(res)
        self.assertEqual(res.json["policy"]["visibility"], "PRIVATE")
        self.assertEqual(res.json["policy"]["epoch"], 1)
        self.keys = {a: self.actor(a) for a in NAMES}

    def run_as(self, actor, *args, env=None):
        e = named(actor)
        e.update(env or {})
        return self.r.run(actor, *args, env=e)

    def actor(self, name):
        res = self.run_as(name, "--json", "whoami")
        self.assertOk(res)
        return res.json["actor"]

    def add(self, who, env=None):
        res = self.run_as("owner", "--json", "member", "add", self.keys[who], env=env)
        self.assertOk(res)
        return res.json

    def everything_public(self):
        """Every object in the repository (what the Git host stores) and the log messages."""
        objects = subprocess.run(["git", "-C", self.r.path, "cat-file", "--batch-all-objects", "--batch"],
                                 capture_output=True, check=True).stdout.decode("latin-1")
        log = self.r.git("log", "--format=%B", "refs/locks/state")
        return objects + log

    def assertNoPlaintext(self, secrets):
        public = self.everything_public()
        for s in secrets:
            self.assertNotIn(s, public, f"plaintext {s!r} is visible to the Git host")

    def status(self, actor):
        return self.run_as(actor, "--json", "status")

    # -- members read and write; nobody else sees anything --------------------

    def test_members_work_and_nothing_leaks(self):
        add = self.add("alice")
        self.assertEqual(add["epoch"], 2)
        self.assertEqual([c["action"] for c in add["commits"]], ["member-add", "rekey"])
        res = self.run_as("alice", "--json", "claim", "--ttl", "777s", "--note", NOTE, SECRET_PATHS[0])
        self.assertOk(res)
        res = self.run_as("alice", "--json", "sem", "acquire", "render-farm-secret", "--limit", "2", "--ttl", "555s")
        self.assertOk(res)
        # The families are sealed, yet enforced: the owner cannot take the other family member.
        self.assertRefused(self.run_as("owner", "--json", "claim", SECRET_PATHS[1]), "family-policy")
        st = self.status("owner")
        self.assertOk(st)
        leases = {l.get("path") or l.get("sem"): l for l in st.json["leases"]}
        self.assertEqual(leases[SECRET_PATHS[0]]["note"], NOTE)
        self.assertEqual(leases[SECRET_PATHS[0]]["name"], NAMES["alice"])
        self.assertEqual(leases[SECRET_PATHS[0]]["expires_at"], T0 + 777_000)
        self.assertEqual(st.json["policy"]["families"][0]["name"], "finance-room")
        secrets = SECRET_PATHS + ["q3-budget", "forecast", "secret/", NOTE, "finance-room",
                                  "render-farm-secret"] + list(NAMES.values())
        self.assertNoPlaintext(secrets + [str(T0 + 777_000), str(T0 + 555_000)])
        # extend / fence by a member go through the sealed records.
        lease = leases[SECRET_PATHS[0]]
        self.assertOk(self.run_as("alice", "fence", SECRET_PATHS[0], str(lease["generation"])))
        self.assertOk(self.run_as("alice", "--json", "extend", "--ttl", "888s", lease["lease"]))
        # Known disclosure: an extend's clear admission interval ends at the
        # lease's old expiry (T <= expires_at is its guard), so 777000 is now
        # public; the new expiry is not.
        # A member's log shows what happened; the commit messages do not.
        log = self.run_as("alice", "log")
        self.assertOk(log)
        self.assertIn(SECRET_PATHS[0], log.out)
        # A non-member: refused, with a clear message, for reads and writes alike.
        for args in (["status"], ["claim", "x"], ["fence", SECRET_PATHS[0], "1"], ["sweep"]):
            e = self.assertRefused(self.run_as("mallory", "--json", *args), "not-member")
            self.assertIn("not one of its members", e["detail"])
        mlog = self.run_as("mallory", "log")
        self.assertOk(mlog)
        self.assertNotIn("secret", mlog.out)
        self.assertNoPlaintext(secrets + [str(T0 + 555_000), str(T0 + 888_000)])

    # -- tampering ------------------------------------------------------------

    def record_blobs(self):
        """{path in the commit tree: blob id} of every record at the tip."""
        out = {}
        for line in self.r.git("ls-tree", "-r", "refs/locks/state").splitlines():
            meta, path = line.split("\t", 1)
            if path.startswith("state/records/"):
                out[path] = meta.split()[2]
        return out

    def forge(self, replace):
        """Replaces the tip (the owner's claim) by a commit on the same parent
        whose state has `replace` {path: new blob}, made with plumbing, its
        packet re-signed by the owner over the new state tree: signature,
        chain and checkpoints hold, only the sealed records are wrong."""
        tip = self.r.git("rev-parse", "refs/locks/state").strip()
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, GIT_INDEX_FILE=os.path.join(d, "index"))
            self.r.git("read-tree", tip, env=env)
            for path, blob in replace.items():
                self.r.git("update-index", "--cacheinfo", f"100644,{blob},{path}", env=env)
            packet = json.loads(self.r.git("cat-file", "blob", f"{tip}:txn/packet.json"))["packet"]
            self.assertEqual(packet["actor"], self.keys["owner"])
            packet["result"] = self.r.git("write-tree", "--prefix=state/", env=env).strip()
            with open(self.r.key("owner")) as f:
                key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(json.load(f)["seed"]))
            sig = key.sign(PACKET_DOMAIN + canon(packet)).hex()
            blob = self.write_blob(canon({"packet": packet, "sig": sig}).decode())
            self.r.git("update-index", "--cacheinfo", f"100644,{blob},txn/packet.json", env=env)
            tree = self.r.git("write-tree", env=env).strip()
        message = self.r.git("log", "-1", "--format=%B", tip)
        commit = self.r.git("commit-tree", "-p", f"{tip}^", "-m", message, tree).strip()
        self.r.git("update-ref", "refs/locks/state", commit, tip)
        return commit

    def write_blob(self, text):
        return subprocess.run(["git", "-C", self.r.path, "hash-object", "-w", "--stdin"], input=text,
                              capture_output=True, text=True, check=True).stdout.strip()

    def assertForgeryRejected(self, forged):
        """A member reads nothing from the forged tip (it replaces the
        verified tip: invalid history, issue 15), and full verification
        flags exactly the forged commit: re-planning its body does not give
        the sealed state it carries."""
        res = self.status("owner")
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"], e["commit"]),
                         ("store-read", "invalid-history", "invalid-history", "status", forged), res)
        res = self.run_as("owner", "--json", "verify")
        self.assertEqual(res.code, 1, res)
        verdicts = [json.loads(line) for line in res.out.splitlines()]
        self.assertEqual([(v["command"], v["ok"], v["level"]) for v in verdicts],
                         [("init", True, "full"), ("claim", False, "full")], verdicts)
        self.assertEqual((verdicts[1]["commit"], verdicts[1]["reason"]), (forged, "result-mismatch"), verdicts)
        summary = json.loads(res.err.strip().splitlines()[-1])
        self.assertEqual((summary["ok"], summary["invalid"], summary["first_invalid"]), (False, 1, forged), summary)

    def test_handoff_to_a_member_only(self):
        # docs/FORMAT.md "Hand-off": in a PRIVATE store the receiver must be a
        # member of the current epoch (it could not open the record otherwise).
        self.add("alice")
        self.add("bob")
        self.assertOk(self.run_as("alice", "--json", "claim", "--ttl", "10m", SECRET_PATHS[0]))
        tip = self.r.tip()
        e = self.assertRefused(self.run_as("alice", "--json", "handoff", SECRET_PATHS[0], "--to", self.keys["mallory"]),
                               "not-member")
        self.assertIn("not a member of this PRIVATE store", e["detail"])
        self.assertEqual(self.r.tip(), tip)
        res = self.run_as("alice", "--json", "handoff", SECRET_PATHS[0], "--to", self.keys["bob"], "--to-name",
                          NAMES["bob"])
        self.assertOk(res)
        leases = [l for l in self.status("bob").json["leases"] if l.get("path") == SECRET_PATHS[0]]
        self.assertEqual([(l["holder"], l["name"], l["generation"], l["mine"]) for l in leases],
                         [(self.keys["bob"], NAMES["bob"], 2, True)])
        self.assertNoPlaintext(SECRET_PATHS + [NAMES["bob"]])
        v = self.run_as("owner", "--json", "verify", "--full")
        self.assertEqual(v.code, 0, v)
        self.assertEqual([json.loads(line)["command"] for line in v.out.splitlines()][-1], "handoff")

    def test_watch_goes_on_across_a_rekey(self):
        # docs/CLI.md "watch": each commit is opened with its own epoch's keys,
        # so a member's watch reads on across the member-add and rekey commits.
        import json as _json
        self.assertOk(self.run_as("owner", "--json", "claim", "--ttl", "10m", "other/plan.txt"))  # sealed under epoch 1
        proc = self.r.popen("owner", "--json", "watch", "--max-events", "1", env=named("owner"))
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.wait(), proc.stdout.close(),
                                 proc.stderr.close()))
        self.assertEqual(_json.loads(proc.stdout.readline())["event"], "watching")
        self.add("alice")  # member-add and rekey: a new epoch
        self.assertOk(self.run_as("alice", "--json", "claim", "--ttl", "10m", SECRET_PATHS[0]))
        self.assertEqual(proc.wait(timeout=30), 0, proc.stderr.read())
        events = [_json.loads(line) for line in proc.stdout.read().splitlines()]
        self.assertEqual([e["event"] for e in events], ["claimed"], events)
        self.assertEqual((events[-1]["path"], events[-1]["holder"]), (SECRET_PATHS[0], self.keys["alice"]))

    def test_tampered_ciphertext_rejected(self):
        self.assertOk(self.run_as("owner", "claim", "a.txt", "b.txt"))
        blobs = self.record_blobs()
        self.assertEqual(len(blobs), 2)
        path, blob = sorted(blobs.items())[0]
        doc = json.loads(self.r.git("cat-file", "-p", blob))
        ct = doc["sealed"]["ct"]
        doc["sealed"]["ct"] = ct[:10] + ("1" if ct[10] == "0" else "0") + ct[11:]
        self.assertForgeryRejected(self.forge({path: self.write_blob(canon(doc).decode())}))

    def test_swapped_ciphertexts_rejected(self):
        self.assertOk(self.run_as("owner", "claim", "a.txt", "b.txt"))
        (pa, ba), (pb, bb) = sorted(self.record_blobs().items())
        self.assertForgeryRejected(self.forge({pa: bb, pb: ba}))

    def test_a_keyless_checkpoint_is_not_a_members(self):
        """A non-member's verify can check a PRIVATE store structurally only, and the clone's
        checkpoint says so (full false, no verifier). A member of the same clone does not build
        on it: it replays from the root with its keys and refuses the forgery the keyless check
        could not see."""
        self.assertOk(self.run_as("owner", "claim", "a.txt", "b.txt"))
        (pa, ba), (pb, bb) = sorted(self.record_blobs().items())
        forged = self.forge({pa: bb, pb: ba})
        # The forgery replaced the tip this clone had verified: mallory accepts the rewrite.
        res = self.run_as("mallory", "--json", "verify", "--accept-rewrite")
        self.assertEqual(res.code, 0, res)
        verdicts = [json.loads(line) for line in res.out.splitlines()]
        self.assertEqual([(v["commit"], v["ok"], v["level"]) for v in verdicts][-1], (forged, True, "structural"))
        with open(os.path.join(self.r.path, ".git", "git-locks", "trust", "local.json")) as f:
            trust = json.load(f)["trust"]
        self.assertEqual((trust["commit"], trust["full"], trust["verifier"]), (forged, False, ""), trust)
        self.assertForgeryRejected(forged)

    # -- membership and epochs ------------------------------------------------

    def test_removed_member_cannot_read_the_new_epoch(self):
        self.add("alice")
        self.assertOk(self.run_as("alice", "claim", "--note", NOTE, "shared/before.md"))
        self.assertOk(self.status("alice"))
        res = self.run_as("owner", "--json", "member", "remove", self.keys["alice"])
        self.assertOk(res)
        self.assertEqual(res.json["epoch"], 3)
        self.assertEqual(res.json["members"], [self.keys["owner"]])
        self.assertOk(self.run_as("owner", "claim", "after-removal/plan.md"))
        e = self.assertRefused(self.status("alice"), "not-member")
        self.assertIn("epoch 3", e["detail"])
        self.assertRefused(self.run_as("alice", "--json", "claim", "x"), "not-member")
        # The owner still reads everything, re-sealed under epoch 3.
        st = self.status("owner")
        self.assertOk(st)
        self.assertEqual(sorted(l["path"] for l in st.json["leases"]), ["after-removal/plan.md", "shared/before.md"])
        lst = self.run_as("alice", "--json", "member", "list")
        self.assertOk(lst)
        self.assertEqual(lst.json["epoch"], 3)
        self.assertNotIn(self.keys["alice"], lst.json["members"])
        # Only the owner changes membership.
        self.add("bob")
        self.assertRefused(self.run_as("bob", "--json", "member", "add", self.keys["mallory"]), "not-holder",
                           reason="not-owner")

    def test_interrupted_transition_blocks_writers_until_rekey(self):
        self.add("alice")
        res = self.add("bob", env={"GIT_LOCKS_TEST_STOP_AFTER_PENDING": "1"})
        self.assertTrue(res["pending"])
        lst = self.run_as("owner", "--json", "member", "list")
        self.assertEqual(lst.json["pending"], [self.keys["owner"], self.keys["alice"], self.keys["bob"]])
        with self.unchanged(self.r):
            self.assertUsage(self.run_as("alice", "--json", "claim", "x"))
            # A second membership change waits for the first.
            self.assertUsage(self.run_as("owner", "--json", "member", "add", self.keys["mallory"]))
            # Guard time needs "an active keyring without a pending transition" (seed 002).
            policy_hash = hashlib.sha256(subprocess.run(
                ["git", "-C", self.r.path, "cat-file", "blob", "refs/locks/state:state/policy.json"],
                capture_output=True, check=True).stdout).hexdigest()
            gt = self.run_as("owner", "--json", "guard-time", "enable", "--audience", "a", "--service-key",
                             self.keys["mallory"], "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                             policy_hash, "--operation-id", "op-1")
            e = self.assertUsage(gt, "usage")
            self.assertIn("a keyring transition is pending", e["detail"])
        res = self.run_as("owner", "--json", "member", "rekey")
        self.assertOk(res)
        self.assertEqual(res.json["epoch"], 3)
        self.assertOk(self.run_as("bob", "claim", "y"))
        self.assertOk(self.run_as("alice", "claim", "x"))
        self.assertUsage(self.run_as("owner", "--json", "member", "rekey"))

    # -- verification at two levels -----------------------------------------

    def verdicts(self, actor):
        res = self.run_as(actor, "--json", "verify", "--full")
        self.assertEqual(res.code, 0, res)
        summary = json.loads(res.err.strip().splitlines()[-1])
        return [json.loads(l) for l in res.out.splitlines() if l.strip()], summary

    def test_full_and_structural_verification_agree(self):
        self.add("alice")
        self.assertOk(self.run_as("alice", "claim", "--note", NOTE, SECRET_PATHS[0]))
        self.assertOk(self.run_as("alice", "release", SECRET_PATHS[0]))
        self.assertOk(self.run_as("owner", "sweep"))
        full, fsum = self.verdicts("owner")
        structural, ssum = self.verdicts("mallory")
        self.assertEqual(len(full), len(structural))
        for f, s in zip(full, structural):
            for k in ("commit", "command", "actor", "ok", "time"):
                self.assertEqual(f[k], s[k], (f, s))
            self.assertEqual(f["level"], "full", f)
        self.assertIn("structural", {s["level"] for s in structural})
        self.assertIn("not a semantic validation", ssum.get("note", ""))
        self.assertEqual(fsum["invalid"], 0)
        self.assertEqual(ssum["invalid"], 0)

    def test_public_store_has_no_members(self):
        r = self.repo()
        self.assertUsage(r.run("owner", "--json", "member", "list"))
        self.assertOk(r.run("owner", "claim", "plain.txt"))


if __name__ == "__main__":
    unittest.main()
