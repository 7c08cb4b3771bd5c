"""Claim on first edit, for coding agents (issue 34 item 5; docs/CLI.md
"Claim on first edit (coding agents)"): `hook install --agent claude-code`
merges a PreToolUse hook into .claude/settings.json, and the command it
installs, run with the JSON Claude Code sends a PreToolUse hook, claims the
file about to be edited for the agent's key, extends the agent's lease, or
blocks the edit (exit 2, the only status with which Claude Code blocks a
tool call) naming the holder."""

import json
import os
import subprocess
import tempfile
import shutil
import time

from support import T0, CliTest, Repo, binary

TEN_MINUTES_MS = 10 * 60 * 1000  # claim's default TTL (docs/CLI.md "Durations")
MATCHER = "Edit|Write|MultiEdit"


def claude_request(tool, file_path, cwd, event="PreToolUse"):
    """A PreToolUse request as Claude Code writes it to the hook's stdin
    (its hooks reference: the common fields, then the tool's own input)."""
    inputs = {
        "Edit": {"file_path": file_path, "old_string": "int x;", "new_string": "int y;", "replace_all": False},
        "Write": {"file_path": file_path, "content": "int z;\n"},
        "MultiEdit": {"file_path": file_path,
                      "edits": [{"old_string": "int x;", "new_string": "int y;"},
                                {"old_string": "a", "new_string": "b", "replace_all": True}]},
        "Bash": {"command": "rm -rf src", "description": "remove the sources", "timeout": 120000},
        "Read": {"file_path": file_path},
    }
    return {"session_id": "3f1c0c6e-5b0a-4c41-9d3e-2f0b1f9b7a10",
            "transcript_path": "/home/agent/.claude/projects/repo/3f1c0c6e-5b0a-4c41-9d3e-2f0b1f9b7a10.jsonl",
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": inputs[tool],
            "tool_use_id": "toolu_01ABC123"}


class AgentHookBase(CliTest):
    def setUp(self):
        self.r = self.repo()
        os.makedirs(os.path.join(self.r.path, "src"))
        for name in ("a.c", "b.c"):
            with open(os.path.join(self.r.path, "src", name), "w") as f:
                f.write("int x;\n")
        self.settings = os.path.join(self.r.path, ".claude", "settings.json")

    def actor(self, name):
        return self.assertOk(self.r.run(name, "--json", "whoami")).json["actor"]

    def install(self, *flags, actor="owner"):
        return self.r.run(actor, "--json", "hook", "install", "--agent", "claude-code", *flags)

    def read_settings(self):
        with open(self.settings, encoding="utf-8") as f:
            return json.load(f)

    def installed_command(self):
        """The command of our one entry in the settings: what Claude Code runs."""
        ours = [e for e in self.read_settings()["hooks"]["PreToolUse"]
                if any(" hook agent --agent " in h.get("command", "") for h in e.get("hooks", []))]
        self.assertEqual(len(ours), 1, self.read_settings())
        self.assertEqual(ours[0]["matcher"], MATCHER)
        return ours[0]["hooks"][0]["command"]

    def hook(self, actor, request, cwd=None, raw=None):
        """Runs the installed command as Claude Code does: through the shell,
        in the project, with $CLAUDE_PROJECT_DIR set and the request on stdin;
        the agent's key is its environment's $GIT_LOCKS_KEY."""
        env = self.r.env(actor, {"CLAUDE_PROJECT_DIR": self.r.path})
        proc = subprocess.run(["sh", "-c", self.installed_command()], cwd=cwd or self.r.path, env=env,
                              input=raw if raw is not None else json.dumps(request), capture_output=True, text=True,
                              timeout=60)
        return proc

    def leases(self):
        return self.assertOk(self.r.run("owner", "--json", "status")).json["leases"]

    def ref(self):
        """refs/locks/state as the bytes of its ref: the tip's id, or None."""
        return self.r.tip()

    def assertAllowed(self, proc):
        self.assertEqual(proc.returncode, 0, proc)
        self.assertEqual(proc.stderr, "", proc)

    def assertBlocked(self, proc):
        """Exit 2 with exactly one JSON error line on stderr."""
        self.assertEqual(proc.returncode, 2, proc)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        return json.loads(lines[0])


