"""POST /v1/admit and GET /v1/discovery against a real notary on loopback."""

import hashlib
import json
import os
import time
import unittest

from support import ACTOR_SEED, AUDIENCE, BODY_MARKER, MAX_SAFE, NotaryCase, canonical


class Discovery(NotaryCase):
    def test_discovery_advertises_audience_key_profiles_and_the_test_clock(self):
        n = self.serve()
        self.assertEqual(n.ready, {"listening": "127.0.0.1:%d" % n.port, "audience": AUDIENCE,
                                   "service_key": self.service_key, "clock": "test"})
        self.assertNotEqual(n.port, 0)
        status, body, headers = n.request("GET", "/v1/discovery")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("application/json"))
        d = json.loads(body)
        self.assertEqual(body.decode(), canonical(d))
        self.assertEqual(d, {"audience": AUDIENCE, "service_key": self.service_key,
                             "profiles": ["signed-private-guard-time-v1", "time-add-guard-window-v1"],
                             "clock": "test", "max_request_bytes": 65536})

    def test_system_clock_is_advertised_and_signed_as_system(self):
        n = self.serve(test_clock=False)
        self.assertEqual(n.discovery()["clock"], "system")
        packet = os.path.join(self.tmp, "p.json")
        before = int(time.time() * 1000)
        status, body = n.admit(self.make_request(before - 600_000, before + 600_000, packet))
        after = int(time.time() * 1000)
        self.assertEqual(status, 200, body)
        v = self.check_attestation(packet, body, allow_test_clock=False)
        self.assertTrue(v["ok"], v)
        self.assertEqual(v["clock"], "system")
        self.assertTrue(before <= v["admitted_at_ms"] <= after, (before, v, after))
        self.assertEqual(self.high_water(), v["admitted_at_ms"])

    def test_unknown_paths_and_methods_get_json_errors(self):
        n = self.serve()
        status, body, _ = n.request("GET", "/v1/nothing")
        self.assertError((status, body), 404, "not-found")
        status, body, headers = n.request("GET", "/v1/admit")
        self.assertError((status, body), 405, "method-not-allowed")
        self.assertEqual(headers["Allow"], "POST")
        status, body, headers = n.request("POST", "/v1/discovery", b"{}", {"Content-Type": "application/json"})
        self.assertError((status, body), 405, "method-not-allowed")
        self.assertEqual(headers["Allow"], "GET")


