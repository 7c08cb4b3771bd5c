"""Identity, init and policy files, help, capabilities, status/log schemas,
wait, durations."""

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import unittest

from support import CliTest, Repo, T0, binary

HEX64 = re.compile(r"^[0-9a-f]{64}$")


class Identity(CliTest):
    def test_key_file_created_0600_and_stable(self):
        r = self.repo(init=False)
        res = self.assertOk(r.run("alice", "--json", "whoami"))
        me = res.json
        self.assertRegex(me["actor"], HEX64)
        self.assertEqual(me["name"], "alice")
        self.assertEqual(me["key_file"], r.key("alice"))
        self.assertEqual(stat.S_IMODE(os.stat(r.key("alice")).st_mode), 0o600)
        with open(r.key("alice")) as f:
            doc = json.loads(f.read())
        self.assertEqual(doc["format"], "gitlocks-actor-key-v1")
        self.assertRegex(doc["seed"], HEX64)
        self.assertEqual(r.run("alice", "--json", "whoami").json["actor"], me["actor"])
        self.assertNotEqual(r.run("bob", "--json", "whoami").json["actor"], me["actor"])

    def test_key_selection_order(self):
        r = self.repo(init=False)
        flag = os.path.join(r.root, "flag.key")
        xdg = os.path.join(r.root, "xdg")
        a = r.run("alice", "--json", "--key", flag, "whoami").json
        self.assertEqual(a["key_file"], flag)
        env = {"GIT_LOCKS_KEY": "", "XDG_CONFIG_HOME": xdg}
        b = r.run("alice", "--json", "whoami", env=env).json
        self.assertEqual(b["key_file"], os.path.join(xdg, "git-locks", "actor.key"))
        env = {"GIT_LOCKS_KEY": "", "XDG_CONFIG_HOME": "", "HOME": os.path.join(r.root, "home")}
        c = r.run("alice", "--json", "whoami", env=env).json
        self.assertEqual(c["key_file"], os.path.join(r.root, "home", ".config", "git-locks", "actor.key"))
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(c["key_file"])).st_mode), 0o700)

    def test_open_or_malformed_key_refused(self):
        r = self.repo()
        self.assertOk(r.run("alice", "whoami"))
        os.chmod(r.key("alice"), 0o644)
        with self.unchanged(r):
            e = self.assertUsage(self.claim(r, "alice", "x"))
            self.assertIn("0644", e["detail"])
            self.assertIn("chmod 600", e["detail"])
        os.chmod(r.key("alice"), 0o600)
        with open(r.key("alice"), "w") as f:
            f.write('{"format":"something-else","seed":"00"}\n')
        self.assertUsage(r.run("alice", "whoami"))

    def test_concurrent_first_use_yields_one_key(self):
        r = self.repo(init=False)
        procs = [r.popen("alice", "--json", "whoami") for _ in range(6)]
        actors = {json.loads(p.communicate()[0])["actor"] for p in procs}
        self.assertEqual(len(actors), 1)


