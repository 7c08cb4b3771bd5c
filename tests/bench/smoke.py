#!/usr/bin/env python3
"""Smoke test of one benchmark driver (issue 31): runs it on a tiny input and
checks that it exited 0 and printed its figures.

    smoke.py --expect REGEX [--expect REGEX ...] [--timeout S] -- COMMAND [ARG ...]

Each REGEX must match somewhere in the driver's standard output (Python
`re`, multi-line); write them so that they match only a printed figure (a
number in the driver's own layout), not a heading. Nothing here compares a
figure with a goal: a benchmark's goals are read by people from a run on an
idle machine, never checked by a timed test.

ctest's PASS_REGULAR_EXPRESSION ignores the exit status, so a driver that
printed a line and then crashed would pass; this wrapper requires both.
Exit 0 if the driver exited 0 and every REGEX matched, 1 otherwise (the
output is echoed either way, and a failure names what was missing).
"""

import argparse
import re
import subprocess
import sys


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    split = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--expect", action="append", default=[], help="a regex the output must match (repeatable)")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command or not args.expect:
        sys.exit("smoke.py: a command and at least one --expect are required")
    try:
        p = subprocess.run(command, capture_output=True, timeout=args.timeout)
    except subprocess.TimeoutExpired as e:
        sys.stdout.write((e.stdout or b"").decode(errors="replace"))
        sys.stderr.write((e.stderr or b"").decode(errors="replace"))
        print(f"smoke: FAILED: {command[0]} did not finish within {args.timeout:g} s")
        return 1
    out = p.stdout.decode(errors="replace")
    sys.stdout.write(out)
    sys.stderr.write(p.stderr.decode(errors="replace"))
    missing = [r for r in args.expect if not re.search(r, out, re.MULTILINE)]
    if p.returncode != 0:
        print(f"smoke: FAILED: {command[0]} exited {p.returncode}")
        return 1
    if missing:
        for r in missing:
            print(f"smoke: FAILED: no line of the output matches {r!r}")
        return 1
    print(f"smoke: ok: exit 0 and {len(args.expect)} figure(s) printed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
