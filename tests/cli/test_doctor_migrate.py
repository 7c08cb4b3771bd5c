"""doctor and migrate: a format-1 store written by the independent format-1
writer (tests/reference/golden_format1_writer.py, from docs/FORMAT.md, not
from the core) in a real repository is migrated
through the ordinary publication path; doctor diagnoses stores damaged with
git plumbing (and repairs nothing)."""

import json
import os
import re
import subprocess
import sys
import time
import unittest

from support import CliTest, T0, binary, skip
from test_trust import PACKET_DOMAIN, seed_key
from test_verify import Plumbing, canon


def writer():
    path = os.environ.get("GITLOCKS_FORMAT1_WRITER")
    if not path:
        skip("GITLOCKS_FORMAT1_WRITER is not set")
    return path


class Damage:
    """Builds a commit on top of refs/locks/state whose tree is the tip's
    tree with some entries replaced, using only git plumbing."""

    def __init__(self, repo):
        self.repo = repo
        self.index = os.path.join(repo.root, "damage.index")
        self.env = dict(os.environ, GIT_INDEX_FILE=self.index)
        repo.git("read-tree", "refs/locks/state^{tree}", env=self.env)

    def put(self, path, data):
        blob = subprocess.run(["git", "-C", self.repo.path, "hash-object", "-w", "--stdin"], input=data,
                              capture_output=True, text=True, check=True).stdout.strip()
        self.repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=self.env)

    def remove(self, path):
        self.repo.git("update-index", "--force-remove", path, env=self.env)

    def commit(self):
        tree = self.repo.git("write-tree", env=self.env).strip()
        c = self.repo.git("commit-tree", "-p", "refs/locks/state", "-m", "damage", tree).strip()
        self.repo.git("update-ref", "refs/locks/state", c)
        return c


def records(repo, rev="refs/locks/state"):
    """{path in the commit tree: record} of every record."""
    out = {}
    for line in repo.git("ls-tree", "-r", "--name-only", rev, "--", "state/records").split():
        out[line] = json.loads(repo.git("cat-file", "-p", f"{rev}:{line}"))
    return out


class Doctor(CliTest):
    def doctor(self, r, **kw):
        return r.run("alice", "--json", "doctor", **kw)

    def test_healthy_store_and_expired_leases_are_info(self):
        r = self.repo()
        self.claimed(r, "alice", "src/a.c", ttl="60s")
        res = self.assertOk(self.doctor(r))
        self.assertTrue(res.json["healthy"])
        self.assertFalse(res.json["repairs"])
        self.assertTrue(res.json["parent_checked"])
        self.assertIn("repairs nothing", res.json["scope"])
        self.assertIn("cannot see a publisher on another machine", res.json["scope"])
        r.now = T0 + 3_600_000
        res = self.assertOk(self.doctor(r))
        self.assertEqual([f["code"] for f in res.json["findings"]], ["expired-lease"])
        self.assertEqual(res.json["findings"][0]["severity"], "info")
        human = r.run("alice", "doctor")
        self.assertEqual(human.code, 0, human)
        self.assertIn("repairs nothing", human.out)
        self.assertIn("healthy", human.out)

    def damaged(self, change):
        r = self.repo()
        self.claimed(r, "alice", "src/a.c")
        self.claimed(r, "bob", "docs/")
        d = Damage(r)
        change(r, d)
        tip = d.commit()
        state = r.git("rev-parse", f"{tip}:state").strip()
        res = self.doctor(r)
        self.assertEqual(res.code, 1, res)
        self.assertEqual(res.err, "")
        self.assertFalse(res.json["healthy"])
        self.assertEqual(r.tip(), tip)  # doctor repairs nothing
        self.assertEqual(r.git("rev-parse", "refs/locks/state:state").strip(), state)
        return {f["code"] for f in res.json["findings"] if f["severity"] == "error"}

    def record_path(self, r, name):
        return next(p for p, rec in records(r).items() if rec["name"] == name)

    def test_malformed_record(self):
        codes = self.damaged(lambda r, d: d.put(self.record_path(r, "src/a.c"), "{\"kind\":"))
        # The unreadable lease no longer backs the intention marker of its ancestor src/.
        self.assertEqual(codes, {"malformed-record", "marker-mismatch"})

    def test_non_canonical_record(self):
        def change(r, d):
            p = self.record_path(r, "src/a.c")
            d.put(p, json.dumps(records(r)[p], indent=1))
        self.assertEqual(self.damaged(change), {"non-canonical"})

    def test_record_in_the_wrong_place(self):
        def change(r, d):
            p = self.record_path(r, "src/a.c")
            data = r.git("cat-file", "-p", f"refs/locks/state:{p}")
            d.remove(p)
            parts = p.split("/")
            parts[-2] = "00" if parts[-2] != "00" else "01"
            d.put("/".join(parts), data)
        codes = self.damaged(change)
        # The file name is still the name's hash: only its shard directory is wrong.
        self.assertEqual(codes, {"wrong-shard"})

    def test_generation_regression_against_the_parent(self):
        r = self.repo()
        self.claimed(r, "alice", "src/a.c")
        self.assertOk(r.run("alice", "release", "src/a.c"))
        self.assertEqual(self.claimed(r, "alice", "src/a.c")["leases"][0]["generation"], 2)
        d = Damage(r)
        p = self.record_path(r, "src/a.c")
        rec = records(r)[p]
        rec["generation"] = 1
        for lease in rec["leases"]:
            lease["generation"] = 1
        d.put(p, json.dumps(rec, separators=(",", ":"), sort_keys=True, ensure_ascii=False))
        d.commit()
        res = self.doctor(r)
        self.assertEqual(res.code, 1, res)
        codes = {f["code"] for f in res.json["findings"]}
        self.assertIn("generation-regression", codes)

    def test_unknown_format_version(self):
        codes = self.damaged(lambda r, d: d.put("state/format.json", '{"format":"gitlocks-state-v9"}'))
        self.assertIn("unknown-format", codes)

    def test_unreadable_store_exits_2(self):
        r = self.repo()
        blob = subprocess.run(["git", "-C", r.path, "hash-object", "-w", "--stdin"], input="not a commit",
                              capture_output=True, text=True, check=True).stdout.strip()
        r.git("update-ref", "refs/locks/state", blob)
        res = self.doctor(r)
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), ("store-read",) * 3 + ("doctor",), res)
        self.assertEqual(res.out, "")

    def test_no_store(self):
        r = self.repo(init=False)
        self.assertUsage(self.doctor(r))


