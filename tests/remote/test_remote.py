"""Stores shared across machines (SPEC §8, issue 9): every writer is its own
clone ("host") of a repository served by a real Git server on loopback —
a bare repository over file://, `git daemon` with receive-pack, and smart
HTTP through `git http-backend` behind lighttpd. The store is the server's
refs/locks/state: snapshots are fetched, publications are atomic pushes with
a lease on the expected root, and the server's pre-receive hook
(`git-locks hook install --server`) rejects anything that does not replay.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, HERE)

from servers import KINDS, Server, SilentProxy, clone  # noqa: E402
from support import Result, binary  # noqa: E402
from test_verify import Plumbing, canon  # noqa: E402
from threads import Workers, run_parallel  # noqa: E402

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

PUSH_WRAPPER = os.path.join(HERE, "push_wrapper.sh")
STATE = "refs/locks/state"


class Host:
    """One writer: its own clone, its own key, the server as `origin`."""

    def __init__(self, test, root, name, url, configure=True):
        self.name = name
        self.path = clone(url, os.path.join(root, name), name)
        self.key = os.path.join(root, f"{name}.key")
        self.root = root
        if configure:
            self.git("config", "locks.remote", "origin")

    def env(self, extra=None):
        env = dict(os.environ)
        for var in ("GIT_LOCKS_KEY", "GIT_LOCKS_NOW_MS", "GIT_LOCKS_GIT", "GIT_DIR", "GIT_WORK_TREE"):
            env.pop(var, None)
        env["GIT_LOCKS_KEY"] = self.key
        env.update(extra or {})
        return env

    def run(self, *args, env=None, timeout=60):
        proc = subprocess.run([binary(), "--repo", self.path, *args], capture_output=True, text=True,
                              env=self.env(env), timeout=timeout)
        return Result(proc)

    def git(self, *args, check=True):
        return subprocess.run(["git", "-C", self.path, *args], capture_output=True, text=True,
                              check=check).stdout

    def local_state(self):
        r = subprocess.run(["git", "-C", self.path, "rev-parse", "-q", "--verify", STATE],
                           capture_output=True, text=True)
        return r.stdout.strip() or None


def status_of(host):
    """`status --json` of a host's clone (fetched)."""
    return json.loads(host.run("--json", "status").out)


def server_verify(test, srv, *extra):
    """`git-locks verify` run on the server's own repository."""
    r = Result(subprocess.run([binary(), "--repo", srv.bare, "--json", "verify", *extra], capture_output=True,
                              text=True, env=dict(os.environ, GIT_LOCKS_KEY=os.path.join(srv.root, "auditor.key"))))
    return r


class RemoteTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gitlocks-remote-")
        self.addCleanup(shutil.rmtree, self.root, True)

    def server(self, kind, hook=True):
        srv = Server.start(kind, os.path.join(self.root, kind))
        self.addCleanup(srv.close)
        if hook:
            r = Result(subprocess.run([binary(), "--repo", srv.bare, "--json", "hook", "install", "--server"],
                                      capture_output=True, text=True))
            self.assertEqual(r.code, 0, r)
        return srv

    def host(self, srv, name, **kw):
        return Host(self, srv.root, name, srv.url, **kw)

    def store(self, kind, *names, hook=True):
        """A server of `kind`, a host per name, and a store the first one initialised."""
        srv = self.server(kind, hook=hook)
        hosts = [self.host(srv, n) for n in names]
        self.assertOk(hosts[0].run("init"))
        return (srv, *hosts)

    def assertOk(self, res):
        self.assertEqual(res.code, 0, res)
        return res

    def assertRefused(self, res, reason):
        self.assertEqual(res.code, 1, res)
        self.assertEqual(res.error["reason"], reason, res)

    def assertStore(self, res, kind):
        self.assertEqual(res.code, 2, res)
        self.assertEqual(res.error["error"], kind, res)
        return res.error


