"""Self-test of the observation study's checker (observe.check_log): a
synthetic event log of each violation the planner refuses (SPEC §3:
overlapping paths with an exclusive side, exclusive and shared families, a
semaphore over its limit) and of each bookkeeping fault must fail it; logs
the planner admits (shared with shared, one holder with itself, disjoint
paths, touching intervals, a semaphore at its limit) must pass it.

  python3 -m unittest -v observe_selftest     (from tests/race)
"""

import unittest

import observe

EXCLUSIVE = {"name": "db", "policy": "exclusive", "members": ["db/schema.sql", "db/migrations/"]}
SHARED = {"name": "docs", "policy": "shared", "members": ["docs/"]}
FAMILIES = [EXCLUSIVE, SHARED]
LIMITS = {"pool": 2}


class Log:
    """Builds an event log as the workers write it: one enter and one leave
    per hold, a publication order for the grants' commits."""

    def __init__(self):
        self.events, self.order, self.gens = [], {}, {}

    def hold(self, holder, resource, mode, start, end, generation=None, fence=0):
        key = resource
        if resource.startswith("path:"):
            key = "path:" + "/".join(observe.path_key(resource[5:]))
        if generation is None:
            generation = self.gens.get(key, 0) + 1
        self.gens[key] = max(self.gens.get(key, 0), generation)
        commit = "%040x" % (len(self.order) + 1)
        self.order[commit] = len(self.order)
        common = dict(resource=resource, mode=mode, generation=generation, holder=holder, worker=holder)
        self.events.append(dict(common, ev="enter", t=start, commit=commit, fence=fence))
        self.events.append(dict(common, ev="leave", t=end))
        return self

    def path(self, holder, path, mode, start, end, **kw):
        return self.hold(holder, "path:" + path, mode, start, end, **kw)

    def sem(self, holder, start, end, name="pool", **kw):
        return self.hold(holder, "sem:" + name, "sem", start, end, **kw)

    def problems(self):
        events = sorted(self.events, key=lambda e: e["t"])  # the log is in time order
        return observe.check_log(events, FAMILIES, LIMITS, self.order)[3]


class Violations(unittest.TestCase):
    """Every log here holds something the planner would have refused."""

    def fails(self, log, expect):
        problems = log.problems()
        self.assertTrue(problems, "the checker passed a violating log")
        self.assertTrue(any(expect in p for p in problems), problems)

    def test_overlapping_paths_with_an_exclusive_side(self):
        pairs = [("a/b", "a/b"),  # equal
                 ("a/b", "a/b/"),  # equal but for the trailing `/`
                 ("a/", "a/b"), ("a/b/", "a/b/c"),  # ancestor with `/`
                 ("a/b", "a/b/c"), ("e", "e/f/"), ("e", "e/f/g"),  # ancestor without `/`
                 ("x/y/z/", "x")]  # descendant first
        for first, second in pairs:
            for modes in (("exclusive", "exclusive"), ("exclusive", "shared"), ("shared", "exclusive")):
                for a, b in ((first, second), (second, first)):
                    with self.subTest(a=a, b=b, modes=modes):
                        log = Log().path("w1", a, modes[0], 0, 10).path("w2", b, modes[1], 5, 15)
                        self.fails(log, "overlap (held-path)")

    def test_one_hold_inside_another(self):
        self.fails(Log().path("w1", "a/", "exclusive", 0, 100).path("w2", "a/b/c", "shared", 40, 50),
                   "overlap (held-path)")

    def test_exclusive_family_admits_one_holder_at_a_time(self):
        # Paths that do not overlap each other, only the family's members.
        pairs = [("db/schema.sql", "db/migrations/001.sql"), ("db/migrations/001.sql", "db/migrations/002.sql"),
                 ("db/schema.sql/x", "db/migrations/"), ("db/schema.sql", "db/migrations")]
        for a, b in pairs:
            for modes in (("exclusive", "exclusive"), ("shared", "shared"), ("shared", "exclusive")):
                with self.subTest(a=a, b=b, modes=modes):
                    log = Log().path("w1", a, modes[0], 0, 10).path("w2", b, modes[1], 5, 15)
                    self.fails(log, "overlap (family-policy)")
        # An ancestor of a member belongs to the family: shared with shared still conflicts.
        self.fails(Log().path("w1", "db/", "shared", 0, 10).path("w2", "db/schema.sql", "shared", 5, 15),
                   "overlap (family-policy)")

    def test_shared_family_members_are_only_claimed_shared(self):
        for path in ("docs/", "docs/readme.md", "docs"):
            with self.subTest(path=path):
                self.fails(Log().path("w1", path, "exclusive", 0, 10), "family-policy")

    def test_semaphore_over_its_limit(self):
        log = Log().sem("w1", 0, 30).sem("w2", 10, 40).sem("w3", 20, 25)
        self.fails(log, "semaphore pool held 3 times at once (limit 2)")

    def test_unknown_semaphore(self):
        self.fails(Log().sem("w1", 0, 10, name="other"), "not one the study uses")

    def test_generation_reused_or_decreasing(self):
        self.fails(Log().path("w1", "a/b", "exclusive", 0, 10, generation=3)
                   .path("w2", "a/b/", "exclusive", 20, 30, generation=3), "not strictly increasing")
        self.fails(Log().sem("w1", 0, 10, generation=5).sem("w2", 20, 30, generation=4),
                   "not strictly increasing")

    def test_grant_outside_the_history(self):
        log = Log().path("w1", "a/b", "exclusive", 0, 10)
        log.order.clear()
        self.fails(log, "not in the first-parent history")

    def test_failed_fence(self):
        self.fails(Log().path("w1", "a/b", "exclusive", 0, 10, fence=1), "failed their fence")

    def test_enter_without_leave(self):
        log = Log().path("w1", "a/b", "exclusive", 0, 10)
        log.events.pop()
        self.fails(log, "an enter without a leave")


