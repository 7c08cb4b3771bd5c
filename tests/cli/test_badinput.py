"""Bad input: truncated, garbage, oversized and wrongly-typed input to every
command that reads input (batch files, --policy files, key files, lease ids,
durations, paths, limits, generations, counts) exits 64 with one JSON usage
error and leaves refs/locks/state alone; an unreadable store exits 2."""

import os
import subprocess

from support import CliTest

BIG = "a" * (1 << 20)

BATCH = {
    "truncated": '{"op":"claim","path":"x"',
    "truncated-second-line": '{"op":"claim","path":"x"}\n{"op":"rel',
    "garbage": "\x00\x01\x02 not json at all \xff",
    "binary-utf8": '{"op":"claim","path":"\udcff"}',
    "array": '[{"op":"claim","path":"x"}]',
    "string": '"claim x"',
    "number-op": '{"op":7,"path":"x"}',
    "unknown-op": '{"op":"steal","path":"x"}',
    "path-number": '{"op":"claim","path":5}',
    "path-null": '{"op":"claim","path":null}',
    "path-missing": '{"op":"claim"}',
    "path-bad": '{"op":"claim","path":"../etc/passwd"}',
    "path-absolute": '{"op":"claim","path":"/x"}',
    "path-oversized": '{"op":"claim","path":"' + "d/" * 40000 + 'x"}',
    "mode-typed": '{"op":"claim","path":"x","mode":1}',
    "mode-unknown": '{"op":"claim","path":"x","mode":"sideways"}',
    "ttl-garbage": '{"op":"claim","path":"x","ttl":"soon"}',
    "ttl-negative": '{"op":"claim","path":"x","ttl":-5}',
    "ttl-float": '{"op":"claim","path":"x","ttl":1.5}',
    "ttl-huge": '{"op":"claim","path":"x","ttl":"99999999999999999999h"}',
    "limit-string": '{"op":"sem-acquire","sem":"ci","limit":"2"}',
    "limit-zero": '{"op":"sem-acquire","sem":"ci","limit":0}',
    "limit-negative": '{"op":"sem-acquire","sem":"ci","limit":-1}',
    "limit-huge": '{"op":"sem-acquire","sem":"ci","limit":1e400}',
    "generation-negative": '{"op":"release","path":"x","generation":-1}',
    "generation-string": '{"op":"release","path":"x","generation":"1"}',
    "two-targets": '{"op":"release","path":"x","lease":"0123456789abcdef01234567"}',
    "unknown-key": '{"op":"claim","path":"x","force":true}',
    "duplicate-key": '{"op":"claim","path":"x","path":"y"}',
    "deep-nesting": '{"op":"claim","path":"x","note":' + "[" * 100000 + "]" * 100000 + "}",
    "empty": "",
    "blank-lines": "\n \n\t\n",
    "oversized-note": '{"op":"claim","path":"x","note":"' + BIG * 4 + '"}',
}

POLICY = {
    "truncated": '{"min_ttl_ms":1000',
    "garbage": "\xff\xfe garbage",
    "array": "[1,2]",
    "typed": '{"min_ttl_ms":"1000"}',
    "negative": '{"min_ttl_ms":-1}',
    "inverted": '{"min_ttl_ms":5000,"max_ttl_ms":1000}',
    "unknown-key": '{"owner":"me"}',
    "families-typed": '{"families":"db"}',
    "family-bad-member": '{"families":[{"name":"db","policy":"exclusive","members":["../x"]}]}',
    "family-bad-policy": '{"families":[{"name":"db","policy":"maybe","members":["db/"]}]}',
    "oversized": '{"families":[' + ",".join(
        '{"name":"f%d","policy":"exclusive","members":["%s/"]}' % (i, "d" * 200) for i in range(20000)) + ',{"name":"last","policy":"exclusive","members":[1]}]}',
}

KEYS = {
    "truncated": "ed25519:abcd\n",
    "garbage": "\x00\x01 not a key",
    "empty": "",
    "oversized": BIG,
}

