"""keygen, and what `serve` refuses to start with; restart and shutdown."""

import json
import os
import shutil
import signal
import socket
import stat
import unittest

from support import MAX_SAFE, NOTARY, NotaryCase, run

NOBODY = 65534  # Debian's unprivileged user and group (nobody:nogroup)


class Keygen(NotaryCase):
    def test_keygen_writes_an_owner_only_hex_seed_and_never_overwrites(self):
        st = os.stat(self.key)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        with open(self.key) as f:
            text = f.read()
        self.assertRegex(text, r"\A[0-9a-f]{64}\n\Z")
        self.assertRegex(self.service_key, r"\A[0-9a-f]{64}\Z")
        r = run([NOTARY, "keygen", "--out", self.key])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(json.loads(r.stderr)["op"], "notary keygen")
        with open(self.key) as f:
            self.assertEqual(f.read(), text)
        other = os.path.join(self.tmp, "other.key")
        r = run([NOTARY, "keygen", "--out", other])
        self.assertEqual(r.returncode, 0)
        self.assertNotEqual(json.loads(r.stdout)["service_key"], self.service_key)
        self.assertEqual(run([NOTARY, "keygen"]).returncode, 64)

    def test_keygen_with_a_restrictive_umask_still_makes_0600(self):
        out = os.path.join(self.tmp, "umask.key")
        r = run(["sh", "-c", 'umask 0277 && exec "$0" keygen --out "$1"', NOTARY, out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o600)


class Refusals(NotaryCase):
    def refused(self, code, status=2, **kw):
        rc, err = self.serve_fails(**kw)
        self.assertEqual(err["error"], "notary-start", err)
        self.assertEqual(err["code"], code, err)
        self.assertEqual(err["op"], "notary serve")
        self.assertEqual(rc, status, err)
        return err

    def test_group_or_world_accessible_key_is_refused(self):
        for mode in (0o640, 0o604, 0o620, 0o602, 0o644, 0o660):
            os.chmod(self.key, mode)
            err = self.refused("key-permissions")
            self.assertIn("%04o" % mode, err["detail"])
        os.chmod(self.key, 0o400)  # read-only for the owner is fine
        self.serve()

    def test_missing_or_malformed_key_is_refused(self):
        self.refused("key-missing", key=os.path.join(self.tmp, "absent.key"))
        bad = os.path.join(self.tmp, "bad.key")
        for text in ("", "ab" * 31 + "\n", "AB" * 32 + "\n", "ab" * 32 + "\n\n", "ab" * 32 + " ",
                     "zz" * 32 + "\n", "ab" * 33 + "\n"):
            with open(bad, "w") as f:
                f.write(text)
            os.chmod(bad, 0o600)
            self.refused("key-malformed", key=bad)
        with open(bad, "w") as f:
            f.write("ab" * 32)  # the newline is optional
        self.assertEqual(self.serve_with_key(bad).ready["service_key"] != "", True)
        self.refused("key-malformed", key=self.tmp)  # a directory

    def serve_with_key(self, key):
        saved, self.key = self.key, key
        try:
            return self.serve()
        finally:
            self.key = saved

    def test_corrupt_high_water_mark_is_refused_and_left_alone(self):
        n = self.serve()
        self.set_clock(1000)
        self.assertEqual(n.admit(self.make_request(0, MAX_SAFE))[0], 200)
        self.assertEqual(n.stop()[0], 0)
        path = os.path.join(self.state, "high-water.json")
        for text in ("garbage", "", '{"format":"gitlocks-notary-state-v1","high_water_ms":1000}',  # no newline
                     '{"high_water_ms":1000,"format":"gitlocks-notary-state-v1"}\n',  # not canonical
                     '{"format":"gitlocks-notary-state-v9","high_water_ms":1000}\n',
                     '{"format":"gitlocks-notary-state-v1","high_water_ms":-1}\n',
                     '{"format":"gitlocks-notary-state-v1","high_water_ms":1.5}\n',
                     '{"format":"gitlocks-notary-state-v1","high_water_ms":1000,"x":1}\n'):
            with open(path, "w") as f:
                f.write(text)
            self.refused("state-corrupt")
            with open(path) as f:
                self.assertEqual(f.read(), text, "never reset silently")

    def test_missing_high_water_mark_in_an_initialised_state_dir_is_refused(self):
        n = self.serve()
        self.assertEqual(n.stop()[0], 0)
        os.remove(os.path.join(self.state, "high-water.json"))
        self.refused("state-corrupt")
        self.assertFalse(os.path.exists(os.path.join(self.state, "high-water.json")))

    def test_unwritable_or_locked_state_dir_is_refused(self):
        not_a_dir = os.path.join(self.tmp, "file")
        with open(not_a_dir, "w") as f:
            f.write("x")
        self.refused("state-unwritable", state=not_a_dir)
        self.refused("state-unwritable", state=os.path.join(self.tmp, "no", "such", "parent"))
        self.read_only_state_dir_is_refused()
        self.serve()
        self.refused("state-locked")

    def read_only_state_dir_is_refused(self):
        """A state directory its user may read but not write. Root writes
        anywhere, so as root (always, in CI) the notary runs as `nobody`
        through setpriv (util-linux), with a key and directories it owns; a
        control start with a writable directory shows that the refusal is the
        directory's doing, and that the process really is unprivileged."""
        base = os.path.join(self.tmp, "unprivileged")
        os.mkdir(base, 0o700)
        ro, rw = os.path.join(base, "ro"), os.path.join(base, "rw")
        os.mkdir(ro, 0o500)
        os.mkdir(rw, 0o700)
        key, prefix, uid = self.key, [], os.geteuid()
        if uid == 0:
            self.assertTrue(shutil.which("setpriv"), "setpriv (util-linux) is needed to drop root")
            key, uid = os.path.join(base, "service.key"), NOBODY
            shutil.copyfile(self.key, key)
            os.chmod(key, 0o600)
            os.chmod(self.tmp, 0o711)  # nobody may pass through, not list
            for p in (base, ro, rw, key):
                os.chown(p, NOBODY, NOBODY)
            prefix = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
        err = self.refused("state-unwritable", key=key, state=ro, prefix=prefix)
        self.assertIn(ro + "/", err["detail"])
        self.assertEqual(os.listdir(ro), [], "a refused start writes nothing")
        n = self.serve(key=key, state=rw, prefix=prefix)
        with open("/proc/%d/status" % n.proc.pid) as f:
            uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
        self.assertEqual(uids, [str(uid)] * 4, "the notary runs unprivileged")
        self.assertEqual(n.stop()[0], 0)
        self.assertEqual(self.high_water(rw), 0)

    def test_non_loopback_listen_needs_allow_remote(self):
        self.refused("remote-listen", status=64, listen="0.0.0.0:0")
        self.refused("remote-listen", status=64, listen="192.0.2.1:0")
        self.refused("remote-listen", status=64, listen="[::]:0")
        self.refused("remote-listen", status=64, listen="example.com:0")
        for bad in ("127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", ":80", "::1:0", "127.0.0.1:x", "[::1:0"):
            self.refused("bad-listen", status=64, listen=bad)
        n = self.serve(extra=["--allow-remote"])
        n.proc.kill()
        n.proc.communicate()
        r = run([NOTARY, "serve", "--key", self.key, "--state", self.state, "--listen", "0.0.0.0:0",
                 "--audience", "a", "--allow-remote", "--max-request-bytes", "10"])
        self.assertEqual(r.returncode, 64)  # still validates the rest
        self.assertEqual(json.loads(r.stderr)["code"], "bad-max-request-bytes")

    def test_port_in_use_is_refused(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            self.refused("listen-failed", listen="127.0.0.1:%d" % port)
        # Nor can a second notary share a running notary's port.
        n = self.serve()
        self.refused("listen-failed", state=os.path.join(self.tmp, "second"), listen="127.0.0.1:%d" % n.port)

    def test_usage_errors(self):
        for args in (["serve"], ["serve", "--key", self.key], ["frobnicate"], [],
                     ["serve", "--key", self.key, "--state", self.state, "--listen", "127.0.0.1:0",
                      "--audience", "a", "--bogus"],
                     ["serve", "--key", self.key, "--state", self.state, "--listen", "127.0.0.1:0",
                      "--audience", "a b"],
                     ["serve", "--key", self.key, "--state", self.state, "--listen", "127.0.0.1:0",
                      "--audience", ""]):
            r = run([NOTARY] + args)
            self.assertEqual(r.returncode, 64, (args, r.stderr))
            self.assertIn("error", json.loads(r.stderr.strip().splitlines()[-1]))
            self.assertEqual(r.stdout, "")


class Lifecycle(NotaryCase):
    def test_rollback_is_refused_across_a_restart(self):
        n = self.serve()
        self.set_clock(1000)
        self.assertEqual(n.admit(self.make_request(0, MAX_SAFE))[0], 200)
        rc, out, err = n.stop()
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"stopped": "SIGTERM"})
        self.assertEqual(self.high_water(), 1000)
        n = self.serve()
        self.set_clock(999)
        doc = self.assertError(n.admit(self.make_request(0, MAX_SAFE)), 409, "clock-rollback")
        self.assertEqual(doc["high_water_ms"], 1000)
        self.set_clock(1001)
        self.assertEqual(n.admit(self.make_request(0, MAX_SAFE))[0], 200)
        self.assertEqual(self.high_water(), 1001)

    def test_sigint_stops_cleanly_and_releases_the_state_dir(self):
        n = self.serve()
        rc, out, err = n.stop(signal.SIGINT)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"stopped": "SIGINT"})
        self.assertEqual(err, "")
        self.serve()  # the lock is free again

    def test_a_fresh_state_dir_is_created_owner_only(self):
        state = os.path.join(self.tmp, "fresh")
        n = self.serve(state=state)
        self.assertEqual(stat.S_IMODE(os.stat(state).st_mode) & 0o077, 0)
        self.assertEqual(self.high_water(state), 0)
        self.assertEqual(n.stop()[0], 0)


if __name__ == "__main__":
    unittest.main()
