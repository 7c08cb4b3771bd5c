"""Trusted admission time end to end (seed 002, SPEC §6): a real notary on
loopback with its test clock, guard-time activation and recovery, attested
leases, substituted proofs, clock rollback, a notary that is down."""

import datetime
import http.server
import json
import os
import subprocess
import threading
import unittest
import urllib.request

from support import T0, JsonHandler, Repo, binary

P = T0 + 10_000  # proposal clock of the attested transitions
SAFE_MAX = 2**53 - 1


class Notary:
    """A `git-locks notary serve` on loopback; `key` reuses another notary's key file."""

    def __init__(self, tc, root, name, audience, key=None):
        self.key = key or os.path.join(root, name + ".key")
        self.state = os.path.join(root, name + "-state")
        self.audience = audience
        if key is None:
            out = subprocess.run([binary(), "notary", "keygen", "--out", self.key], capture_output=True, text=True)
            tc.assertEqual(out.returncode, 0, out.stderr)
            self.service_key = json.loads(out.stdout)["service_key"]
        else:
            self.service_key = None  # from the banner at start
        os.makedirs(self.state, mode=0o700, exist_ok=True)
        self.proc = None
        tc.addCleanup(self.stop)

    def clock(self, ms):
        tmp = os.path.join(self.state, "test-clock-ms.tmp")
        with open(tmp, "w") as f:
            f.write(str(ms))
        os.replace(tmp, os.path.join(self.state, "test-clock-ms"))

    def start(self, test_clock=True):
        self.proc = subprocess.Popen([binary(), "notary", "serve", "--key", self.key, "--state", self.state,
                                      "--listen", "127.0.0.1:0", "--audience", self.audience,
                                      *(["--test-clock"] if test_clock else [])],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.banner = json.loads(self.proc.stdout.readline())
        self.url = "http://" + self.banner["listening"]
        self.service_key = self.service_key or self.banner["service_key"]
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        if self.proc:
            self.proc.stdout.close()
            self.proc.stderr.close()
        self.proc = None


class Proxy:
    """Serves discovery of `disc` but answers /v1/admit with `admit(body)` (HTTP `status`)."""

    def __init__(self, tc, disc_url, admit, status=200):
        outer = self
        outer.status = status

        class H(JsonHandler):

            def do_GET(self):
                with urllib.request.urlopen(disc_url + self.path) as r:
                    self.reply(200, r.read())

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                self.reply(outer.status, admit(body))

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        tc.addCleanup(self.server.server_close)
        tc.addCleanup(self.server.shutdown)


def iso_ms(ms):
    """ISO-8601 UTC with milliseconds, computed by Python, not by git-locks."""
    d = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def post(url, body):
    req = urllib.request.Request(url + "/v1/admit", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return r.read()


class GuardTimeBase(unittest.TestCase):
    def setUp(self):
        self.repo = Repo(self)
        self.repo.now = T0
        with open(os.path.join(self.repo.root, "policy.json"), "w") as f:
            json.dump({"min_ttl_ms": 1000, "max_ttl_ms": 60000}, f)
        r = self.repo.run("alice", "init", "--policy", os.path.join(self.repo.root, "policy.json"))
        self.assertEqual(r.code, 0, r)
        self.notary = Notary(self, self.repo.root, "notary", "locks.test").start()
        self.notary.clock(T0 + 1000)
        self.repo.git("config", "locks.notary", self.notary.url)

    def status(self):
        # The notary runs its test clock: status replays the history (issue 15), which accepts
        # test-clock attestations only with --allow-test-clock.
        r = self.repo.run("alice", "status", "--json", "--allow-test-clock")
        self.assertEqual(r.code, 0, r)
        return r.json

    def enable(self, op_id="op-1", notary=None, extra_env=None, audience=None, key=None):
        n = notary or self.notary
        return self.repo.run("alice", "guard-time", "enable", "--audience", audience or n.audience,
                             "--service-key", key or n.service_key, "--disclosure", "GUARD_WINDOW",
                             "--expected-policy-hash", self.status()["policy_hash"], "--operation-id", op_id,
                             "--allow-test-clock", "--json", env=extra_env)

    def record(self, op_id="op-1"):
        """The saved guard-time operation record."""
        with open(os.path.join(self.repo.path, ".git", "git-locks", "guard-time", op_id + ".json")) as f:
            return json.load(f)

    def attested(self, actor, *args, proposal=P, env=None):
        self.repo.now = None
        e = {"GIT_LOCKS_PROPOSAL_MS": str(proposal)}
        e.update(env or {})
        return self.repo.run(actor, *args, "--allow-test-clock", "--json", env=e)

    def enabled(self):
        r = self.enable()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json["status"], "ACCEPTED")
        self.repo.now = None

    def assertFails(self, r, status, kind, code, op, detail=None, tip=None, reason=None):
        """Exit `status`, one JSON error {kind, code, reason (the code unless given), op}, `detail`
        (exact, or a substring when given as ("in", TEXT)), nothing on stdout, and the ref at `tip`
        when given."""
        self.assertEqual(r.code, status, r)
        e = r.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"]), (kind, code, reason or code, op), r)
        if isinstance(detail, tuple):
            self.assertIn(detail[1], e["detail"], r)
        elif detail is not None:
            self.assertEqual(e["detail"], detail, r)
        self.assertEqual(r.out, "", r)
        if tip is not None:
            self.assertEqual(self.repo.tip(), tip, "refs/locks/state moved")
        return e


class ActivationTest(GuardTimeBase):
    def test_enable_status_already_enabled_and_other_pins(self):
        self.assertFalse(self.status()["guard_time"]["enabled"])
        self.enabled()
        st = self.status()
        self.assertEqual(st["guard_time"], {"enabled": True, "audience": "locks.test",
                                            "service_key": self.notary.service_key})
        again = self.enable("op-2")
        self.assertEqual(again.code, 0, again)
        self.assertEqual(again.json["status"], "ALREADY_ENABLED")
        tip = self.repo.tip()
        other = self.enable("op-3", audience="other.test")
        self.assertFails(other, 64, "usage", "usage", "guard-time enable",
                         "guard time is enabled with other pins; replace them with `git-locks guard-time migrate` "
                         "(an owner-signed guard-time-set)", tip=tip)

    def test_enable_refusals(self):
        tip = self.repo.tip()
        r = self.repo.run("alice", "guard-time", "enable", "--audience", "locks.test", "--service-key",
                          self.notary.service_key, "--disclosure", "NONE", "--expected-policy-hash",
                          self.status()["policy_hash"], "--operation-id", "x", "--allow-test-clock")
        self.assertFails(r, 64, "usage", "usage", "guard-time enable", ("in", "--disclosure GUARD_WINDOW"), tip)
        r = self.repo.run("bob", "guard-time", "enable", "--audience", "locks.test", "--service-key",
                          self.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                          self.status()["policy_hash"], "--operation-id", "y", "--allow-test-clock")
        self.assertFails(r, 1, "refused", "not-holder", "guard-time enable",
                         ("in", "only the store's owner"), tip, reason="not-owner")
        # discovery does not match the pinned key
        self.assertFails(self.enable("z", key="ab" * 32), 2, "store-write", "store-write", "guard-time enable",
                         f"notary service key {self.notary.service_key} is not the pinned {'ab' * 32}", tip)
        r = self.repo.run("alice", "guard-time", "enable", "--audience", "locks.test", "--service-key",
                          self.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                          "00" * 32, "--operation-id", "w", "--allow-test-clock")
        self.assertFails(r, 1, "refused", "stale-generation", "guard-time enable",
                         f"the policy changed: expected policy hash {'00' * 32}, current {self.status()['policy_hash']}",
                         tip, reason="policy-changed")
        r = self.repo.run("alice", "guard-time", "enable", "--audience", "locks.test", "--service-key",
                          self.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                          self.status()["policy_hash"], "--operation-id", "v")
        # a test clock without --allow-test-clock
        self.assertFails(r, 2, "store-write", "store-write", "guard-time enable",
                         "notary runs a 'test' clock: refused (tests only: --allow-test-clock)", tip)

    def test_lost_answer_after_admission_then_resume(self):
        tip = self.repo.tip()
        r = self.enable(extra_env={"GIT_LOCKS_TEST_CRASH_AFTER": "admit"})
        self.assertEqual(r.code, 137, r)
        self.assertEqual(self.repo.tip(), tip)
        path = os.path.join(self.repo.path, ".git", "git-locks", "guard-time", "op-1.json")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        h = self.repo.run("alice", "guard-time", "history", "--json")
        self.assertEqual([o["status"] for o in h.json["operations"]], ["PENDING"])
        self.assertIn("not remote acceptance", h.json["note"])
        self.notary.clock(T0 + 2000)
        r = self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock", "--json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json["status"], "ACCEPTED")
        self.assertTrue(self.status()["guard_time"]["enabled"])
        # The identical saved packet was published.
        saved = self.record()
        self.assertEqual(self.repo.git("show", "refs/locks/state:txn/packet.json").strip(), saved["packet"])

    def test_lost_answer_after_publication_then_resume(self):
        r = self.enable(extra_env={"GIT_LOCKS_TEST_CRASH_AFTER": "publish"})
        self.assertEqual(r.code, 137, r)
        tip = self.repo.tip()
        self.assertTrue(self.status()["guard_time"]["enabled"])
        r = self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock", "--json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual((r.json["status"], r.json["commit"]), ("ACCEPTED", tip))
        self.assertEqual(self.repo.tip(), tip)
        # Repeating the same enable with the same operation id reports it too.
        again = self.repo.run("alice", "guard-time", "enable", "--audience", "locks.test", "--service-key",
                              self.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                              self.record()["input"]["expected_policy_hash"],
                              "--operation-id", "op-1", "--allow-test-clock", "--json")
        self.assertEqual(again.json["status"], "ACCEPTED", again)

    def test_failed_admission_leaves_pending_and_names_resume(self):
        # The notary's discovery answers, its POST /v1/admit fails (HTTP 503): nothing is enabled,
        # the saved operation is PENDING, and the error says how to finish it.
        tip = self.repo.tip()
        proxy = Proxy(self, self.notary.url, lambda body: b'{"error":"unavailable"}', status=503)
        self.repo.git("config", "locks.notary", proxy.url)
        r = self.enable()
        e = self.assertFails(r, 2, "store-write", "store-write", "guard-time enable",
                             ("in", "operation op-1 is saved as PENDING (nothing is enabled yet): "
                                    "`git-locks guard-time resume op-1` verifies whether it landed and finishes it"),
                             tip)
        self.assertIn("HTTP 503", e["detail"])
        self.assertEqual((e["operation_id"], e["status"], e["resume"]),
                         ("op-1", "PENDING", "git-locks guard-time resume op-1"))
        self.assertEqual(self.record()["status"], "PENDING")
        # With the notary back, the command it names finishes it.
        self.repo.git("config", "locks.notary", self.notary.url)
        self.notary.clock(T0 + 2000)
        r = self.repo.run("alice", *e["resume"].split()[1:], "--allow-test-clock", "--json")
        self.assertEqual((r.code, r.json["status"]), (0, "ACCEPTED"), r)

    def test_resume_is_bound_to_the_store_it_was_prepared_for(self):
        r = self.enable(extra_env={"GIT_LOCKS_TEST_CRASH_AFTER": "admit"})
        self.assertEqual(r.code, 137, r)
        tip = self.repo.tip()
        saved = self.record()
        self.assertIsNone(saved["remote"])  # the local store
        bare = os.path.join(self.repo.root, "server.git")
        subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
        self.repo.git("remote", "add", "origin", bare)
        # Resumed against a remote store: refused, and the operation stays PENDING (not FAILED).
        r = self.repo.run("alice", "--remote", "origin", "guard-time", "resume", "op-1", "--allow-test-clock")
        self.assertFails(r, 64, "usage", "usage", "guard-time resume",
                         ("in", "operation op-1 was prepared for this clone's local store"), tip)
        self.assertEqual(self.record(), saved)
        # A record naming another store is refused the same way.
        with open(os.path.join(self.repo.path, ".git", "git-locks", "guard-time", "op-1.json"), "w") as f:
            json.dump(dict(saved, store="f" * 64), f)
        r = self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock")
        self.assertFails(r, 64, "usage", "usage", "guard-time resume",
                         ("in", "operation op-1 belongs to store ffffffffffff, not to this one"), tip)
        with open(os.path.join(self.repo.path, ".git", "git-locks", "guard-time", "op-1.json"), "w") as f:
            json.dump(saved, f)
        self.notary.clock(T0 + 2000)
        r = self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock", "--json")
        self.assertEqual((r.code, r.json["status"]), (0, "ACCEPTED"), r)

    def test_changed_source_and_changed_input_fail(self):
        r = self.enable(extra_env={"GIT_LOCKS_TEST_CRASH_AFTER": "admit"})
        self.assertEqual(r.code, 137, r)
        changed = self.repo.run("alice", "guard-time", "enable", "--audience", "other.test", "--service-key",
                                self.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                                self.status()["policy_hash"], "--operation-id", "op-1", "--allow-test-clock")
        self.assertFails(changed, 64, "usage", "usage", "guard-time enable", ("in", "was prepared with other input"))
        self.repo.now = T0 + 5000
        self.assertEqual(self.repo.run("bob", "claim", "--ttl", "30s", "x").code, 0)
        tip = self.repo.tip()
        r = self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock")
        self.assertFails(r, 1, "refused", "stale-generation", "guard-time resume", ("in", "source changed"), tip,
                         reason="source-changed")
        h = self.repo.run("alice", "guard-time", "history", "--json")
        self.assertEqual(h.json["operations"][0]["status"], "FAILED")
        # FAILED is final: enable with that id and its very input is refused as well, and so is resume.
        saved = self.record()
        again = self.repo.run("alice", "guard-time", "enable", "--audience", "locks.test", "--service-key",
                              self.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                              saved["input"]["expected_policy_hash"], "--operation-id", "op-1", "--allow-test-clock")
        e = self.assertFails(again, 1, "refused", "stale-generation", "guard-time enable",
                             ("in", "operation op-1 FAILED: the source changed"), tip, reason="operation-failed")
        self.assertIn("start a new operation", e["detail"])
        self.assertFails(self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock"), 1, "refused",
                         "stale-generation", "guard-time resume", ("in", "operation op-1 FAILED"), tip,
                         reason="operation-failed")

    def test_accepted_only_from_the_verified_history(self):
        """The ref moved to the enable commit but the answer was lost; then a forger copies that
        commit's tree (and so its packet) into a commit on top. resume finds the packet only in
        verified history: invalid history, nothing ACCEPTED; after the owner's reset it is."""
        r = self.enable(extra_env={"GIT_LOCKS_TEST_CRASH_AFTER": "publish"})
        self.assertEqual(r.code, 137, r)
        enable_commit = self.repo.tip()
        tree = self.repo.git("rev-parse", enable_commit + "^{tree}").strip()
        forged = self.repo.git("commit-tree", tree, "-p", enable_commit, "-m", "replayed").strip()
        self.repo.git("update-ref", "refs/locks/state", forged, enable_commit)
        res = self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock", "--json")
        self.assertEqual(res.code, 2, res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["reason"], e["op"], e["commit"], e["last_valid"]),
                         ("store-read", "invalid-history", "invalid-history", "guard-time resume", forged,
                          enable_commit), res)
        self.assertEqual(self.repo.tip(), forged)
        h = self.repo.run("alice", "guard-time", "history", "--json")
        self.assertEqual([o["status"] for o in h.json["operations"]], ["PENDING"])
        # The owner recovers as told, and the operation is found in the verified history.
        self.repo.git(*e["recovery"].split()[1:])
        self.assertEqual(self.repo.tip(), enable_commit)
        res = self.repo.run("alice", "guard-time", "resume", "op-1", "--allow-test-clock", "--json")
        self.assertEqual((res.code, res.json["status"], res.json["commit"]), (0, "ACCEPTED", enable_commit), res)

    def test_enable_replans_when_a_writer_moves_the_ref_first(self):
        """Enable goes through every writer's pipeline: a claim that lands just before its first
        compare-and-swap costs a fresh plan (new packet, saved before it is sent), not the operation."""
        bin_ = os.environ["GIT_LOCKS_BIN"]
        env = self.repo.wrapped(GIT_WRAPPER_RACE_CMD=f"GIT_LOCKS_KEY={self.repo.key('bob')} '{bin_}' --repo "
                                                     f"'{self.repo.path}' claim --ttl 30s raced.txt")
        before = self.repo.tip()
        r = self.enable(extra_env=env)
        self.assertEqual((r.code, r.json["status"]), (0, "ACCEPTED"), r)
        self.assertEqual([s for s, _ in self.repo.update_ref_log()], [128, 0])
        chain = self.repo.git("rev-list", "--first-parent", "refs/locks/state").split()
        self.assertEqual(chain[0], r.json["commit"])
        raced = chain[1]
        self.assertEqual(self.repo.git("rev-parse", raced + "^").strip(), before)
        saved = self.record()
        self.assertEqual((saved["status"], saved["source_commit"], saved["commit"]),
                         ("ACCEPTED", raced, r.json["commit"]))
        self.assertEqual(self.repo.git("show", "refs/locks/state:txn/packet.json").strip(), saved["packet"])
        self.assertTrue(self.status()["guard_time"]["enabled"])
        self.assertEqual(self.repo.run("alice", "verify", "--allow-test-clock").code, 0)


