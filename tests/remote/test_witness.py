"""Witnesses against split views (docs/FORMAT.md "Witnesses", docs/WITNESS.md;
issue 33 item 5), through real servers: a `git-locks witness serve` process
verifies the chain up to a checkpoint with the core's verifier and cosigns
it only when it extends the checkpoint it cosigned last for that store.

Two git daemons serve one store that forked (a split view: each shows its
own history after a common prefix). The witness refuses the second history,
a client requiring the witness refuses it with both commits named, a fresh
clone starts at a checkpoint the witness cosigned, and a quorum that is not
met (a witness down, one that never answers, one that signs with another
key) stops every command before it acts.
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, HERE)

from support import binary  # noqa: E402
from servers import Server  # noqa: E402
from test_remote import RemoteTest  # noqa: E402

STATE = "refs/locks/state"


def summary_of(res):
    return json.loads(res.err.splitlines()[-1])


class WitnessProcess:
    """`git-locks witness serve` on a free loopback port."""

    def __init__(self, root, name, *extra, key_flag="--witness-key"):
        self.key = os.path.join(root, name + ".key")
        self.state = os.path.join(root, name + "-state")
        out = subprocess.run([binary(), "--json", "witness", "keygen", "--out", self.key], capture_output=True,
                             text=True, check=True).stdout
        self.public = json.loads(out)["witness_key"]
        self.proc = subprocess.Popen([binary(), "witness", "serve", key_flag, self.key, "--state", self.state,
                                      "--listen", "127.0.0.1:0", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        banner = json.loads(line)
        assert banner["witness_key"] == self.public, banner
        self.port = int(banner["listening"].rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def entry(self):
        return f"{self.public}@{self.url}"

    def post(self, path, body, content_type="application/x-git-bundle"):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("POST", path, body=body, headers={"Content-Type": content_type})
        r = c.getresponse()
        try:
            return r.status, json.loads(r.read())
        finally:
            c.close()

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", path)
        r = c.getresponse()
        try:
            return r.status, r.read()
        finally:
            c.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


class Silent:
    """A witness that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self):
        for c in self.held:
            c.close()
        self.sock.close()