class ClaimOnEdit(AgentHookBase):
    def setUp(self):
        super().setUp()
        self.assertOk(self.install())

    def test_an_edit_of_a_free_file_claims_it_for_the_agents_key(self):
        alice = self.actor("alice")
        for tool, rel in (("Edit", "src/a.c"), ("Write", "new/dir/c.c"), ("MultiEdit", "src/b.c")):
            with self.subTest(tool=tool):
                before = self.ref()
                proc = self.hook("alice", claude_request(tool, os.path.join(self.r.path, rel), self.r.path))
                self.assertAllowed(proc)
                self.assertNotEqual(self.ref(), before, "one transition published")
                mine = [l for l in self.leases() if l["path"] == rel]
                self.assertEqual(len(mine), 1, self.leases())
                self.assertEqual((mine[0]["holder"], mine[0]["mode"], mine[0]["expires_at"], mine[0]["generation"]),
                                 (alice, "exclusive", T0 + TEN_MINUTES_MS, 1))
        self.assertEqual(sorted(l["path"] for l in self.leases()), ["new/dir/c.c", "src/a.c", "src/b.c"])

    def test_a_second_edit_extends_the_same_lease(self):
        r = self.r
        a_c = os.path.join(r.path, "src", "a.c")
        self.assertAllowed(self.hook("alice", claude_request("Edit", a_c, r.path)))
        [first] = self.leases()
        r.now = T0 + 60_000
        self.assertAllowed(self.hook("alice", claude_request("MultiEdit", a_c, r.path)))
        [second] = self.leases()
        self.assertEqual((second["lease"], second["generation"], second["holder"]),
                         (first["lease"], first["generation"], first["holder"]))
        self.assertEqual(second["expires_at"], T0 + 60_000 + TEN_MINUTES_MS)
        self.assertGreater(second["expires_at"], first["expires_at"])
        self.assertIn("extend", r.git("log", "-1", "--format=%B", "refs/locks/state"))
        # At the same instant the expiry would not move: nothing is published.
        with self.unchanged(r):
            self.assertAllowed(self.hook("alice", claude_request("Write", a_c, r.path)))
        self.assertEqual(self.leases(), [second])

    def test_a_directory_claim_above_the_file_is_extended_not_doubled(self):
        r = self.r
        alice = self.actor("alice")
        self.claimed(r, "alice", "src/", ttl="60s")
        r.now = T0 + 1_000
        self.assertAllowed(self.hook("alice", claude_request("Edit", os.path.join(r.path, "src/a.c"), r.path)))
        [lease] = self.leases()
        self.assertEqual((lease["path"], lease["holder"], lease["expires_at"]),
                         ("src/", alice, T0 + 1_000 + TEN_MINUTES_MS))

    def test_a_relative_path_and_a_symlink_name_the_file_in_the_work_tree(self):
        r = self.r
        alice = self.actor("alice")
        os.symlink(os.path.join("src", "b.c"), os.path.join(r.path, "link.c"))
        os.symlink(os.path.join("..", "gen", "new.c"), os.path.join(r.path, "src", "dangling.c"))
        self.assertAllowed(self.hook("alice", claude_request("Edit", "a.c", os.path.join(r.path, "src"))))
        self.assertAllowed(self.hook("alice", claude_request("Edit", os.path.join(r.path, "link.c"), r.path)))
        # A Write through a link to a file not there yet creates that file: it is the one claimed.
        self.assertAllowed(self.hook("alice", claude_request("Write", "src/./dangling.c", r.path)))
        self.assertEqual(sorted((l["path"], l["holder"]) for l in self.leases()),
                         [("gen/new.c", alice), ("src/a.c", alice), ("src/b.c", alice)])

    def test_a_file_another_agent_holds_is_blocked_naming_the_holder(self):
        r = self.r
        bob = self.actor("bob")
        self.claimed(r, "bob", "src/a.c", ttl="30m")
        self.claimed(r, "carol", "docs/")
        leases = self.leases()
        before = self.ref()
        refs_before = r.git("for-each-ref", "refs/locks/")
        for tool in ("Edit", "Write", "MultiEdit"):
            with self.subTest(tool=tool):
                proc = self.hook("alice", claude_request(tool, os.path.join(r.path, "src", "a.c"), r.path))
                e = self.assertBlocked(proc)
                self.assertEqual(proc.stdout, "")
                self.assertEqual((e["error"], e["code"], e["reason"], e["op"]),
                                 ("refused", "held-path", "held-path", "hook agent"))
                self.assertEqual((e["holder"], e["holder_name"], e["path"], e["expires_at_ms"]),
                                 (bob, "bob", "src/a.c", T0 + 30 * 60_000))
                self.assertIn(f"'src/a.c' is held exclusive by bob ({bob[:12]}) until ", e["detail"])
        # A directory claim above the file blocks it too, naming its holder.
        e = self.assertBlocked(self.hook("alice", claude_request("Write", os.path.join(r.path, "docs", "x.md"),
                                                                 r.path)))
        self.assertEqual((e["code"], e["holder_name"], e["path"]), ("held-path", "carol", "docs/"))
        self.assertEqual(self.ref(), before)
        self.assertEqual(r.git("for-each-ref", "refs/locks/"), refs_before)
        self.assertEqual(self.leases(), leases)

    def test_files_outside_the_work_tree_and_git_directories_are_allowed_unclaimed(self):
        r = self.r
        outside = tempfile.mkdtemp(prefix="gitlocks-outside-")
        self.addCleanup(shutil.rmtree, outside, True)
        os.symlink(os.path.join(outside, "x.c"), os.path.join(r.path, "out.c"))
        before = self.ref()
        for path, cwd in ((os.path.join(outside, "x.c"), r.path),           # absolute, elsewhere
                          ("../../x.c", os.path.join(r.path, "src")),        # relative, above the top
                          (os.path.join(r.path, "out.c"), r.path),           # a link out of the work tree
                          (os.path.join(r.path, ".git", "config"), r.path),  # the Git directory
                          (os.path.join(r.path, "src", "..", ".git", "HEAD"), r.path)):
            with self.subTest(path=path):
                self.assertAllowed(self.hook("alice", claude_request("Write", path, cwd)))
        self.assertEqual(self.ref(), before)
        self.assertEqual(self.leases(), [])

    def test_a_tool_that_edits_no_file_is_allowed_untouched(self):
        r = self.r
        self.claimed(r, "bob", "src/")
        before = self.ref()
        for tool in ("Bash", "Read"):
            with self.subTest(tool=tool):
                proc = self.hook("alice", claude_request(tool, os.path.join(r.path, "src", "a.c"), r.path))
                self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (0, "", ""))
        # Another event (a PostToolUse wired to the command) claims nothing either.
        proc = self.hook("alice", claude_request("Edit", os.path.join(r.path, "src", "a.c"), r.path,
                                                 event="PostToolUse"))
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (0, "", ""))
        self.assertEqual(self.ref(), before)

    def test_the_json_output_says_what_was_done(self):
        r = self.r
        env = {"CLAUDE_PROJECT_DIR": r.path}
        a_c = os.path.join(r.path, "src", "a.c")

        def run(request):
            return self.assertOk(r.run("alice", "--json", "hook", "agent", "--agent", "claude-code",
                                       stdin=json.dumps(request), env=env)).json

        out = run(claude_request("Edit", a_c, r.path))
        self.assertEqual((out["op"], out["action"], out["path"], out["file"]),
                         ("hook agent", "claim", "src/a.c", os.path.realpath(a_c)))
        self.assertEqual(out["commit"], self.ref())
        out = run(claude_request("Edit", a_c, r.path))
        self.assertEqual((out["commit"], out["skipped"], [l["path"] for l in out["leases"]]),
                         (None, "held", ["src/a.c"]))
        out = run(claude_request("Bash", a_c, r.path))
        self.assertEqual((out["commit"], out["skipped"]), (None, "not-an-edit"))