class Init(CliTest):
    def test_init_twice_writes_nothing(self):
        r = self.repo(init=False)
        res = self.assertOk(r.run("owner", "--json", "init"))
        self.assertTrue(res.json["created"])
        self.assertRegex(res.json["store"], HEX64)
        self.assertEqual(res.json["owner"], r.run("owner", "--json", "whoami").json["actor"])
        with self.unchanged(r):
            again = self.assertOk(r.run("bob", "--json", "init"))
            self.assertFalse(again.json["created"])
            self.assertEqual(again.json["store"], res.json["store"])
            self.assertIn("already exists", self.assertOk(r.run("bob", "init")).out)
        other = self.repo(init=False)
        self.assertNotEqual(self.assertOk(other.run("owner", "--json", "init")).json["store"], res.json["store"])

    def test_policy_file(self):
        r = self.repo(policy={"min_ttl_ms": 5000, "max_ttl_ms": 60000})
        with self.unchanged(r):
            self.assertRefused(self.claim(r, "a", "x", ttl="4s"), "guard-window")
            self.assertRefused(self.claim(r, "a", "x", ttl="61s"), "guard-window")
        self.claimed(r, "a", "x", ttl="5s")
        status = r.run("a", "--json", "status").json
        self.assertEqual(status["policy"]["min_ttl_ms"], 5000)

    def test_bad_policy_files(self):
        for policy, code in (({"min_ttl_ms": 10, "max_ttl_ms": 5}, "usage"),
                             ({"owner": "x"}, "usage"),
                             ({"families": [{"name": "f", "policy": "maybe", "members": ["a"]}]}, "usage"),
                             ({"families": [{"name": "f", "policy": "shared", "members": ["/abs"]}]}, "bad-path")):
            with self.subTest(policy=policy):
                r = self.repo(init=False)
                pfile = os.path.join(r.root, "p.json")
                with open(pfile, "w") as f:
                    json.dump(policy, f)
                self.assertUsage(r.run("owner", "init", "--policy", pfile), code)
                self.assertIsNone(r.tip())
        r = self.repo(init=False)
        pfile = os.path.join(r.root, "p.json")
        with open(pfile, "w") as f:
            f.write("{\"min_ttl_ms\": 1.5}")
        self.assertUsage(r.run("owner", "init", "--policy", pfile), "bad-json")