class Admitted(unittest.TestCase):
    """Logs the planner admits must pass: the checker is not merely strict."""

    def passes(self, log):
        self.assertEqual(log.problems(), [])

    def test_shared_with_shared_on_overlapping_paths(self):
        self.passes(Log().path("w1", "a/", "shared", 0, 10).path("w2", "a/b", "shared", 5, 15)
                    .path("w3", "e", "shared", 6, 9).path("w4", "e/f/", "shared", 7, 8))

    def test_one_holder_never_conflicts_with_itself(self):
        self.passes(Log().path("w1", "a/", "exclusive", 0, 10).path("w1", "a/b/c", "exclusive", 2, 8)
                    .path("w1", "db/schema.sql", "exclusive", 0, 10)
                    .path("w1", "db/migrations/001.sql", "exclusive", 1, 9))

    def test_disjoint_paths(self):
        # `a/b` and `a/bc` share a string prefix, not a component.
        self.passes(Log().path("w1", "a/b", "exclusive", 0, 10).path("w2", "a/bc", "exclusive", 0, 10)
                    .path("w3", "a/d", "exclusive", 0, 10).path("w4", "e/g", "exclusive", 0, 10)
                    .path("w5", "db/schema.sql.bak", "exclusive", 0, 10)
                    .path("w6", "db/schema.sql", "exclusive", 0, 10))

    def test_one_holder_after_another(self):
        # Intervals are half-open: a hold may start the instant the previous one ends.
        self.passes(Log().path("w1", "a/b", "exclusive", 0, 10).path("w2", "a/b/c", "exclusive", 10, 20)
                    .path("w3", "db/schema.sql", "exclusive", 0, 10)
                    .path("w4", "db/migrations/", "shared", 10, 20).sem("w1", 0, 10).sem("w2", 0, 10)
                    .sem("w3", 10, 20))

    def test_shared_family_in_shared_mode(self):
        self.passes(Log().path("w1", "docs/", "shared", 0, 10).path("w2", "docs/a.md", "shared", 0, 10))

    def test_semaphore_at_its_limit(self):
        self.passes(Log().sem("w1", 0, 30).sem("w2", 10, 40).sem("w3", 30, 50))


if __name__ == "__main__":
    unittest.main()
