"""The CI recipes for hosted forges (examples/ci/: a GitHub composite action
and a GitLab CI job) run here as the forges would run them: their own
command lines, taken from the YAML files, executed by bash in a fresh clone
of an "origin" that holds the lock store, with the variables the forge sets.

Expected verdicts follow from the scenario: alice holds src/x.c; bob's
request changes src/y.c (clear) or src/x.c (refused)."""

import json
import os
import re
import subprocess
import unittest

from support import T0, CliTest, binary

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "ci")


def action_run_line():
    with open(os.path.join(EXAMPLES, "github", "action.yml")) as f:
        lines = [l.strip() for l in f if l.strip().startswith("run:")]
    assert len(lines) == 1, lines
    return lines[0][len("run:"):].strip()


def gitlab_script_line():
    with open(os.path.join(EXAMPLES, "gitlab-ci.yml")) as f:
        text = f.read()
    script = text.split("script:", 1)[1]
    lines = [l.strip()[2:] for l in script.splitlines() if l.strip().startswith("- ")]
    assert len(lines) == 1, lines
    return lines[0]


class CiRecipes(CliTest):
    def setUp(self):
        # origin: the shared repository with the store, alice's claim on src/x.c.
        self.origin = origin = self.repo()
        for rel in ("src/x.c", "src/y.c"):
            os.makedirs(os.path.join(origin.path, "src"), exist_ok=True)
            with open(os.path.join(origin.path, rel), "w") as f:
                f.write(rel + "\n")
        origin.git("add", ".")
        origin.git("commit", "-q", "-m", "base", env=origin.env("owner"))
        self.base = origin.git("rev-parse", "HEAD").strip()
        self.assertOk(origin.run("alice", "claim", "--ttl", "10m", "src/x.c"))
        # The CI checkout: a clone of origin with bob's request on top (bob signs).
        self.assertOk(origin.run("bob", "whoami"))  # creates bob's key file
        self.ci = os.path.join(origin.root, "ci")
        subprocess.run(["git", "clone", "-q", origin.path, self.ci], check=True)
        for k, v in (("gpg.format", "ssh"), ("gpg.ssh.program", binary()), ("user.signingKey", origin.key("bob")),
                     ("commit.gpgSign", "true"), ("user.name", "bob"), ("user.email", "bob@example.invalid")):
            subprocess.run(["git", "-C", self.ci, "config", k, v], check=True)
        self.assertFalse(self.has_store(), "a clone does not fetch refs/locks/state by itself")

    def has_store(self):
        return subprocess.run(["git", "-C", self.ci, "rev-parse", "-q", "--verify", "refs/locks/state"],
                              capture_output=True).returncode == 0

    def request(self, rel):
        with open(os.path.join(self.ci, rel), "w") as f:
            f.write("bob\n")
        subprocess.run(["git", "-C", self.ci, "commit", "-q", "-am", f"bob edits {rel}"], check=True,
                       env=self.origin.env("bob"))
        return subprocess.run(["git", "-C", self.ci, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()

    def run_recipe(self, line, env):
        full = self.origin.env("bob", {"GIT_LOCKS": binary(), "GIT_LOCKS_NOW_MS": str(T0 + 1)})
        full.update(env)
        return subprocess.run(["bash", "-c", line], cwd=self.ci, capture_output=True, text=True, env=full)

    def github(self, head):
        return self.run_recipe(action_run_line(), {"GITHUB_ACTION_PATH": os.path.join(EXAMPLES, "github"),
                                                  "BASE": self.base, "HEAD_SHA": head})

    def gitlab(self, head):
        # GitLab runs the job's script from the root of the checked-out project.
        os.makedirs(os.path.join(self.ci, "examples"), exist_ok=True)
        link = os.path.join(self.ci, "examples", "ci")
        if not os.path.exists(link):
            os.symlink(os.path.abspath(EXAMPLES), link)
        return self.run_recipe(gitlab_script_line(), {"CI_MERGE_REQUEST_DIFF_BASE_SHA": self.base,
                                                     "CI_COMMIT_SHA": head})

    def test_the_commands_are_the_ones_documented(self):
        self.assertEqual(action_run_line(), 'bash "$GITHUB_ACTION_PATH/../git-locks-check.sh" "$BASE" "$HEAD_SHA"')
        self.assertEqual(gitlab_script_line(),
                         'bash examples/ci/git-locks-check.sh "$CI_MERGE_REQUEST_DIFF_BASE_SHA" "$CI_COMMIT_SHA"')

    def test_a_clear_request_passes_on_both_forges(self):
        head = self.request("src/y.c")
        for recipe in (self.github, self.gitlab):
            p = recipe(head)
            self.assertEqual(p.returncode, 0, p)
            self.assertIn("1 commit checked, 0 refused", p.stdout)
        self.assertTrue(self.has_store())

    def test_a_request_changing_a_claimed_path_fails_on_both_forges(self):
        head = self.request("src/x.c")
        for recipe in (self.github, self.gitlab):
            p = recipe(head)
            self.assertEqual(p.returncode, 1, p)
            self.assertIn("changes src/x.c", p.stdout)
            self.assertIn("1 commit checked, 1 refused", p.stdout)

    def test_the_json_report(self):
        head = self.request("src/x.c")
        report = os.path.join(self.origin.root, "report.json")
        p = self.run_recipe(action_run_line(), {"GITHUB_ACTION_PATH": os.path.join(EXAMPLES, "github"),
                                                "BASE": self.base, "HEAD_SHA": head, "GIT_LOCKS_REPORT": report})
        self.assertEqual(p.returncode, 1, p)
        with open(report) as f:
            doc = json.load(f)
        self.assertEqual((doc["checked"], doc["refused"]), (1, 1))
        self.assertEqual(doc["commits"][0]["commit"], head)
        self.assertEqual([r["path"] for r in doc["commits"][0]["refused"]], ["src/x.c"])

    def test_no_store_fails_the_check(self):
        head = self.request("src/y.c")
        self.origin.git("update-ref", "-d", "refs/locks/state")
        p = self.github(head)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("cannot fetch refs/locks/state", p.stderr)

    def test_bad_arguments(self):
        p = subprocess.run(["bash", os.path.join(EXAMPLES, "git-locks-check.sh"), "only-one"], cwd=self.ci,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 64, p)
        self.assertTrue(re.search(r"usage: git-locks-check.sh BASE HEAD", p.stderr), p)


if __name__ == "__main__":
    unittest.main()
