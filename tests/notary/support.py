"""Shared fixtures for the notary suite: a notary process on loopback with
its own key and state directory, signed admission requests from the core
helper, and plain HTTP through http.client."""

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from threads import Workers, run_parallel  # noqa: E402,F401 - for the suite's modules

NOTARY = os.environ.get("GITLOCKS_NOTARY_BIN", "gitlocks-notary-test")
HELPER = os.environ.get("GITLOCKS_NOTARY_REQUEST_BIN", "gitlocks-notary-request")
AUDIENCE = "notary.test.example"
ACTOR_SEED = "11" * 32
BODY_MARKER = "BODY-MARKER-never-sent-to-the-notary"
MAX_SAFE = 2**53 - 1


def canonical(value):
    """The core's canonical JSON for the ASCII, float-free values used here."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Notary:
    """One `serve` process. start() waits for its listening line."""

    def __init__(self, key, state, test_clock=True, extra=(), prefix=()):
        self.key, self.state = key, state
        self.args = list(prefix) + [NOTARY, "serve", "--key", key, "--state", state, "--listen", "127.0.0.1:0",
                     "--audience", AUDIENCE] + (["--test-clock"] if test_clock else []) + list(extra)
        self.proc = None
        self.ready = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read()
            self.proc.wait()
            raise AssertionError("notary did not start: rc=%s %s" % (self.proc.returncode, err))
        self.ready = json.loads(line)
        host, port = self.ready["listening"].rsplit(":", 1)
        self.host, self.port = host, int(port)
        return self

    def stop(self, sig=signal.SIGTERM):
        """Signals the process; returns (exit status, rest of stdout, stderr)."""
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=20)
        return self.proc.returncode, out, err

    def request(self, method, path, body=None, headers=None, timeout=20):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read(), dict(resp.getheaders())
        finally:
            conn.close()

    def admit(self, request, content_type="application/json"):
        """POST /v1/admit; returns (status, raw body bytes)."""
        data = request.encode() if isinstance(request, str) else request
        status, body, _ = self.request("POST", "/v1/admit", data, {"Content-Type": content_type})
        return status, body

    def discovery(self):
        status, body, _ = self.request("GET", "/v1/discovery")
        assert status == 200, (status, body)
        return json.loads(body)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=30, **kw)


class NotaryCase(unittest.TestCase):
    """A temporary directory with a key and a state dir; notaries stopped at the end."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gitlocks-notary-")
        self.key = os.path.join(self.tmp, "service.key")
        self.state = os.path.join(self.tmp, "state")
        r = run([NOTARY, "keygen", "--out", self.key])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.service_key = json.loads(r.stdout)["service_key"]
        self.notaries = []
        self.seq = 0

    def tearDown(self):
        for n in self.notaries:
            if n.proc and n.proc.poll() is None:
                n.proc.kill()
                n.proc.communicate()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if os.path.exists(self.tmp):  # a file appeared while removing: once more
            shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self, test_clock=True, extra=(), state=None, key=None, prefix=()):
        n = Notary(key or self.key, state or self.state, test_clock, extra, prefix)
        self.notaries.append(n)
        return n.start()

    def serve_fails(self, extra=(), key=None, state=None, listen="127.0.0.1:0", prefix=()):
        """Runs serve (after the command `prefix`, e.g. setpriv) expecting a
        refusal; returns (exit status, error object)."""
        args = list(prefix) + [NOTARY, "serve", "--key", key or self.key, "--state", state or self.state,
                               "--listen", listen, "--audience", AUDIENCE] + list(extra)
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise AssertionError("serve started although it should have refused: %s" % args)
        self.assertEqual(out, "", "a refused start prints nothing on stdout")
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        return p.returncode, json.loads(lines[0])

    def set_clock(self, ms, state=None):
        """Sets the test clock atomically (the notary re-reads it per admission)."""
        d = state or self.state
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, "test-clock-ms.tmp")
        with open(tmp, "w") as f:
            f.write("%d\n" % ms)
        os.replace(tmp, os.path.join(d, "test-clock-ms"))

    def high_water(self, state=None):
        with open(os.path.join(state or self.state, "high-water.json")) as f:
            doc = json.loads(f.read())
        self.assertEqual(doc["format"], "gitlocks-notary-state-v1")
        return doc["high_water_ms"]

    def make_request(self, lo, hi, packet_out=None):
        """A signed admission request for a fresh packet with interval [lo, hi]."""
        self.seq += 1
        instance = "%064x" % self.seq
        args = [HELPER, "make-request", "--actor-seed", ACTOR_SEED, "--interval", str(lo), str(hi),
                "--instance", instance]
        if packet_out:
            args += ["--packet-out", packet_out]
        r = run(args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def check_attestation(self, packet_file, attestation, allow_test_clock=True, service_key=None,
                          audience=AUDIENCE):
        """Verifies an attestation with the core; returns the helper's JSON verdict."""
        att_file = packet_file + ".att"
        with open(att_file, "wb") as f:
            f.write(attestation)
        args = [HELPER, "check", "--packet", packet_file, "--attestation", att_file, "--audience", audience,
                "--service-key", service_key or self.service_key]
        if allow_test_clock:
            args.append("--allow-test-clock")
        r = run(args)
        verdict = json.loads(r.stdout)
        self.assertEqual(r.returncode, 0 if verdict["ok"] is True else 1, (r.stdout, r.stderr))
        return verdict

    def assertError(self, reply, status, code):
        got_status, body = reply
        self.assertEqual(got_status, status, body)
        doc = json.loads(body)
        self.assertEqual(doc["error"], code, doc)
        self.assertIsInstance(doc["detail"], str)
        self.assertEqual(body.decode(), canonical(doc), "error bodies are canonical JSON")
        return doc


def wait_until(pred, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()