class PrivateDoctor(CliTest):
    """doctor on a PRIVATE store: a member's key opens the sealed records (the same decryption layer as every
    reader), any other key leaves them sealed and counted, never called malformed."""

    def private_store(self):
        r = self.repo(init=False)
        self.assertOk(r.run("owner", "init", "--private"))
        alice = self.assertOk(r.run("alice", "--json", "whoami")).json["actor"]
        self.assertOk(r.run("owner", "member", "add", alice))
        self.assertOk(r.run("alice", "claim", "--ttl", "1h", "secret/plan.md", "secret/notes/"))
        return r

    def findings(self, res):
        return [(f["severity"], f["code"]) for f in res.json["findings"]]

    def test_a_member_sees_the_records_a_non_member_sees_them_sealed(self):
        r = self.private_store()
        member = r.run("alice", "--json", "doctor")
        self.assertEqual(member.code, 0, member)
        self.assertEqual(self.findings(member), [])
        self.assertTrue(member.json["healthy"])
        outsider = r.run("mallory", "--json", "doctor")
        self.assertEqual(outsider.code, 0, outsider)
        self.assertEqual(self.findings(outsider), [("info", "sealed-records")])
        n_records = len([l for l in r.git("ls-tree", "-r", "--name-only", "refs/locks/state", "--",
                                           "state/records").split() if l])
        self.assertIn(f"{n_records} sealed record(s)", outsider.json["findings"][0]["detail"])
        self.assertNotIn("secret", outsider.out)
        # A member reads the records: the time moves past alice's leases, and doctor says so.
        later = r.run("alice", "--json", "doctor", env={"GIT_LOCKS_NOW_MS": str(T0 + 2 * 3_600_000)})
        self.assertEqual(later.code, 0, later)
        self.assertEqual(sorted(self.findings(later)), [("info", "expired-lease")] * 2)

    def test_a_damaged_sealed_record_is_malformed_for_a_member(self):
        r = self.private_store()
        d = Damage(r)
        name = [l for l in r.git("ls-tree", "-r", "--name-only", "refs/locks/state", "--",
                                 "state/records").split() if l][0]
        d.put(name, '{"sealed":"garbage"}')
        d.commit()
        res = r.run("alice", "--json", "doctor")
        self.assertEqual(res.code, 1, res)
        self.assertIn(("error", "malformed-record"), self.findings(res))