class MigrationTest(GuardTimeBase):
    """guard-time migrate|disable (seed 002's explicit migration before any signer change): the
    owner moves the store to another notary, which admits that change itself, or turns guard time
    off without any notary; older commits verify under the pins they were attested under."""

    def setUp(self):
        super().setUp()
        self.enabled()
        self.notary.clock(P)
        r = self.attested("alice", "claim", "--ttl", "60000", "a")
        self.assertEqual((r.code, r.json["admitted_at_ms"]), (0, P), r)

    def migrate(self, notary, actor="alice", h=None, proposal=P + 100, extra=()):
        self.repo.now = None
        return self.repo.run(actor, "guard-time", "migrate", "--audience", notary.audience, "--service-key",
                             notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                             h or self.status()["policy_hash"], *extra, "--allow-test-clock", "--json",
                             env={"GIT_LOCKS_PROPOSAL_MS": str(proposal)})

    def disable(self, actor="alice", h=None, proposal=P + 100):
        self.repo.now = None
        return self.repo.run(actor, "guard-time", "disable", "--expected-policy-hash",
                             h or self.status()["policy_hash"], "--allow-test-clock", "--json",
                             env={"GIT_LOCKS_PROPOSAL_MS": str(proposal)})

    def verify_all_valid(self):
        r = self.repo.run("alice", "--json", "verify", "--full", "--allow-test-clock")
        self.assertEqual(r.code, 0, r)
        chain = self.repo.git("rev-list", "--reverse", "refs/locks/state").split()
        verdicts = [json.loads(line) for line in r.out.splitlines()]
        self.assertEqual([(v["commit"], v["ok"]) for v in verdicts], [(c, True) for c in chain], r)
        return verdicts

    def test_migrate_while_the_old_notary_is_stopped(self):
        new = Notary(self, self.repo.root, "second", "second.test").start()
        new.clock(P + 100)
        self.notary.stop()  # the lost key: notary A never answers again
        tip = self.repo.tip()
        # locks.notary still names the old notary: the migration cannot be admitted there.
        self.assertFails(self.migrate(new), 2, "store-write", "store-write", "guard-time migrate",
                         ("in", "is unreachable"), tip)
        self.repo.git("config", "locks.notary", new.url)
        r = self.migrate(new)
        self.assertEqual(r.code, 0, r)
        self.assertEqual((r.json["op"], r.json["status"], r.json["commit"], r.json["admitted_at_ms"]),
                         ("guard-time migrate", "MIGRATED", self.repo.tip(), P + 100), r)
        self.assertEqual(r.json["guard_time"], {"audience": "second.test", "service_key": new.service_key})
        st = self.status()
        self.assertEqual(st["guard_time"], {"enabled": True, "audience": "second.test",
                                            "service_key": new.service_key})
        self.assertEqual(r.json["policy_hash"], st["policy_hash"])
        # The migration carries the new notary's attestation.
        att = json.loads(self.repo.git("show", "refs/locks/state:txn/attestation.json"))
        self.assertEqual((att["attestation"]["service_key"], att["attestation"]["admitted_at_ms"]),
                         (new.service_key, P + 100))
        # Claims go through the new notary.
        new.clock(P + 200)
        r = self.attested("bob", "claim", "--ttl", "60000", "b", proposal=P + 200)
        self.assertEqual((r.code, r.json["admitted_at_ms"]), (0, P + 200), r)
        verdicts = self.verify_all_valid()
        self.assertEqual([v["command"] for v in verdicts],
                         ["init", "guard-time-enable", "claim", "guard-time-migrate", "claim"])
        self.assertEqual([v["time"] for v in verdicts[2:]], [P, P + 100, P + 200])
        # A writer still pointed at the old notary (running again) is told its pins are not the store's.
        self.notary.start()
        self.notary.clock(P + 300)
        tip = self.repo.tip()
        r = self.attested("bob", "claim", "--ttl", "60000", "c", "--notary", self.notary.url, proposal=P + 300)
        self.assertFails(r, 2, "store-write", "store-write", "claim",
                         "notary audience 'locks.test' is not the pinned 'second.test'", tip)

    def test_disable_needs_no_notary_then_the_local_clock(self):
        self.notary.stop()
        self.repo.git("config", "--unset", "locks.notary")
        # The owner's clock is behind the notary's last T: the switch-off takes that T.
        r = self.disable(proposal=P - 5000)
        self.assertEqual(r.code, 0, r)
        self.assertEqual((r.json["op"], r.json["status"], r.json["commit"], r.json["admitted_at_ms"],
                          r.json["guard_time"]), ("guard-time disable", "DISABLED", self.repo.tip(), P, None), r)
        self.assertEqual(self.repo.git("ls-tree", "--name-only", "refs/locks/state:txn").split(), ["packet.json"])
        self.assertFalse(self.status()["guard_time"]["enabled"])
        self.repo.now = P + 1000
        r = self.repo.run("bob", "claim", "--ttl", "30s", "b", "--allow-test-clock", "--json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json["admitted_at_ms"], P + 1000, r)
        verdicts = self.verify_all_valid()
        self.assertEqual([(v["command"], v["time"]) for v in verdicts[2:]],
                         [("claim", P), ("guard-time-disable", P), ("claim", P + 1000)])

    def test_non_owner_refused(self):
        new = Notary(self, self.repo.root, "second", "second.test").start()
        new.clock(P + 100)
        self.repo.git("config", "locks.notary", new.url)
        tip = self.repo.tip()
        self.assertFails(self.migrate(new, actor="bob"), 1, "refused", "not-holder", "guard-time migrate",
                         ("in", "only the store's owner"), tip, reason="not-owner")
        self.assertFails(self.disable(actor="bob"), 1, "refused", "not-holder", "guard-time disable",
                         ("in", "only the store's owner"), tip, reason="not-owner")

    def test_stale_expected_policy_hash_and_a_rerun(self):
        new = Notary(self, self.repo.root, "second", "second.test").start()
        new.clock(P + 100)
        self.repo.git("config", "locks.notary", new.url)
        tip = self.repo.tip()
        current = self.status()["policy_hash"]
        self.assertFails(self.migrate(new, h="00" * 32), 1, "refused", "stale-generation", "guard-time migrate",
                         f"the policy changed: expected policy hash {'00' * 32}, current {current}", tip,
                         reason="policy-changed")
        self.assertFails(self.disable(h="00" * 32), 1, "refused", "stale-generation", "guard-time disable",
                         f"the policy changed: expected policy hash {'00' * 32}, current {current}", tip,
                         reason="policy-changed")
        self.assertEqual(self.migrate(new, h=current).code, 0)
        # The same command again (its answer lost): it landed, so the hash it expects is stale.
        tip = self.repo.tip()
        self.assertFails(self.migrate(new, h=current), 1, "refused", "stale-generation", "guard-time migrate",
                         ("in", f"the policy changed: expected policy hash {current}"), tip,
                         reason="policy-changed")

    def test_migrate_refusals(self):
        tip = self.repo.tip()
        # The pins in force already.
        self.assertFails(self.migrate(self.notary), 64, "usage", "usage", "guard-time migrate",
                         "guard time already uses these pins: nothing to change", tip)
        # No consent.
        r = self.repo.run("alice", "guard-time", "migrate", "--audience", "x.test", "--service-key", "ab" * 32,
                          "--disclosure", "NONE", "--expected-policy-hash", self.status()["policy_hash"])
        self.assertFails(r, 64, "usage", "usage", "guard-time migrate", ("in", "--disclosure GUARD_WINDOW"), tip)
        # The notary reached is not the one named: its discovery must match the new pins.
        new = Notary(self, self.repo.root, "second", "second.test").start()
        new.clock(P + 100)
        self.repo.git("config", "locks.notary", new.url)
        r = self.repo.run("alice", "guard-time", "migrate", "--audience", "second.test", "--service-key", "ab" * 32,
                          "--disclosure", "GUARD_WINDOW", "--expected-policy-hash", self.status()["policy_hash"],
                          "--allow-test-clock", env={"GIT_LOCKS_PROPOSAL_MS": str(P + 100)})
        self.assertFails(r, 2, "store-write", "store-write", "guard-time migrate",
                         f"notary service key {new.service_key} is not the pinned {'ab' * 32}", tip)
        # Guard time off: there is nothing to migrate, nor to turn off again.
        self.assertEqual(self.disable().code, 0)
        tip = self.repo.tip()
        self.assertFails(self.migrate(new), 64, "usage", "usage", "guard-time migrate",
                         "guard time is not enabled: turn it on with `git-locks guard-time enable`", tip)
        self.assertFails(self.disable(), 64, "usage", "usage", "guard-time disable",
                         "guard time is not enabled: turn it on with `git-locks guard-time enable`", tip)

class LeaseTest(GuardTimeBase):
    def setUp(self):
        super().setUp()
        self.enabled()

    def claim(self, path, ttl="60000", proposal=P, actor="alice"):
        return self.attested(actor, "claim", "--ttl", ttl, path, proposal=proposal)

    def test_inclusive_ttl_boundaries(self):
        # claim at proposal P with TTL 60 s: expires_at = P + 60000, T in [P, P + 59000].
        for t, path, ok in [(P - 1, "a", False), (P, "a", True), (P + 59001, "b", False), (P + 59000, "b", True)]:
            self.notary.clock(t)
            tip = self.repo.tip()
            r = self.claim(path)
            if ok:
                self.assertEqual(r.code, 0, r)
                self.assertEqual(r.json["admitted_at_ms"], t)
            else:
                self.assertFails(r, 1, "refused", "guard-window", "claim",
                                 ("in", "the notary's admission time is outside the guard interval"), tip)

    def test_renewal_non_increasing_and_reclaim(self):
        self.notary.clock(P)
        self.assertEqual(self.claim("a").code, 0)
        e = P + 60000
        self.notary.clock(P + 30000)  # renewal before expiry
        r = self.attested("alice", "extend", "--ttl", "60000", "a", proposal=P + 30000)
        self.assertEqual(r.code, 0, r)
        e = P + 90000
        tip = self.repo.tip()
        r = self.attested("alice", "extend", "--ttl", "30000", "a", proposal=P + 60000)  # same expiry
        self.assertFails(r, 1, "refused", "guard-window", "extend",
                         f"a renewal must move the expiry later: {iso_ms(e)} is not after the current expiry "
                         f"{iso_ms(e)}", tip)
        self.notary.clock(e)  # renewal at expiry is admitted (T <= prev_expires_at)
        r = self.attested("alice", "extend", "--ttl", "60000", "a", proposal=e)
        self.assertEqual(r.code, 0, r)
        e = e + 60000
        # reclaim by bob: at expiry refused by the notary's T, after admitted.
        self.notary.clock(e)
        tip = self.repo.tip()
        r = self.claim("a", proposal=e + 1, actor="bob")
        self.assertFails(r, 1, "refused", "guard-window", "claim",
                         ("in", "the notary's admission time is outside the guard interval"), tip)
        r = self.claim("a", proposal=e - 1, actor="bob")  # before expiry the planner refuses
        self.assertFails(r, 1, "refused", "held-path", "claim", None, tip)
        self.notary.clock(e + 1)
        r = self.claim("a", proposal=e + 1, actor="bob")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json["leases"][0]["generation"], 2)
        # stale generation: alice's generation 1 is gone
        tip = self.repo.tip()
        r = self.attested("alice", "release", "--generation", "1", "a", proposal=e + 2)
        self.assertFails(r, 1, "refused", "stale-generation", "release",
                         "no lease of yours on path:a at generation 1: superseded (generation now 2)", tip,
                         reason="superseded")

    def test_overflow_and_invalid_bounds(self):
        tip = self.repo.tip()
        self.notary.clock(P)
        r = self.claim("a", ttl="120000")  # beyond max_ttl: T would have to be later than P
        self.assertFails(r, 1, "refused", "guard-window", "claim", None, tip)
        r = self.claim("a", proposal=SAFE_MAX - 30000)  # expires_at beyond 2^53 - 1
        expires = SAFE_MAX - 30000 + 60000
        self.assertFails(r, 64, "usage", "arithmetic-overflow", "claim",
                         f"op 0: expires_at {expires} is beyond the safe timestamp domain [0, 2^53-1]", tip)
        other = Repo(self, "other")
        with open(os.path.join(other.root, "p.json"), "w") as f:
            json.dump({"min_ttl_ms": 0, "max_ttl_ms": 60000}, f)
        r = other.run("alice", "init", "--policy", os.path.join(other.root, "p.json"))
        self.assertFails(r, 64, "usage", "usage", "init", "policy TTL bounds must satisfy 0 < min_ttl_ms <= max_ttl_ms")
        self.assertIsNone(other.tip())

    def test_client_clock_refused(self):
        self.notary.clock(P)
        tip = self.repo.tip()
        r = self.repo.run("alice", "claim", "a", "--allow-test-clock", env={"GIT_LOCKS_NOW_MS": str(P)})
        self.assertFails(r, 64, "usage", "usage", "claim", "GIT_LOCKS_NOW_MS is refused: this store uses trusted "
                         "admission time from its notary, never a client clock", tip)

    def test_clock_rollback_also_across_restart(self):
        self.notary.clock(P + 10)
        self.assertEqual(self.claim("a").code, 0)
        for restart in (False, True):
            if restart:
                self.notary.stop()
                self.notary.start()
                self.repo.git("config", "locks.notary", self.notary.url)
            self.notary.clock(P + 5)
            tip = self.repo.tip()
            r = self.claim("b")
            e = self.assertFails(r, 2, "store-write", "store-write", "claim",
                                 ("in", "notary refused admission with HTTP 409: "), tip)
            notary_error = json.loads(e["detail"].split("HTTP 409: ", 1)[1].rsplit("; nothing was published", 1)[0])
            self.assertEqual((notary_error["error"], notary_error["t"], notary_error["high_water_ms"]),
                             ("clock-rollback", P + 5, P + 10))
        self.notary.clock(P + 10)
        self.assertEqual(self.claim("b").code, 0)

    def test_notary_down(self):
        self.notary.stop()
        tip = self.repo.tip()
        r = self.claim("a")
        self.assertFails(r, 2, "store-write", "store-write", "claim", ("in", "is unreachable"), tip)

    def test_substituted_admission_proofs(self):
        self.notary.clock(P)
        self.assertEqual(self.claim("a").code, 0)
        old_att = self.repo.git("show", "refs/locks/state:txn/attestation.json").encode()
        other = Notary(self, self.repo.root, "other", "other.test").start()
        other.clock(P)
        same_audience_other_key = Notary(self, self.repo.root, "rogue", "locks.test").start()
        same_audience_other_key.clock(P)
        for name, admit in [("another commit", lambda body: old_att),
                            ("another audience", lambda body: post(other.url, body)),
                            ("another key", lambda body: post(same_audience_other_key.url, body))]:
            proxy = Proxy(self, self.notary.url, admit)
            tip = self.repo.tip()
            r = self.attested("alice", "claim", "--ttl", "60000", "b", "--notary", proxy.url)
            with self.subTest(name):
                self.assertFails(r, 2, "store-write", "store-write", "claim", ("in", "notary attestation rejected: "),
                                 tip)

    def forge(self, replace):
        """A commit with the tip's parent and tree but files replaced ({path: blob bytes})."""
        def rebuild(tree, prefix):
            lines = []
            for entry in self.repo.git("ls-tree", tree).splitlines():
                meta, name = entry.split("\t")
                mode, kind, oid = meta.split()
                full = prefix + name
                if kind == "tree" and any(p.startswith(full + "/") for p in replace):
                    oid = rebuild(oid, full + "/")
                elif full in replace:
                    oid = subprocess.run(["git", "-C", self.repo.path, "hash-object", "-w", "--stdin"],
                                         input=replace[full], capture_output=True, check=True).stdout.decode().strip()
                lines.append(f"{mode} {kind} {oid}\t{name}")
            return subprocess.run(["git", "-C", self.repo.path, "mktree"], input="\n".join(lines) + "\n",
                                  capture_output=True, text=True, check=True).stdout.strip()
        tip = self.repo.tip()
        tree = rebuild(self.repo.git("rev-parse", tip + "^{tree}").strip(), "")
        commit = self.repo.git("commit-tree", tree, "-p", tip + "^", "-m", "forged").strip()
        self.repo.git("update-ref", "refs/locks/state", commit, tip)
        return commit

    def test_changed_checkpoints_detected_by_verify(self):
        self.notary.clock(P)
        self.assertEqual(self.claim("a").code, 0)
        first = self.repo.git("show", "refs/locks/state:txn/attestation.json").encode()
        self.notary.clock(P + 1)
        self.assertEqual(self.claim("b").code, 0)
        chain = self.repo.git("rev-list", "--reverse", "refs/locks/state").split()
        clean = self.repo.run("alice", "--json", "verify", "--full", "--allow-test-clock")
        self.assertEqual(clean.code, 0, clean)
        self.assertEqual([(v["commit"], v["ok"]) for v in map(json.loads, clean.out.splitlines())],
                         [(c, True) for c in chain])
        # Without --allow-test-clock the verifier refuses the notary's test clock, from the activation on.
        strict = self.repo.run("alice", "--json", "verify", "--full")
        self.assertEqual(strict.code, 1, strict)
        verdicts = [json.loads(line) for line in strict.out.splitlines()]
        self.assertEqual([v["commit"] for v in verdicts], chain)
        self.assertTrue(verdicts[0]["ok"], verdicts[0])  # init: before guard time
        self.assertEqual((verdicts[1]["ok"], verdicts[1]["reason"], verdicts[1]["detail"]),
                         (False, "attestation-mismatch", 'test-clock: admitted by a notary running a "test" clock'),
                         verdicts[1])
        self.forge({"txn/attestation.json": first})  # an attestation for another source/result
        r = self.repo.run("alice", "--json", "verify", "--full", "--allow-test-clock")
        self.assertEqual(r.code, 1, r)
        verdicts = [json.loads(line) for line in r.out.splitlines()]
        self.assertTrue(all(v["ok"] for v in verdicts[:-1]), verdicts)
        self.assertEqual((verdicts[-1]["ok"], verdicts[-1]["reason"]), (False, "attestation-mismatch"), verdicts[-1])
        self.assertTrue(verdicts[-1]["detail"].startswith("binding:"), verdicts[-1])

    def test_old_client_refuses_unknown_profile(self):
        policy = json.loads(self.repo.git("show", "refs/locks/state:state/policy.json"))
        policy["guard_time"]["profiles"].append("time-add-guard-window-v2")
        data = json.dumps(policy, separators=(",", ":"), sort_keys=True).encode()
        forged = self.forge({"state/policy.json": data})
        # A clone without a trust checkpoint (this one's names the replaced
        # tip: a rewrite), replaying the history: the unknown profile is
        # refused as such, the commit named (issue 15).
        common = self.repo.git("rev-parse", "--path-format=absolute", "--git-common-dir").strip()
        os.remove(os.path.join(common, "git-locks", "trust", "local.json"))
        self.notary.clock(P)
        r = self.claim("a")
        e = self.assertFails(r, 2, "store-read", "unknown-format", "claim", None, forged)
        self.assertEqual((e["commit"], e["verdict"]), (forged, "unknown-format"), r)


if __name__ == "__main__":
    unittest.main()
