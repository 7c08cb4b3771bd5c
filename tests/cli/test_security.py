"""Security-relevant bad input (issue 14, item 11), with the real binary, real
Git and real servers on 127.0.0.1:

- a guard-time operation id is a file name: `../x`, `/abs`, an id with NUL
  (through a saved operation record: argv cannot carry NUL), 4 KiB — refused,
  and nothing is written anywhere (the whole test directory is compared);
- path traversal against `git-locks web`: `/../`, `%2e%2e`, `%2f`,
  double encoding, backslashes, symlinks out of the site — raw HTTP over a
  socket, so no client normalises the path;
- DNS rebinding against `git-locks web`: a Host other than 127.0.0.1:PORT,
  localhost:PORT or [::1]:PORT is 403, no Host is 400;
- correctly signed admission requests (signed here with PyNaCl, from
  docs/FORMAT.md, not by the core) with an invalid interval: refused by the
  notary, nothing signed; one whose interval is not the packet's is signed
  (the notary never sees the packet) and then refused by the client;
- a notary that accepts the connection and never answers: the command gives
  up after `locks.notaryReadTimeout`, exits 2, publishes nothing, and `run`
  does not start its command;
- the 10,000-op batch limit and the 1,024-byte note limit at the limit and
  one past it, with multi-byte notes on the byte boundary."""

import hashlib
import http.server
import json
import os
import socket
import subprocess
import threading
import time
import urllib.request

import nacl.signing

from support import T0, CliTest, JsonHandler, Repo, binary

SAFE_MAX = 2**53 - 1
P = T0 + 10_000  # proposal clock of attested transitions
ID_RULE = "an operation id is 1..128 characters of [A-Za-z0-9_-]"
ADMISSION_DOMAIN = b"gitlocks/admission/v1\0"
ATTESTATION_DOMAIN = b"gitlocks/attestation/v1\0"


def canonical(value):
    """docs/FORMAT.md's canonical JSON for the integer/ASCII values used here."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tree(root):
    """Every file, directory and symlink below `root` with what identifies its
    content: what must not change when bad input is refused."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            if os.path.islink(p):
                out[p] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[p] = ("dir", st.st_mode)
            else:
                with open(p, "rb") as f:
                    out[p] = ("file", st.st_mode, hashlib.sha256(f.read()).hexdigest())
    return out


