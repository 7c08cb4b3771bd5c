"""Admission through the CLI: two or more identities on a real repository,
time moved with GIT_LOCKS_NOW_MS. Every refusal leaves refs/locks/state
where it was."""

import json
import os
import unittest

from support import T0, CliTest


class Conflicts(CliTest):
    def test_exclusive_shared_matrix(self):
        r = self.repo()
        self.claimed(r, "alice", "src/a.c")
        with self.unchanged(r):
            e = self.assertRefused(self.claim(r, "bob", "src/a.c"), "held-path")
            self.assertIn("alice", e["detail"])
            self.assertEqual(e["op"], "claim")
            self.assertRefused(self.claim(r, "bob", "src/a.c", mode="shared"), "held-path")
        self.claimed(r, "alice", "doc/", mode="shared")
        self.claimed(r, "bob", "doc/", mode="shared")  # shared + shared admitted
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "carol", "doc/"), "held-path")
            self.assertRefused(self.claim(r, "carol", "doc/x.md"), "held-path")
        self.claimed(r, "carol", "doc/x.md", mode="shared")

    def test_directory_claim_covers_paths_below_and_above(self):
        r = self.repo()
        self.claimed(r, "alice", "src/")
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "bob", "src/deep/file.c"), "held-path")
        self.claimed(r, "bob", "srcx/file.c")  # component-wise, not a string prefix
        self.claimed(r, "alice", "lib/deep/file.c")
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "bob", "lib/"), "held-path")
            self.assertRefused(self.claim(r, "bob", "lib/deep/", mode="shared"), "held-path")
        self.claimed(r, "bob", "lib/other.c")

    def test_claim_is_atomic_over_all_paths(self):
        r = self.repo()
        self.claimed(r, "bob", "taken")
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "alice", "free", "taken"), "held-path")
        status = r.run("alice", "--json", "status", "free").json
        self.assertEqual(status["leases"], [])


class Families(CliTest):
    POLICY = {"families": [
        {"name": "db", "policy": "exclusive", "members": ["db/schema.sql", "db/migrations/"]},
        {"name": "docs", "policy": "shared", "members": ["docs/"]},
    ]}

    def test_exclusive_family(self):
        r = self.repo(policy=self.POLICY)
        self.claimed(r, "alice", "db/schema.sql")
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "bob", "db/migrations/001.sql"), "family-policy")
            self.assertRefused(self.claim(r, "bob", "db/migrations/001.sql", mode="shared"), "family-policy")
        self.claimed(r, "alice", "db/migrations/001.sql")  # the same holder may claim more members
        self.assertOk(r.run("alice", "release", "db/schema.sql", "db/migrations/001.sql"))
        self.claimed(r, "bob", "db/migrations/002.sql")

    def test_shared_family(self):
        r = self.repo(policy=self.POLICY)
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "bob", "docs/a.md"), "family-policy")
        self.claimed(r, "bob", "docs/a.md", mode="shared")
        self.claimed(r, "alice", "docs/a.md", mode="shared")


class Semaphores(CliTest):
    def acquire(self, r, who, limit, ttl="60s"):
        return r.run(who, "--json", "sem", "acquire", "ci", "--limit", str(limit), "--ttl", ttl)

    def test_full_and_mismatched_limit(self):
        r = self.repo()
        self.assertOk(self.acquire(r, "a", 2))
        with self.unchanged(r):
            e = self.assertRefused(self.acquire(r, "b", 3), "limit-mismatch")
            self.assertIn("limit 2", e["detail"])
        self.assertOk(self.acquire(r, "b", 2, ttl="5s"))
        with self.unchanged(r):
            self.assertRefused(self.acquire(r, "c", 2), "full-semaphore")
        r.now += 5001  # b's slot expired: reclaimed
        res = self.assertOk(self.acquire(r, "c", 2))
        self.assertEqual(res.json["leases"][0]["generation"], 3)
        self.assertOk(r.run("a", "sem", "release", "ci"))
        with self.unchanged(r):
            self.assertRefused(r.run("a", "sem", "release", "ci"), "not-holder")
        self.assertOk(self.acquire(r, "d", 2))