class Help(CliTest):
    def test_help_and_version(self):
        r = Repo(self)
        res = self.assertOk(r.run("a", "--help"))
        for cmd in ("init", "claim", "extend", "release", "sweep", "sem acquire", "sem release", "batch", "run",
                    "status", "fence", "wait", "log", "whoami", "hook install"):
            self.assertIn(f"  {cmd}", res.out)
        for text in ("64", "store-write", "stale-retries-exhausted", "GIT_LOCKS_NOW_MS", "GIT_LOCKS_GIT", '"attempts"'):
            self.assertIn(text, res.out)
        self.assertRegex(self.assertOk(r.run("a", "--version")).out, r"^git-locks \d+\.\d+\.\d+\n$")
        self.assertIn("claim", self.assertOk(r.run("a", "claim", "--help")).out)
        self.assertUsage(r.run("a"))

    # Every command's flags are declared once (tools/cli/commands.cpp); the
    # usage lines of --help, `CMD --help`, the parser and the completion
    # script are made from that declaration. Read from the built binary:
    # a flag the usage line shows must be one the command accepts, listed
    # by its own help and completed by bash.
    USAGE_LINE = re.compile(r"^  ([a-z][a-z-]*(?: [a-z][a-z-]*)?)((?: \S+)*)$")

    def commands_from_help(self, r):
        lines = self.assertOk(r.run("a", "--help")).out.split("Commands:\n", 1)[1].splitlines()
        commands = {}
        for line, summary in zip(lines, lines[1:]):
            m = self.USAGE_LINE.match(line)
            if m and summary.startswith(" " * 22):
                rest = m.group(2).split()
                name = m.group(1)
                flags = [re.match(r"\[?(--[a-z-]+)", t).group(1) for t in rest if re.match(r"\[?--[a-z]", t)]
                commands[name] = (line.strip(), flags, rest)
        return commands

    def test_declared_operands_and_required_flags_are_checked_before_anything_runs(self):
        r = Repo(self)
        self.assertOk(r.run("a", "init"))
        with self.unchanged(r):
            e = self.assertUsage(r.run("a", "doctor", "extra"))
            self.assertEqual(e["detail"], "doctor takes no arguments")
            e = self.assertUsage(r.run("a", "sem", "acquire", "ci"))
            self.assertEqual(e["detail"], "sem acquire needs --limit N: the semaphore's slots; every holder must agree")
            e = self.assertUsage(r.run("a", "policy", "set", "-"))
            self.assertTrue(e["detail"].startswith("policy set needs --expected-policy-hash H: "), e)
            e = self.assertUsage(r.run("a", "fence", "x"))
            self.assertEqual(e["detail"], "usage: git-locks fence RESOURCE GENERATION")

    def test_every_flag_in_the_usage_is_the_commands(self):
        r = Repo(self)
        commands = self.commands_from_help(r)
        # The commands the table has (an independent list: docs/CLI.md names them all).
        for name in ("init", "claim", "extend", "release", "sweep", "sem acquire", "sem release", "batch", "run",
                     "status", "fence", "wait", "log", "whoami", "verify", "export", "doctor", "migrate", "checkpoint",
                     "notary keygen", "notary serve", "witness keygen", "witness serve", "witness cosign",
                     "guard-time enable", "guard-time resume", "guard-time history",
                     "guard-time migrate", "guard-time disable", "member add", "member remove", "member rekey",
                     "member list", "policy show", "policy set", "hook install", "hook check", "hook agent", "check",
                     "handoff", "watch",
                     "mcp", "web", "recover", "capabilities", "completion bash"):
            self.assertIn(name, commands)
        self.assertEqual(len(commands), 46)
        completion = self.assertOk(r.run("a", "completion", "bash")).out
        globals_ = re.search(r'^__git_locks_globals="([^"]*)"$', completion, re.M).group(1).split()
        self.assertIn("--repo", globals_)
        checked = 0
        for name, (usage, flags, rest) in commands.items():
            words = name.split()
            # `CMD --help` repeats the usage line and describes each flag on a line of its own.
            own = self.assertOk(r.run("a", *words, "--help")).out
            self.assertEqual(own.splitlines()[0], "usage: git-locks " + usage, name)
            for flag in flags:
                self.assertRegex(own, re.compile(r"^  " + re.escape(flag) + r"[ \[=]", re.M), f"{name} {flag}")
            # bash completes exactly the usage line's flags for the command (the global ones everywhere).
            arm = re.search(r'^    "' + re.escape(name) + r'"\) echo "([^"]*)" ;;$', completion, re.M)
            self.assertEqual(sorted(arm.group(1).split()) if arm else [], sorted(set(flags) - set(globals_)), name)
            # The parser takes each flag: after it, an unknown flag is the one refused. Nothing runs.
            for i, token in enumerate(rest):
                m = re.match(r"\[?(--[a-z-]+)(\[=)?", token)
                if not m:
                    continue
                flag = m.group(1)
                takes_value = not m.group(2) and i + 1 < len(rest) and not re.match(r"[\[(-]", rest[i + 1]) \
                    and not token.endswith("]") and not token.endswith("]...")
                args = [flag + "=1"] if m.group(2) else [flag, "1"] if takes_value else [flag]
                res = r.run("a", *words, *args, "--zz-unknown")
                self.assertEqual(res.code, 64, f"{name} {args}: {res.err}")
                detail = json.loads(res.err.splitlines()[-1])["detail"]
                self.assertIn("--zz-unknown", detail, f"{name} {args}")
                checked += 1
            res = r.run("a", *words, "--zz-unknown")
            self.assertEqual(res.code, 64, name)
        self.assertGreater(checked, 60)