class Witnesses(RemoteTest):
    def setUp(self):
        super().setUp()
        self.w = WitnessProcess(self.root, "w1")
        self.addCleanup(self.w.stop)

    def require(self, host, *entries, quorum=None):
        host.git("config", "locks.witnesses", " ".join(entries))
        if quorum is None:
            host.git("config", "--unset-all", "locks.witnessQuorum", check=False)
        else:
            host.git("config", "locks.witnessQuorum", str(quorum))

    def forked(self):
        """Server A with the store (alice owns it, bob is a checkpoint signer the policy names), and
        server B holding a copy of it: from here on each shows its own history."""
        srv_a, alice, bob = self.store("daemon", "alice", "bob")
        bob_key = json.loads(self.assertOk(bob.run("--json", "whoami")).out)["actor"]
        shown = json.loads(self.assertOk(alice.run("--json", "policy", "show")).out)
        pfile = os.path.join(self.root, "signers.json")
        with open(pfile, "w") as f:
            json.dump({"checkpoint": {"signers": [bob_key]}}, f)
        self.assertOk(alice.run("--json", "policy", "set", pfile, "--expected-policy-hash", shown["policy_hash"]))
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        fork = srv_a.tip()
        srv_b = Server.start("daemon", os.path.join(self.root, "b"))
        self.addCleanup(srv_b.close)
        subprocess.run(["git", "-C", srv_b.bare, "fetch", "-q", srv_a.bare, "refs/locks/*:refs/locks/*"], check=True)
        self.assertEqual(srv_b.tip(), fork)
        return srv_a, srv_b, alice, bob, fork

    def test_a_split_view_is_refused_by_the_witness_and_by_clients_requiring_it(self):
        srv_a, srv_b, alice, bob, fork = self.forked()
        # Server A's history: bob's checkpoint (a signer's), cosigned by the witness.
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/b.c"))
        self.assertOk(bob.run("--json", "checkpoint"))
        cosigned = srv_a.tip()
        self.require(bob, self.w.entry())
        out = self.assertOk(bob.run("--json", "witness", "cosign")).json
        self.assertEqual((out["checkpoint"], out["cosigned"]), (cosigned, 1), out)
        status, body = self.w.get("/v1/checkpoint?store=" + "0" * 64)
        self.assertEqual(status, 404)
        # Server B's history: carol's claim and the owner's checkpoint there.
        carol = self.host(srv_b, "carol")
        carol.key = alice.key  # the owner's key, on the other server
        self.assertOk(carol.run("claim", "--ttl", "10m", "src/c.c"))
        self.assertOk(carol.run("--json", "checkpoint"))
        other = srv_b.tip()

        # The witness refuses to cosign B's checkpoint: it does not extend the one it cosigned.
        bundle = os.path.join(self.root, "b.bundle")
        subprocess.run(["git", "-C", srv_b.bare, "bundle", "create", "-q", bundle, STATE], check=True)
        with open(bundle, "rb") as f:
            status, body = self.w.post("/v1/cosign?checkpoint=" + other, f.read())
        self.assertEqual(status, 409, body)
        self.assertEqual((body["error"], body["commit"], body["cosigned"]), ("split-view", other, cosigned), body)
        store_id = json.loads(alice.run("--json", "policy", "show").out)["store"]
        status, latest = self.w.get("/v1/checkpoint?store=" + store_id)
        self.assertEqual(json.loads(latest)["cosignature"]["checkpoint"], cosigned)

        # A client of B requiring the witness refuses B's history, naming both commits; nothing moves.
        self.require(carol, self.w.entry())
        for args in (("--json", "status"), ("--json", "claim", "--ttl", "10m", "src/d.c"), ("--json", "verify"),
                     ("--json", "witness", "cosign")):
            res = carol.run(*args)
            self.assertEqual(res.code, 2, res)
            e = res.error
            self.assertEqual((e["code"], e["verdict"], e["cosigned"], e["commit"]),
                             ("invalid-history", "split-view", cosigned, other), res)
            self.assertNotIn("recovery", e, res)
        self.assertEqual(srv_b.tip(), other)
        # A fresh clone of B too, before it trusts anything.
        dave = self.host(srv_b, "dave")
        self.require(dave, self.w.entry())
        res = dave.run("--json", "status")
        self.assertEqual((res.code, res.error["verdict"], res.error["cosigned"]), (2, "split-view", cosigned), res)
        # The same clone without witnesses sees nothing wrong: B's history is valid on its own.
        dave.git("config", "--unset", "locks.witnesses")
        self.assertOk(dave.run("--json", "status"))

        # Server A's clients go on, and a fresh clone requiring the witness starts at the cosigned
        # checkpoint although a signer it does not pin made it; without the witness it passes over it.
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/e.c"))
        erin = self.host(srv_a, "erin")
        self.require(erin, self.w.entry())
        s = summary_of(self.assertOk(erin.run("--json", "verify")))
        self.assertEqual((s["start"], s["start_commit"], s["commits"]), ("checkpoint", cosigned, 1), s)
        frank = self.host(srv_a, "frank")
        s = summary_of(self.assertOk(frank.run("--json", "verify")))
        self.assertEqual(s["start"], "root", s)

    def test_the_witness_cosigns_only_verified_checkpoints_that_extend_its_last(self):
        srv, alice = self.store("daemon", "alice")
        self.require(alice, self.w.entry())
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        # Not a checkpoint: refused, and nothing is cosigned.
        bundle = os.path.join(self.root, "a.bundle")
        subprocess.run(["git", "-C", srv.bare, "bundle", "create", "-q", bundle, STATE], check=True)
        with open(bundle, "rb") as f:
            data = f.read()
        status, body = self.w.post("/v1/cosign?checkpoint=" + srv.tip(), data)
        self.assertEqual((status, body["error"]), (422, "not-a-checkpoint"), body)
        # Not a bundle, a commit the bundle does not hold, a malformed commit id.
        status, body = self.w.post("/v1/cosign?checkpoint=" + srv.tip(), b"not a bundle")
        self.assertEqual((status, body["error"]), (400, "bad-bundle"), body)
        status, body = self.w.post("/v1/cosign?checkpoint=" + "ab" * 20, data)
        self.assertEqual((status, body["error"]), (400, "bad-bundle"), body)
        status, body = self.w.post("/v1/cosign?checkpoint=xyz", data)
        self.assertEqual((status, body["error"]), (400, "bad-request"), body)
        # A witness serving other owners only: refused, and it records nothing for this store.
        alice_key = json.loads(alice.run("--json", "whoami").out)["actor"]
        picky = WitnessProcess(self.root, "picky", "--owner", "ab" * 32, key_flag="--key")  # as notary serve takes it
        self.addCleanup(picky.stop)
        self.assertOk(alice.run("--json", "checkpoint"))
        subprocess.run(["git", "-C", srv.bare, "bundle", "create", "-q", bundle, STATE], check=True)
        with open(bundle, "rb") as f:
            status, body = picky.post("/v1/cosign?checkpoint=" + srv.tip(), f.read())
        self.assertEqual((status, body["error"], body["owner"]), (403, "owner-not-served", alice_key), body)
        store_id = json.loads(alice.run("--json", "policy", "show").out)["store"]
        self.assertEqual(picky.get("/v1/checkpoint?store=" + store_id)[0], 404)
        # No key, a bad owner, a non-loopback address: usage (exit 64), nothing served.
        for args in ([], ["--witness-key", picky.key, "--owner", "nope"],
                     ["--witness-key", picky.key, "--listen", "0.0.0.0:0"]):
            argv = [binary(), "--json", "witness", "serve", "--state", os.path.join(self.root, "unused"),
                    "--listen", "127.0.0.1:0", *args]
            if "--listen" in args:
                argv = argv[:6] + argv[8:]
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            self.assertEqual(res.returncode, 64, (args, res))
        # A checkpoint by a clone that requires witnesses is cosigned at once.
        out = self.assertOk(alice.run("--json", "checkpoint")).json
        first = srv.tip()
        self.assertEqual(out["witnesses"], [{"witness": self.w.public, "url": self.w.url, "cosigned": True}], out)
        status, body = self.w.get("/v1/checkpoint?store=" + json.loads(alice.run("--json", "policy", "show").out)["store"])
        self.assertEqual(json.loads(body)["cosignature"]["checkpoint"], first)
        # The same again: the same cosignature (idempotent).
        again = self.assertOk(alice.run("--json", "witness", "cosign")).json
        self.assertEqual((again["checkpoint"], again["cosigned"]), (first, 1))
        # Later checkpoints are sent as the chain since the last cosigned one, across a cut too; the
        # policy's automatic ones are cosigned as they are made.
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/b.c"))
        shown = json.loads(alice.run("--json", "policy", "show").out)
        pfile = os.path.join(self.root, "every.json")
        with open(pfile, "w") as f:
            json.dump({"checkpoint": {"every": 2, "cut": True}}, f)
        # 2 commits since `first` with the policy-set itself: its publication is followed by a cut.
        out = self.assertOk(alice.run("--json", "policy", "set", pfile, "--expected-policy-hash",
                                      shown["policy_hash"])).json
        self.assertEqual((out["checkpoint"], out["witnesses"][0]["cosigned"]), (srv.tip(), True), out)
        self.assertNotIn("checkpoint", self.assertOk(alice.run("--json", "claim", "--ttl", "10m", "src/c.c")).json)
        out = self.assertOk(alice.run("--json", "claim", "--ttl", "10m", "src/d.c")).json
        self.assertEqual((out["checkpoint"], out["witnesses"][0]["cosigned"]), (srv.tip(), True), out)
        self.assertEqual(subprocess.run(["git", "-C", srv.bare, "rev-list", "--count", STATE], capture_output=True,
                                        text=True, check=True).stdout.strip(), "1", "the policy asks for cuts")
        status, body = self.w.get("/v1/checkpoint?store=" + shown["store"])
        self.assertEqual(json.loads(body)["cosignature"]["checkpoint"], srv.tip())
        # An older checkpoint of the same chain no longer extends the newest.
        subprocess.run(["git", "-C", srv.bare, "bundle", "create", "-q", bundle, STATE, *archives(srv)], check=True)
        with open(bundle, "rb") as f:
            status, body = self.w.post("/v1/cosign?checkpoint=" + first, f.read())
        self.assertEqual((status, body["error"], body["cosigned"]), (409, "split-view", srv.tip()), body)

    def test_a_quorum_not_met_stops_every_command(self):
        srv, alice = self.store("daemon", "alice")
        self.assertOk(alice.run("claim", "--ttl", "10m", "src/a.c"))
        self.assertOk(alice.run("--json", "checkpoint"))
        tip = srv.tip()
        silent = Silent()
        self.addCleanup(silent.close)
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead_port = dead.getsockname()[1]
        dead.close()  # nothing listens there
        impostor = WitnessProcess(self.root, "impostor")
        self.addCleanup(impostor.stop)
        alice.git("config", "locks.notaryReadTimeout", "500ms")
        self.require(alice, self.w.entry(), f"{'cd' * 32}@http://127.0.0.1:{dead_port}")
        res = alice.run("--json", "witness", "cosign")
        self.assertEqual((res.code, res.error["reason"]), (2, "witness-quorum"), res)  # 1 of 2 cosigned
        self.require(alice, self.w.entry(), f"{'cd' * 32}@http://127.0.0.1:{dead_port}", quorum=1)
        self.assertOk(alice.run("--json", "witness", "cosign"))
        self.assertOk(alice.run("--json", "status"))
        # Quorum 2 of: the witness, one that never answers, one down, one that signs with another key
        # than the one pinned for it (the impostor's cosignature of the same checkpoint).
        self.require(alice, impostor.entry())
        self.assertOk(alice.run("--json", "witness", "cosign"))  # the impostor cosigns under its own key
        cases = {
            "silent": f"{'ab' * 32}@http://127.0.0.1:{silent.port}",
            "down": f"{'cd' * 32}@http://127.0.0.1:{dead_port}",
            "another key": f"{'ef' * 32}@{impostor.url}",
        }
        for what, entry in cases.items():
            self.require(alice, self.w.entry(), entry, quorum=2)
            started = time.monotonic()
            res = alice.run("--json", "claim", "--ttl", "10m", "src/b.c")
            self.assertEqual((res.code, res.error["code"], res.error["reason"]), (2, "store-read", "witness-quorum"),
                             (what, res))
            self.assertLess(time.monotonic() - started, 20, what)
            self.assertEqual(srv.tip(), tip, what)
        # Quorum 1 of the same: the witness's answer suffices.
        self.require(alice, self.w.entry(), cases["another key"], quorum=1)
        self.assertOk(alice.run("--json", "claim", "--ttl", "10m", "src/b.c"))
        # Bad configuration is a usage error.
        for bad in ("nokey@http://x:1", f"{'ab' * 32}@ftp://x", f"{'ab' * 32}"):
            alice.git("config", "locks.witnesses", bad)
            res = alice.run("--json", "status")
            self.assertEqual(res.code, 64, (bad, res))
        self.require(alice, self.w.entry(), quorum=2)
        self.assertEqual(alice.run("--json", "status").code, 64)


def archives(srv):
    return subprocess.run(["git", "-C", srv.bare, "for-each-ref", "--format=%(refname)", "refs/locks/archive/"],
                          capture_output=True, text=True, check=True).stdout.split()


if __name__ == "__main__":
    unittest.main()