ARGS = [
    ["claim", "--ttl", "soon", "x"],
    ["claim", "--ttl", "-1s", "x"],
    ["claim", "--ttl", "99999999999999999999h", "x"],
    ["claim", "--ttl", "", "x"],
    ["claim", "--mode", "sideways", "x"],
    ["claim", "../x"],
    ["claim", "/abs"],
    ["claim", "a//b"],
    ["claim", ""],
    ["claim", "a/./b"],
    ["claim", "d/" * 40000 + "x"],
    ["claim"],
    ["claim", "--bogus", "x"],
    ["extend", "--ttl", "forever", "x"],
    ["extend", "--generation", "abc", "x"],
    ["extend", "../x"],
    ["release", "--generation", "-3", "x"],
    ["release", "--generation", "99999999999999999999", "x"],
    ["release", "../0123456789abcdef01234567"],
    ["release"],
    ["sweep", "extra"],
    ["sem", "acquire", "ci", "--limit", "0"],
    ["sem", "acquire", "ci", "--limit", "-1"],
    ["sem", "acquire", "ci", "--limit", "two"],
    ["sem", "acquire", "ci", "--limit", "99999999999999999999"],
    ["sem", "acquire", "ci"],
    ["sem", "acquire", "", "--limit", "2"],
    ["sem", "release", "ci", "--generation", "x"],
    ["run", "--claim", "../x", "--", "true"],
    ["run", "--sem", "ci", "--", "true"],
    ["run", "--sem", "ci:zero", "--", "true"],
    ["run", "--ttl", "never", "--claim", "x", "--", "true"],
    ["run", "--claim", "x"],
    ["status", "../x"],
    ["fence", "x", "abc"],
    ["fence", "x", "-1"],
    ["fence", "../x", "1"],
    ["fence", "x"],
    ["wait", "--timeout", "soon", "x"],
    ["wait", "../x"],
    ["log", "--limit", "many"],
    ["log", "--limit", "-1"],
    ["doctor", "extra"],
    ["migrate", "extra"],
    ["batch", "--ttl", "soon", "-"],
    ["batch", "/no/such/file"],
    ["batch", "a", "b"],
    ["init", "--policy", "/no/such/policy.json"],
]


