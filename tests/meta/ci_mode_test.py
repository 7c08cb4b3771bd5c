"""What "under CI" means, for every suite: $CI set to anything but "", "0",
"false" or "no" (any case). Under CI a skipped test fails the suite
(tests/support/unittest_ci.py exits 1), outside it the suite reports a skip
(77), never a pass. CI=1 and CI=yes are CI too (issue 30: a suite that read
CI=true exactly let CI=1 turn skips into passes)."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(os.path.dirname(HERE), "support")
sys.path.insert(0, SUPPORT)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cli"))

import unittest_ci  # noqa: E402
import support as cli_support  # noqa: E402

UNDER_CI = ["true", "TRUE", "1", "yes", "on", "gitlab"]
NOT_CI = [None, "", "0", "false", "False", "no"]


def env_with(ci):
    env = dict(os.environ)
    env.pop("CI", None)
    if ci is not None:
        env["CI"] = ci
    return env


class CiMode(unittest.TestCase):
    def test_in_ci(self):
        for v in UNDER_CI:
            self.assertTrue(unittest_ci.in_ci(env_with(v)), v)
        for v in NOT_CI:
            self.assertFalse(unittest_ci.in_ci(env_with(v)), v)

    def test_a_skip_fails_under_ci_and_is_a_skip_outside(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "skipping.py"), "w") as f:
                f.write("import unittest\n\nclass T(unittest.TestCase):\n"
                        "    def test_x(self):\n        raise unittest.SkipTest('no tool')\n")
            for ci, want in [(v, 1) for v in UNDER_CI] + [(v, 77) for v in NOT_CI]:
                r = subprocess.run([sys.executable, os.path.join(SUPPORT, "unittest_ci.py"), "skipping"], cwd=d,
                                   env=env_with(ci), capture_output=True, text=True)
                self.assertEqual(r.returncode, want, (ci, r.stderr))

    def test_the_cli_suites_skip_helper_fails_under_ci(self):
        for v in UNDER_CI:
            os.environ["CI"] = v
            with self.assertRaises(AssertionError):
                cli_support.skip("no tool")
        for v in NOT_CI:
            os.environ.pop("CI", None)
            if v is not None:
                os.environ["CI"] = v
            with self.assertRaises(unittest.SkipTest):
                cli_support.skip("no tool")

    def test_the_shell_suites_read_it_alike(self):
        script = os.path.join(os.path.dirname(HERE), "mcp", "run.sh")
        text = open(script).read()
        fn = [l for l in text.splitlines() if l.startswith("in_ci()")][0]
        for ci, want in [(v, 0) for v in UNDER_CI] + [(v, 1) for v in NOT_CI]:
            r = subprocess.run(["bash", "-c", fn + "\nin_ci"], env=env_with(ci))
            self.assertEqual(r.returncode, want, ci)


if __name__ == "__main__":
    saved = os.environ.get("CI")
    try:
        unittest.main()
    finally:
        if saved is not None:
            os.environ["CI"] = saved