class Capabilities(CliTest):
    # seed 002: "The native SDK exposes owner_guard_time_enable and
    # private_time_add_guard_windows in its capabilities".
    REPORT = ('{"capabilities":["owner_guard_time_enable","private_time_add_guard_windows",'
              '"owner_guard_time_migrate","owner_checkpoint","policy_checkpoints","witness_cosignatures",'
              '"lease_handoff","lease_intent","lease_queue"],'
              '"format":"gitlocks-capabilities-v1"}\n')

    def test_capabilities_outside_any_repository_and_key(self):
        # No repository around, no key: it reads nothing and creates nothing.
        cwd = tempfile.mkdtemp(prefix="gitlocks-cli-")
        self.addCleanup(shutil.rmtree, cwd, True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env["HOME"] = env["XDG_CONFIG_HOME"] = cwd
        env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(cwd)

        def run(*args):
            return subprocess.run([binary(), *args], cwd=cwd, env=env, capture_output=True, text=True)

        res = run("capabilities")
        self.assertEqual((res.returncode, res.stderr, res.stdout),
                         (0, "", "owner_guard_time_enable\nprivate_time_add_guard_windows\nowner_guard_time_migrate\n"
                          "owner_checkpoint\npolicy_checkpoints\nwitness_cosignatures\nlease_handoff\nlease_intent\nlease_queue\n"))
        for args in (["--json", "capabilities"], ["capabilities", "--json"]):
            res = run(*args)
            self.assertEqual((res.returncode, res.stderr, res.stdout), (0, "", self.REPORT))
        res = run("capabilities", "extra")
        self.assertEqual(res.returncode, 64, res)
        self.assertEqual(json.loads(res.stderr)["detail"], "capabilities takes no arguments")
        self.assertEqual(os.listdir(cwd), [])
        self.assertIn("  capabilities", run("--help").stdout)


class Timings(CliTest):
    """$GIT_LOCKS_TIMINGS (the benchmarks' breakdown of a claim, issue 18)."""

    def test_one_line_per_command_with_exclusive_phases(self):
        r = Repo(self)
        self.assertOk(r.run("a", "init"))
        log = os.path.join(r.root, "timings.jsonl")
        plain = self.assertOk(r.run("a", "--json", "claim", "x/"))
        timed = self.assertOk(r.run("a", "--json", "claim", "y/", env={"GIT_LOCKS_TIMINGS": log}))
        self.assertEqual(sorted(json.loads(timed.out)), sorted(json.loads(plain.out)), "same answer")
        self.assertEqual(timed.err, "")
        self.assertOk(r.run("a", "release", "y/", env={"GIT_LOCKS_TIMINGS": log}))
        with open(log) as f:
            lines = [json.loads(line) for line in f.read().splitlines()]
        self.assertEqual([line["op"] for line in lines], ["claim", "release"])
        for line in lines:
            phases = line["phases"]
            for p in ("setup", "snapshot", "plan and sign", "object writes", "commit", "compare-and-swap",
                      "checkpoint", "git config", "open store"):
                self.assertIn(p, phases, line)
                self.assertGreaterEqual(phases[p], 0.0)
            # Exclusive phases: together never more than the whole command.
            self.assertLessEqual(sum(phases.values()), line["total_ms"] * 1.001 + 0.01, line)
            self.assertGreater(line["total_ms"], 0.0)
        # Without the variable nothing is written anywhere.
        self.assertOk(r.run("a", "claim", "z/"))
        with open(log) as f:
            self.assertEqual(len(f.read().splitlines()), 2)


class Status(CliTest):
    def test_json_schema(self):
        r = self.repo()
        self.claimed(r, "alice", "src/a.c", ttl="60s", extra=("--note", "refactor"))
        self.claimed(r, "bob", "docs/", mode="shared")
        self.assertOk(r.run("bob", "sem", "acquire", "ci", "--limit", "3"))
        r.now += 1000
        st = r.run("alice", "--json", "status").json
        self.assertEqual(set(st), {"store", "commit", "now_ms", "policy", "leases", "queue", "policy_hash",
                                   "guard_time"})
        self.assertEqual(st["queue"], [])  # nobody waits
        self.assertEqual(st["commit"], r.tip())
        self.assertEqual(st["now_ms"], T0 + 1000)
        self.assertEqual(set(st["policy"]), {"min_ttl_ms", "max_ttl_ms", "families", "owner"})
        by = {l["resource"]: l for l in st["leases"]}
        self.assertEqual(sorted(by), ["path:docs", "path:src/a.c", "sem:ci"])
        a = by["path:src/a.c"]
        self.assertEqual(set(a), {"kind", "resource", "path", "mode", "lease", "holder", "name", "generation",
                                  "expires_at", "expires_in_ms", "created_at", "live", "mine", "note"})
        self.assertEqual((a["kind"], a["path"], a["mode"], a["name"], a["generation"], a["note"]),
                         ("path", "src/a.c", "exclusive", "alice", 1, "refactor"))
        self.assertEqual((a["expires_at"], a["expires_in_ms"], a["created_at"]), (T0 + 60000, 59000, T0))
        self.assertTrue(a["mine"] and a["live"])
        self.assertEqual(by["path:docs"]["path"], "docs/")
        self.assertFalse(by["path:docs"]["mine"])
        sem = by["sem:ci"]
        self.assertEqual((sem["kind"], sem["sem"], sem["limit"]), ("sem", "ci", 3))
        self.assertNotIn("mode", sem)
        only = r.run("alice", "--json", "status", "src/").json["leases"]
        self.assertEqual([l["resource"] for l in only], ["path:src/a.c"])
        human = self.assertOk(r.run("alice", "status")).out
        self.assertIn("src/a.c", human)
        self.assertIn("alice", human)
        r.now = T0 + 600_001
        self.assertEqual(r.run("alice", "--json", "status").json["leases"], [])
        expired = r.run("alice", "--json", "status", "--all").json["leases"]
        self.assertEqual(len(expired), 3)
        self.assertFalse(any(l["live"] for l in expired))

    def test_log(self):
        r = self.repo()
        lease = self.claimed(r, "alice", "x")["leases"][0]["lease"]
        self.assertOk(r.run("alice", "release", lease))
        lines = [json.loads(l) for l in self.assertOk(r.run("a", "--json", "log")).out.splitlines()]
        self.assertEqual([l["action"] for l in lines], ["release", "claim", "init"])
        self.assertEqual(lines[0]["commit"], r.tip())
        self.assertEqual(lines[0]["parent"], lines[1]["commit"])
        self.assertIsNone(lines[2]["parent"])
        self.assertEqual(lines[1]["name"], "alice")
        self.assertEqual(lines[1]["admitted_at_ms"], T0)
        self.assertEqual(set(lines[1]), {"commit", "parent", "admitted_at_ms", "actor", "name", "command", "action",
                                         "summary", "body"})
        self.assertEqual(len(self.assertOk(r.run("a", "log", "--limit", "2")).out.splitlines()), 2)


class Wait(CliTest):
    def test_free_paths_return_at_once_and_write_nothing(self):
        r = self.repo()
        objects = r.git("count-objects").strip()
        with self.unchanged(r):
            res = self.assertOk(r.run("alice", "--json", "wait", "a", "b/"))
            self.assertTrue(res.json["claimable"])
        self.assertEqual(r.git("count-objects").strip(), objects)

    def test_timeout(self):
        r = self.repo()
        self.claimed(r, "bob", "a")
        with self.unchanged(r):
            start = time.monotonic()
            e = self.assertRefused(r.run("alice", "wait", "--timeout", "300ms", "a"), "held-path")
            self.assertGreaterEqual(time.monotonic() - start, 0.3)
            self.assertIn("timed out", e["detail"])

    def test_wait_and_claim_when_released(self):
        r = self.repo()
        self.claimed(r, "bob", "a")
        waiter = r.popen("alice", "--json", "wait", "--claim", "--timeout", "30s", "a")
        time.sleep(0.3)
        self.assertOk(r.run("bob", "release", "a"))
        out, err = waiter.communicate(timeout=60)
        self.assertEqual(waiter.returncode, 0, err)
        self.assertEqual(json.loads(out)["leases"][0]["resource"], "path:a")
        self.assertEqual(r.run("x", "--json", "status").json["leases"][0]["name"], "alice")


class Durations(CliTest):
    def test_units(self):
        r = self.repo()
        for i, (text, ms) in enumerate((("1500ms", 1500), ("30s", 30000), ("10m", 600000), ("1h", 3600000),
                                         ("2500", 2500))):
            lease = self.claimed(r, "alice", f"d{i}", ttl=text)["leases"][0]
            self.assertEqual(lease["expires_at"], T0 + ms)


if __name__ == "__main__":
    unittest.main()
