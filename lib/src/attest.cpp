#include "gitlocks/attest.hpp"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

#include "gitlocks/hex.hpp"
#include "gitlocks/packet.hpp"

namespace gitlocks {
namespace {

bool is_hex(const json& v, std::size_t n) {
  return v.is_string() && gitlocks::is_hex(v.get_ref<const std::string&>(), n);
}

bool is_safe(const json& v) {
  return v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= kMaxSafeInteger;
}

Status check_bindings(const json& doc, const char* what) {
  for (const char* k : kBindingFields)
    if (!doc.contains(k)) return make_error(Errc::bad_json, std::string(what) + " has no '" + k + "'");
  if (!is_hex(doc["store"], 64) || !is_hex(doc["actor"], 64) || !is_hex(doc["instance"], 64) ||
      !is_hex(doc["policy_hash"], 64) || !is_hex(doc["result"], 40) ||
      !(doc["source"] == "" || is_hex(doc["source"], 40)) || !doc["command"].is_string() ||
      !doc["action"].is_string() || !is_safe(doc["epoch"]))
    return make_error(Errc::bad_json, std::string(what) + " has a malformed binding");
  if (!doc.contains("packet_digest") || !is_hex(doc["packet_digest"], 64))
    return make_error(Errc::bad_json, std::string(what) + " needs a 64-hex packet_digest");
  const json& iv = doc.contains("interval") ? doc["interval"] : json();
  if (!iv.is_array() || iv.size() != 2 || !is_safe(iv[0]) || !is_safe(iv[1]) ||
      iv[0].get<std::int64_t>() > iv[1].get<std::int64_t>())
    return make_error(Errc::bad_json, std::string(what) + " interval must be [lo, hi], 0 <= lo <= hi <= 2^53-1");
  return Ok{};
}

// {"<inner>":DOC,"sig":HEX}: canonical, verified against `key_field` of DOC.
Result<json> open_signed(std::string_view stored, const char* inner, std::string_view domain, const char* key_field) {
  GITLOCKS_TRY(doc, canon_parse(stored, CanonMode::strict));
  GITLOCKS_CHECK(check_keys(doc, {inner, "sig"}, "signed document"));
  if (!doc.contains(inner) || !doc[inner].is_object() || !doc.contains("sig") || !doc["sig"].is_string())
    return make_error(Errc::bad_json, std::string("expected {\"") + inner + "\":{...},\"sig\":...}");
  const json& d = doc[inner];
  if (!d.contains(key_field) || !is_hex(d[key_field], 64))
    return make_error(Errc::bad_json, std::string(inner) + " has no valid '" + key_field + "'");
  GITLOCKS_TRY(sig, signature_from_hex(doc["sig"].get<std::string>()));
  GITLOCKS_TRY(pk, public_key_from_hex(d[key_field].get<std::string>()));
  GITLOCKS_TRY(bytes, canon_dump(d));
  if (!verify_detached(domain, bytes, sig, pk))
    return make_error(Errc::bad_signature, std::string(inner) + " signature does not verify");
  return json(doc[inner]);
}

// The counterpart of open_signed: {"<inner>":DOC,"sig":HEX} over domain ||
// canonical(DOC).
Result<std::string> seal_signed(const char* inner, const json& doc, std::string_view domain, const KeyPair& key) {
  GITLOCKS_TRY(bytes, canon_dump(doc));
  auto sig = sign_detached(domain, bytes, key);
  return canon_dump(json{{inner, doc}, {"sig", to_hex(sig)}});
}

// Copies the bindings shared by request and attestation (missing ones become
// null and fail check_bindings).
void copy_bindings(const json& from, json& to) {
  for (const char* k : kBindingFields) to[k] = from.contains(k) ? from[k] : json();
}

}  // namespace

std::string packet_digest(std::string_view packet_stored) { return sha256_hex(packet_stored); }

Result<std::string> make_admission_request(const json& packet, std::string_view packet_stored, const KeyPair& actor) {
  json req = {{"format", kAdmissionFormat},
              {"packet_digest", packet_digest(packet_stored)},
              {"interval", packet.contains("interval") ? packet["interval"] : json()}};
  copy_bindings(packet, req);
  GITLOCKS_CHECK(check_bindings(req, "admission request"));
  if (req["actor"] != to_hex(actor.public_key)) return make_error(Errc::usage, "request actor is not the signing key");
  return seal_signed("request", req, kAdmissionDomain, actor);
}

Result<json> open_admission_request(std::string_view stored) {
  GITLOCKS_TRY(req, open_signed(stored, "request", kAdmissionDomain, "actor"));
  if (!member_is(req, "format", kAdmissionFormat))
    return make_error(Errc::unknown_format, "unknown admission request format");
  GITLOCKS_CHECK(check_keys(req,
                            {"format", "store", "actor", "command", "action", "instance", "epoch", "policy_hash",
                             "source", "result", "packet_digest", "interval"},
                            "admission request"));
  GITLOCKS_CHECK(check_bindings(req, "admission request"));
  return req;
}

Result<std::string> make_attestation(const json& request, const Pins& pins, std::int64_t t, bool test_clock,
                                     const KeyPair& service) {
  GITLOCKS_CHECK(check_bindings(request, "admission request"));
  if (pins.service_key != to_hex(service.public_key))
    return make_error(Errc::usage, "service key pin is not the signing key");
  json att = {{"format", kAttestationFormat},
              {"profile", kProfileGuardTime},
              {"audience", pins.audience},
              {"service_key", pins.service_key},
              {"packet_digest", request["packet_digest"]},
              {"interval", request["interval"]},
              {"admitted_at_ms", t},
              {"clock", test_clock ? "test" : "system"}};
  copy_bindings(request, att);
  return seal_signed("attestation", att, kAttestationDomain, service);
}

Result<std::string> make_cosignature(const std::string& store, const std::string& checkpoint, const KeyPair& witness) {
  if (!is_hex(std::string_view(store), 64) || !is_hex(std::string_view(checkpoint), 40))
    return make_error(Errc::usage, "a cosignature names a store (64 hex) and a commit (40 hex)");
  json c = {{"format", kCosignatureFormat},
            {"store", store},
            {"checkpoint", checkpoint},
            {"witness", to_hex(witness.public_key)}};
  return seal_signed("cosignature", c, kCosignatureDomain, witness);
}

Result<Cosignature> open_cosignature(std::string_view stored) {
  GITLOCKS_TRY(c, open_signed(stored, "cosignature", kCosignatureDomain, "witness"));
  if (!member_is(c, "format", kCosignatureFormat))
    return make_error(Errc::unknown_format, "unknown cosignature format");
  GITLOCKS_CHECK(check_keys(c, {"format", "store", "checkpoint", "witness"}, "cosignature"));
  if (!is_hex(c["store"], 64) || !is_hex(c["checkpoint"], 40))
    return make_error(Errc::bad_json, "a cosignature names a store (64 hex) and a commit (40 hex)");
  return Cosignature{c["store"].get<std::string>(), c["checkpoint"].get<std::string>(),
                     c["witness"].get<std::string>()};
}

Result<std::optional<RecordedTime>> recorded_admission_time(const std::optional<std::string>& attestation_stored,
                                                            std::optional<std::int64_t> claimed_at_ms) {
  if (attestation_stored) {
    GITLOCKS_TRY(att, open_attestation(*attestation_stored));
    return std::optional<RecordedTime>{RecordedTime{att.admitted_at_ms, true}};
  }
  if (claimed_at_ms) return std::optional<RecordedTime>{RecordedTime{*claimed_at_ms, false}};
  return std::optional<RecordedTime>{};
}

Result<Attestation> open_attestation(std::string_view stored) {
  GITLOCKS_TRY(att, open_signed(stored, "attestation", kAttestationDomain, "service_key"));
  if (!member_is(att, "format", kAttestationFormat))
    return make_error(Errc::unknown_format, "unknown attestation format");
  GITLOCKS_CHECK(
      check_keys(att,
                 {"format", "profile", "audience", "service_key", "store", "actor", "command", "action", "instance",
                  "epoch", "policy_hash", "source", "result", "packet_digest", "interval", "admitted_at_ms", "clock"},
                 "attestation"));
  GITLOCKS_CHECK(check_bindings(att, "attestation"));
  if (!att.contains("audience") || !att["audience"].is_string() || !att.contains("admitted_at_ms") ||
      !is_safe(att["admitted_at_ms"]) || !att.contains("clock") || !att["clock"].is_string() ||
      !att.contains("profile") || !att["profile"].is_string())
    return make_error(Errc::bad_json, "attestation is missing audience, admitted_at_ms, clock or profile");
  // Every field is checked: read each once.
  auto text = [&](const char* k) { return att[k].get<std::string>(); };
  Attestation out;
  out.profile = text("profile");
  out.audience = text("audience");
  out.service_key = text("service_key");
  out.store = text("store");
  out.actor = text("actor");
  out.command = text("command");
  out.action = text("action");
  out.instance = text("instance");
  out.epoch = att["epoch"].get<std::int64_t>();
  out.policy_hash = text("policy_hash");
  // Checked above: the source is "" (the null id) or 40 lowercase hex
  // digits, the result 40.
  out.source = Oid::from_hex(text("source")).value_or(Oid{});
  out.result = *Oid::from_hex(text("result"));
  out.packet_digest = text("packet_digest");
  out.interval_lo = att["interval"][0].get<std::int64_t>();
  out.interval_hi = att["interval"][1].get<std::int64_t>();
  out.admitted_at_ms = att["admitted_at_ms"].get<std::int64_t>();
  out.clock = text("clock");
  out.document = std::move(att);
  return out;
}

Status check_attestation(const Attestation& att, const PacketFields& packet, std::string_view packet_stored,
                         const Pins& pins, bool allow_test_clock) {
  auto bad = [](const std::string& what, const std::string& detail) {
    return make_error(Errc::invalid, what + ": " + detail);
  };
  if (att.profile != kProfileGuardTime)
    return bad("profile", "unknown attestation profile " + json(att.profile).dump());
  if (att.audience != pins.audience)
    return bad("audience",
               "attested by audience " + json(att.audience).dump() + ", pinned " + json(pins.audience).dump());
  if (att.service_key != pins.service_key)
    return bad("service-key", "attested by key " + att.service_key + ", pinned " + pins.service_key);
  // The bindings in kBindingFields' order: the first mismatch is reported.
  const PacketHeader& h = packet.header;
  const std::tuple<const char*, json, json> bindings[] = {{"store", att.store, h.store},
                                                          {"actor", att.actor, h.actor},
                                                          {"command", att.command, h.command},
                                                          {"action", att.action, packet.action},
                                                          {"instance", att.instance, h.instance},
                                                          {"epoch", att.epoch, h.epoch},
                                                          {"policy_hash", att.policy_hash, h.policy_hash},
                                                          {"source", att.source, h.source},
                                                          {"result", att.result, packet.result}};
  static_assert(std::size(bindings) == std::size(kBindingFields));
  for (const auto& [k, bound, has] : bindings)
    if (bound != has)
      return bad(std::string("binding:") + k, "attestation binds " + bound.dump() + ", packet has " + has.dump());
  if (att.packet_digest != packet_digest(packet_stored))
    return bad("packet-digest", "attestation is for another packet");
  if (att.interval_lo != packet.interval_lo || att.interval_hi != packet.interval_hi)
    return bad("interval", "signed interval differs from the packet's");
  const std::int64_t t = att.admitted_at_ms;
  if (t < att.interval_lo || t > att.interval_hi)
    return bad("time-outside-interval", "T = " + std::to_string(t) + " outside the signed interval");
  if (att.clock != "system" && !(allow_test_clock && att.clock == "test"))
    return bad("test-clock", "admitted by a notary running a " + json(att.clock).dump() + " clock");
  return Ok{};
}

}  // namespace gitlocks