class EndToEnd(RemoteTest):
    """The same life cycle through every transport."""

    def life_cycle(self, kind):
        srv = self.server(kind)
        alice = self.host(srv, "alice")
        bob = self.host(srv, "bob")
        self.assertOk(alice.run("init"))
        self.assertIsNotNone(srv.tip())
        self.assertIsNone(alice.local_state(), "a remote store never writes the clone's own refs/locks/state")

        claimed = self.assertOk(alice.run("--json", "claim", "--ttl", "10m", "src/parser/")).json
        self.assertEqual(claimed["commit"], srv.tip())
        self.assertEqual(claimed["attempts"], 1)

        with_tip = srv.tip()
        self.assertRefused(bob.run("--json", "claim", "src/parser/lexer.c"), "held-path")
        self.assertEqual(srv.tip(), with_tip, "a refusal publishes nothing")

        status = self.assertOk(bob.run("--json", "status")).json
        self.assertEqual([l["resource"] for l in status["leases"]], ["path:src/parser"], status)

        lease = claimed["leases"][0]["lease"]
        self.assertOk(alice.run("--json", "extend", "--ttl", "20m", lease))
        self.assertOk(alice.run("--json", "release", lease))
        got = self.assertOk(bob.run("--json", "claim", "src/parser/lexer.c")).json
        self.assertEqual(got["commit"], srv.tip())
        self.assertOk(bob.run("--json", "sem", "acquire", "runners", "--limit", "1"))
        self.assertRefused(alice.run("--json", "sem", "acquire", "runners", "--limit", "1"), "full-semaphore")

        # The owner's checkpoint, through the server's hook; then a host that has verified nothing yet
        # (carol) starts there: the checkpoint and the commits after it, not the root.
        before = srv.tip()
        cp = self.assertOk(alice.run("--json", "checkpoint")).json
        self.assertEqual((cp["commit"], cp["prev"]), (srv.tip(), before))
        self.assertOk(bob.run("--json", "sem", "release", "runners"))
        carol = self.host(srv, "carol")
        v = self.assertOk(carol.run("--json", "verify"))
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["start"], summary["start_commit"], summary["commits"]),
                         ("checkpoint", cp["commit"], 1), summary)

        log = bob.run("--json", "log")
        self.assertOk(log)
        self.assertEqual(len(log.out.splitlines()), len(srv.history()))

        # verify: on the server's own repository, and from a host through the remote.
        self.assertOk(server_verify(self, srv))
        v = self.assertOk(alice.run("--json", "verify", "--full"))
        summary = json.loads(v.err.splitlines()[-1])
        self.assertEqual((summary["tip"], summary["commits"], summary["ok"]), (srv.tip(), len(srv.history()), True))

        # export: a bundle whose one ref is refs/locks/state at the server's tip.
        bundle = os.path.join(self.root, f"{kind}.bundle")
        out = self.assertOk(alice.run("--json", "export", "--bundle", bundle)).json
        self.assertEqual(out["tip"], srv.tip())
        heads = subprocess.run(["git", "bundle", "list-heads", bundle], capture_output=True, text=True,
                               check=True).stdout.split()
        self.assertEqual(heads, [srv.tip(), STATE])
        return srv, alice, bob

    def test_file(self):
        self.life_cycle("file")

    def test_git_daemon(self):
        self.life_cycle("daemon")

    def test_smart_http(self):
        self.life_cycle("http")

    def test_remote_flag_and_run_renewals(self):
        srv = self.server("daemon")
        alice = self.host(srv, "alice", configure=False)
        self.assertOk(alice.run("--remote", "origin", "init"))
        before = len(srv.history())
        marker = os.path.join(self.root, "ran")
        # TTL 4 s, renewed every 1.33 s while the command runs for 6.5 s: at least two renewals, and each
        # one (fetch, verify from the checkpoint, push) may take 2 s under ASan on a loaded machine before
        # the lease runs out (a lost lease now stops the command: lease-lost, exit 1).
        r = alice.run("--remote", "origin", "run", "--ttl", "4s", "--claim", "build/", "--",
                      "sh", "-c", f"sleep 6.5; touch {marker}")
        self.assertOk(r)
        self.assertTrue(os.path.exists(marker))
        commands = []
        for c in srv.history()[:len(srv.history()) - before]:
            msg = subprocess.run(["git", "-C", srv.bare, "log", "-1", "--format=%s", c], capture_output=True,
                                 text=True, check=True).stdout.strip()
            commands.append(msg)
        self.assertGreaterEqual(len(commands), 4, commands)  # claim, >= 2 renewals, release
        self.assertOk(server_verify(self, srv))
        # Without --remote (and no locks.remote) the clone's own repository is the store.
        self.assertIsNone(self.assertOk(alice.run("--json", "status")).json["commit"])
        # --remote "" overrides locks.remote: this repository's store.
        alice.git("config", "locks.remote", "origin")
        self.assertIsNone(self.assertOk(alice.run("--remote", "", "--json", "status")).json["commit"])
        self.assertEqual(self.assertOk(alice.run("--json", "status")).json["commit"], srv.tip())


    def test_web_serves_the_remote_store(self):
        srv, alice = self.store("http", "alice")
        site = os.path.join(self.root, "site")
        os.makedirs(os.path.join(site, "pkg"))
        for name in ("index.html", os.path.join("pkg", "browser.mjs")):
            open(os.path.join(site, name), "w").close()
        web = subprocess.Popen([binary(), "--repo", alice.path, "web", "--site", site], env=alice.env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(web.wait)
        self.addCleanup(web.kill)
        port = json.loads(web.stdout.readline())["port"]
        import urllib.request

        def get(path):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=20) as r:
                return r.read(), r.headers

        live = json.loads(get("live.json")[0])
        self.assertEqual(live["tip"], srv.tip())
        self.assertOk(self.host(srv, "bob").run("claim", "docs/"))  # the ref moves on the server
        self.assertEqual(json.loads(get("live.json")[0])["tip"], srv.tip())
        data, headers = get("live.bundle")
        self.assertEqual(headers["X-Git-Locks-Tip"], srv.tip())
        bundle = os.path.join(self.root, "live.bundle")
        with open(bundle, "wb") as f:
            f.write(data)
        heads = subprocess.run(["git", "bundle", "list-heads", bundle], capture_output=True, text=True,
                               check=True).stdout.split()
        self.assertEqual(heads, [srv.tip(), STATE])