class Expiry(CliTest):
    def test_reclaim_only_strictly_after_expiry_with_next_generation(self):
        r = self.repo()
        first = self.claimed(r, "alice", "f", ttl="5s")
        self.assertEqual(first["leases"][0]["generation"], 1)
        expiry = T0 + 5000
        for t in (expiry - 1, expiry):
            r.now = t
            with self.unchanged(r):
                self.assertRefused(self.claim(r, "bob", "f"), "held-path")
        r.now = expiry + 1
        out = self.claimed(r, "bob", "f")
        self.assertEqual(out["action"], "reclaim")
        self.assertEqual(out["leases"][0]["generation"], 2)
        self.assertEqual(out["ops"][0]["reclaims"][0]["lease"], first["leases"][0]["lease"])

    def test_extend_before_at_and_after_expiry(self):
        r = self.repo()
        lease = self.claimed(r, "alice", "f", ttl="5s")["leases"][0]["lease"]
        r.now = T0 + 5000  # at expiry: still renewable
        res = self.assertOk(r.run("alice", "--json", "extend", "--ttl", "10s", lease))
        self.assertEqual(res.json["leases"][0]["expires_at"], T0 + 15000)
        self.assertEqual(res.json["leases"][0]["generation"], 1)  # extend keeps the generation
        r.now = T0 + 15001  # after expiry
        with self.unchanged(r):
            self.assertRefused(r.run("alice", "extend", "--ttl", "10s", lease), "guard-window")

    def test_non_increasing_expiry_refused(self):
        r = self.repo()
        self.claimed(r, "alice", "f", ttl="60s")
        r.now = T0 + 1000
        with self.unchanged(r):
            e = self.assertRefused(r.run("alice", "extend", "--ttl", "59s", "f"), "guard-window")
            self.assertIn("later", e["detail"])
        self.assertOk(r.run("alice", "extend", "--ttl", "60s", "f"))

    def test_sweep_removes_only_expired_leases(self):
        r = self.repo()
        self.claimed(r, "alice", "old", ttl="2s")
        self.claimed(r, "bob", "new", ttl="60s")
        r.now = T0 + 2001
        res = self.assertOk(r.run("carol", "--json", "sweep"))
        self.assertEqual(res.json["action"], "sweep")
        leases = r.run("carol", "--json", "status", "--all").json["leases"]
        self.assertEqual([l["path"] for l in leases], ["new"])
        with self.unchanged(r):
            res = self.assertOk(r.run("carol", "--json", "sweep"))
            self.assertEqual(res.json["swept"], 0)