namespace gitlocks {

Status check_discovery_document(const json& d, const Pins& pins, bool allow_test_clock, const std::string& who) {
  if (!d.is_object()) return make_error(Errc::store_write, "notary discovery is not a JSON object");
  auto str = [&](const char* k) { return d.contains(k) && d[k].is_string() ? d[k].get<std::string>() : std::string(); };
  bool has_guard = false, has_time_add = false;
  if (d.contains("profiles") && d["profiles"].is_array())
    for (const auto& p : d["profiles"]) {
      if (p == kProfileGuardTime) has_guard = true;
      if (p == kProfileTimeAdd) has_time_add = true;
    }
  if (!has_guard || !has_time_add)
    return make_error(Errc::store_write, who + " does not advertise both profiles " + std::string(kProfileGuardTime) +
                                             " and " + std::string(kProfileTimeAdd));
  if (str("audience") != pins.audience)
    return make_error(Errc::store_write,
                      "notary audience '" + str("audience") + "' is not the pinned '" + pins.audience + "'");
  if (str("service_key") != pins.service_key)
    return make_error(Errc::store_write,
                      "notary service key " + str("service_key") + " is not the pinned " + pins.service_key);
  if (str("clock") != "system" && !(str("clock") == "test" && allow_test_clock))
    return make_error(Errc::store_write,
                      "notary runs a '" + str("clock") + "' clock: refused (tests only: --allow-test-clock)");
  return Ok{};
}

}  // namespace gitlocks