class Admission(NotaryCase):
    T0 = 1_700_000_000_000

    def test_attestation_binds_everything_and_verifies_with_the_core(self):
        n = self.serve()
        self.set_clock(self.T0)
        packet = os.path.join(self.tmp, "p.json")
        request = self.make_request(self.T0 - 1000, self.T0 + 1000, packet)
        self.assertNotIn(BODY_MARKER, request)  # the notary never sees the body
        with open(packet) as f:
            packet_stored = f.read()
        self.assertIn(BODY_MARKER, packet_stored)
        status, body = n.admit(request)
        self.assertEqual(status, 200, body)
        doc = json.loads(body)
        self.assertEqual(body.decode(), canonical(doc))
        att = doc["attestation"]
        self.assertEqual(att["admitted_at_ms"], self.T0)
        self.assertEqual(att["clock"], "test")
        self.assertEqual(att["audience"], AUDIENCE)
        self.assertEqual(att["service_key"], self.service_key)
        self.assertEqual(att["profile"], "signed-private-guard-time-v1")
        self.assertEqual(att["interval"], [self.T0 - 1000, self.T0 + 1000])
        self.assertEqual(att["packet_digest"], hashlib.sha256(packet_stored.encode()).hexdigest())
        req = json.loads(request)["request"]
        for k in ("store", "actor", "command", "action", "instance", "epoch", "policy_hash", "source", "result"):
            self.assertEqual(att[k], req[k], k)

        v = self.check_attestation(packet, body)
        self.assertEqual(v, {"ok": True, "admitted_at_ms": self.T0, "clock": "test"})
        # Verifiers refuse the test clock unless told otherwise, and other pins.
        v = self.check_attestation(packet, body, allow_test_clock=False)
        self.assertEqual(v, {"ok": False, "code": "invalid",
                             "detail": 'test-clock: admitted by a notary running a "test" clock'})
        v = self.check_attestation(packet, body, audience="elsewhere.example")
        self.assertEqual(v, {"ok": False, "code": "invalid",
                             "detail": f'audience: attested by audience "{AUDIENCE}", pinned "elsewhere.example"'})
        v = self.check_attestation(packet, body, service_key="ab" * 32)
        self.assertEqual(v, {"ok": False, "code": "invalid",
                             "detail": f"service-key: attested by key {self.service_key}, pinned {'ab' * 32}"})
        # An attestation for another packet does not verify against this one.
        other = os.path.join(self.tmp, "q.json")
        status, body2 = n.admit(self.make_request(self.T0 - 1000, self.T0 + 1000, other))
        self.assertEqual(status, 200)
        v = self.check_attestation(packet, body2)
        self.assertEqual((v["ok"], v["code"]), (False, "invalid"), v)
        self.assertTrue(v["detail"].startswith("binding:"), v)

    def test_interval_bounds_are_inclusive_and_adjacent_milliseconds_are_refused(self):
        n = self.serve()
        lo, hi = self.T0, self.T0 + 59_000
        req = self.make_request(lo, hi)
        self.set_clock(lo - 1)
        doc = self.assertError(n.admit(req), 422, "guard-window")
        self.assertEqual(doc["t"], lo - 1)
        self.assertEqual(doc["interval"], [lo, hi])
        self.assertIn(str(lo - 1), doc["detail"])
        self.assertIn("[%d, %d]" % (lo, hi), doc["detail"])
        self.assertEqual(self.high_water(), 0, "a refusal persists nothing")
        for t in (lo, hi):
            self.set_clock(t)
            status, body = n.admit(self.make_request(lo, hi))
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["attestation"]["admitted_at_ms"], t)
            self.assertEqual(self.high_water(), t)
        self.set_clock(hi + 1)
        doc = self.assertError(n.admit(self.make_request(lo, hi)), 422, "guard-window")
        self.assertEqual(doc["t"], hi + 1)
        self.assertEqual(self.high_water(), hi)
        # The single-point interval.
        self.set_clock(hi + 5)
        self.assertEqual(n.admit(self.make_request(hi + 5, hi + 5))[0], 200)
        self.assertError(n.admit(self.make_request(hi + 6, hi + 6)), 422, "guard-window")

    def test_tampered_or_badly_signed_requests_are_refused_and_persist_nothing(self):
        n = self.serve()
        self.set_clock(5000)
        doc = json.loads(self.make_request(0, MAX_SAFE))
        for field, value in (("epoch", 1), ("interval", [0, 4000]), ("result", "d" * 40),
                             ("packet_digest", "0" * 64), ("command", "release")):
            tampered = json.loads(json.dumps(doc))
            tampered["request"][field] = value
            self.assertError(n.admit(canonical(tampered)), 403, "bad-signature")
        bad_sig = json.loads(json.dumps(doc))
        bad_sig["sig"] = ("0" if doc["sig"][0] != "0" else "1") + doc["sig"][1:]
        self.assertError(n.admit(canonical(bad_sig)), 403, "bad-signature")
        # Someone else's key in the actor field.
        other_actor = json.loads(json.dumps(doc))
        other_actor["request"]["actor"] = "ab" * 32
        self.assertError(n.admit(canonical(other_actor)), 403, "bad-signature")
        self.assertEqual(self.high_water(), 0)
        # Nothing was persisted: a lower clock is still admitted.
        self.set_clock(3000)
        self.assertEqual(n.admit(canonical(doc))[0], 200)
        self.assertEqual(self.high_water(), 3000)

    def test_a_format_of_another_type_is_an_unknown_format_not_a_server_error(self):
        # Signed by its own actor, so the signature verifies and the format is
        # what is judged (once an exception in the handler: HTTP 500).
        import nacl.signing  # Debian's python3-nacl (toolchains/setup.sh)
        n = self.serve()
        self.set_clock(5000)
        doc = json.loads(self.make_request(0, MAX_SAFE))
        key = nacl.signing.SigningKey(bytes.fromhex(ACTOR_SEED))
        self.assertEqual(doc["request"]["actor"], key.verify_key.encode().hex())
        for value in (5, None, ["gitlocks-admission-v1"], {}, True):
            forged = json.loads(json.dumps(doc))
            forged["request"]["format"] = value
            message = b"gitlocks/admission/v1\x00" + canonical(forged["request"]).encode()
            forged["sig"] = key.sign(message).signature.hex()
            self.assertError(n.admit(canonical(forged)), 400, "unknown-format")
        self.assertEqual(self.high_water(), 0)
        self.assertEqual(n.admit(canonical(doc))[0], 200)

    def test_malformed_non_canonical_and_wrong_media_type_are_refused(self):
        n = self.serve()
        self.set_clock(5000)
        req = self.make_request(0, MAX_SAFE)
        doc = json.loads(req)
        self.assertError(n.admit(json.dumps(doc, indent=1)), 400, "non-canonical")
        self.assertError(n.admit(json.dumps(doc, sort_keys=False)[::-1]), 400, "bad-json")
        self.assertError(n.admit(b""), 400, "bad-json")
        self.assertError(n.admit(b"\xff\xfe"), 400, "bad-json")
        self.assertError(n.admit(canonical({"request": doc["request"]})), 400, "bad-json")
        extra = json.loads(req)
        extra["note"] = "x"
        self.assertError(n.admit(canonical(extra)), 400, "bad-json")
        self.assertError(n.admit(req, content_type="text/plain"), 415, "unsupported-media-type")
        status, body, _ = n.request("POST", "/v1/admit", req.encode())  # no Content-Type
        self.assertError((status, body), 415, "unsupported-media-type")
        self.assertEqual(self.high_water(), 0)
        self.assertEqual(n.admit(req, content_type="application/json; charset=utf-8")[0], 200)

    def test_request_size_is_bounded(self):
        n = self.serve()
        self.set_clock(5000)
        limit = n.discovery()["max_request_bytes"]
        self.assertError(n.admit(b" " * limit), 400, "bad-json")  # at the limit: read, then refused as JSON
        self.assertError(n.admit(b" " * (limit + 1)), 413, "request-too-large")
        self.assertError(n.admit(b"x" * (4 * limit)), 413, "request-too-large")
        self.assertEqual(self.high_water(), 0)
        self.assertEqual(n.admit(self.make_request(0, MAX_SAFE))[0], 200)

    def test_a_smaller_limit_is_advertised_and_enforced(self):
        n = self.serve(extra=["--max-request-bytes", "2048"])
        self.set_clock(5000)
        self.assertEqual(n.discovery()["max_request_bytes"], 2048)
        req = self.make_request(0, MAX_SAFE)
        self.assertLess(len(req), 2048)
        self.assertEqual(n.admit(req)[0], 200)
        self.assertError(n.admit(req + " " * (2049 - len(req))), 413, "request-too-large")

    def test_clock_rollback_is_refused_while_running(self):
        n = self.serve()
        self.set_clock(1000)
        self.assertEqual(n.admit(self.make_request(0, MAX_SAFE))[0], 200)
        self.set_clock(999)
        doc = self.assertError(n.admit(self.make_request(0, MAX_SAFE)), 409, "clock-rollback")
        self.assertEqual(doc["t"], 999)
        self.assertEqual(doc["high_water_ms"], 1000)
        self.assertEqual(self.high_water(), 1000)
        self.set_clock(1000)  # equal to the mark: non-decreasing is fine
        self.assertEqual(n.admit(self.make_request(0, MAX_SAFE))[0], 200)
        # Rollback is checked before the interval: never a signature below the mark.
        self.set_clock(10)
        self.assertError(n.admit(self.make_request(0, 100)), 409, "clock-rollback")

    def test_high_water_mark_is_persisted_before_the_response(self):
        n = self.serve()
        for t in range(2000, 2400, 20):
            self.set_clock(t)
            status, body = n.admit(self.make_request(0, MAX_SAFE))
            self.assertEqual(status, 200, body)
            # Read the instant the response arrives: it must already hold T.
            self.assertEqual(self.high_water(), t)
            self.assertEqual(json.loads(body)["attestation"]["admitted_at_ms"], t)
        self.assertFalse(os.path.exists(os.path.join(self.state, "high-water.json.tmp")))
        self.assertEqual(os.stat(os.path.join(self.state, "high-water.json")).st_mode & 0o777, 0o600)

    def test_an_unreadable_test_clock_refuses_with_503(self):
        n = self.serve()
        req = self.make_request(0, MAX_SAFE)
        self.assertError(n.admit(req), 503, "clock-unavailable")  # no clock file yet
        for bad in ("", "12x", "-5", "1.5", str(MAX_SAFE + 1)):
            with open(os.path.join(self.state, "test-clock-ms"), "w") as f:
                f.write(bad)
            self.assertError(n.admit(req), 503, "clock-unavailable")
        self.assertEqual(self.high_water(), 0)
        self.set_clock(MAX_SAFE)
        self.assertEqual(n.admit(req)[0], 200)
        self.assertEqual(self.high_water(), MAX_SAFE)


if __name__ == "__main__":
    unittest.main()
