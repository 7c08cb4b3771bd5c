#!/usr/bin/env python3
"""The mutation check (issue 30): every security check in tests/meta/mutants.json
is removed in turn from a copy of the source, and the tests named for it must
go red. A mutant whose tests stay green SURVIVED: the check could be deleted
with the suite still passing. One survivor, a mutant whose text no longer
matches its source (the list rotted), a mutant that does not build, or a named
test that fails without any mutant fails the check.

    tests/meta/mutation.py --source DIR [--work DIR] [--only NAME]... [--keep]

The copy is built with the release preset in its own tree (ccache makes that
a cache hit for unchanged sources: CCACHE_BASEDIR is the source dir) and each
mutant rebuilds only the targets its tests run: `gitlocks_unit` for `unit:`
tests, `git-locks` for the Python suites.

Test specs, run in the order given (the first red one kills the mutant):
  unit:PATTERN               doctest cases matching PATTERN (-tc); at least one must match
  py:DIR:MODULE.CLASS.TEST   one unittest of tests/DIR, GIT_LOCKS_BIN = the copy's git-locks
"""

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def log(*a):
    print(*a, flush=True)


def copy_tree(src, dst):
    """The files git would commit (tracked, and untracked ones not ignored): a developer's
    uncommitted edits are checked too; build trees are not copied. An earlier copy in `dst` is
    brought up to date (files kept with their times when unchanged, others replaced, stray ones
    removed) so that its build tree is reused."""
    listed = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    wanted = set()
    for rel in filter(None, (p.decode() for p in listed)):
        s = os.path.join(src, rel)
        if not os.path.lexists(s):  # deleted in the work tree
            continue
        wanted.add(rel)
        d = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        if os.path.islink(s):
            if os.path.lexists(d):
                os.remove(d)
            os.symlink(os.readlink(s), d)
        elif not (os.path.isfile(d) and not os.path.islink(d) and filecmp.cmp(s, d, shallow=False)):
            if os.path.lexists(d):
                os.remove(d)
            shutil.copy2(s, d)
    for root, dirs, files in os.walk(dst):
        if root == dst:
            dirs[:] = [x for x in dirs if x != "build"]
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), dst)
            if rel not in wanted:
                os.remove(os.path.join(root, name))


class Copy:
    def __init__(self, root, python):
        self.root = root
        self.build = os.path.join(root, "build", "release")
        self.python = python
        self.unit = os.path.join(self.build, "tests", "gitlocks_unit")
        self.cli = os.path.join(self.build, "tools", "cli", "git-locks")

    def configure(self):
        r = subprocess.run(["cmake", "--preset", "release", "-DGITLOCKS_MUTATION_CHECK=OFF"], cwd=self.root,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("mutation: configuring the copy failed:\n" + r.stdout + r.stderr)

    def build_targets(self, targets):
        r = subprocess.run(["cmake", "--build", self.build, "--target", *sorted(targets)], capture_output=True,
                           text=True)
        return r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]

    def count_unit(self, pattern):
        r = subprocess.run([self.unit, "--count", "-tc=" + pattern], capture_output=True, text=True)
        m = re.search(r"passing the current filters: (\d+)", r.stdout)
        return int(m.group(1)) if m else 0

    def run_test(self, spec, timeout=600):
        """(passed, seconds, output tail)."""
        kind, _, rest = spec.partition(":")
        start = time.monotonic()
        env = dict(os.environ)
        if kind == "unit":
            cmd, cwd = [self.unit, "-tc=" + rest, "--no-intro"], self.root
        elif kind == "py":
            suite, _, test = rest.partition(":")
            cmd, cwd = [self.python, "-m", "unittest", "-q", test], os.path.join(self.root, "tests", suite)
            env["GIT_LOCKS_BIN"] = self.cli
        else:
            raise ValueError("unknown test kind in " + spec)
        try:
            r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
            ok, out = r.returncode == 0, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            ok, out = False, f"timed out after {timeout}s: {e}"
        return ok, time.monotonic() - start, out[-3000:]


