"""Claims bind the work, in one clone (SPEC §9, docs/CLI.md "Enforcing
claims"): `git-locks hook install` signs every commit with the actor's key
(Git's SSH signing) and installs a reference-transaction hook that Git runs
for every ref update, `--no-verify` or not. An enforced branch cannot move to
a commit that changes a path under another holder's live exclusive claim;
`git-locks check RANGE` gives the same verdicts.

Every expected verdict here is derived from the scenario (who claimed what,
who signed which commit), not from the program's output."""

import json
import os
import subprocess
import sys
import unittest

from support import T0, CliTest

REFVERIFY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference", "refverify.py")

MIN = 60_000


class Enforcement(CliTest):
    def setUp(self):
        self.r = r = self.repo()
        self.write(r.path, "src/x.c", "int x = 0;\n")
        self.write(r.path, "src/y.c", "int y = 0;\n")
        self.write(r.path, "docs/readme.md", "hello\n")
        r.git("add", ".")
        r.git("commit", "-q", "-m", "base", env=r.env("owner"))
        self.base = self.head(r.path)
        # bob works in a linked worktree of the same clone, on his own branch.
        self.bob_wt = os.path.join(r.root, "bob-wt")
        r.git("worktree", "add", "-q", "-b", "bob-work", self.bob_wt, "main" if self.has_main() else "master")
        self.main = "main" if self.has_main() else "master"
        self.install("alice", r.path)
        self.install("bob", self.bob_wt)

    # --- helpers -----------------------------------------------------------
    def has_main(self):
        return subprocess.run(["git", "-C", self.r.path, "rev-parse", "-q", "--verify", "refs/heads/main"],
                              capture_output=True).returncode == 0

    def write(self, where, rel, text):
        os.makedirs(os.path.dirname(os.path.join(where, rel)), exist_ok=True)
        with open(os.path.join(where, rel), "w") as f:
            f.write(text)

    def head(self, where, ref="HEAD"):
        return subprocess.run(["git", "-C", where, "rev-parse", ref], capture_output=True, text=True,
                              check=True).stdout.strip()

    def install(self, actor, where):
        res = self.run_in(actor, where, "--json", "hook", "install")
        self.assertOk(res)
        out = res.json
        self.assertEqual(out["signing"]["scope"], "worktree")  # a key chosen by $GIT_LOCKS_KEY
        self.assertEqual(out["signing"]["settings"]["gpg.format"], "ssh")
        return out

    def run_in(self, actor, where, *args, env=None):
        from support import Result, binary
        proc = subprocess.run([binary(), "--repo", where, *args], capture_output=True, text=True,
                              env=self.r.env(actor, env))
        return Result(proc)

    def git_as(self, actor, where, *args, env=None):
        return subprocess.run(["git", "-C", where, *args], capture_output=True, text=True,
                              env=self.r.env(actor, env))

    def commit(self, actor, where, rel, *flags, text=None, env=None):
        self.write(where, rel, text or f"changed by {actor}\n")
        self.git_as(actor, where, "add", rel)
        return self.git_as(actor, where, "commit", "-q", "--no-verify", "-m", f"{actor} edits {rel}", *flags,
                           env=env)

    def key_of(self, actor):
        res = self.r.run(actor, "--json", "whoami")
        self.assertOk(res)
        return res.json["actor"]

    def errors(self, proc):
        return [json.loads(l) for l in proc.stderr.splitlines() if l.startswith("{")]

    def assertMoveRefused(self, proc, where, before, path, holder, lease):
        """git failed, the branch did not move, and the hook named exactly one
        held-path refusal of `path`, held by `holder` under `lease`."""
        self.assertNotEqual(proc.returncode, 0, proc)
        self.assertEqual(self.head(where), before, "the branch moved")
        errs = self.errors(proc)
        self.assertEqual(len(errs), 1, proc.stderr)
        e = errs[0]
        self.assertEqual((e["error"], e["code"], e["reason"]), ("refused", "held-path", "held-path"), e)
        self.assertEqual(e["path"], path, e)
        self.assertEqual(e["holder"], holder, e)
        self.assertEqual(e["lease"], lease, e)
        self.assertEqual(e["claimed_path"], path, e)
        return e

    def lease_of(self, out, path):
        return [l for l in out["leases"] if l["resource"] == "path:" + path][0]["lease"]

    # --- the rule through the reference-transaction hook --------------------
    def test_no_verify_commit_on_anothers_claim_is_refused(self):
        lease = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        before = self.head(self.bob_wt)
        p = self.commit("bob", self.bob_wt, "src/x.c")
        e = self.assertMoveRefused(p, self.bob_wt, before, "src/x.c", self.key_of("alice"), lease)
        self.assertEqual(e["signer"], self.key_of("bob"))
        self.assertEqual(e["holder_name"], "alice")
        self.assertIn("ask alice to release it", e["detail"])
        # The refused change stays in bob's index; a free path alone lands, signed by bob.
        self.git_as("bob", self.bob_wt, "reset", "-q", "--hard", "HEAD")
        p = self.commit("bob", self.bob_wt, "src/y.c")
        self.assertEqual(p.returncode, 0, p)
        raw = self.git_as("bob", self.bob_wt, "cat-file", "commit", "HEAD").stdout
        self.assertIn("gpgsig -----BEGIN SSH SIGNATURE-----", raw)

    def test_a_refusal_notes_the_intents_of_others_on_the_path(self):
        # docs/CLI.md "claim": others' intents are noted in every refusal, the hooks' too.
        lease = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        self.assertOk(self.r.run("carol", "claim", "--mode", "intent", "--ttl", "10m", "src/"))
        before = self.head(self.bob_wt)
        p = self.commit("bob", self.bob_wt, "src/x.c")
        e = self.assertMoveRefused(p, self.bob_wt, before, "src/x.c", self.key_of("alice"), lease)
        self.assertIn("; note: carol (%s) intends to change src/ until " % self.key_of("carol")[:12], e["detail"])
        # A free path under carol's intent lands: an intent refuses nobody.
        self.git_as("bob", self.bob_wt, "reset", "-q", "--hard", "HEAD")
        self.assertEqual(self.commit("bob", self.bob_wt, "src/y.c").returncode, 0)

    def test_the_holder_commits_and_others_wait_for_the_end_of_the_lease(self):
        self.claimed(self.r, "alice", "src/", ttl="10m")
        p = self.commit("alice", self.r.path, "src/x.c")
        self.assertEqual(p.returncode, 0, p)
        before = self.head(self.bob_wt)
        self.assertNotEqual(self.commit("bob", self.bob_wt, "src/y.c").returncode, 0)
        self.assertEqual(self.head(self.bob_wt), before)
        # Once the lease has expired (10 min + 1 ms later), the same change lands.
        p = self.commit("bob", self.bob_wt, "src/y.c", env={"GIT_LOCKS_NOW_MS": str(T0 + 10 * MIN + 1)})
        self.assertEqual(p.returncode, 0, p)

    def test_released_lease_frees_the_path(self):
        self.claimed(self.r, "alice", "src/x.c", ttl="10m")
        before = self.head(self.bob_wt)
        self.assertNotEqual(self.commit("bob", self.bob_wt, "src/x.c").returncode, 0)
        self.assertEqual(self.head(self.bob_wt), before)
        self.assertOk(self.r.run("alice", "release", "src/x.c"))
        self.assertEqual(self.commit("bob", self.bob_wt, "src/x.c").returncode, 0)

    def test_unsigned_commits_have_no_holder(self):
        lease = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        # A free path, unsigned: allowed.
        p = self.commit("bob", self.bob_wt, "src/y.c", "--no-gpg-sign")
        self.assertEqual(p.returncode, 0, p)
        # alice's own claimed path, but unsigned: not alice, so refused.
        before = self.head(self.r.path)
        p = self.commit("alice", self.r.path, "src/x.c", "--no-gpg-sign")
        e = self.assertMoveRefused(p, self.r.path, before, "src/x.c", self.key_of("alice"), lease)
        self.assertEqual(e["signer"], "")

    def test_the_holders_name_and_email_do_not_make_a_holder(self):
        lease = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        before = self.head(self.bob_wt)
        p = self.commit("bob", self.bob_wt, "src/x.c",
                        env={"GIT_AUTHOR_NAME": "alice", "GIT_COMMITTER_NAME": "alice",
                             "GIT_AUTHOR_EMAIL": "alice@example.invalid",
                             "GIT_COMMITTER_EMAIL": "alice@example.invalid"})
        e = self.assertMoveRefused(p, self.bob_wt, before, "src/x.c", self.key_of("alice"), lease)
        self.assertEqual(e["signer"], self.key_of("bob"))

    def test_a_signed_commit_altered_afterwards_has_no_holder(self):
        lease = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        # alice's signed commit of a free path ...
        p = self.commit("alice", self.r.path, "docs/readme.md")
        self.assertEqual(p.returncode, 0, p)
        good = self.head(self.r.path)
        # ... whose tree is swapped for one that changes src/x.c, signature kept.
        self.write(self.r.path, "src/x.c", "rewritten\n")
        self.git_as("alice", self.r.path, "add", "src/x.c")
        tree = self.git_as("alice", self.r.path, "write-tree").stdout.strip()
        raw = self.git_as("alice", self.r.path, "cat-file", "commit", good).stdout
        old_tree = raw.split("\n", 1)[0].split()[1]
        forged_raw = raw.replace(f"tree {old_tree}\n", f"tree {tree}\n", 1)
        forged = subprocess.run(["git", "-C", self.r.path, "hash-object", "-t", "commit", "-w", "--stdin"],
                                input=forged_raw, capture_output=True, text=True, check=True).stdout.strip()
        self.assertIn("gpgsig", forged_raw)
        # check names the signature's failure and refuses alice's claimed path (the
        # commit changes docs/readme.md and src/x.c against its parent).
        res = self.r.run("bob", "--json", "check", f"{self.base}..{forged}")
        self.assertEqual(res.code, 1, res)
        [c] = res.json["commits"]
        self.assertEqual(c["commit"], forged)
        self.assertEqual(c["signer"], None)
        self.assertEqual(c["signature"], "signature-mismatch")
        self.assertEqual(c["paths"], 2)
        self.assertEqual([x["path"] for x in c["refused"]], ["src/x.c"])
        self.assertEqual(c["refused"][0]["fields"]["lease"], lease)
        # and a branch cannot be set to it, even by plumbing.
        p = self.git_as("bob", self.r.path, "update-ref", "refs/heads/forged", forged)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertEqual(self.git_as("bob", self.r.path, "rev-parse", "-q", "--verify", "refs/heads/forged").stdout,
                         "")

    def test_other_refs_are_not_enforced_unless_configured(self):
        self.claimed(self.r, "alice", "src/x.c", ttl="10m")
        self.write(self.bob_wt, "src/x.c", "bob\n")
        self.git_as("bob", self.bob_wt, "add", "src/x.c")
        tree = self.git_as("bob", self.bob_wt, "write-tree").stdout.strip()
        c = self.git_as("bob", self.bob_wt, "commit-tree", tree, "-p", self.base, "-m", "x").stdout.strip()
        self.assertEqual(self.git_as("bob", self.bob_wt, "update-ref", "refs/wip/bob", c).returncode, 0)
        self.r.git("config", "--add", "locks.enforce", "refs/wip/*")
        self.r.git("config", "--add", "locks.enforce", "refs/heads/*")
        # Another commit (c is on refs/wip/bob now: a new ref brings in only
        # what no ref has yet).
        c2 = self.git_as("bob", self.bob_wt, "commit-tree", tree, "-p", self.base, "-m", "y").stdout.strip()
        p = self.git_as("bob", self.bob_wt, "update-ref", "refs/wip/bob2", c2)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertEqual(self.errors(p)[0]["reason"], "held-path")

    # --- force release and --landed -----------------------------------------
    def set_admins(self, *actors):
        shown = self.r.run("owner", "--json", "policy", "show")
        self.assertOk(shown)
        res = self.r.run("owner", "--json", "policy", "set", "-", "--expected-policy-hash",
                         shown.json["policy_hash"], stdin=json.dumps({"admins": sorted(self.key_of(a) for a in actors)}))
        self.assertOk(res)

    def test_force_release_by_an_admin_is_seen_by_everyone(self):
        lease = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        tip = self.r.tip()
        # bob is no admin: refused, nothing moves.
        res = self.r.run("bob", "--json", "release", "--force", "--reason", "in my way", "src/x.c")
        self.assertRefused(res, "not-holder", reason="not-admin")
        self.assertEqual(self.r.tip(), tip)
        # --force without a reason is a usage error.
        self.assertUsage(self.r.run("owner", "--json", "release", "--force", "src/x.c"), "usage")
        self.set_admins("carol")
        res = self.r.run("carol", "--json", "release", "--force", "--reason", "alice is on leave", "src/x.c")
        self.assertOk(res)
        self.assertEqual(res.json["action"], "force-release")
        self.assertEqual(res.json["ops"][0]["lease"], lease)
        # log, status --all and the holder's next refusal say who and why.
        log = self.r.run("dave", "log", "--limit", "1")
        self.assertOk(log)
        self.assertIn("force-release src/x.c (force-released: alice is on leave) (carol)", log.out)
        rows = self.r.run("dave", "--json", "status", "--all").json["leases"]
        self.assertEqual([(x["lease"], x["live"], x["released_by"], x["released_by_name"], x["release_reason"])
                          for x in rows], [(lease, False, self.key_of("carol"), "carol", "alice is on leave")])
        self.assertIn("released", self.r.run("dave", "status", "--all").out)
        self.assertEqual(self.r.run("dave", "--json", "status").json["leases"], [])
        for verb in ("release", "extend"):
            e = self.assertRefused(self.r.run("alice", "--json", verb, "src/x.c"), "not-holder",
                                   reason="force-released")
            self.assertIn("force-released by carol: alice is on leave", e["detail"])
            self.assertEqual((e["released_by"], e["release_reason"]), (self.key_of("carol"), "alice is on leave"))
        e = self.assertRefused(self.r.run("alice", "--json", "release", lease), "not-holder", reason="force-released")
        self.assertEqual(e["lease"], lease)
        # bob's change now lands; every verifier accepts the history.
        self.assertEqual(self.commit("bob", self.bob_wt, "src/x.c").returncode, 0)
        self.assertOk(self.r.run("dave", "verify", "--full"))
        ref = subprocess.run([sys.executable, REFVERIFY, self.r.path], capture_output=True, text=True)
        self.assertEqual(ref.returncode, 0, ref)

    def test_release_landed_releases_exactly_the_leases_whose_work_is_on_the_branch(self):
        x = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        self.claimed(self.r, "bob", "docs/readme.md", ttl="10m")
        self.claimed(self.r, "carol", "src/y.c", ttl="10m")  # no work at all: stays
        # alice works on a branch of her own; bob on his.
        self.git_as("alice", self.r.path, "checkout", "-q", "-b", "alice-feat")
        self.assertEqual(self.commit("alice", self.r.path, "src/x.c").returncode, 0)
        self.assertEqual(self.commit("bob", self.bob_wt, "docs/readme.md").returncode, 0)
        # and one more change of src/x.c, on a branch not yet merged.
        self.git_as("alice", self.r.path, "checkout", "-q", "-b", "alice-more")
        self.assertEqual(self.commit("alice", self.r.path, "src/x.c", text="more\n").returncode, 0)
        self.git_as("alice", self.r.path, "checkout", "-q", self.main)
        landed = self.r.run("owner", "--json", "release", "--landed", self.main)
        self.assertOk(landed)
        self.assertEqual((landed.json["released"], landed.json["commit"]), ([], None))
        # alice-feat lands: her work on src/x.c is still pending on alice-more.
        self.assertEqual(self.git_as("alice", self.r.path, "merge", "-q", "--ff-only", "alice-feat").returncode, 0)
        self.assertEqual(self.r.run("owner", "--json", "release", "--landed", self.main).json["released"], [])
        # alice-more lands too: exactly alice's lease is released, with the reason.
        self.assertEqual(self.git_as("alice", self.r.path, "merge", "-q", "--ff-only", "alice-more").returncode, 0)
        main = self.head(self.r.path)
        tip = self.r.tip()
        # bob, no admin, is refused.
        self.assertRefused(self.r.run("bob", "--json", "release", "--landed", self.main), "not-holder",
                           reason="not-admin")
        self.assertEqual(self.r.tip(), tip)
        landed = self.r.run("owner", "--json", "release", "--landed", self.main)
        self.assertOk(landed)
        self.assertEqual(landed.json["landed"], main)
        self.assertEqual([r["lease"] for r in landed.json["released"]], [x])
        self.assertEqual(landed.json["ops"], [{"op": "force-release", "path": "src/x.c", "lease": x,
                                               "generation": 1, "reason": f"landed {main}"}])
        live = sorted(l["path"] for l in self.r.run("dave", "--json", "status").json["leases"])
        self.assertEqual(live, ["docs/readme.md", "src/y.c"])
        e = self.assertRefused(self.r.run("alice", "--json", "release", "src/x.c"), "not-holder",
                               reason="force-released")
        self.assertEqual(e["release_reason"], f"landed {main}")
        self.assertUsage(self.r.run("owner", "--json", "release", "--landed", "no-such-branch"), "usage")

    # --- merges ------------------------------------------------------------
    def test_clean_merge_of_the_holders_work_by_someone_else_lands(self):
        self.claimed(self.r, "alice", "src/x.c", ttl="10m")
        p = self.commit("alice", self.r.path, "src/x.c")
        self.assertEqual(p.returncode, 0, p)
        p = self.commit("bob", self.bob_wt, "docs/readme.md")
        self.assertEqual(p.returncode, 0, p)
        p = self.git_as("bob", self.bob_wt, "merge", "--no-edit", "-q", self.main)
        self.assertEqual(p.returncode, 0, p)
        merge = self.head(self.bob_wt)
        self.assertEqual(len(self.git_as("bob", self.bob_wt, "rev-list", "--parents", "-n1", merge).stdout.split()),
                         3)
        res = self.r.run("bob", "--json", "check", f"{self.base}..{merge}")
        self.assertEqual(res.code, 0, res)
        by_commit = {c["commit"]: c for c in res.json["commits"]}
        self.assertEqual(by_commit[merge]["paths"], 0)  # a clean merge changes nothing of its own
        self.assertEqual(res.json["refused"], 0)

    def test_merge_resolution_changing_a_claimed_path_is_refused(self):
        # bob changes src/x.c while it is free ...
        p = self.commit("bob", self.bob_wt, "src/x.c", text="int x = 2;\n")
        self.assertEqual(p.returncode, 0, p)
        # ... alice claims it and changes the same line.
        lease = self.lease_of(self.claimed(self.r, "alice", "src/x.c", ttl="10m"), "src/x.c")
        p = self.commit("alice", self.r.path, "src/x.c", text="int x = 1;\n")
        self.assertEqual(p.returncode, 0, p)
        before = self.head(self.bob_wt)
        p = self.git_as("bob", self.bob_wt, "merge", "--no-edit", "-q", self.main)
        self.assertNotEqual(p.returncode, 0)  # a conflict
        self.write(self.bob_wt, "src/x.c", "int x = 3;\n")
        self.git_as("bob", self.bob_wt, "add", "src/x.c")
        p = self.git_as("bob", self.bob_wt, "commit", "--no-verify", "--no-edit", "-q")
        self.assertMoveRefused(p, self.bob_wt, before, "src/x.c", self.key_of("alice"), lease)

    # --- check RANGE ---------------------------------------------------------
    def test_check_lists_every_commit_and_exits_by_the_verdicts(self):
        self.claimed(self.r, "alice", "src/x.c", ttl="10m")
        # Commits made with the hook set to warn-only (a clone without the
        # reference-transaction hook), so that check can judge them.
        hook = os.path.join(self.r.gitdir(), "hooks", "reference-transaction")
        os.rename(hook, hook + ".off")
        self.commit("bob", self.bob_wt, "src/y.c")
        first = self.head(self.bob_wt)
        self.commit("bob", self.bob_wt, "src/x.c")
        second = self.head(self.bob_wt)
        os.rename(hook + ".off", hook)
        res = self.r.run("bob", "--json", "check", f"{self.base}..{second}")
        self.assertEqual(res.code, 1, res)
        doc = res.json
        self.assertEqual(doc["op"], "check")
        self.assertEqual(doc["state"], self.r.tip())
        self.assertEqual(doc["now_ms"], T0)
        self.assertEqual((doc["checked"], doc["refused"]), (2, 1))
        self.assertEqual([c["commit"] for c in doc["commits"]], [first, second])
        self.assertEqual([c["ok"] for c in doc["commits"]], [True, False])
        self.assertEqual([c["signer"] for c in doc["commits"]], [self.key_of("bob")] * 2)
        self.assertEqual([[x["path"] for x in c["refused"]] for c in doc["commits"]], [[], ["src/x.c"]])
        refusal = doc["commits"][1]["refused"][0]
        self.assertEqual((refusal["code"], refusal["reason"]), ("held-path", "held-path"))
        self.assertEqual(refusal["fields"]["holder"], self.key_of("alice"))
        self.assertEqual(refusal["fields"]["expires_at_ms"], T0 + 10 * MIN)  # a number, as in an error line
        # Only the first commit: all clear.
        res = self.r.run("bob", "--json", "check", f"{self.base}..{first}")
        self.assertEqual(res.code, 0, res)
        self.assertEqual(res.json["refused"], 0)
        # Human output names the refused path.
        res = self.r.run("bob", "check", f"{self.base}..{second}")
        self.assertEqual(res.code, 1, res)
        self.assertIn("changes src/x.c", res.out)
        self.assertIn("2 commits checked, 1 refused", res.out)

    def test_check_usage_and_missing_store(self):
        self.assertUsage(self.r.run("bob", "check"))
        self.assertUsage(self.r.run("bob", "check", "--all"))
        bad = self.r.run("bob", "check", "no-such-ref..HEAD")
        self.assertEqual(bad.code, 64, bad)
        bare = self.repo(init=False)
        self.write(bare.path, "a", "a\n")
        bare.git("add", "a")
        bare.git("commit", "-q", "-m", "a", env=bare.env("owner"))
        res = bare.run("bob", "--json", "check", "HEAD")
        self.assertEqual(res.code, 2, res)
        self.assertEqual(res.error["code"], "store-read")

    # --- interoperability ---------------------------------------------------
    def test_git_verify_commit_accepts_the_signatures(self):
        p = self.commit("bob", self.bob_wt, "src/y.c")
        self.assertEqual(p.returncode, 0, p)
        # The allowed-signers file hook install wrote, checked by OpenSSH itself.
        v = subprocess.run(["git", "-C", self.bob_wt, "-c", "gpg.ssh.program=ssh-keygen", "verify-commit", "HEAD"],
                           capture_output=True, text=True)
        self.assertEqual(v.returncode, 0, v)
        self.assertIn(f'Good "git" signature for {self.key_of("bob")}', v.stderr)


if __name__ == "__main__":
    unittest.main()
