// gitlocks/attest.hpp — trusted admission time (seed 002, SPEC §6).
//
// With guard time on, the publishing client does not choose T. It sends the
// notary an *admission request*: the packet's bindings, its digest and the
// derived interval, signed by the actor (never the body). The notary takes T
// from its clock, checks lo <= T <= hi and clock monotonicity, and returns
// an *attestation* binding everything plus T, signed with its service key.
// The transition commit then carries txn/attestation.json.
//
// Admission request (stored form {"request":REQ,"sig":HEX}, actor-signed under
// kAdmissionDomain):
//   format "gitlocks-admission-v1", store, actor, command, action, instance,
//   epoch, policy_hash, source, result, packet_digest, interval
// Attestation (stored form {"attestation":ATT,"sig":HEX}, service-signed under
// kAttestationDomain): the request's bindings plus
//   format "gitlocks-attestation-v1", profile, audience, service_key,
//   admitted_at_ms, clock ("system", or "test" for a test-only clock)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

inline constexpr std::string_view kAdmissionFormat = "gitlocks-admission-v1";
inline constexpr std::string_view kAttestationFormat = "gitlocks-attestation-v1";
inline constexpr std::string_view kAdmissionDomain{"gitlocks/admission/v1\0", 22};
inline constexpr std::string_view kProfileGuardTime = "signed-private-guard-time-v1";
inline constexpr std::string_view kProfileTimeAdd = "time-add-guard-window-v1";
inline constexpr std::string_view kDisclosureGuardWindow = "GUARD_WINDOW";

struct Pins {
  std::string audience;
  std::string service_key;  // 64 hex
  bool operator==(const Pins& o) const { return audience == o.audience && service_key == o.service_key; }
};

// The bindings shared by request and attestation, in this order.
inline constexpr const char* kBindingFields[] = {"store", "actor",       "command", "action", "instance",
                                                 "epoch", "policy_hash", "source",  "result"};

// sha256 hex of a packet's stored (signed) form: the "commit hash" the
// attestation binds.
std::string packet_digest(std::string_view packet_stored);

// Builds and signs an admission request for a packet (client side).
Result<std::string> make_admission_request(const json& packet, std::string_view packet_stored, const KeyPair& actor);

// Opens a request (notary side): canonical, known fields, actor signature,
// interval well formed. Errors: bad_json, non_canonical, unknown_format,
// bad_signature.
Result<json> open_admission_request(std::string_view stored);

// Notary side: the signed attestation for an opened request admitted at t.
Result<std::string> make_attestation(const json& request, const Pins& pins, std::int64_t t, bool test_clock,
                                     const KeyPair& service);

// An attestation as open_attestation read it (docs/FORMAT.md,
// "Attestations"): its service signature verified, every field checked and
// typed. The core reads these fields, never the document by name.
struct Attestation {
  std::string profile;
  std::string audience;
  std::string service_key;  // 64 hex: the key that signed it
  // The bindings it shares with the packet and the admission request
  // (kBindingFields).
  std::string store, actor, command, action, instance;
  std::int64_t epoch = 0;
  std::string policy_hash;
  Oid source;  // the null id for a store's creation
  Oid result;
  std::string packet_digest;                      // 64 hex: packet_digest() of the packet it admits
  std::int64_t interval_lo = 0, interval_hi = 0;  // the signed interval, lo <= hi
  std::int64_t admitted_at_ms = 0;                // T
  std::string clock;                              // "system" or "test"
  json document;                                  // the signed document, for hosts to show
};

// Parses and verifies the service signature against the embedded key.
// Errors: bad_json (malformed), bad_signature, unknown_format.
Result<Attestation> open_attestation(std::string_view stored);

// The admission time T a transition commit records: the notary's
// admitted_at_ms when it carries an attestation (opened here, so its
// signature is checked; its bindings to the pins are replay's), else the
// packet's own claimed_at_ms (nullopt when the packet has none). The one
// reading of "when was this commit admitted" for the tip's snapshot, a
// trusted start, the log and the timeline; replay derives T while it checks
// it (check_time_source), and a writer from the notary's fresh answer.
// Errors: those of open_attestation.
struct RecordedTime {
  std::int64_t ms = 0;
  bool attested = false;  // the notary's T, not a client clock's
};
Result<std::optional<RecordedTime>> recorded_admission_time(const std::optional<std::string>& attestation_stored,
                                                            std::optional<std::int64_t> claimed_at_ms);

// Verifier side: every binding of an opened attestation against the packet
// and the pins. Errors (invalid) name the first mismatch:
//   "audience", "service-key", "binding:<field>", "packet-digest",
//   "interval", "time-outside-interval", "test-clock", "profile".
// A notary's discovery document (GET /v1/discovery, SPEC §6) checked
// against the pins a host will trust: it advertises both profiles
// (kProfileGuardTime, kProfileTimeAdd), its audience and service key are
// the pinned ones, and its clock is "system" ("test" only with
// allow_test_clock). Errors: store_write naming what differs (a host
// publishes nothing through such a notary); `who` names the notary in them.
Status check_discovery_document(const json& discovery, const Pins& pins, bool allow_test_clock,
                                const std::string& who = "notary");

// A witness's cosignature of a checkpoint (docs/FORMAT.md "Witnesses"):
// {"cosignature":{"checkpoint":COMMIT,"format":"gitlocks-cosignature-v1",
//  "store":HEX64,"witness":HEX64},"sig":HEX} signed by the witness key
// under kCosignatureDomain, canonical JSON. The witness states that it
// verified the store's history up to COMMIT, a checkpoint, and that COMMIT
// extends every checkpoint it cosigned for that store before.
inline constexpr std::string_view kCosignatureFormat = "gitlocks-cosignature-v1";
inline constexpr std::string_view kCosignatureDomain{"gitlocks/cosignature/v1\0", 24};
struct Cosignature {
  std::string store;       // 64 hex
  std::string checkpoint;  // 40 hex
  std::string witness;     // 64 hex: the key that signed it
};
Result<std::string> make_cosignature(const std::string& store, const std::string& checkpoint, const KeyPair& witness);
// Errors: bad_json (not canonical, a member missing or extra, malformed),
// unknown_format, bad_signature.
Result<Cosignature> open_cosignature(std::string_view stored);

struct PacketFields;
Status check_attestation(const Attestation& attestation, const PacketFields& packet, std::string_view packet_stored,
                         const Pins& pins, bool allow_test_clock);

}  // namespace gitlocks
