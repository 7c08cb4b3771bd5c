"""Runs unittest modules as `python3 -m unittest -v MODULE...` does, from the
current directory, and makes a skip visible: `python3 -m unittest` exits 0
when tests were skipped, which ctest would count as a pass.

  exit 0   every test ran and passed
  exit 1   a failure or error; or, under CI, any skip, expected failure
           or unexpected success, or no test at all
  exit 77  outside CI, something was skipped (ctest: SKIP_RETURN_CODE 77,
           reported as skipped, never as passed)

"Under CI" is in_ci(): $CI set to anything but "", "0", "false" or "no" (in
any case): GitHub and GitLab set CI=true, other systems CI=1 or CI=yes. Every
suite (Python, shell, C++) reads it the same way.

Used by every Python suite's ctest registration (cmake/python-suite.cmake)."""

import os
import sys
import unittest


def in_ci(env=None):
    """Whether the suite runs under CI: $CI set and not one of "", "0", "false", "no"."""
    v = (os.environ if env is None else env).get("CI", "")
    return v.strip().lower() not in ("", "0", "false", "no")


def main():
    sys.path.insert(0, os.getcwd())
    prog = unittest.main(module=None, argv=[sys.argv[0], "-v", *sys.argv[1:]], exit=False)
    r = prog.result
    ci = in_ci()
    if not r.wasSuccessful():
        return 1
    odd = [f"skipped: {t.id()}: {why}" for t, why in r.skipped]
    odd += [f"expected failure: {t.id()}" for t, _ in r.expectedFailures]
    odd += [f"unexpected success: {t.id()}" for t in r.unexpectedSuccesses]
    if r.testsRun == 0:
        odd.append("no test ran")
    for line in odd:
        print(("FAILED under CI=true, " if ci else "NOT PASSED, ") + line, file=sys.stderr)
    if odd:
        return 1 if ci else 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