def targets_for(tests):
    t = set()
    for spec in tests:
        t.add("gitlocks_unit" if spec.startswith("unit:") else "git-locks")
    return t


def load(path):
    with open(path) as f:
        doc = json.load(f)
    names = set()
    for m in doc["mutants"]:
        for k in ("name", "check", "file", "find", "replace", "tests"):
            if k not in m:
                sys.exit(f"mutation: {path}: mutant {m.get('name', '?')} has no '{k}'")
        if m["name"] in names:
            sys.exit(f"mutation: {path}: mutant {m['name']} listed twice")
        names.add(m["name"])
        if m["find"] == m["replace"] or not m["tests"]:
            sys.exit(f"mutation: {path}: mutant {m['name']} changes nothing or names no test")
    return doc["mutants"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--list", default=os.path.join(HERE, "mutants.json"))
    ap.add_argument("--work", help="where the copy goes (default: a new temporary directory)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--only", action="append", default=[], help="run only this mutant (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the copy")
    args = ap.parse_args()

    mutants = load(args.list)
    if args.only:
        unknown = set(args.only) - {m["name"] for m in mutants}
        if unknown:
            sys.exit("mutation: no such mutant: " + ", ".join(sorted(unknown)))
        mutants = [m for m in mutants if m["name"] in args.only]
    work = args.work or tempfile.mkdtemp(prefix="gitlocks-mutation-")
    src_copy = os.path.join(work, "src")
    started = time.monotonic()
    copy_tree(os.path.abspath(args.source), src_copy)
    c = Copy(src_copy, args.python)
    c.configure()
    failures = []

    # The list itself: every mutant's text occurs exactly once in its file.
    for m in mutants:
        path = os.path.join(src_copy, m["file"])
        text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if text.count(m["find"]) != 1:
            failures.append(f"{m['name']}: its text occurs {text.count(m['find'])} times in {m['file']} "
                            "(the list no longer matches the source: update tests/meta/mutants.json)")
    if failures:
        for f in failures:
            log("ROTTED   " + f)
        return 1

    # Baseline: unmutated, every named test passes (a test red already proves nothing).
    ok, out = c.build_targets({"gitlocks_unit", "git-locks"})
    if not ok:
        sys.exit("mutation: the unmutated copy does not build:\n" + out)
    specs = list(dict.fromkeys(s for m in mutants for s in m["tests"]))
    for spec in specs:
        if spec.startswith("unit:") and c.count_unit(spec[5:]) == 0:
            failures.append(f"baseline: {spec} matches no doctest case")
            continue
        passed, secs, out = c.run_test(spec)
        if not passed:
            failures.append(f"baseline: {spec} fails without any mutant:\n{out}")
    if failures:
        for f in failures:
            log("BASELINE " + f)
        return 1
    log(f"mutation: baseline of {len(specs)} tests green in {time.monotonic() - started:.0f}s")

    rows = []
    for m in mutants:
        path = os.path.join(src_copy, m["file"])
        original = open(path, encoding="utf-8").read()
        t0 = time.monotonic()
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(original.replace(m["find"], m["replace"]))
            built, out = c.build_targets(targets_for(m["tests"]))
            if not built:
                rows.append(("UNBUILT", m, None, time.monotonic() - t0, out))
            else:
                killer = None
                for spec in m["tests"]:
                    passed, _, _ = c.run_test(spec)
                    if not passed:
                        killer = spec
                        break
                rows.append(("killed" if killer else "SURVIVED", m, killer, time.monotonic() - t0, ""))
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
        status, _, killer, secs, out = rows[-1]
        log(f"{status:8} {m['name']:34} {m['check']}" + (f"  <- {killer}" if killer else "") + f"  ({secs:.0f}s)")
        if out:
            log(out)

    survivors = [r for r in rows if r[0] != "killed"]
    log(f"mutation: {len(rows) - len(survivors)}/{len(rows)} mutants killed in "
        f"{time.monotonic() - started:.0f}s")
    for status, m, _, _, _ in survivors:
        log(f"mutation: {status}: {m['name']} ({m['check']}, {m['file']}): no listed test fails without it")
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