class Holders(CliTest):
    def test_release_and_extend_by_a_non_holder_refused(self):
        r = self.repo()
        lease = self.claimed(r, "alice", "f")["leases"][0]["lease"]
        with self.unchanged(r):
            for args in (["release", lease], ["release", "f"], ["extend", lease], ["extend", "f"]):
                e = self.assertRefused(r.run("bob", *args), "not-holder")
                self.assertEqual(e["op"], args[0])
            self.assertRefused(r.run("bob", "release", "nothing-here"), "not-holder")
        self.assertOk(r.run("alice", "release", lease))
        with self.unchanged(r):
            self.assertRefused(r.run("alice", "release", lease), "not-holder")

    def test_claiming_or_acquiring_again_is_a_refusal_not_a_usage_error(self):
        r = self.repo()
        claimed = self.claimed(r, "alice", "f")
        lease = claimed["leases"][0]["lease"]
        self.assertOk(r.run("alice", "sem", "acquire", "s", "--limit", "2"))
        with self.unchanged(r):
            e = self.assertRefused(r.run("alice", "claim", "f"), "already-held")
            self.assertIn("extend it instead", e["detail"])
            me = r.run("alice", "--json", "whoami").json
            self.assertEqual(e["holder"], me["actor"])
            self.assertIn(lease, e["detail"])
            self.assertRefused(r.run("alice", "sem", "acquire", "s", "--limit", "2"), "already-held")
            # --wait does not wait for one's own lease: refused at once.
            self.assertRefused(r.run("alice", "claim", "--wait=30s", "f"), "already-held")

    def test_stale_generation_refused(self):
        r = self.repo()
        self.claimed(r, "alice", "f", ttl="5s")
        r.now = T0 + 5001
        self.claimed(r, "bob", "f")  # reclaim: generation 2
        with self.unchanged(r):
            self.assertRefused(r.run("alice", "release", "--generation", "1", "f"), "stale-generation", "superseded")
            self.assertRefused(r.run("bob", "release", "--generation", "1", "f"), "stale-generation")
            self.assertRefused(r.run("bob", "extend", "--generation", "1", "f"), "stale-generation")
            e = self.assertRefused(r.run("bob", "fence", "f", "1"), "stale-generation")
            self.assertEqual((e["resource"], e["generation"], e["current_generation"]), ("path:f", 1, 2))
        self.assertOk(r.run("bob", "release", "--generation", "2", "f"))

    def test_fence(self):
        r = self.repo()
        self.claimed(r, "alice", "f", ttl="5s")
        res = self.assertOk(r.run("anyone", "--json", "fence", "f", "1"))
        self.assertTrue(res.json["live"])
        self.assertEqual(res.json["resource"], "path:f")
        self.assertOk(r.run("anyone", "fence", "path:f", "1"))
        self.assertRefused(r.run("anyone", "fence", "f", "2"), "stale-generation")
        self.assertRefused(r.run("anyone", "fence", "g", "1"), "stale-generation")
        r.now = T0 + 5001  # expired: no longer a live generation
        self.assertRefused(r.run("anyone", "fence", "f", "1"), "stale-generation")
        self.assertOk(r.run("a", "sem", "acquire", "s", "--limit", "1"))
        self.assertOk(r.run("anyone", "fence", "sem:s", "1"))
        self.assertUsage(r.run("anyone", "fence", "f", "x"))
        self.assertUsage(r.run("anyone", "fence", "a//b", "1"), "bad-path")


