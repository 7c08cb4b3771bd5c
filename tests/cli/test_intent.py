"""Intents (docs/FORMAT.md "Intent", docs/CLI.md "claim"): `claim --mode
intent` is never refused and never refuses; the intents of others are
warnings in every claim (its JSON `intents`, its human output), in a
refused claim's error, in the Git pre-commit hook and in the agent hook;
`status` lists them; they expire, renew and release like leases. The
expected holders and paths follow from each scenario."""

import json
import os

from support import T0, CliTest
from test_agent_hook import claude_request

TTL = 600_000


class IntentTest(CliTest):
    def setUp(self):
        self.r = self.repo()
        self.keys = {a: self.assertOk(self.r.run(a, "--json", "whoami")).json["actor"] for a in ("alice", "bob", "carol")}

    def claim(self, actor, *args):
        return self.r.run(actor, "--json", "claim", "--ttl", "10m", *args)

    def test_never_refused_and_never_refuses(self):
        self.assertOk(self.claim("alice", "src/a.c"))
        # bob's intent on alice's locked file and above it: admitted.
        for path in ("src/a.c", "src/"):
            res = self.assertOk(self.claim("bob", "--mode", "intent", path))
            self.assertEqual(res.json["action"], "claim")
            self.assertEqual(res.json["ops"][0]["mode"], "intent")
        # carol's lock under bob's intent on src/: admitted, and told of bob's intent.
        res = self.assertOk(self.claim("carol", "src/parser/x.c"))
        self.assertEqual([(i["holder"], i["holder_name"], i["path"]) for i in res.json["intents"]],
                         [(self.keys["bob"], "bob", "src/")])
        self.assertEqual(res.json["intents"][0]["expires_at"], T0 + TTL)
        # A lock does not wait behind an intent, and an intent does not wait behind a lock.
        self.assertOk(self.claim("carol", "--wait=1s", "src/b.c"))
        self.assertOk(self.claim("alice", "--mode", "intent", "--wait=1s", "src/parser/x.c"))
        rows = {(l["path"], l["name"]): l["mode"] for l in self.assertOk(self.r.run("owner", "--json", "status")).json["leases"]}
        self.assertEqual(rows, {("src/a.c", "alice"): "exclusive", ("src/a.c", "bob"): "intent",
                                ("src/", "bob"): "intent", ("src/parser/x.c", "carol"): "exclusive",
                                ("src/b.c", "carol"): "exclusive", ("src/parser/x.c", "alice"): "intent"})
        human = self.assertOk(self.r.run("owner", "status")).out
        self.assertRegex(human, r"src/\s+intent\s+bob ")
        v = self.r.run("owner", "--json", "verify", "--full")
        self.assertEqual(v.code, 0, v)

    def test_human_claim_warns_of_others_intents_not_of_ones_own(self):
        self.assertOk(self.claim("bob", "--mode", "intent", "src/parser/"))
        self.assertOk(self.claim("alice", "--mode", "intent", "src/"))
        res = self.assertOk(self.r.run("alice", "claim", "src/parser/lexer.c"))
        warnings = [line for line in res.out.splitlines() if line.startswith("warning: ")]
        self.assertEqual(len(warnings), 1, res.out)
        self.assertTrue(warnings[0].startswith(
            "warning: bob (%s) intends to change src/parser/ until " % self.keys["bob"][:12]), warnings)
        # No intents around: the JSON says so.
        self.assertEqual(self.assertOk(self.claim("carol", "lib/x.c")).json["intents"], [])

    def test_a_refused_claim_names_the_intents(self):
        self.assertOk(self.claim("carol", "--mode", "intent", "docs/guide/"))
        self.assertOk(self.claim("bob", "docs/a.md"))
        tip = self.r.tip()
        e = self.assertRefused(self.claim("alice", "docs/"), "held-path")
        self.assertEqual(e["holder"], self.keys["bob"])
        self.assertEqual((e["intents"], e["intent_holder"], e["intent_holder_name"], e["intent_path"]),
                         (1, self.keys["carol"], "carol", "docs/guide/"))
        self.assertIn("; note: carol (%s) intends to change docs/guide/ until" % self.keys["carol"][:12], e["detail"])
        self.assertEqual(self.r.tip(), tip)

    def test_a_lock_replaces_ones_own_intent_and_intents_expire_renew_release(self):
        self.assertOk(self.claim("alice", "--mode", "intent", "src/"))
        self.assertRefused(self.claim("alice", "--mode", "intent", "src/"), "already-held")
        lease = self.assertOk(self.claim("alice", "src/")).json["leases"][0]
        self.assertEqual(lease["generation"], 2)
        mine = [l for l in self.assertOk(self.r.run("alice", "--json", "status")).json["leases"] if l["mine"]]
        self.assertEqual([(l["path"], l["mode"]) for l in mine], [("src/", "exclusive")])
        # bob's intent renews and releases like a lease; an expired one is gone from status.
        self.assertOk(self.claim("bob", "--mode", "intent", "lib/"))
        self.assertOk(self.r.run("bob", "extend", "--ttl", "20m", "lib/"))
        self.assertOk(self.r.run("bob", "release", "lib/"))
        self.assertOk(self.r.run("bob", "claim", "--mode", "intent", "--ttl", "5s", "doc/"))
        self.r.now = T0 + 5_001
        paths = [l["path"] for l in self.assertOk(self.r.run("owner", "--json", "status")).json["leases"]]
        self.assertNotIn("doc/", paths)

    def test_hooks_warn_of_intents(self):
        self.assertOk(self.claim("bob", "--mode", "intent", "src/parser/"))
        os.makedirs(os.path.join(self.r.path, "src", "parser"))
        with open(os.path.join(self.r.path, "src", "parser", "x.c"), "w") as f:
            f.write("int x;\n")
        self.r.git("add", "src/parser/x.c")
        # The Git pre-commit check: a warning on stderr, the commit goes ahead.
        res = self.r.run("alice", "hook", "check", "pre-commit")
        self.assertEqual(res.code, 0, res)
        self.assertIn("git-locks: warning: this commit overlaps an intent: bob (%s) intends to change src/parser/ "
                      "until " % self.keys["bob"][:12], res.err)
        # The agent hook: alice's edit claims the file and says whose intent it overlaps.
        req = claude_request("Edit", os.path.join(self.r.path, "src", "parser", "x.c"), self.r.path)
        res = self.r.run("alice", "--json", "hook", "agent", "--agent", "claude-code", stdin=json.dumps(req))
        self.assertEqual(res.code, 0, res)
        self.assertEqual([(i["holder"], i["path"]) for i in res.json["intents"]], [(self.keys["bob"], "src/parser/")])
        res = self.r.run("alice", "hook", "agent", "--agent", "claude-code", stdin=json.dumps(req))
        self.assertEqual(res.code, 0, res)
        self.assertIn("warning: bob (%s) intends to change src/parser/ until " % self.keys["bob"][:12], res.out)
        # bob's intent never blocks: alice holds the file now.
        holders = {l["path"]: l["holder"] for l in self.assertOk(self.r.run("owner", "--json", "status")).json["leases"]
                   if l["mode"] == "exclusive"}
        self.assertEqual(holders, {"src/parser/x.c": self.keys["alice"]})