class RefLock(CliTest):
    """A refs/locks/state.lock (seed 000: recovering an abandoned lock
    requires establishing that its writer has stopped): doctor reports its
    age and the processes of this machine that have it open, and never
    removes it."""

    def lock_file(self, r, data="0" * 40 + "\n"):
        """refs/locks/state.lock in the repository's common dir, as git
        writes it."""
        path = os.path.join(r.gitdir(), "refs", "locks", "state.lock")
        with open(path, "w") as f:
            f.write(data)
        return path

    def ref_lock(self, res):
        found = [f for f in res.json["findings"] if f["code"] == "ref-lock"]
        self.assertEqual(len(found), 1, res)
        return found[0]

    def test_an_abandoned_lock_is_a_warning_with_its_age_and_no_holder(self):
        r = self.repo()
        path = self.lock_file(r)
        age = 3600
        os.utime(path, (time.time() - age, time.time() - age))
        worktree = os.path.join(r.root, "linked")
        r.git("commit", "-q", "--allow-empty", "-m", "base")
        r.git("worktree", "add", "-q", "--detach", worktree)
        # From the repository and from a linked worktree: refs live in the common dir.
        for where in (r.path, worktree):
            with self.subTest(where=where):
                res = subprocess.run([binary(), "--repo", where, "--json", "doctor"], capture_output=True, text=True,
                                     env=r.env("alice"))
                self.assertEqual((res.returncode, res.stderr), (1, ""), res)
                out = json.loads(res.stdout)
                self.assertEqual((out["healthy"], out["errors"], out["warnings"]), (False, 0, 1))
                lock = [f for f in out["findings"] if f["code"] == "ref-lock"]
                self.assertEqual(len(lock), 1, out)
                lock = lock[0]
                self.assertEqual((lock["severity"], lock["location"], lock["held_by"]),
                                 ("warning", "refs/locks/state.lock", []))
                self.assertEqual(os.path.realpath(lock["path"]), os.path.realpath(path))
                self.assertGreaterEqual(lock["age_s"], age)
                self.assertLess(lock["age_s"], age + 120)
                self.assertIn(lock["holder_scan"], ("complete", "partial"))
                self.assertIn("none found", lock["detail"])
                self.assertIn("another machine", lock["detail"])
        human = r.run("alice", "doctor")
        self.assertEqual(human.code, 1, human)
        # The age is read when doctor runs: a slow machine (ASan) may be a second or more past `age`.
        m = re.search(r"warning ref-lock refs/locks/state\.lock: refs/locks/state\.lock exists, (\d+) s old",
                      human.out)
        self.assertIsNotNone(m, human.out)
        self.assertTrue(age <= int(m.group(1)) < age + 120, human.out)
        self.assertIn("held by: none found", human.out)
        # Doctor removed nothing.
        with open(path) as f:
            self.assertEqual(f.read(), "0" * 40 + "\n")

    def test_a_fresh_lock_is_info(self):
        # Younger than a few seconds: likely a publication in progress (git
        # closes its lock file before the rename, so no holder is seen).
        r = self.repo()
        path = self.lock_file(r)
        res = self.assertOk(r.run("alice", "--json", "doctor"))
        lock = self.ref_lock(res)
        self.assertEqual((lock["severity"], lock["held_by"], res.json["healthy"]), ("info", [], True))
        self.assertLess(lock["age_s"], 5)
        self.assertTrue(os.path.exists(path))

    def test_a_lock_held_open_names_its_process(self):
        r = self.repo()
        path = self.lock_file(r)
        os.utime(path, (time.time() - 60, time.time() - 60))
        holder = subprocess.Popen([sys.executable, "-c",
                                   "import sys, time\nf = open(sys.argv[1])\nprint('open', flush=True)\ntime.sleep(120)",
                                   path], stdout=subprocess.PIPE, text=True)
        self.addCleanup(holder.stdout.close)
        self.addCleanup(holder.wait, 10)
        self.addCleanup(holder.kill)
        self.assertEqual(holder.stdout.readline(), "open\n")
        with open("/proc/%d/comm" % holder.pid) as f:
            command = f.read().rstrip("\n")
        res = r.run("alice", "--json", "doctor")
        self.assertEqual((res.code, res.err), (1, ""), res)
        lock = self.ref_lock(res)
        self.assertEqual(lock["severity"], "warning")
        self.assertIn({"pid": holder.pid, "command": command}, lock["held_by"])
        self.assertIn("held open by pid %d (%s)" % (holder.pid, command), lock["detail"])
        self.assertGreaterEqual(lock["age_s"], 60)
        self.assertIsNone(holder.poll(), "the holder is still running")
        self.assertTrue(os.path.exists(path))