class Batches(CliTest):
    def test_all_or_nothing(self):
        r = self.repo()
        self.claimed(r, "bob", "taken")
        lines = [{"op": "claim", "path": "free"}, {"op": "sem-acquire", "sem": "s", "limit": 1},
                 {"op": "claim", "path": "taken", "ttl": "30s"}]
        text = "\n".join(json.dumps(l) for l in lines) + "\n"
        with self.unchanged(r):
            e = self.assertRefused(r.run("alice", "batch", stdin=text), "held-path")
            self.assertIn("line 3", e["detail"])
            # The failing op and its line as fields: nobody parses the message.
            self.assertEqual((e["op_index"], e["op_kind"], e["line"]), (2, "claim", 3))
            # A batch line's own TTL out of the policy's bounds is named by its line, not as --ttl.
            e = self.assertRefused(r.run("alice", "batch", stdin=json.dumps({"op": "claim", "path": "free", "ttl": "2h"}) + "\n"),
                                   "guard-window")
            self.assertEqual((e["detail"], e["line"], e["ttl_ms"]), ("line 1: ttl 2h exceeds this store's max_ttl 1h", 1, 7200000))
        self.assertEqual(r.run("alice", "--json", "status", "free").json["leases"], [])
        text = "\n".join(json.dumps(l) for l in lines[:2]) + "\n\n"
        res = self.assertOk(r.run("alice", "--json", "batch", "-", stdin=text))
        self.assertEqual(res.json["action"], "batch")
        self.assertEqual(len(res.json["leases"]), 2)
        # extend and release in one transition, by path, semaphore and lease id
        lease = res.json["leases"][0]["lease"]
        path = os.path.join(r.root, "ops.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps({"op": "extend", "lease": lease, "ttl": 1200000}) + "\n")
            f.write(json.dumps({"op": "sem-release", "sem": "s"}) + "\n")
        self.assertOk(r.run("alice", "batch", path))
        self.assertOk(r.run("alice", "batch", stdin=json.dumps({"op": "release", "path": "free"})))
        self.assertEqual(r.run("alice", "--json", "status").json["leases"][0]["path"], "taken")

    def test_malformed_lines_exit_64_naming_the_line(self):
        r = self.repo()
        good = json.dumps({"op": "claim", "path": "ok"})
        cases = {
            "{not json": ("bad-json", "line 2"),
            "[1, 2]": ("bad-json", "line 2"),
            json.dumps({"op": "claim"}): ("usage", "line 2"),
            json.dumps({"op": "claim", "path": "x", "bogus": 1}): ("usage", "line 2"),
            json.dumps({"op": "explode"}): ("usage", "line 2"),
            json.dumps({"op": "claim", "path": "x", "ttl": "soon"}): ("usage", "line 2"),
            json.dumps({"op": "claim", "path": "x", "ttl": 1.5}): ("bad-json", "line 2"),
            json.dumps({"op": "claim", "path": "a/../b"}): ("bad-path", "line 2"),
            json.dumps({"op": "claim", "path": "x", "mode": "weird"}): ("usage", "line 2"),
            json.dumps({"op": "release", "path": "x", "lease": "y"}): ("usage", "line 2"),
        }
        with self.unchanged(r):
            for bad, (code, where) in cases.items():
                with self.subTest(line=bad):
                    e = self.assertUsage(r.run("alice", "batch", stdin=good + "\n" + bad + "\n"), code)
                    self.assertIn(where, e["detail"])
                    self.assertEqual(e["line"], 2)
            self.assertUsage(r.run("alice", "batch", stdin="\n\n"))
            self.assertUsage(r.run("alice", "batch", os.path.join(r.root, "missing.jsonl")))


class BadInput(CliTest):
    def test_bad_paths_exit_64_and_change_nothing(self):
        r = self.repo()
        self.claimed(r, "alice", "ok")
        with self.unchanged(r):
            for p in ("/abs", "a//b", "./a", "a/../b", "a\\b", "..", "a/./b", "x\x01y"):
                with self.subTest(path=p):
                    self.assertUsage(self.claim(r, "bob", p), "bad-path")
            self.assertUsage(r.run("alice", "release", "a//b"), "bad-path")
            self.assertUsage(r.run("alice", "wait", "a//b"), "bad-path")
            self.assertUsage(r.run("alice", "status", "/x"), "bad-path")

    def test_bad_flags_and_values(self):
        r = self.repo()
        with self.unchanged(r):
            self.assertUsage(r.run("alice", "claim", "--bogus", "x"))
            self.assertUsage(r.run("alice", "claim", "--ttl", "5 minutes", "x"))
            self.assertUsage(r.run("alice", "claim", "--ttl"))
            self.assertUsage(r.run("alice", "claim"))
            self.assertUsage(r.run("alice", "--bogus", "status"))
            self.assertUsage(r.run("alice", "frobnicate"))
            self.assertUsage(r.run("alice", "sem", "acquire", "s"))  # --limit is required
            self.assertUsage(r.run("alice", "sem", "acquire", "s", "--limit", "-1"))
            self.assertRefused(self.claim(r, "alice", "x", ttl="999ms"), "guard-window")  # under MIN_TTL
            self.assertRefused(self.claim(r, "alice", "x", ttl="2h"), "guard-window")  # over MAX_TTL
            self.assertUsage(r.run("alice", "claim", "--mode", "sideways", "x"))
            self.assertUsage(r.run("alice", "claim", "x", env={"GIT_LOCKS_NOW_MS": "yesterday"}))

    def test_commands_need_a_store(self):
        r = self.repo(init=False)
        self.assertUsage(self.claim(r, "alice", "x"))
        self.assertIsNone(r.tip())
        res = self.assertOk(r.run("alice", "--json", "status"))
        self.assertIsNone(res.json["store"])


if __name__ == "__main__":
    unittest.main()
