"""The bash completion the build generates (`git-locks completion bash`):
sourced into bash, its function called with COMP_WORDS/COMP_CWORD set as
bash sets them, COMPREPLY read back; `git locks ...` through git's own
completion script; and the script's commands are exactly those of --help."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from support import env_var, run

GIT_COMPLETION = "/usr/share/bash-completion/completions/git"  # Debian's git package ships it


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.script = env_var("GITLOCKS_COMPLETION")
        cls.bin = env_var("GIT_LOCKS_BIN")
        cls.dir = tempfile.mkdtemp(prefix="gitlocks-completion-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        os.makedirs(os.path.join(cls.dir, "src"))
        open(os.path.join(cls.dir, "src", "main.c"), "w").close()
        open(os.path.join(cls.dir, "policy.json"), "w").close()

    def complete(self, *words, git=False):
        """COMPREPLY for the command line WORDS, the last word being completed."""
        words = list(words)
        quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
        if git:
            # git's completion entry point, as `complete -F` would call it.
            line = " ".join(words)
            program = (f"source {GIT_COMPLETION}; source '{self.script}'; COMP_WORDS=({quoted}); "
                       f"COMP_CWORD={len(words) - 1}; COMP_LINE='{line}'; COMP_POINT={len(line)}; "
                       f"__git_wrap__git_main git; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        else:
            program = (f"source '{self.script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
                       f"_git_locks_cli; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        r = run(["bash", "--norc", "--noprofile", "-c", program], cwd=self.dir)
        return sorted(w.strip() for w in r.stdout.splitlines() if w.strip())

    def test_command_words(self):
        self.assertEqual(self.complete("git-locks", "cl"), ["claim"])
        self.assertEqual(self.complete("git-locks", "s"), ["sem", "status", "sweep"])
        self.assertEqual(self.complete("git-locks", "--json", "--repo", ".", "wh"), ["whoami"])

    def test_sub_commands(self):
        self.assertEqual(self.complete("git-locks", "sem", ""), ["acquire", "release"])
        self.assertEqual(self.complete("git-locks", "member", "re"), ["rekey", "remove"])
        self.assertEqual(self.complete("git-locks", "completion", ""), ["bash"])

    def test_flags_from_the_usage_strings(self):
        claim = self.complete("git-locks", "claim", "--")
        for flag in ("--mode", "--ttl", "--note", "--repo", "--json"):
            self.assertIn(flag, claim)
        self.assertNotIn("--limit", claim)
        self.assertEqual(len(claim), len(set(claim)))
        self.assertIn("--limit", self.complete("git-locks", "sem", "acquire", "x", "--"))
        self.assertEqual(self.complete("git-locks", "verify", "--f"), ["--from", "--full"])
        self.assertEqual(self.complete("git-locks", "--v"), ["--version"])

    def test_values_and_arguments(self):
        self.assertEqual(self.complete("git-locks", "claim", "--mode", ""), ["exclusive", "intent", "shared"])
        self.assertEqual(self.complete("git-locks", "claim", "--ttl", ""), [])
        self.assertEqual(self.complete("git-locks", "claim", "src/"), ["src/main.c"])
        self.assertEqual(self.complete("git-locks", "init", "--policy", "pol"), ["policy.json"])
        self.assertEqual(self.complete("git-locks", "--repo", ""), ["src"])
        self.assertEqual(self.complete("git-locks", "hook", "check", "pre-"),
                         ["pre-commit", "pre-push", "pre-receive"])
        self.assertEqual(self.complete("git-locks", "run", "--claim", "x", "--", "po"), ["policy.json"])

    def test_as_git_subcommand(self):
        self.assertTrue(os.path.exists(GIT_COMPLETION), GIT_COMPLETION)
        self.assertEqual(self.complete("git", "locks", "cl", git=True), ["claim"])
        self.assertEqual(self.complete("git", "locks", "sem", "", git=True), ["acquire", "release"])
        self.assertIn("--note", self.complete("git", "-C", ".", "locks", "claim", "--", git=True))

    def test_the_build_output_is_the_commands_output(self):
        with open(self.script) as f:
            self.assertEqual(run([self.bin, "completion", "bash"]).stdout, f.read())
        r = run([self.bin, "completion", "bash", "zsh"], check=False)
        self.assertEqual(r.returncode, 64, r.stderr)

    def test_commands_are_those_of_help(self):
        help_text = run([self.bin, "--help"]).stdout
        table = help_text.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
        names = set()
        for usage in re.findall(r"^  (\S.*)$", table, re.M):
            names.add(usage.split()[0])
        self.assertEqual(set(self.complete("git-locks", "")), names)


if __name__ == "__main__":
    unittest.main()
