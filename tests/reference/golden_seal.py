"""The sealing vectors (tests/vectors/seal/cases.json), derived independently
of the core: each sealed document and keyed record name is recomputed from
docs/PRIVATE.md "The exact construction" with Python's hashlib (BLAKE2b,
SHA-256) and PyNaCl (XChaCha20-Poly1305-IETF), and must equal the recorded
bytes; each recorded ciphertext must open to the plaintext under the
documented associated data, and to nothing under any other.

Run: python3 -m unittest -v golden_seal (ctest: reference/golden_seal)."""

import hashlib
import json
import os
import sys
import unittest

from nacl.bindings import (crypto_aead_xchacha20poly1305_ietf_decrypt,
                           crypto_aead_xchacha20poly1305_ietf_encrypt)
from nacl.exceptions import CryptoError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from golden_store import canon  # noqa: E402

CASES = os.path.join(HERE, "..", "vectors", "seal", "cases.json")


def blake2b(key, data, bits):
    return hashlib.blake2b(data, digest_size=bits // 8, key=key).digest()


def subkeys(epoch_key):
    return {p: blake2b(epoch_key, f"gitlocks/{p}/v1".encode(), 256) for p in ("seal", "nonce", "names")}


def associated_data(epoch, store, location):
    return canon({"epoch": epoch, "location": location, "store": store})


def seal(plaintext, epoch_key, epoch, store, location):
    k = subkeys(epoch_key)
    ad = associated_data(epoch, store, location)
    pt = canon(plaintext)
    nonce = blake2b(k["nonce"], len(ad).to_bytes(8, "little") + ad + pt, 192)
    ct = crypto_aead_xchacha20poly1305_ietf_encrypt(pt, ad, nonce, k["seal"])
    return canon({"sealed": {"ct": ct.hex(), "epoch": epoch, "nonce": nonce.hex()}}).decode()


def open_sealed(doc, epoch_key, store, location):
    s = doc["sealed"]
    return crypto_aead_xchacha20poly1305_ietf_decrypt(bytes.fromhex(s["ct"]),
                                                      associated_data(s["epoch"], store, location),
                                                      bytes.fromhex(s["nonce"]), subkeys(epoch_key)["seal"])


def resource_hash(epoch_key, resource):
    return blake2b(subkeys(epoch_key)["names"], resource.encode(), 256).hex()


class GoldenSeal(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(CASES, encoding="utf-8") as f:
            cls.doc = json.load(f)
        assert cls.doc["kind"] == "seal"

    def cases(self):
        for c in self.doc["cases"]:
            yield c, hashlib.sha256(c["key_seed"].encode()).digest()  # tests/vectors/README.md

    def test_sealed_documents_and_names_are_recomputed_byte_for_byte(self):
        n = 0
        for c, key in self.cases():
            with self.subTest(case=c["name"]):
                self.assertEqual(seal(c["plaintext"], key, c["epoch"], c["store"], c["location"]), c["sealed"])
                self.assertEqual(resource_hash(key, c["resource"]), c["resource_hash"])
                n += 1
        self.assertGreaterEqual(n, 4)

    def test_recorded_ciphertexts_open_only_under_their_own_binding(self):
        for c, key in self.cases():
            with self.subTest(case=c["name"]):
                doc = json.loads(c["sealed"])
                self.assertEqual(sorted(doc), ["sealed"])
                self.assertEqual(sorted(doc["sealed"]), ["ct", "epoch", "nonce"])
                self.assertEqual(doc["sealed"]["epoch"], c["epoch"])
                self.assertEqual(open_sealed(doc, key, c["store"], c["location"]), canon(c["plaintext"]))
                moved = [(key, c["store"], c["location"] + "x"), (key, "e" * 64, c["location"]),
                         (hashlib.sha256(b"another key").digest(), c["store"], c["location"])]
                for k, store, loc in moved:
                    with self.assertRaises(CryptoError):
                        open_sealed(doc, k, store, loc)
                other_epoch = {"sealed": dict(doc["sealed"], epoch=c["epoch"] + 1)}
                with self.assertRaises(CryptoError):
                    open_sealed(other_epoch, key, c["store"], c["location"])

    def test_the_nonce_depends_on_the_binding_and_the_plaintext(self):
        c, key = next(self.cases())
        base = seal(c["plaintext"], key, c["epoch"], c["store"], c["location"])
        self.assertEqual(seal(c["plaintext"], key, c["epoch"], c["store"], c["location"]), base)  # deterministic
        nonces = {json.loads(s)["sealed"]["nonce"] for s in (
            base,
            seal({"x": 1}, key, c["epoch"], c["store"], c["location"]),
            seal(c["plaintext"], key, c["epoch"] + 1, c["store"], c["location"]),
            seal(c["plaintext"], key, c["epoch"], c["store"], c["location"] + "x"))}
        self.assertEqual(len(nonces), 4)


if __name__ == "__main__":
    unittest.main()
