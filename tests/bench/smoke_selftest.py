"""The benchmark smoke checker (tests/bench/smoke.py) must fail a driver that
exits non-zero after printing its figures, one that prints no figure, one
that times out, and pass one that exits 0 with every figure printed."""

import os
import subprocess
import sys
import unittest

SMOKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smoke.py")


def smoke(script, *expect, timeout=None):
    argv = [sys.executable, SMOKE]
    for e in expect:
        argv += ["--expect", e]
    if timeout is not None:
        argv += ["--timeout", str(timeout)]
    argv += ["--", sys.executable, "-c", script]
    return subprocess.run(argv, capture_output=True, text=True)


FIGURE = r"claim +[0-9.]+ ms +[0-9.]+x"


class SmokeChecker(unittest.TestCase):
    def test_exit_0_with_every_figure_passes(self):
        p = smoke("print('   claim     7.96 ms   4.60x bare')\nprint('rate: 21,154')", FIGURE, r"rate: [0-9,]+$")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("smoke: ok: exit 0 and 2 figure(s) printed", p.stdout)

    def test_a_crash_after_the_figures_fails(self):
        p = smoke("print('   claim     7.96 ms   4.60x bare', flush=True)\nimport os\nos.abort()", FIGURE)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stdout, r"smoke: FAILED: .* exited -6")

    def test_a_non_zero_exit_fails(self):
        p = smoke("import sys\nprint('   claim     7.96 ms   4.60x bare')\nsys.exit(3)", FIGURE)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stdout, r"smoke: FAILED: .* exited 3")

    def test_a_missing_figure_fails_and_is_named(self):
        p = smoke("print('   claim     n/a   4.60x bare')\nprint('rate: 21,154')", FIGURE, r"rate: [0-9,]+$")
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"smoke: FAILED: no line of the output matches {FIGURE!r}", p.stdout)
        self.assertNotIn("matches 'rate:", p.stdout)  # the figure that was printed is not reported

    def test_a_driver_that_never_finishes_fails(self):
        p = smoke("import time\nprint('   claim     7.96 ms   4.60x bare', flush=True)\ntime.sleep(60)", FIGURE,
                  timeout=1)
        self.assertEqual(p.returncode, 1)
        self.assertIn("did not finish within 1 s", p.stdout)

    def test_without_an_expectation_it_refuses_to_run(self):
        p = subprocess.run([sys.executable, SMOKE, "--", sys.executable, "-c", "print(1)"], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("at least one --expect", p.stderr)


if __name__ == "__main__":
    unittest.main()
