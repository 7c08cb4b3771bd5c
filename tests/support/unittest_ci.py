"""Runs unittest modules as `python3 -m unittest -v MODULE...` does, from the
current directory, and makes a skip visible: `python3 -m unittest` exits 0
when tests were skipped, which ctest would count as a pass.

  exit 0   every test ran and passed
  exit 1   a failure or error; or, under CI=true, any skip, expected failure
           or unexpected success, or no test at all
  exit 77  outside CI, something was skipped (ctest: SKIP_RETURN_CODE 77,
           reported as skipped, never as passed)

Used by every Python suite's ctest registration (cmake/python-suite.cmake)."""

import os
import sys
import unittest


def main():
    sys.path.insert(0, os.getcwd())
    prog = unittest.main(module=None, argv=[sys.argv[0], "-v", *sys.argv[1:]], exit=False)
    r = prog.result
    ci = os.environ.get("CI") == "true"
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