class Failures(AgentHookBase):
    """Everything the hook cannot decide blocks the edit (exit 2): Claude
    Code lets a tool call go ahead on any other non-zero status."""

    def setUp(self):
        super().setUp()
        self.assertOk(self.install())
        self.a_c = os.path.join(self.r.path, "src", "a.c")

    def test_a_malformed_request_blocks(self):
        good = claude_request("Edit", self.a_c, self.r.path)
        no_path = dict(good, tool_input={"old_string": "a", "new_string": "b"})
        no_tool = {k: v for k, v in good.items() if k != "tool_name"}
        before = self.ref()
        for raw in ("not json", "", "[1, 2]", json.dumps(no_path), json.dumps(no_tool),
                    json.dumps(dict(good, tool_input="src/a.c"))):
            with self.subTest(raw=raw):
                e = self.assertBlocked(self.hook("alice", None, raw=raw))
                self.assertEqual((e["error"], e["code"], e["op"]), ("usage", "bad-json", "hook agent"))
        self.assertEqual(self.ref(), before)

    def test_a_request_never_closed_blocks_in_bounded_time(self):
        env = self.r.env("alice", {"CLAUDE_PROJECT_DIR": self.r.path})
        start = time.monotonic()
        proc = subprocess.Popen(["sh", "-c", self.installed_command()], cwd=self.r.path, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            proc.wait(timeout=30)  # stdin stays open: the hook must give up on its own
            err = proc.stderr.read()
        finally:
            proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                pipe.close()
        self.assertLess(time.monotonic() - start, 20)
        self.assertEqual(proc.returncode, 2, err)
        self.assertEqual(json.loads(err)["code"], "usage")

    def test_a_key_that_cannot_be_loaded_blocks(self):
        key = self.r.key("alice")
        self.actor("alice")  # creates it
        os.chmod(key, 0o644)
        before = self.ref()
        e = self.assertBlocked(self.hook("alice", claude_request("Edit", self.a_c, self.r.path)))
        self.assertEqual(e["error"], "usage")
        self.assertIn("chmod 600", e["detail"])
        self.assertEqual(self.ref(), before)

    def test_a_history_that_does_not_verify_blocks(self):
        r = self.r
        # refs/locks/state moved to a commit that is no transition.
        r.git("add", "src")
        r.git("commit", "-q", "-m", "work", env=r.env("owner"))
        forged = r.git("rev-parse", "HEAD").strip()
        r.git("update-ref", "refs/locks/state", forged)
        e = self.assertBlocked(self.hook("alice", claude_request("Edit", self.a_c, r.path)))
        self.assertEqual(e["error"], "store-read")
        self.assertEqual(r.tip(), forged)

    def test_no_store_yet_allows_and_claims_nothing(self):
        r = Repo(self)
        r.now = T0
        os.makedirs(os.path.join(r.path, "src"))
        self.assertOk(r.run("owner", "hook", "install", "--agent", "claude-code"))
        env = r.env("alice", {"CLAUDE_PROJECT_DIR": r.path})
        with open(os.path.join(r.path, ".claude", "settings.json")) as f:
            command = json.load(f)["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        proc = subprocess.run(["sh", "-c", command], cwd=r.path, env=env, capture_output=True, text=True,
                              input=json.dumps(claude_request("Write", os.path.join(r.path, "src", "n.c"), r.path)))
        self.assertAllowed(proc)
        self.assertIsNone(r.tip())


class Install(AgentHookBase):
    USER = {
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "permissions": {"allow": ["Bash(npm test)", "Read(./src/**)"], "deny": ["Read(./.env)"]},
        "env": {"FOO": "1", "ÉTÉ": "ünïcode"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash",
                            "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/check-bash.sh",
                                       "timeout": 30}]}],
            "PostToolUse": [{"matcher": "Edit|Write",
                             "hooks": [{"type": "command", "command": "npx prettier --write"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}],
        },
        "model": "opus",
        "includeCoAuthoredBy": False,
        "cleanupPeriodDays": 20,
    }

    def expected_command(self, *tail):
        # The absolute path of the installing binary, quoted for the shell.
        return ("'" + os.path.realpath(binary()) + "' --repo \"$CLAUDE_PROJECT_DIR\" hook agent --agent claude-code" +
                "".join(tail))

    def write_settings(self, text):
        os.makedirs(os.path.dirname(self.settings), exist_ok=True)
        with open(self.settings, "w", encoding="utf-8") as f:
            f.write(text)

    def settings_bytes(self):
        with open(self.settings, "rb") as f:
            return f.read()

    def test_install_merges_into_the_users_settings(self):
        self.write_settings(json.dumps(self.USER, indent=4))
        out = self.assertOk(self.install()).json
        ours = {"matcher": MATCHER, "hooks": [{"type": "command", "command": self.expected_command()}]}
        expected = json.loads(json.dumps(self.USER))
        expected["hooks"]["PreToolUse"].append(ours)
        # Every other key, event and entry kept, in its order; pretty-printed, 2 spaces, a final newline.
        text = self.settings_bytes().decode("utf-8")
        self.assertEqual(text, json.dumps(expected, indent=2, ensure_ascii=False) + "\n")
        self.assertEqual((out["settings"], out["command"], out["created"], out["replaced"], out["changed"]),
                         (self.settings, self.expected_command(), False, False, True))
        # The installed command is the one that claims (run as Claude Code runs it).
        self.assertAllowed(self.hook("alice", claude_request("Edit", os.path.join(self.r.path, "src/a.c"),
                                                             self.r.path)))
        self.assertEqual([l["path"] for l in self.leases()], ["src/a.c"])

    def test_install_creates_the_settings_when_there_are_none(self):
        out = self.assertOk(self.install("--ttl", "15m")).json
        self.assertEqual(self.read_settings(), {"hooks": {"PreToolUse": [
            {"matcher": MATCHER, "hooks": [{"type": "command", "command": self.expected_command(" --ttl '15m'")}]}]}})
        self.assertEqual((out["created"], out["ttl_ms"]), (True, 15 * 60_000))
        self.assertEqual(oct(os.stat(self.settings).st_mode & 0o777), oct(0o644))
        self.assertAllowed(self.hook("alice", claude_request("Edit", os.path.join(self.r.path, "src/a.c"),
                                                             self.r.path)))
        [lease] = self.leases()
        self.assertEqual(lease["expires_at"], T0 + 15 * 60_000)

    def test_reinstalling_replaces_our_entry_and_never_duplicates_it(self):
        user = json.loads(json.dumps(self.USER))
        # Our hook also sits in an entry of the user's beside a hook of theirs.
        user["hooks"]["PreToolUse"].append({"matcher": "Edit", "hooks": [
            {"type": "command", "command": "/old/git-locks hook agent --agent claude-code --ttl 1m"},
            {"type": "command", "command": "./lint-before-edit.sh"}]})
        user["hooks"]["PreToolUse"].append({"matcher": "Read", "hooks": [{"type": "command", "command": "true"}]})
        self.write_settings(json.dumps(user))
        out = self.assertOk(self.install()).json
        self.assertTrue(out["replaced"])
        ours = {"matcher": MATCHER, "hooks": [{"type": "command", "command": self.expected_command()}]}
        want = json.loads(json.dumps(self.USER))
        want["hooks"]["PreToolUse"] += [ours,
                                        {"matcher": "Edit",
                                         "hooks": [{"type": "command", "command": "./lint-before-edit.sh"}]},
                                        {"matcher": "Read", "hooks": [{"type": "command", "command": "true"}]}]
        self.assertEqual(self.read_settings(), want)
        # Again, with another TTL: the entry is replaced in place.
        out = self.assertOk(self.install("--ttl", "2m")).json
        self.assertEqual((out["replaced"], out["changed"]), (True, True))
        want["hooks"]["PreToolUse"][1]["hooks"][0]["command"] = self.expected_command(" --ttl '2m'")
        self.assertEqual(self.read_settings(), want)
        # And the same again: nothing to write.
        before = self.settings_bytes()
        out = self.assertOk(self.install("--ttl", "2m")).json
        self.assertEqual((out["replaced"], out["changed"]), (True, False))
        self.assertEqual(self.settings_bytes(), before)
        self.assertEqual(sum(" hook agent --agent " in h["command"]
                             for e in self.read_settings()["hooks"]["PreToolUse"] for h in e["hooks"]), 1)

    def test_settings_that_cannot_be_merged_are_refused_untouched(self):
        for text, member in (('{"hooks": {"PreToolUse": [', None),
                             ('{"model": "opus",}', None),
                             ('["hooks"]', None),
                             ('{"hooks": []}', "hooks"),
                             ('{"hooks": {"PreToolUse": {"matcher": "Bash"}}}', "hooks.PreToolUse")):
            with self.subTest(text=text):
                self.write_settings(text)
                st = os.stat(self.settings)
                res = self.install()
                e = self.assertUsage(res, "bad-json")
                self.assertEqual((e["op"], e["file"], e.get("member")), ("hook install", self.settings, member))
                self.assertEqual(res.out, "")
                self.assertEqual(self.settings_bytes(), text.encode())
                self.assertEqual(os.stat(self.settings).st_mtime_ns, st.st_mtime_ns)
                self.assertFalse(os.path.exists(self.settings + ".bak"))

    def test_force_replaces_unmergeable_settings_keeping_a_backup(self):
        text = '{"hooks": [], "model": "opus"'
        self.write_settings(text)
        out = self.assertOk(self.install("--force")).json
        self.assertEqual(out["backup"], self.settings + ".bak")
        with open(self.settings + ".bak") as f:
            self.assertEqual(f.read(), text)
        self.assertEqual(self.read_settings(), {"hooks": {"PreToolUse": [
            {"matcher": MATCHER, "hooks": [{"type": "command", "command": self.expected_command()}]}]}})

    def test_usage_errors(self):
        for flags, words in ((["--server"], "--server"), (["--warn"], "--warn"), (["--no-sign"], "--no-sign")):
            with self.subTest(flags=flags):
                e = self.assertUsage(self.install(*flags))
                self.assertIn(words, e["detail"])
        e = self.assertUsage(self.r.run("owner", "hook", "install", "--agent", "cursor"))
        self.assertEqual(e["detail"], "unknown agent 'cursor' (known: claude-code)")
        e = self.assertUsage(self.r.run("owner", "hook", "install", "--ttl", "5m"))
        self.assertIn("--agent", e["detail"])
        self.assertUsage(self.install("--ttl", "soon"))
        e = self.assertUsage(self.r.run("owner", "hook", "agent", "--agent", "cursor", stdin="{}"))
        self.assertEqual(e["detail"], "unknown agent 'cursor' (known: claude-code)")
        self.assertFalse(os.path.exists(os.path.dirname(self.settings)))
        self.assertFalse(os.path.exists(os.path.join(self.r.gitdir(), "hooks", "pre-commit")))
