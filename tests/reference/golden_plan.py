"""The planner vectors' golden tree ids, derived independently of the core.

tests/vectors/plan/scenarios.json records, for every case, the tree id of the
new store's state ("init_state") and of the state after every admitted step
("state"); those ids were recorded from a native run. This module rebuilds
each of them from what docs/FORMAT.md says a state is — format.json, the
canonical policy, and the expected records ("records", written by the model
in golden_store.py) at records/AA/BB/<sha256 of the resource key>.json — with
real `git hash-object -w` and `git mktree` in a scratch repository, and
requires the same id. It also requires the vector file to be exactly what
gen_plan_vectors.py writes (so "records" was not pasted from the core) and
the hand-written generations to agree with the records.

Run: python3 -m unittest -v golden_plan (ctest: reference/golden_plan)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import golden_store as gs  # noqa: E402

VECTORS = os.path.join(HERE, "..", "vectors")
SCENARIOS = os.path.join(VECTORS, "plan", "scenarios.json")


class GoldenPlan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="golden-plan-")
        subprocess.run(["git", "init", "-q", "--bare", cls.tmp], check=True)
        cls.git = gs.Git(cls.tmp)
        with open(SCENARIOS, encoding="utf-8") as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def policy(self, case):
        p = gs.default_policy("a" * 64, gs.actor_hex("owner"))
        p.update(case.get("policy", {}))
        return p

    def test_vector_file_is_what_the_generator_writes(self):
        out = subprocess.run([sys.executable, os.path.join(VECTORS, "gen_plan_vectors.py"), "--check"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_every_recorded_tree_id_is_rebuilt_from_the_expected_records(self):
        self.assertEqual(self.doc["kind"], "plan")
        inits = states = 0
        for c in self.doc["cases"]:
            with self.subTest(case=c["name"]):
                policy = self.policy(c)
                self.assertEqual(self.git.state_tree(policy, []), c["init_state"], "init_state")
                inits += 1
                for i, s in enumerate(c["steps"]):
                    e = s["expect"]
                    if not e.get("ok"):
                        self.assertNotIn("state", e)
                        continue
                    records = e["records"]
                    keys = [gs.record_key(r) for r in records]
                    self.assertEqual(keys, sorted(set(keys)), f"step {i}: records sorted, each once")
                    for res, gen in e.get("generations", {}).items():
                        rec = next((r for r in records if gs.record_key(r) == res), None)
                        self.assertIsNotNone(rec, f"step {i}: no record {res}")
                        self.assertEqual(rec["generation"], gen, f"step {i}: generation of {res}")
                    self.assertEqual(self.git.state_tree(policy, records), e["state"], f"step {i}: state")
                    states += 1
        # 94 cases with 153 admitted steps since the waiters' queue's cases;
        # fewer means the corpus shrank, never that a check was dropped silently.
        self.assertGreaterEqual(inits, 94)
        self.assertGreaterEqual(states, 153)

    def test_the_rebuilt_tree_depends_on_every_part_of_the_state(self):
        # The comparison above can fail: a changed byte of a record, the
        # policy or the format, or a record at the format-1 location, gives
        # another tree id than the recorded one.
        c = next(c for c in self.doc["cases"] if c["name"] == "deep directory conflict five levels down")
        step = c["steps"][0]["expect"]
        policy = self.policy(c)
        self.assertEqual(self.git.state_tree(policy, step["records"]), step["state"])
        changed = json.loads(json.dumps(step["records"]))
        changed[0]["generation"] += 1
        self.assertNotEqual(self.git.state_tree(policy, changed), step["state"])
        self.assertNotEqual(self.git.state_tree(dict(policy, min_ttl_ms=999), step["records"]), step["state"])
        self.assertNotEqual(self.git.state_tree(policy, step["records"], fmt=1), step["state"])
        self.assertNotEqual(self.git.state_tree(policy, step["records"][1:]), step["state"])


if __name__ == "__main__":
    unittest.main()