class BadInput(CliTest):
    def setUp(self):
        self.r = self.repo()
        self.assertEqual(self.claimed(self.r, "alice", "held")["leases"][0]["generation"], 1)
        self.tip = self.r.tip()
        self.cases = 0

    def tearDown(self):
        self.assertEqual(self.r.tip(), self.tip, "refs/locks/state moved")

    def assertRejected(self, res, what):
        self.cases += 1
        self.assertEqual(res.code, 64, (what, res))
        self.assertEqual(res.out, "", what)
        e = res.error
        self.assertEqual(e["error"], "usage", (what, res))
        self.assertIsInstance(e["detail"], str)
        self.assertIn("op", e)
        self.assertEqual(self.r.tip(), self.tip, what)

    def file(self, name, text):
        path = os.path.join(self.r.root, name)
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        return path

    def test_batch_files_and_stdin(self):
        for name, text in BATCH.items():
            with self.subTest(batch=name):
                self.assertRejected(self.r.run("alice", "batch", self.file("b.jsonl", text)), name)
                if len(text) < 4096 and "\x00" not in text and "\udcff" not in text:
                    self.assertRejected(self.r.run("alice", "batch", "-", stdin=text), name)

    def test_policy_files(self):
        for name, text in POLICY.items():
            with self.subTest(policy=name):
                fresh = self.repo(init=False)
                res = fresh.run("owner", "init", "--policy", self.file("p.json", text))
                self.cases += 1
                self.assertEqual(res.code, 64, (name, res))
                self.assertEqual(res.error["error"], "usage")
                self.assertIsNone(fresh.tip(), name)
                # On an existing store nothing is written either.
                self.assertRejected(self.r.run("owner", "init", "--policy", self.file("p.json", text)), name)

    def test_key_files(self):
        for name, text in KEYS.items():
            with self.subTest(key=name):
                key = self.file(f"{name}.key", text)
                os.chmod(key, 0o600)
                self.assertRejected(self.r.run("alice", "--key", key, "claim", "x"), name)
                self.assertRejected(self.r.run("alice", "claim", "x", env={"GIT_LOCKS_KEY": key}), name)
        key = self.file("open.key", "")
        os.chmod(key, 0o644)
        self.assertOk(self.r.run("alice", "--key", os.path.join(self.r.root, "fresh.key"), "whoami"))
        k2 = os.path.join(self.r.root, "fresh.key")
        os.chmod(k2, 0o644)
        self.assertRejected(self.r.run("alice", "--key", k2, "claim", "x"), "group-readable key")
        self.assertRejected(self.r.run("alice", "--key", self.r.root, "claim", "x"), "directory as key")

    def test_arguments(self):
        for args in ARGS:
            with self.subTest(args=" ".join(args)[:80]):
                self.assertRejected(self.r.run("alice", *args), args)

    def test_pre_receive_refuses_ids_that_are_not_sha1_object_ids(self):
        # A SHA-256 repository's ids (64 digits) and upper-case digits are not
        # object ids the store can name: the update is refused before any
        # replay, naming both ids, and nothing moves.
        tip = self.r.tip()
        for old, new in (("0" * 64, "a" * 64), (tip, tip.upper()), (tip.upper(), tip)):
            with self.subTest(old=old, new=new):
                res = self.r.run("alice", "hook", "check", "pre-receive", stdin=f"{old} {new} refs/locks/state\n")
                # As every refusal of this hook (a deletion, a rewrite): code
                # invalid, reported as store-read, exit 2.
                self.assertEqual(res.code, 2, res)
                self.assertEqual((res.error["error"], res.error["code"], res.error["reason"]),
                                 ("store-read", "invalid", "invalid"), res)
                self.assertEqual(res.error["detail"],
                                 "push rejected by the server's git-locks hook: refs/locks/state: "
                                 f"'{old} {new}' are not SHA-1 object ids", res)

    def test_unreadable_store_exits_2(self):
        blob = subprocess.run(["git", "-C", self.r.path, "hash-object", "-w", "--stdin"], input="garbage",
                              capture_output=True, text=True, check=True).stdout.strip()
        self.r.git("update-ref", "refs/locks/state", blob)
        self.tip = blob
        for args in (["claim", "x"], ["status"], ["batch", "-"], ["sweep"], ["migrate"], ["doctor"]):
            with self.subTest(args=args):
                res = self.r.run("alice", *args, stdin='{"op":"claim","path":"x"}\n')
                self.assertEqual(res.code, 2, (args, res))
                self.assertEqual(res.error["error"], "store-read", res)
                self.assertEqual(self.r.tip(), blob)

    def test_an_exception_escaping_a_command_is_an_error_line_never_an_abort(self):
        # The test seam GIT_LOCKS_TEST_THROW=COMMAND makes that command's
        # handler throw (a bug's shape: the core reports errors as Results).
        # It ends as one JSON error line, exit 2, and nothing moves; without
        # main's catch the process aborts (SIGABRT, 134 from a shell).
        for args, stdin in ((["claim", "x"], None), (["status", "--json"], None), (["batch", "-"], '{"op":"claim","path":"y"}\n')):
            with self.subTest(args=args):
                res = self.r.run("alice", *args, stdin=stdin, env={"GIT_LOCKS_TEST_THROW": args[0]})
                self.assertEqual(res.code, 2, res)
                self.assertEqual(res.out, "", res)
                self.assertEqual(res.error["error"], "store-read", res)
                self.assertEqual(res.error["code"], "store-read", res)
                self.assertEqual(res.error["op"], args[0], res)
                self.assertEqual(res.error["detail"],
                                 f"internal error: GIT_LOCKS_TEST_THROW asked '{args[0]}' to throw", res)
                self.assertEqual(self.r.tip(), self.tip)
        # The seam names one command: the others run as always.
        res = self.r.run("alice", "status", "--json", env={"GIT_LOCKS_TEST_THROW": "claim"})
        self.assertEqual(res.code, 0, res)


if __name__ == "__main__":
    import unittest
    unittest.main()