class Notary:
    """`git-locks notary serve` on loopback with its test clock."""

    audience = "locks.security.test"

    def __init__(self, test, root):
        self.key = os.path.join(root, "notary.key")
        self.state = os.path.join(root, "notary-state")
        out = subprocess.run([binary(), "notary", "keygen", "--out", self.key], capture_output=True, text=True)
        test.assertEqual(out.returncode, 0, out.stderr)
        self.service_key = json.loads(out.stdout)["service_key"]
        os.makedirs(self.state, mode=0o700)
        self.clock(T0 + 1000)
        self.proc = subprocess.Popen([binary(), "notary", "serve", "--key", self.key, "--state", self.state,
                                      "--listen", "127.0.0.1:0", "--audience", self.audience, "--test-clock"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        test.addCleanup(self.stop)
        self.url = "http://" + json.loads(self.proc.stdout.readline())["listening"]

    def clock(self, ms):
        tmp = os.path.join(self.state, "test-clock-ms.tmp")
        with open(tmp, "w") as f:
            f.write(str(ms))
        os.replace(tmp, os.path.join(self.state, "test-clock-ms"))

    def high_water(self):
        path = os.path.join(self.state, "high-water.json")
        if not os.path.exists(path):
            return 0
        with open(path) as f:
            return json.load(f)["high_water_ms"]

    def admit(self, body):
        req = urllib.request.Request(self.url + "/v1/admit", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc.stdout.close()


class Front:
    """An HTTP server on loopback in front of a notary. mode:
    "hang-all"    accepts every request and never answers;
    "hang-admit"  forwards discovery, never answers POST /v1/admit;
    "rewrite"     forwards discovery; re-signs each admission request with
                  `rewrite(request)` applied (the actor's own key) and
                  forwards it, returning the notary's answer.
    A hanging handler waits on an event set at cleanup (bounded: 60 s)."""

    def __init__(self, test, notary, mode, rewrite=None, signer=None):
        outer = self
        self.release = threading.Event()
        self.posts = []

        class H(JsonHandler):

            def do_GET(self):
                if mode == "hang-all":
                    outer.release.wait(60)
                    return
                with urllib.request.urlopen(notary.url + self.path, timeout=20) as r:
                    self.reply(200, r.read())

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.posts.append(body)
                if mode != "rewrite":
                    outer.release.wait(60)
                    return
                doc = json.loads(body)
                req = rewrite(doc["request"])
                status, answer = notary.admit(signed_request(signer, req))
                self.reply(status, canonical(answer).encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        test.addCleanup(self.close)

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def signed_request(signer, request):
    """{"request","sig"}: Ed25519 over "gitlocks/admission/v1\\0" || canonical(request)."""
    sig = signer.sign(ADMISSION_DOMAIN + canonical(request).encode()).signature.hex()
    return canonical({"request": request, "sig": sig})


def actor_signer(repo, actor):
    with open(repo.key(actor)) as f:
        return nacl.signing.SigningKey(bytes.fromhex(json.load(f)["seed"]))


class SecurityTest(CliTest):
    def usage(self, res, detail):
        """Exit 64, one usage error with code `usage` and exactly `detail`."""
        self.assertEqual((res.code, res.out), (64, ""), res)
        e = res.error
        self.assertEqual((e["error"], e["code"], e["detail"]), ("usage", "usage", detail), res)
        self.assertEqual(e.get("reason", "usage"), "usage", res)  # a usage error's reason is its code, if named
        return e


class GuardTimeStore(SecurityTest):
    """A store with guard time enabled (alice owns it) and a notary."""

    def setUp(self):
        self.r = self.repo()
        self.notary = Notary(self, self.r.root)
        self.r.git("config", "locks.notary", self.notary.url)

    def enable(self, op_id, action="enable"):
        if action == "resume":
            return self.r.run("owner", "guard-time", "resume", op_id, "--allow-test-clock", "--json")
        st = self.r.run("owner", "--json", "status", "--allow-test-clock")  # replays test-clock attestations
        self.assertEqual(st.code, 0, st)
        return self.r.run("owner", "guard-time", "enable", "--audience", self.notary.audience, "--service-key",
                          self.notary.service_key, "--disclosure", "GUARD_WINDOW", "--expected-policy-hash",
                          st.json["policy_hash"], "--operation-id", op_id, "--allow-test-clock", "--json")

    def enabled(self):
        res = self.enable("op-1")
        self.assertEqual((res.code, res.json["status"]), (0, "ACCEPTED"), res)
        self.r.now = None

    def attested(self, actor, *args, notary=None):
        extra = ["--notary", notary] if notary else []
        return self.r.run(actor, *extra, "--allow-test-clock", "--json", *args,
                          env={"GIT_LOCKS_PROPOSAL_MS": str(P)})


class OperationIds(GuardTimeStore):
    def ops_dir(self):
        return os.path.join(self.r.gitdir(), "git-locks", "guard-time")

    def test_bad_ids_on_argv_are_usage_errors_and_write_nothing(self):
        tip, before = self.r.tip(), tree(self.r.root)
        # Only the trust checkpoint `init` left (docs/FORMAT.md): no operations folder yet.
        self.assertEqual(os.listdir(os.path.join(self.r.gitdir(), "git-locks")), ["trust"])
        for op_id in ("../x", "../../../../x", "/abs", "/tmp/x", "a/b", "..", ".", "", "a" * 4096, "a" * 129,
                      "x.json", "é"):
            for action in ("enable", "resume"):
                with self.subTest(op_id=op_id[:20], n=len(op_id), action=action):
                    res = self.enable(op_id, action)
                    self.usage(res, ID_RULE)
                    self.assertEqual(self.r.tip(), tip)
                    self.assertEqual(tree(self.r.root), before, "something was written")
        self.assertFalse(os.path.exists("/abs.json") or os.path.exists("/tmp/x.json"))
        # The boundary: 128 characters of the alphabet are an id, and the
        # same setup then enables guard time (so the refusals above were the id's).
        op_id = "Az09_-" * 21 + "xy"
        self.assertEqual(len(op_id), 128)
        res = self.enable(op_id)
        self.assertEqual((res.code, res.json["status"], res.json["operation_id"]), (0, "ACCEPTED", op_id), res)
        self.assertEqual(os.listdir(self.ops_dir()), [op_id + ".json"])

    def test_a_saved_record_naming_another_file_is_refused(self):
        """The id inside a saved record is used to save it again: a record
        under evil.json that names `../../../escaped`, an id with NUL, an
        absolute path or 4 KiB must be refused as unreadable local data
        (store-read, exit 2), not followed."""
        res = self.enable("seed")  # creates the operations folder, enables guard time
        self.assertEqual(res.code, 0, res)
        os.makedirs(self.ops_dir(), exist_ok=True)
        path = os.path.join(self.ops_dir(), "evil.json")
        for named in ("../../../escaped", "../../../../../escaped", "a\u0000b", "/tmp/escaped", "e" * 4096, "evil\n"):
            with self.subTest(named=named[:20], n=len(named)):
                rec = {"format": "gitlocks-guard-time-operation-v1", "operation_id": named, "status": "PENDING",
                       "created_at_ms": 1, "updated_at_ms": 1, "commit": None,
                       "input": {"audience": self.notary.audience, "service_key": self.notary.service_key,
                                 "disclosure": "GUARD_WINDOW", "expected_policy_hash": "0" * 64},
                       "store": "0" * 64, "source_commit": "0" * 40, "source_state": "0" * 40,
                       "result_state": "0" * 40, "packet": "{}", "request": "{}"}
                with open(path, "w") as f:
                    f.write(json.dumps(rec) + "\n")
                tip, before = self.r.tip(), tree(self.r.root)
                res = self.enable("evil", "resume")
                self.assertEqual(res.code, 2, res)
                e = res.error
                self.assertEqual((e["error"], e["code"], e["op"]), ("store-read", "store-read", "guard-time resume"))
                self.assertEqual(e["detail"], "%s is not the record of operation evil (it names %s)"
                                 % (path, json.dumps(named)))
                self.assertEqual(self.r.tip(), tip)
                self.assertEqual(tree(self.r.root), before, "something was written")
                self.assertFalse(os.path.exists("/tmp/escaped.json"))


    def test_a_damaged_saved_record_is_refused_never_a_crash(self):
        """A saved operation record with any member dropped or of another
        type is unreadable local data: `resume` refuses it (store-read, exit
        2, nothing written) and `history` leaves it out; neither crashes
        (once: an uncaught exception or a read of an absent member)."""
        res = self.enable("seed")
        self.assertEqual(res.code, 0, res)
        path = os.path.join(self.ops_dir(), "evil.json")
        good = {"format": "gitlocks-guard-time-operation-v1", "operation_id": "evil", "status": "FAILED",
                "created_at_ms": 1, "updated_at_ms": 1, "commit": None, "detail": "lost",
                "input": {"audience": self.notary.audience, "service_key": self.notary.service_key,
                          "disclosure": "GUARD_WINDOW", "expected_policy_hash": "0" * 64},
                "store": "0" * 64, "source_commit": "0" * 40, "source_state": "0" * 40,
                "result_state": "0" * 40, "packet": "{}", "request": "{}"}
        required = ("format", "status", "created_at_ms", "updated_at_ms", "input", "packet", "request",
                    "source_commit", "source_state", "result_state")
        typed = {"created_at_ms": 1, "updated_at_ms": 1, "commit": None, "detail": "x", "store": "x"}
        forgeries = []
        for k in good:
            if k in required:
                forgeries.append(("drop " + k, {x: v for x, v in good.items() if x != k}))
            for other in (5, "x", [], {}, None, True):
                if k in typed and (type(other) is type(good[k]) or (other is None and k in ("commit", "detail", "store"))):
                    continue
                if k in ("input", "operation_id") or (isinstance(other, str) and isinstance(good[k], str) and
                                                      k not in ("format", "status", "source_commit")):
                    continue
                forged = dict(good)
                forged[k] = other
                forgeries.append(("set %s = %r" % (k, other), forged))
        for part in ("audience", "service_key"):
            for other in (5, None, []):
                forged = json.loads(json.dumps(good))
                forged["input"][part] = other
                forgeries.append(("set input.%s = %r" % (part, other), forged))
        self.assertGreater(len(forgeries), 40)
        for how, rec in forgeries:
            with self.subTest(how=how):
                with open(path, "w") as f:
                    f.write(json.dumps(rec) + "\n")
                tip, before = self.r.tip(), tree(self.r.root)
                res = self.enable("evil", "resume")
                self.assertEqual(res.code, 2, res)
                self.assertEqual((res.error["code"], res.error["detail"]),
                                 ("store-read", path + " is not a guard-time operation record"))
                self.assertEqual(self.r.tip(), tip)
                self.assertEqual(tree(self.r.root), before, "something was written")
                hist = self.r.run("owner", "--json", "guard-time", "history")
                self.assertEqual(hist.code, 0, hist)
                self.assertEqual(hist.err, "")
                self.assertNotIn("evil", [row["operation_id"] for row in hist.json["operations"]])
        # The well-formed record itself is read: a FAILED operation is final.
        with open(path, "w") as f:
            f.write(json.dumps(good) + "\n")
        res = self.enable("evil", "resume")
        self.assertEqual((res.code, res.error["reason"]), (1, "operation-failed"), res)


class AdmissionIntervals(GuardTimeStore):
    def request(self, signer, interval, seq):
        return {"action": "claim", "actor": signer.verify_key.encode().hex(), "command": "claim", "epoch": 0,
                "format": "gitlocks-admission-v1", "instance": "%064x" % seq, "interval": interval,
                "packet_digest": hashlib.sha256(b"packet %d" % seq).hexdigest(), "policy_hash": "ef" * 32,
                "result": "1" * 40, "source": "2" * 40, "store": "34" * 32}

    def test_signed_requests_with_invalid_intervals_are_refused_and_nothing_is_signed(self):
        signer = nacl.signing.SigningKey.generate()
        t = T0 + 1000
        for seq, interval in enumerate(([t + 1000, t - 1000], [t, t - 1], [0, SAFE_MAX + 1],
                                        [SAFE_MAX + 1, SAFE_MAX + 1], [-1, t], [t], [t - 1, t, t + 1], [],
                                        ["0", str(t + 1)], None, {"lo": 0, "hi": t}), start=1):
            with self.subTest(interval=interval):
                status, body = self.notary.admit(signed_request(signer, self.request(signer, interval, seq)))
                self.assertEqual((status, body["error"]), (400, "bad-json"), body)
                self.assertNotIn("attestation", body)
                self.assertEqual(self.notary.high_water(), 0, "a refused request moved the high-water mark")
        # The same requests, well-formed, are signed: the refusals were the intervals'.
        for seq, interval in ((100, [t, t]), (101, [0, SAFE_MAX])):
            status, body = self.notary.admit(signed_request(signer, self.request(signer, interval, seq)))
            self.assertEqual(status, 200, body)
            att = body["attestation"]
            nacl.signing.VerifyKey(bytes.fromhex(self.notary.service_key)).verify(
                ATTESTATION_DOMAIN + canonical(att).encode(), bytes.fromhex(body["sig"]))
            self.assertEqual((att["interval"], att["admitted_at_ms"]), (interval, t))
        self.assertEqual(self.notary.high_water(), t)

    def test_an_interval_other_than_the_packets_is_never_published(self):
        """A client (or anything between it and the notary) that asks for a
        wider interval than its packet's, correctly signed with the actor's
        key: the notary signs it (it never sees the packet), and the client
        refuses the attestation: exit 2, nothing published, `run` not started."""
        self.enabled()
        self.notary.clock(P)
        self.assertEqual(self.r.run("bob", "whoami").code, 0)  # creates bob's key
        tip = self.r.tip()
        signer = actor_signer(self.r, "bob")
        front = Front(self, self.notary, "rewrite", lambda req: dict(req, interval=[0, SAFE_MAX]), signer)
        marker = os.path.join(self.r.root, "marker")
        for args in (["claim", "--ttl", "30s", "x"], ["run", "--ttl", "30s", "--claim", "x", "--", "touch", marker]):
            with self.subTest(command=args[0]):
                before = len(front.posts)
                res = self.attested("bob", *args, notary=front.url)
                self.assertEqual(res.code, 2, res)
                e = res.error
                self.assertEqual((e["error"], e["code"], e["op"]), ("store-write", "store-write", args[0]), res)
                self.assertEqual(e["detail"], "notary attestation rejected: interval: signed interval differs "
                                              "from the packet's", res)
                self.assertEqual(len(front.posts), before + 1)
                # What the client asked for: T with min_ttl <= expires_at - T <= max_ttl (default 1 s, 1 h).
                self.assertEqual(json.loads(front.posts[-1])["request"]["interval"],
                                 [P + 30_000 - 3_600_000, P + 30_000 - 1000])
                self.assertEqual(self.r.tip(), tip, "published")
                self.assertFalse(os.path.exists(marker), "the command was started")
        self.assertEqual(self.notary.high_water(), P)  # the notary did sign the widened interval
        # Through the notary itself the same claim is admitted.
        self.assertEqual(self.attested("bob", "claim", "--ttl", "30s", "x").code, 0)


class SilentNotary(GuardTimeStore):
    def test_a_notary_that_never_answers_fails_the_command_in_bounded_time(self):
        self.enabled()
        self.notary.clock(P)
        self.r.git("config", "locks.notaryReadTimeout", "300ms")
        tip = self.r.tip()
        marker = os.path.join(self.r.root, "marker")
        for mode, what in (("hang-all", "GET /v1/discovery"), ("hang-admit", "POST /v1/admit")):
            front = Front(self, self.notary, mode)
            for args in (["claim", "--ttl", "30s", "x"], ["run", "--claim", "x", "--", "touch", marker]):
                with self.subTest(mode=mode, command=args[0]):
                    start = time.monotonic()
                    res = self.attested("bob", *args, notary=front.url)
                    elapsed = time.monotonic() - start
                    self.assertEqual(res.code, 2, res)
                    e = res.error
                    self.assertEqual((e["error"], e["code"], e["op"]), ("store-write", "store-write", args[0]))
                    self.assertEqual(e["detail"], "notary %s did not answer %s within 300ms (git config "
                                                  "locks.notaryReadTimeout); nothing was published"
                                     % (front.url, what), res)
                    self.assertGreaterEqual(elapsed, 0.3)
                    self.assertLess(elapsed, 5, "not bounded by the read timeout")
                    self.assertEqual(self.r.tip(), tip, "published")
                    self.assertFalse(os.path.exists(marker), "the command was started")
            front.close()
        # A timeout that is not a duration in [1ms, 10m] is a usage error.
        for bad in ("soon", "0", "11m", "-5s"):
            with self.subTest(timeout=bad):
                self.r.git("config", "locks.notaryReadTimeout", bad)
                res = self.attested("bob", "claim", "--ttl", "30s", "x")
                self.usage(res, "git config locks.notaryReadTimeout must be a duration from 1ms to 10m, got '%s'"
                           % bad)
                self.assertEqual(self.r.tip(), tip)
        self.r.git("config", "--unset", "locks.notaryReadTimeout")
        self.assertEqual(self.attested("bob", "claim", "--ttl", "30s", "x").code, 0)  # the real notary answers


DEFAULT_HOST = object()


def http_get(port, target, host=DEFAULT_HOST):
    """One raw HTTP/1.1 GET of `target`, byte for byte: (status, body). The
    Host header is `host` (default 127.0.0.1:PORT; None: no Host header; a
    tuple: one Host header each)."""
    if host is DEFAULT_HOST:
        host = "127.0.0.1:%d" % port
    head = b"GET " + target.encode("latin-1") + b" HTTP/1.1\r\n"
    for h in (() if host is None else host if isinstance(host, tuple) else (host,)):
        head += b"Host: " + h.encode("latin-1") + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + b"Connection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def make_site(root):
    """A minimal page folder under `root`: (its path, the index.html bytes)."""
    site = os.path.join(root, "site")
    os.makedirs(os.path.join(site, "pkg"))
    index = b"<!doctype html><title>site</title>"
    with open(os.path.join(site, "index.html"), "wb") as f:
        f.write(index)
    with open(os.path.join(site, "pkg", "browser.mjs"), "wb") as f:
        f.write(b"export {};\n")
    return site, index


class WebServer(SecurityTest):
    def serve(self, r, site):
        """`git-locks web --site SITE --port 0` in R: (the process, its port)."""
        proc = subprocess.Popen([binary(), "--repo", r.path, "web", "--site", site, "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=r.env("alice"))
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait, 10)
        self.addCleanup(proc.kill)
        return proc, json.loads(proc.stdout.readline())["port"]

    def test_only_a_loopback_host_with_the_port_is_answered(self):
        # DNS rebinding: a page of another origin whose name resolves to
        # 127.0.0.1 sends its own name as Host, and must not read the store.
        r = self.repo()
        site, index = make_site(r.root)
        proc, port = self.serve(r, site)
        other = port + 1 if port < 65535 else port - 1
        for host, want in (("evil.example:%d" % port, 403), ("evil.example", 403), ("127.0.0.1:%d" % other, 403),
                           ("localhost:%d" % other, 403), ("127.0.0.1", 403), ("localhost", 403),
                           ("127.0.0.1.evil.example:%d" % port, 403), ("localhost.:%d" % port, 403),
                           ("127.0.0.1:0%d" % port, 403), ("[::1]:%d" % other, 403),
                           (None, 400), ("", 400), (("127.0.0.1:%d" % port, "127.0.0.1:%d" % port), 400),
                           (("127.0.0.1:%d" % port, "evil.example:%d" % port), 400),
                           ("127.0.0.1:%d" % port, 200), ("localhost:%d" % port, 200), ("LocalHost:%d" % port, 200),
                           ("[::1]:%d" % port, 200)):
            for target in ("/", "/live.json", "/live.bundle"):
                with self.subTest(host=host, target=target):
                    status, body = http_get(port, target, host)
                    if want == 200 and target == "/live.bundle":
                        self.assertEqual(status, 200, body)
                        self.assertTrue(body.startswith(b"# v2 git bundle"), body[:40])
                    elif want == 200 and target == "/live.json":
                        self.assertEqual((status, json.loads(body)["tip"]), (200, r.tip()))
                    elif want == 200:
                        self.assertEqual((status, body), (200, index))
                    else:
                        self.assertEqual(status, want, body)
                        self.assertNotIn(r.tip().encode(), body)
        self.assertIsNone(proc.poll(), "the server died")

    def test_nothing_outside_the_site_is_served(self):
        r = Repo(self)
        secret = b"SECRET-" + os.urandom(8).hex().encode()
        with open(os.path.join(r.root, "secret.txt"), "wb") as f:
            f.write(secret)
        site, index = make_site(r.root)
        os.symlink("../secret.txt", os.path.join(site, "leak.txt"))  # a file link out of the site
        os.symlink(r.root, os.path.join(site, "up"))  # a directory link out of the site
        os.symlink(os.path.join(r.root, "secret.txt"), os.path.join(site, "pkg", "abs.txt"))
        os.symlink("index.html", os.path.join(site, "alias.html"))  # a link inside the site
        proc, port = self.serve(r, site)
        rel = os.path.relpath(os.path.join(r.root, "secret.txt"), "/")
        for target in ("/../secret.txt", "/../../../../../../" + rel, "/pkg/../../secret.txt",
                       "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/..%2fsecret.txt", "/%2e%2e%2fsecret.txt",
                       "/pkg%2f..%2f..%2fsecret.txt", "/%252e%252e/secret.txt", "/%252e%252e%252fsecret.txt",
                       "/.%2e/secret.txt", "/..\\secret.txt", "/..%5csecret.txt", "/%2e%2e%5csecret.txt",
                       "/./../secret.txt", "//" + rel, "/%2f" + rel.replace("/", "%2f"), r.root + "/secret.txt",
                       "/leak.txt", "/up/secret.txt", "/pkg/abs.txt", "/%6ceak.txt", "/up/site/leak.txt",
                       "/leak.txt%00.html", "/%00/../secret.txt", "/up/", "/up", "/pkg/"):
            with self.subTest(target=target):
                status, body = http_get(port, target)
                self.assertNotIn(secret, body)
                self.assertEqual(status, 404, (target, body))
        # Inside the site, plain and encoded, through a link inside it too.
        for target, want in (("/", index), ("/index.html", index), ("/alias.html", index), ("/%69ndex.html", index),
                             ("/pkg/browser.mjs", b"export {};\n"), ("/pkg%2fbrowser.mjs", b"export {};\n"),
                             ("/?bundle=live.bundle&live=1", index)):
            with self.subTest(target=target):
                self.assertEqual(http_get(port, target), (200, want))
        self.assertIsNone(proc.poll(), "the server died")


class Limits(SecurityTest):
    def test_batch_of_10000_ops_is_one_transition_and_10001_is_refused(self):
        r = self.repo()
        tip = r.tip()
        lines = "".join('{"op":"claim","path":"p/%d"}\n' % i for i in range(10001))
        res = r.run("alice", "--json", "batch", "-", stdin=lines, timeout=300)
        self.usage(res, "more than 10000 operations in one transition")
        self.assertEqual(r.tip(), tip)
        res = r.run("alice", "--json", "batch", "-", stdin=lines[:lines.index('{"op":"claim","path":"p/10000"}')],
                    timeout=300)
        self.assertOk(res)
        self.assertEqual(len(res.json["ops"]), 10000)
        self.assertEqual(len(res.json["leases"]), 10000)
        self.assertEqual(r.git("rev-list", "--count", "refs/locks/state").strip(), "2")

    def test_notes_are_limited_to_1024_bytes_of_utf8(self):
        r = self.repo()
        euro = "\u20ac"  # 3 bytes in UTF-8
        self.assertEqual(len(euro.encode()), 3)
        cases = [("a" * 1024, True), ("a" * 1025, False),
                 (euro * 341 + "a", True),  # 342 characters, 1024 bytes
                 (euro * 341 + "\u00e9", False),  # 342 characters, 1025 bytes
                 ("\u00e9" * 512, True), ("\u00e9" * 512 + "a", False),
                 ("\u00e9" * 1024, False)]  # 1024 characters, 2048 bytes
        for i, (note, ok) in enumerate(cases):
            n = len(note.encode())
            for how in ("claim", "batch", "sem"):
                with self.subTest(bytes=n, chars=len(note), how=how):
                    tip = r.tip()
                    path = "n/%s-%d" % (how, i)
                    if how == "claim":
                        res = r.run("alice", "--json", "claim", "--note", note, path)
                    elif how == "sem":
                        res = r.run("alice", "--json", "sem", "acquire", "s%d" % i, "--limit", "1", "--note", note)
                    else:
                        res = r.run("alice", "--json", "batch", "-",
                                    stdin=json.dumps({"op": "claim", "path": path, "note": note}) + "\n")
                    if ok:
                        self.assertOk(res)
                        st = r.run("alice", "--json", "status")
                        notes = [l.get("note") for l in st.json["leases"]
                                 if l.get("path") == path or l.get("sem") == "s%d" % i]
                        self.assertEqual(notes, [note])
                    else:
                        self.usage(res, ("line 1: " if how == "batch" else "") + "'note' longer than 1024 bytes")
                        self.assertEqual(r.tip(), tip)


if __name__ == "__main__":
    import unittest
    unittest.main()