class Migrate(CliTest):
    def format1_store(self):
        r = self.repo(init=False)
        for actor, body in (("owner", "init"),
                            ("carol", {"ops": [{"op": "claim", "path": "src/a.c", "mode": "exclusive",
                                                "expires_at": T0 + 3_600_000}]}),
                            ("dave", {"ops": [{"op": "claim", "path": "docs/", "mode": "shared",
                                               "expires_at": T0 + 3_600_000},
                                              {"op": "sem-acquire", "sem": "ci", "limit": 2,
                                               "expires_at": T0 + 3_600_000}]})):
            arg = body if body == "init" else json.dumps(body)
            out = subprocess.run([writer(), r.path, actor, str(T0), arg], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            commit = out.stdout.strip()
            r.git("update-ref", "refs/locks/state", commit)
        self.assertEqual(json.loads(r.git("cat-file", "-p", "refs/locks/state:state/format.json")),
                         {"format": "gitlocks-state-v1"})
        return r

    def leases(self, r):
        res = self.assertOk(r.run("alice", "--json", "status"))
        return sorted((l.get("path") or l.get("sem"), l["generation"], l["id"] if "id" in l else l.get("lease"),
                       l["expires_at"]) for l in res.json["leases"])

    def test_format1_store_is_migrated_like_any_writer(self):
        r = self.repo and self.format1_store()
        before = self.leases(r)
        self.assertEqual(len(before), 3)
        # Writers refuse format 1 and point at migrate.
        with self.unchanged(r):
            res = self.claim(r, "alice", "x")
            self.assertEqual(res.code, 2, res)  # a store this version cannot write: not the caller's input
            e = res.error
            self.assertEqual((e["error"], e["code"], e["reason"]), ("store-read", "unknown-format", "unknown-format"))
        self.assertIn("migrate", e["detail"])
        old_tip = r.tip()
        old_records = sorted(json.dumps(v, sort_keys=True) for v in records(r).values())
        res = self.assertOk(r.run("alice", "--json", "migrate", env=r.wrapped()))
        self.assertTrue(res.json["migrated"])
        self.assertEqual(res.json["attempts"], 1)
        self.assertEqual(r.tip(), res.json["commit"])
        # Published through the same compare-and-swap as every writer.
        self.assertEqual(r.update_ref_log(), [
            (0, f"start\nupdate refs/locks/state {r.tip()} {old_tip}\nprepare\ncommit\n")])
        self.assertEqual(r.git("rev-parse", "refs/locks/state^").strip(), old_tip)
        self.assertEqual(json.loads(r.git("cat-file", "-p", "refs/locks/state:state/format.json")),
                         {"format": "gitlocks-state-v2"})
        new = records(r)
        self.assertTrue(all(len(p.split("/")) == 5 for p in new), list(new))  # state/records/AA/BB/H.json
        self.assertEqual(sorted(json.dumps(v, sort_keys=True) for v in new.values()), old_records)
        self.assertEqual(self.leases(r), before)
        self.assertOk(r.run("alice", "doctor"))
        # Writers carry on; generations continue.
        self.claimed(r, "alice", "x")
        self.assertRefused(self.claim(r, "alice", "src/a.c"), "held-path")
        r.now = T0 + 3_600_001
        got = self.claimed(r, "alice", "src/a.c")
        self.assertEqual(got["leases"][0]["generation"], 2)
        # Already current: says so, writes nothing.
        with self.unchanged(r):
            res = self.assertOk(r.run("alice", "migrate"))
        self.assertIn("already in the current format", res.out)

    def test_unknown_version_is_refused(self):
        # A store a newer version made: its owner's signed root creates it in a state format this
        # version does not know ("state_format" in the init body, format.json to match), complete in
        # every other respect. migrate (like every command) refuses it as unknown-format, never guesses.
        r = self.repo()
        p = Plumbing(r)
        tree = p.tree_of(r.tip())
        state = p.put(p.get(tree, "state"), "format.json", p.blob(b'{"format":"gitlocks-state-v9"}'))
        packet = json.loads(p.cat(p.get(tree, "txn/packet.json")))["packet"]
        packet["body"]["state_format"] = "gitlocks-state-v9"
        packet["result"] = state
        key = seed_key(r.key("owner"))
        signed = canon({"packet": packet, "sig": key.sign(PACKET_DOMAIN + canon(packet)).hex()})
        root = p.git("commit-tree", p.put(p.put(tree, "state", state, "tree"), "txn/packet.json", p.blob(signed)),
                     "-m", "init").decode().strip()
        r.git("update-ref", "refs/locks/state", root)
        os.remove(os.path.join(r.gitdir(), "git-locks", "trust", "local.json"))  # a clone that never saw it
        with self.unchanged(r):
            res = r.run("alice", "migrate", env=r.wrapped())
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"], e["commit"], e["verdict"]),
                         ("store-read", "unknown-format", "unknown-format", "migrate", root, "unknown-format"), res)
        self.assertIn("gitlocks-state-v9", e["detail"])
        self.assertEqual(r.update_ref_log(), [])

    def test_no_store(self):
        r = self.repo(init=False)
        self.assertUsage(r.run("alice", "migrate"))
        self.assertIsNone(r.tip())


if __name__ == "__main__":
    unittest.main()