class Waiting(RemoteTest):
    """`claim --wait` and `wait` against a remote store: every try fetches."""

    def test_claim_wait_is_admitted_when_the_other_host_releases(self):
        srv, alice, bob = self.store("daemon", "alice", "bob")
        self.assertOk(bob.run("--json", "claim", "--ttl", "10m", "a"))
        proc = subprocess.Popen([binary(), "--repo", alice.path, "--json", "claim", "--wait=60s", "a"],
                                env=alice.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        self.assertIsNone(proc.poll())
        held = srv.tip()
        self.assertOk(bob.run("release", "a"))
        out, err = proc.communicate(timeout=90)
        self.assertEqual(proc.returncode, 0, err)
        got = json.loads(out)
        self.assertEqual((got["leases"][0]["resource"], got["commit"]), ("path:a", srv.tip()))
        self.assertNotEqual(srv.tip(), held)
        self.assertOk(server_verify(self, srv))

    def test_wait_timeouts_name_the_holder(self):
        srv, alice, bob = self.store("file", "alice", "bob")
        self.assertOk(bob.run("--json", "claim", "--ttl", "10m", "a"))
        tip = srv.tip()
        r = alice.run("claim", "--wait=500ms", "a")
        # Her ticket in the store's queue, pushed, then dropped when she gave up.
        self.assertEqual(srv.history()[2], tip)
        self.assertEqual(status_of(alice)["queue"], [])
        after_claim = srv.tip()
        self.assertEqual(r.code, 1, r)
        self.assertEqual((r.error["code"], r.error["last_reason"]), ("wait-timeout", "held-path"))
        self.assertGreaterEqual(r.error["waited_ms"], 500)
        self.assertIn("is held exclusive by ", r.error["detail"])
        r = alice.run("wait", "--timeout", "500ms", "a")
        self.assertRefused(r, "held-path")
        self.assertIn("timed out after", r.error["detail"])
        self.assertEqual(srv.tip(), after_claim, "wait (without --claim) publishes nothing")


class Publication(RemoteTest):
    def test_stale_push_fetches_and_replans(self):
        srv, alice, bob = self.store("file", "alice", "bob")
        state = os.path.join(self.root, "wrapper-state")
        os.mkdir(state)
        log = os.path.join(self.root, "push.log")
        # Bob publishes between Alice's fetch and her push: her lease is stale.
        race = f"GIT_LOCKS_KEY={bob.key} {binary()} --repo {bob.path} claim other/"
        r = alice.run("--json", "claim", "mine/", env={"GIT_LOCKS_GIT": PUSH_WRAPPER, "PUSH_WRAPPER_LOG": log,
                                                       "PUSH_WRAPPER_STATE": state, "PUSH_WRAPPER_RACE_CMD": race})
        self.assertOk(r)
        self.assertEqual(r.json["attempts"], 2, r)
        with open(log) as f:
            pushes = f.read().splitlines()
        self.assertEqual([p.split()[0] for p in pushes], ["1", "0"], pushes)
        self.assertIn("--atomic", pushes[0])
        self.assertIn("--force-with-lease=refs/locks/state:", pushes[0])
        leases = {l["resource"] for l in self.assertOk(alice.run("--json", "status")).json["leases"]}
        self.assertEqual(leases, {"path:mine", "path:other"})
        self.assertOk(server_verify(self, srv))

    def test_stale_pushes_are_bounded_by_the_200_replans(self):
        srv, alice = self.store("file", "alice")
        before = srv.tip()
        log = os.path.join(self.root, "push.log")
        r = alice.run("--json", "claim", "x/", env={"GIT_LOCKS_GIT": PUSH_WRAPPER, "PUSH_WRAPPER_LOG": log,
                                                    "PUSH_WRAPPER_FAIL": "stale"}, timeout=300)
        self.assertRefused(r, "stale-retries-exhausted")
        self.assertEqual(r.error["attempts"], 201, r)
        with open(log) as f:
            self.assertEqual(len(f.read().splitlines()), 201)
        self.assertEqual(srv.tip(), before)

    def test_server_side_race_is_stale_not_failure(self):
        """Both pushes pass the lease check; the server's own compare-and-swap
        rejects the slower one ("atomic transaction failed"), which replans."""
        srv, alice, bob = self.store("daemon", "alice", "bob")
        hook = os.path.join(srv.bare, "hooks", "pre-receive")
        gate = os.path.join(self.root, "gate")
        with open(hook) as f:
            verify_hook = f.read()
        with open(hook, "w") as f:
            # The first push waits inside the hook (after the lease check)
            # until the second one has landed.
            f.write(f"#!/bin/sh\nif mkdir {gate} 2>/dev/null; then\n"
                    f"  while [ ! -e {gate}/go ]; do sleep 0.02; done\nfi\n" +
                    verify_hook.split("\n", 1)[1])
        first = Workers(lambda: alice.run("--json", "claim", "a/"))
        deadline = time.monotonic() + 20
        while not os.path.isdir(gate) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertTrue(os.path.isdir(gate), "the first push never reached the hook")
        self.assertOk(bob.run("--json", "claim", "b/"))
        open(os.path.join(gate, "go"), "w").close()
        [r] = first.join(60)
        self.assertOk(r)
        self.assertEqual(r.json["attempts"], 2, r)
        self.assertEqual(r.json["commit"], srv.tip())
        self.assertOk(server_verify(self, srv))

    def test_hook_rejection_is_store_write_with_the_servers_words(self):
        srv, alice = self.store("daemon", "alice", hook=False)
        before = srv.tip()
        hook = os.path.join(srv.bare, "hooks", "pre-receive")
        with open(hook, "w") as f:
            # A hook that also mimics the server's compare-and-swap message:
            # only git's own summary may make a rejection stale.
            f.write('#!/bin/sh\necho \'policy says "no"\'\necho "second line"\n'
                    'echo "error: cannot lock ref \'refs/locks/state\': is at 1111 but expected 2222"\nexit 1\n')
        os.chmod(hook, 0o755)
        r = alice.run("--json", "claim", "x/")
        e = self.assertStore(r, "store-write")
        self.assertEqual(e["attempts"], 1, r)  # not one of the 200 replans
        self.assertIn('policy says "no"', e["detail"])
        self.assertIn("second line", e["detail"])
        self.assertIn("pre-receive hook declined", e["detail"])
        self.assertEqual(len(r.err.splitlines()), 1, "one JSON line, newlines escaped")
        self.assertEqual(srv.tip(), before)
        self.assertEqual(r.out, "")

    def test_lost_push_answer_is_recognised_as_published(self):
        """The server moves the ref and dies before it answers: the client
        sees a hung-up connection, fetches, finds its own unique commit at
        the tip and reports the success it had."""
        srv, alice = self.store("daemon", "alice")
        marker = os.path.join(self.root, "killed")
        hook = os.path.join(srv.bare, "hooks", "reference-transaction")
        with open(hook, "w") as f:
            f.write(f"#!/bin/sh\n[ \"$1\" = committed ] || exit 0\n"
                    f"grep -q ' refs/locks/state$' || exit 0\n"
                    f"mkdir {marker} 2>/dev/null && kill -9 $PPID\nexit 0\n")
        os.chmod(hook, 0o755)
        r = alice.run("--json", "claim", "x/")
        self.assertTrue(os.path.isdir(marker), "the server was not killed")
        self.assertOk(r)
        self.assertEqual(r.json["commit"], srv.tip())
        self.assertOk(server_verify(self, srv))

    def watched(self, host, *args):
        """Runs a command through the push wrapper: (result, pushes, fetches)."""
        d = tempfile.mkdtemp(dir=self.root)
        pushes, fetches = os.path.join(d, "push.log"), os.path.join(d, "fetch.log")
        r = host.run("--json", *args, env={"GIT_LOCKS_GIT": PUSH_WRAPPER, "PUSH_WRAPPER_LOG": pushes,
                                            "PUSH_WRAPPER_FETCH_LOG": fetches})

        def lines(path):
            if not os.path.exists(path):
                return []
            with open(path) as f:
                return f.read().splitlines()
        return r, lines(pushes), lines(fetches)

    def test_publications_plan_on_the_cached_tip_and_the_lease_checks_it(self):
        """Issue 18: a publication plans on the clone's cached copy of the
        remote tip, without a fetch; the push's lease is what checks it."""
        srv, alice, bob = self.store("daemon", "alice", "bob")
        self.assertOk(alice.run("claim", "a/"))
        cache = "refs/locks/remotes/origin/state"
        self.assertEqual(alice.git("rev-parse", cache).strip(), srv.tip(), "our push moved the cache")
        # Nobody else wrote: one push, no fetch.
        r, pushes, fetches = self.watched(alice, "claim", "b/")
        self.assertOk(r)
        self.assertEqual((len(pushes), len(fetches), r.json["attempts"]), (1, 0, 1), (pushes, fetches))
        self.assertEqual(r.json["commit"], srv.tip())
        # Another host wrote since: the cached plan's push is rejected by its
        # lease, then one fetch and a fresh plan land.
        self.assertOk(bob.run("claim", "c/"))
        r, pushes, fetches = self.watched(alice, "claim", "d/")
        self.assertOk(r)
        self.assertEqual(r.json["attempts"], 2, r)
        self.assertEqual(len(pushes), 2, pushes)
        self.assertTrue(pushes[0].startswith("1 "), pushes)  # the stale lease
        self.assertEqual(len(fetches), 1, fetches)
        self.assertEqual(r.json["commit"], srv.tip())
        # A refusal on the cached tip is decided again on a fresh one: bob
        # released x/ since alice last saw it held.
        self.assertOk(bob.run("claim", "x/"))
        self.assertOk(alice.run("status"))  # alice's cache: x/ held by bob
        self.assertOk(bob.run("release", "x/"))
        r, pushes, fetches = self.watched(alice, "claim", "x/")
        self.assertOk(r)
        self.assertEqual((len(fetches), len(pushes), r.json["attempts"]), (1, 1, 1), (pushes, fetches))
        # A real refusal on a current cache: decided again on a fetch,
        # reported, nothing pushed.
        self.assertOk(bob.run("claim", "y/"))
        self.assertOk(alice.run("status"))
        r, pushes, fetches = self.watched(alice, "claim", "y/")
        self.assertRefused(r, "held-path")
        self.assertEqual((len(fetches), len(pushes)), (1, 0), (pushes, fetches))
        # On a stale cache the claim looks admissible: the lease rejects the
        # push, and the fresh plan refuses.
        self.assertOk(bob.run("claim", "w/"))
        r, pushes, fetches = self.watched(alice, "claim", "w/")
        self.assertRefused(r, "held-path")
        self.assertEqual((len(fetches), len(pushes)), (1, 1), (pushes, fetches))
        self.assertTrue(pushes[0].startswith("1 "), pushes)
        # Reads still fetch every time.
        r, pushes, fetches = self.watched(alice, "status")
        self.assertOk(r)
        self.assertEqual((len(fetches), len(pushes)), (1, 0))
        self.assertEqual(len(srv.history()), 10)
        self.assertOk(server_verify(self, srv))

    def test_held_server_ref_lock_retries_the_same_push_then_fails(self):
        srv, alice = self.store("file", "alice")
        before = srv.tip()
        # The server's own lock wait (100 ms by default) would hide ours.
        subprocess.run(["git", "-C", srv.bare, "config", "core.filesRefLockTimeout", "0"], check=True)
        lock = os.path.join(srv.bare, "refs", "locks", "state.lock")
        with open(lock, "w") as f:
            f.write("planted\n")
        log = os.path.join(self.root, "push.log")
        r = alice.run("--json", "claim", "x/", env={"GIT_LOCKS_GIT": PUSH_WRAPPER, "PUSH_WRAPPER_LOG": log})
        e = self.assertStore(r, "store-write")
        self.assertEqual(e["attempts"], 6, r)
        self.assertIn("state.lock", e["detail"])
        with open(log) as f:
            pushes = [line.split(" ", 1)[1] for line in f.read().splitlines()]
        self.assertEqual(len(pushes), 6)
        self.assertEqual(len(set(pushes)), 1, "the same candidate every time")
        with open(lock) as f:
            self.assertEqual(f.read(), "planted\n", "git-locks never touches another writer's lock")
        self.assertEqual(srv.tip(), before)
        # A lock that goes away during the retries: the same candidate lands.
        state = os.path.join(self.root, "wrapper-state")
        os.mkdir(state)
        r = alice.run("--json", "claim", "x/", env={"GIT_LOCKS_GIT": PUSH_WRAPPER, "PUSH_WRAPPER_STATE": state,
                                                    "PUSH_WRAPPER_AFTER_CMD": f"rm -f {lock}"})
        self.assertOk(r)
        self.assertEqual(r.json["attempts"], 2, r)
        self.assertEqual(r.json["commit"], srv.tip())

    def test_concurrent_commands_in_one_clone(self):
        """Several writers share one clone (and so its cache ref of the remote tip)."""
        srv, shared = self.store("daemon", "shared")
        def writer(i):
            key = os.path.join(self.root, f"w{i}.key")
            out = []
            for n in range(6):
                for args in (("claim", f"p{i}/{n}"), ("release", f"p{i}/{n}")):
                    out.append(shared.run("--json", *args, env={"GIT_LOCKS_KEY": key}))
            return out
        results = [r for rs in run_parallel([lambda i=i: writer(i) for i in range(4)], 300) for r in rs]
        self.assertEqual(len(results), 4 * 6 * 2)
        failed = [r for r in results if r.code != 0]
        self.assertEqual(failed, [], f"{len(failed)} of {len(results)} failed")
        self.assertEqual(len(srv.history()), 1 + len(results))
        self.assertOk(server_verify(self, srv))

    def test_bad_remote_names_and_unreachable_remotes(self):
        srv = self.server("file")
        alice = self.host(srv, "alice", configure=False)
        for bad in ("../x", "-x", "a..b", "a//b", "x.lock", "a b"):
            r = alice.run("--remote", bad, "status")
            self.assertEqual(r.code, 64, (bad, r))
            self.assertEqual(r.error["error"], "usage")
        e = self.assertStore(alice.run("--remote", "nosuch", "status"), "store-read")
        self.assertIn("nosuch", e["detail"])
        self.assertStore(alice.run("--remote", "nosuch", "init"), "store-read")
        self.assertIsNone(srv.tip())

    def test_creation_race_on_the_remote(self):
        srv = self.server("daemon")
        hosts = [self.host(srv, f"h{i}") for i in range(4)]
        procs = [subprocess.Popen([binary(), "--repo", h.path, "--json", "init"], env=h.env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h in hosts]
        outs = [p.communicate(timeout=60) for p in procs]
        self.assertEqual([p.returncode for p in procs], [0] * 4, outs)
        self.assertEqual(len(srv.history()), 1, "exactly one init landed")
        self.assertOk(server_verify(self, srv))


class ServerHook(RemoteTest):
    """A buggy or hostile client cannot publish an invalid state."""

    def setUp(self):
        super().setUp()
        self.srv = self.server("daemon")
        self.alice = self.host(self.srv, "alice")
        self.assertOk(self.alice.run("init"))
        self.assertOk(self.alice.run("claim", "src/"))
        self.alice.git("fetch", "-q", "origin", f"+{STATE}:{STATE}")  # a local copy to forge from
        self.good = self.srv.tip()

    def forge(self, tree=None, parent=None, message="git-locks: claim"):
        a = self.alice
        tree = tree or a.git("rev-parse", f"{STATE}^{{tree}}").strip()
        parent = parent or a.git("rev-parse", STATE).strip()
        return a.git("commit-tree", tree, "-p", parent, "-m", message).strip()

    def push(self, spec):
        return subprocess.run(["git", "-C", self.alice.path, "push", "--porcelain", "origin", spec],
                              capture_output=True, text=True)

    def assertRejected(self, spec, why):
        r = self.push(spec)
        self.assertNotEqual(r.returncode, 0, r)
        self.assertIn("pre-receive hook declined", r.stdout, r)
        self.assertIn(why, r.stderr, r)
        self.assertEqual(self.srv.tip(), self.good, "the server's ref moved")

    def test_replayed_packet_is_rejected(self):
        # The tip's own tree (and packet) again on top of the tip: its source
        # checkpoint is no longer the parent's state.
        self.assertRejected(f"{self.forge()}:{STATE}", "is not a valid transition")

    def genuine_claim(self, path):
        """bob's claim of `path` on the server's tip, signed by him and made in his own clone without
        publishing it; alice's clone gets its objects. Returns (commit, bob's key)."""
        bob = self.host(self.srv, "bob", configure=False)
        bob.git("fetch", "-q", "origin", f"+{STATE}:{STATE}")
        self.assertOk(bob.run("claim", path))
        self.alice.git("fetch", "-q", bob.path, STATE)
        with open(bob.key) as f:
            key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(json.load(f)["seed"]))
        return self.alice.git("rev-parse", "FETCH_HEAD").strip(), key

    def test_tampered_state_is_rejected(self):
        # bob's own signed claim of lib/, chained on the tip, with the state of before alice's claim:
        # her lease vanished. Valid in every other respect, so the server's state checks are what refuse it.
        p = Plumbing(self.alice)
        genuine, key = self.genuine_claim("lib/")
        self.assertEqual(p.git("rev-parse", genuine + "^").decode().strip(), self.good)
        tree = p.tree_of(genuine)
        vanished = p.get(p.tree_of(p.chain()[0]), "state")  # the store as init made it
        # The commit's state is not its packet's result.
        self.assertRejected(f"{self.forge(tree=p.put(tree, 'state', vanished, 'tree'))}:{STATE}",
                            "is not a valid transition: state-mismatch")
        # The packet's result (re-signed by bob) is not what re-planning his claim gives.
        packet = json.loads(p.cat(p.get(tree, "txn/packet.json")))["packet"]
        packet["result"] = vanished
        signed = canon({"packet": packet, "sig": key.sign(b"gitlocks/packet/v1\x00" + canon(packet)).hex()})
        resigned = p.put(p.put(tree, "state", vanished, "tree"), "txn/packet.json", p.blob(signed))
        self.assertRejected(f"{self.forge(tree=resigned)}:{STATE}", "is not a valid transition: result-mismatch")
        # Unchanged, bob's claim lands: nothing else about it was wrong.
        r = self.push(f"{genuine}:{STATE}")
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(self.srv.tip(), genuine)

    def test_unsigned_garbage_is_rejected(self):
        a = self.alice
        blob = subprocess.run(["git", "-C", a.path, "hash-object", "-w", "--stdin"], input="{}",
                              capture_output=True, text=True, check=True).stdout.strip()
        tree = subprocess.run(["git", "-C", a.path, "mktree"], input=f"100644 blob {blob}\tpacket.json\n",
                              capture_output=True, text=True, check=True).stdout.strip()
        self.assertRejected(f"{self.forge(tree=tree)}:{STATE}", "refs/locks/state")

    def test_deletion_and_rewrite_are_rejected(self):
        self.assertRejected(f":{STATE}", "deleting the lock store")
        first = self.alice.git("rev-parse", f"{STATE}~1").strip()
        self.assertRejected(f"+{first}:{STATE}", "does not descend")

    def test_other_refs_pass_and_valid_transitions_still_land(self):
        self.alice.git("commit", "-q", "--allow-empty", "-m", "work")
        r = self.push("HEAD:refs/heads/main")
        self.assertEqual(r.returncode, 0, r)
        self.assertOk(self.alice.run("claim", "docs/"))
        self.assertOk(server_verify(self, self.srv))

    def test_private_store_is_checked_structurally(self):
        srv = self.server("file")
        owner = self.host(srv, "owner")
        self.assertOk(owner.run("init", "--private"))
        self.assertOk(owner.run("claim", "secret/plan.txt"))
        self.assertIsNotNone(srv.tip())
        # The server holds no member key: its verification is structural.
        v = server_verify(self, srv)
        self.assertOk(v)
        self.assertIn("structural verification only", v.err)
        objects = subprocess.run(["git", "-C", srv.bare, "cat-file", "--batch-all-objects", "--batch"],
                                 capture_output=True, check=True).stdout
        self.assertNotIn(b"secret/plan.txt", objects)


class GuardTimeOnARemote(RemoteTest):
    """Trusted admission time with the store on a server: activation and
    attested claims through pushes, attestations checked by the server."""

    def setUp(self):
        super().setUp()
        from test_guard_time import Notary  # tests/cli: a real notary with its test clock
        self.Notary = Notary

    def activated(self, hook_flags=()):
        srv = Server.start("daemon", os.path.join(self.root, "daemon"))
        self.addCleanup(srv.close)
        r = Result(subprocess.run([binary(), "--repo", srv.bare, *hook_flags, "hook", "install", "--server"],
                                  capture_output=True, text=True))
        self.assertOk(r)
        alice, bob = self.host(srv, "alice"), self.host(srv, "bob")
        policy = os.path.join(self.root, "policy.json")
        with open(policy, "w") as f:
            json.dump({"min_ttl_ms": 1000, "max_ttl_ms": 60000}, f)
        self.assertOk(alice.run("init", "--policy", policy))
        notary = self.Notary(self, self.root, "notary", "locks.test").start()
        self.p = int(time.time() * 1000) + 10_000  # the proposal clock of the attested claims
        notary.clock(self.p + 5000)
        for h in (alice, bob):
            h.git("config", "locks.notary", notary.url)
        policy_hash = self.assertOk(alice.run("--json", "status")).json["policy_hash"]
        enable = alice.run("--json", "--allow-test-clock", "guard-time", "enable", "--audience", "locks.test",
                           "--service-key", notary.service_key, "--disclosure", "GUARD_WINDOW",
                           "--expected-policy-hash", policy_hash, "--operation-id", "remote-1")
        return srv, alice, bob, notary, enable

    def attested(self, host, *args):
        return host.run("--json", "--allow-test-clock", *args, env={"GIT_LOCKS_PROPOSAL_MS": str(self.p)})

    def test_activation_and_attested_claims_through_the_server(self):
        srv, alice, bob, notary, enable = self.activated(hook_flags=("--allow-test-clock",))
        self.assertOk(enable)
        self.assertEqual(enable.json["status"], "ACCEPTED")
        self.assertEqual(enable.json["commit"], srv.tip())
        # status replays the history, which accepts test-clock attestations only with --allow-test-clock.
        status = self.assertOk(bob.run("--json", "--allow-test-clock", "status")).json
        self.assertTrue(status["guard_time"]["enabled"])
        got = self.assertOk(self.attested(bob, "claim", "--ttl", "60000", "src/"))
        self.assertEqual(got.json["admitted_at_ms"], self.p + 5000)
        self.assertEqual(got.json["commit"], srv.tip())
        # T outside the claim's window: refused by the notary, nothing pushed.
        notary.clock(self.p + 59001)
        tip = srv.tip()
        r = self.attested(alice, "claim", "--ttl", "60000", "docs/")
        self.assertRefused(r, "guard-window")
        self.assertEqual(srv.tip(), tip)
        v = server_verify(self, srv, "--allow-test-clock")
        self.assertOk(v)
        self.assertOk(alice.run("--allow-test-clock", "verify"))

    def test_server_rejects_attestations_it_does_not_accept(self):
        # The server's hook does not accept a notary's test clock: the
        # attested activation is rejected there, and nothing moves.
        srv, alice, bob, notary, enable = self.activated()
        e = self.assertStore(enable, "store-write")
        self.assertIn("pre-receive hook declined", e["detail"])
        self.assertFalse(self.assertOk(bob.run("--json", "status")).json["guard_time"]["enabled"])
        self.assertEqual(len(srv.history()), 1)


class ServerGoesAway(RemoteTest):
    def test_server_down_is_exit_2_and_nothing_is_lost(self):
        srv, alice, bob = self.store("daemon", "alice", "bob")
        self.assertOk(alice.run("claim", "a/"))
        before = srv.history()

        # Writers hammer the server; it goes away in the middle.
        acked, lock = [], threading.Lock()
        stop = time.monotonic() + 3.0
        codes = []

        def writer(h, i):
            n = 0
            while time.monotonic() < stop:
                n += 1
                r = h.run("--json", "claim", "--ttl", "2s", f"w{i}/{n}")
                with lock:
                    codes.append(r.code)
                    if r.code == 0:
                        acked.append(r.json["commit"])
                    else:
                        self.assertEqual(r.code, 2, r)
                        self.assertIn(r.error["error"], ("store-read", "store-write"), r)
        writers = Workers(*(lambda h=h, i=i: writer(h, i) for i, h in enumerate((alice, bob))))
        time.sleep(1.0)
        srv.stop()
        writers.join(120)  # re-raises a writer's failed assertion here
        self.assertIn(2, codes, "no writer noticed the server going away")

        marker = os.path.join(self.root, "launched")
        # A publication plans on the clone's cached remote tip: the push is
        # what fails (store-write); a read fetches, and that fails (store-read).
        r = bob.run("run", "--claim", "z/", "--", "touch", marker)
        self.assertStore(r, "store-write")
        self.assertFalse(os.path.exists(marker), "a command was launched without admission")
        self.assertStore(bob.run("status"), "store-read")

        srv.restart()
        history = srv.history()
        self.assertEqual(history[-len(before):], before, "the history before the outage was rewritten")
        for c in acked:
            self.assertIn(c, history, f"{c} was reported as published but is not on the server")
        self.assertOk(server_verify(self, srv))
        self.assertOk(bob.run("claim", "after/"))


def processes_mentioning(text):
    """Pids of the processes whose command line contains `text`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


class ServerNeverAnswers(RemoteTest):
    """Issue 18, goal 4: a server that accepts the connection and never
    answers costs at most `git config locks.timeout` per fetch or push; the
    command then fails with store-read (fetch) or store-write (push),
    publishes nothing and launches nothing."""

    def silent(self, hang, upstream=None):
        p = SilentProxy.start(hang, upstream)
        self.addCleanup(p.close)
        return p

    def timed(self, host, *args):
        t0 = time.monotonic()
        r = host.run("--json", *args)
        return r, time.monotonic() - t0

    def test_fetch_from_a_silent_server_is_store_read_after_the_timeout(self):
        for scheme in ("git", "http"):
            with self.subTest(scheme=scheme):
                proxy = self.silent("all")
                url = proxy.url("store.git", scheme)
                host = Host(self, self.root, f"h-{scheme}", url)
                host.git("config", "locks.timeout", "1s")
                marker = os.path.join(self.root, f"launched-{scheme}")
                for args in (("claim", "x/"), ("status",), ("run", "--claim", "z/", "--", "touch", marker)):
                    r, took = self.timed(host, *args)
                    e = self.assertStore(r, "store-read")
                    self.assertIn("did not finish within 1s (git config locks.timeout)", e["detail"], r)
                    self.assertGreaterEqual(took, 1.0, r)
                    self.assertLess(took, 10.0, "the timeout did not stop the fetch")
                self.assertFalse(os.path.exists(marker), "a command was launched without admission")
                self.assertGreaterEqual(proxy.accepted, 3)
                self.assertEqual(host.git("for-each-ref", "refs/locks/"), "", "nothing was written")
                # Nothing git started (git-remote-http for http://) is left
                # waiting on the silent server.
                self.assertEqual(processes_mentioning(f"127.0.0.1:{proxy.port}/"), [])

    def test_push_to_a_silent_server_is_store_write_and_nothing_lands(self):
        srv, alice = self.store("daemon", "alice")
        self.assertOk(alice.run("claim", "a/"))
        before = srv.history()
        proxy = self.silent("receive-pack", srv.port)
        alice.git("remote", "set-url", "origin", proxy.url(srv.name))
        alice.git("config", "locks.timeout", "1500ms")
        self.assertOk(alice.run("--json", "status"))  # fetches pass through
        marker = os.path.join(self.root, "launched")
        for args in (("claim", "x/"), ("run", "--claim", "z/", "--", "touch", marker)):
            r, took = self.timed(alice, *args)
            e = self.assertStore(r, "store-write")
            self.assertIn("git push origin did not finish within 1500ms (git config locks.timeout)", e["detail"])
            self.assertEqual(e["attempts"], 1, r)
            self.assertGreaterEqual(took, 1.5, r)
            self.assertLess(took, 12.0, r)
        self.assertFalse(os.path.exists(marker), "a command was launched without admission")
        self.assertEqual(srv.history(), before, "nothing was published")
        self.assertEqual(processes_mentioning(f"127.0.0.1:{proxy.port}/"), [])
        # The server answers again: the same host claims, nothing was lost.
        alice.git("remote", "set-url", "origin", srv.url)
        self.assertOk(alice.run("claim", "x/"))
        self.assertEqual(srv.history()[1:], before)
        self.assertOk(server_verify(self, srv))

    def test_bad_timeouts_are_usage_errors(self):
        srv, alice = self.store("file", "alice")
        before = srv.history()
        for bad in ("0", "0s", "-1s", "abc", "25h", "1.5s"):
            alice.git("config", "locks.timeout", bad)
            r = alice.run("--json", "claim", "x/")
            self.assertEqual(r.code, 64, (bad, r))
            self.assertEqual(r.error["error"], "usage", r)
            self.assertIn("locks.timeout must be a duration from 1ms to 24h", r.error["detail"])
        self.assertEqual(srv.history(), before)
        for good in ("1ms", "24h", "2m"):
            alice.git("config", "locks.timeout", good)
            if good == "1ms":
                # No fetch finishes in a millisecond: store-read, not usage.
                self.assertStore(alice.run("--json", "status"), "store-read")
            else:
                self.assertOk(alice.run("--json", "status"))
        # A local store never reads the setting.
        alice.git("config", "locks.timeout", "abc")
        self.assertOk(alice.run("--remote", "", "--json", "init"))


if __name__ == "__main__":
    unittest.main()
