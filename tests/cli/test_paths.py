"""Path identity across platforms (SPEC §3, docs/FORMAT.md "Path identity"):
an NFD name (as macOS lists it) claims the NFC resource, and a store created
case-insensitive gives every case variant of a path one lease."""

import json
import os
import subprocess
import unittest

from support import CliTest

NFD = "docs/cafe\u0301.md"  # e + COMBINING ACUTE ACCENT
NFC = "docs/caf\u00e9.md"


class Nfc(CliTest):
    def test_nfd_argument_claims_the_nfc_resource(self):
        r = self.repo()
        out = self.claimed(r, "alice", NFD)
        self.assertEqual([l["resource"] for l in out["leases"]], [f"path:{NFC}"], out)
        with self.unchanged(r):
            e = self.assertRefused(self.claim(r, "bob", NFC), "held-path")
            self.assertIn(NFC, e["detail"])
            self.assertRefused(self.claim(r, "bob", NFD), "held-path")
            batch = json.dumps({"op": "claim", "path": NFD}) + "\n"
            self.assertRefused(r.run("bob", "batch", stdin=batch), "held-path")
        gen = out["leases"][0]["generation"]
        self.assertOk(r.run("alice", "fence", f"path:{NFD}", str(gen)))
        self.assertOk(r.run("alice", "fence", NFC, str(gen)))
        status = r.run("alice", "--json", "status", NFD)
        self.assertOk(status)
        self.assertEqual([l["path"] for l in status.json["leases"]], [NFC])
        self.assertOk(r.run("alice", "release", NFD))
        self.assertOk(self.claim(r, "bob", NFC))

    def test_bad_utf8_is_still_a_usage_error(self):
        r = self.repo()
        with self.unchanged(r):
            res = r.run("alice", "claim", os.fsdecode(b"caf\xc3"))
            self.assertUsage(res, "bad-path")

    def test_hook_compares_nfd_file_names_as_nfc(self):
        r = self.repo()
        os.makedirs(os.path.join(r.path, "docs"))
        with open(os.path.join(r.path, NFD), "w") as f:
            f.write("x\n")
        r.git("add", ".")
        r.git("commit", "-q", "-m", "base", env=r.env("owner"))
        self.claimed(r, "alice", NFC)
        with open(os.path.join(r.path, NFD), "w") as f:
            f.write("changed by bob\n")
        r.git("add", ".")
        res = r.run("bob", "hook", "check", "pre-commit")
        e = self.assertRefused(res, "held-path")
        self.assertIn(NFC, e["detail"])


class CaseInsensitive(CliTest):
    def test_case_variants_are_one_resource(self):
        r = self.repo(init=False)
        self.assertOk(r.run("owner", "init", "--case-insensitive"))
        out = self.claimed(r, "alice", "Src/A.c")
        self.assertEqual([l["resource"] for l in out["leases"]], ["path:src/a.c"], out)
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "bob", "src/a.c"), "held-path")
            self.assertRefused(self.claim(r, "bob", "SRC/"), "held-path")
        self.assertOk(r.run("alice", "release", "SRC/A.C"))
        self.assertOk(self.claim(r, "bob", "src/a.c"))

    def test_policy_file_option_and_folded_families(self):
        # Two members that never overlap as paths: only the family rule, on folded paths, can refuse bob.
        r = self.repo(policy={"case_insensitive": True,
                              "families": [{"name": "db", "policy": "exclusive",
                                            "members": ["db/schema.sql", "migrations/"]}]})
        self.claimed(r, "alice", "DB/Schema.SQL")
        with self.unchanged(r):
            res = self.claim(r, "bob", "MIGRATIONS/001.sql")
            self.assertRefused(res, "family-policy")
            self.assertIn("db", res.error["detail"])
        self.claimed(r, "bob", "Docs/readme.md")  # outside the family: admitted
        self.assertOk(r.run("alice", "release", "db/schema.sql"))
        self.claimed(r, "bob", "MIGRATIONS/001.sql")

    def test_policy_member_must_be_boolean(self):
        r = self.repo(init=False)
        pfile = os.path.join(r.root, "policy.json")
        with open(pfile, "w") as f:
            json.dump({"case_insensitive": "yes"}, f)
        self.assertUsage(r.run("owner", "init", "--policy", pfile), "bad-json")

    def test_case_sensitive_store_admits_both(self):
        r = self.repo()
        self.claimed(r, "alice", "Src/A.c")
        self.claimed(r, "bob", "src/a.c")

    def test_hook_compares_folded(self):
        r = self.repo(init=False)
        self.assertOk(r.run("owner", "init", "--case-insensitive"))
        os.makedirs(os.path.join(r.path, "Src"))
        with open(os.path.join(r.path, "Src", "A.c"), "w") as f:
            f.write("x\n")
        r.git("add", ".")
        r.git("commit", "-q", "-m", "base", env=r.env("owner"))
        self.claimed(r, "alice", "src/a.c")
        with open(os.path.join(r.path, "Src", "A.c"), "w") as f:
            f.write("changed by bob\n")
        r.git("add", ".")
        self.assertRefused(r.run("bob", "hook", "check", "pre-commit"), "held-path")


if __name__ == "__main__":
    unittest.main()
