#include "gitlocks/packet.hpp"

#include <algorithm>

#include "gitlocks/hex.hpp"

namespace gitlocks {

json make_packet(const PacketHeader& h, const PlanOutcome& outcome, std::optional<std::int64_t> claimed_at_ms) {
  json p = {{"format", kPacketFormat},
            {"store", h.store},
            {"actor", h.actor},
            {"command", h.command},
            {"action", action_name(outcome.action)},
            {"instance", h.instance},
            {"epoch", h.epoch},
            {"policy_hash", h.policy_hash},
            {"source", h.source},
            {"body", outcome.body},
            {"interval", json::array({outcome.interval.lo, outcome.interval.hi})},
            {"result", outcome.result_state}};
  if (claimed_at_ms) p["claimed_at_ms"] = *claimed_at_ms;
  return p;
}

namespace {
bool hex_of(const json& v, std::size_t n) { return v.is_string() && is_hex(v.get_ref<const std::string&>(), n); }
bool safe_int(const json& v) {
  return v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= kMaxSafeInteger;
}
}  // namespace

Status check_packet(const json& p) {
  if (!p.is_object()) return make_error(Errc::bad_json, "packet must be an object");
  auto fmt = p.find("format");
  if (fmt == p.end() || !fmt->is_string()) return make_error(Errc::bad_json, "packet has no format");
  if (*fmt != kPacketFormat)
    return make_error(Errc::unknown_format, "unknown packet format " + fmt->dump() + "; refusing it");
  GITLOCKS_CHECK(check_keys(p,
                            {"format", "store", "actor", "command", "action", "instance", "epoch", "policy_hash",
                             "source", "body", "interval", "result", "claimed_at_ms"},
                            "packet"));
  auto need = [&](const char* k) { return p.find(k) != p.end(); };
  for (const char* k : {"store", "actor", "command", "action", "instance", "epoch", "policy_hash", "source", "body",
                        "interval", "result"})
    if (!need(k)) return make_error(Errc::bad_json, std::string("packet has no '") + k + "'");
  if (!hex_of(p["store"], 64)) return make_error(Errc::bad_json, "packet store id must be 64 hex digits");
  if (!hex_of(p["actor"], 64)) return make_error(Errc::bad_json, "packet actor must be 64 hex digits");
  if (!hex_of(p["instance"], 64)) return make_error(Errc::bad_json, "packet instance must be 64 hex digits");
  if (!hex_of(p["policy_hash"], 64)) return make_error(Errc::bad_json, "packet policy_hash must be 64 hex digits");
  if (!p["command"].is_string() || !p["action"].is_string())
    return make_error(Errc::bad_json, "packet command and action must be strings");
  if (!safe_int(p["epoch"])) return make_error(Errc::bad_json, "packet epoch must be a non-negative integer");
  if (!(p["source"] == "" || hex_of(p["source"], 40)))
    return make_error(Errc::bad_json, "packet source must be a tree id or empty");
  if (!hex_of(p["result"], 40)) return make_error(Errc::bad_json, "packet result must be a tree id");
  if (!p["body"].is_object()) return make_error(Errc::bad_json, "packet body must be an object");
  const json& iv = p["interval"];
  if (!iv.is_array() || iv.size() != 2 || !safe_int(iv[0]) || !safe_int(iv[1]) ||
      iv[0].get<std::int64_t>() > iv[1].get<std::int64_t>())
    return make_error(Errc::bad_json, "packet interval must be [lo, hi] with 0 <= lo <= hi <= 2^53-1");
  if (need("claimed_at_ms") && !safe_int(p["claimed_at_ms"]))
    return make_error(Errc::bad_json, "packet claimed_at_ms must be a non-negative integer");
  return Ok{};
}

Result<PacketFields> packet_fields(const json& p) {
  GITLOCKS_CHECK(check_packet(p));
  auto text = [&](const char* k) { return p[k].get<std::string>(); };
  // check_packet took each id as 40 lowercase hex digits (the source: or "").
  auto id = [&](const char* k) { return Oid::from_hex(text(k)).value_or(Oid{}); };
  PacketFields f;
  f.header.store = text("store");
  f.header.actor = text("actor");
  f.header.command = text("command");
  f.header.instance = text("instance");
  f.header.epoch = p["epoch"].get<std::int64_t>();
  f.header.policy_hash = text("policy_hash");
  f.header.source = id("source");
  f.action = text("action");
  f.result = id("result");
  f.interval_lo = p["interval"][0].get<std::int64_t>();
  f.interval_hi = p["interval"][1].get<std::int64_t>();
  if (p.contains("claimed_at_ms")) f.claimed_at_ms = p["claimed_at_ms"].get<std::int64_t>();
  return f;
}

std::optional<std::int64_t> loose_claimed_at_ms(const json& packet) {
  if (!packet.is_object()) return std::nullopt;
  auto it = packet.find("claimed_at_ms");
  if (it == packet.end() || !safe_int(*it)) return std::nullopt;
  return it->get<std::int64_t>();
}

json OpenedPacket::document() const {
  // packet_bytes were parsed strictly by open_packet: they parse again.
  auto doc = canon_parse(packet_bytes, CanonMode::strict);
  return doc.ok() ? std::move(doc).value() : json();
}

Result<std::string> seal_packet(const json& packet, const KeyPair& key) {
  GITLOCKS_CHECK(check_packet(packet));
  if (packet["actor"] != to_hex(key.public_key)) return make_error(Errc::usage, "packet actor is not the signing key");
  GITLOCKS_TRY(bytes, canon_dump(packet));
  Signature sig = sign_detached(kPacketDomain, bytes, key);
  return canon_dump(json{{"packet", packet}, {"sig", to_hex(sig)}});
}

Result<OpenedPacket> open_packet(std::string_view stored) {
  GITLOCKS_TRY(doc, canon_parse(stored, CanonMode::strict));
  GITLOCKS_CHECK(check_keys(doc, {"packet", "sig"}, "signed packet"));
  if (!doc.contains("packet") || !doc.contains("sig") || !doc["sig"].is_string())
    return make_error(Errc::bad_json, "signed packet needs 'packet' and 'sig'");
  GITLOCKS_TRY(fields, packet_fields(doc["packet"]));
  GITLOCKS_TRY(sig, signature_from_hex(doc["sig"].get<std::string>()));
  GITLOCKS_TRY(pk, public_key_from_hex(doc["packet"]["actor"].get<std::string>()));
  // `stored` is canonical ({"packet":P,"sig":S}, keys in order), so P's
  // canonical bytes are the slice between the two: no second serialisation.
  std::string bytes;
  constexpr std::string_view head = "{\"packet\":";
  const std::string tail = ",\"sig\":" + doc["sig"].dump() + "}";
  if (stored.size() > head.size() + tail.size() && stored.substr(0, head.size()) == head &&
      stored.substr(stored.size() - tail.size()) == tail) {
    bytes = std::string(stored.substr(head.size(), stored.size() - head.size() - tail.size()));
  } else {
    GITLOCKS_TRY(dumped, canon_dump(doc["packet"]));
    bytes = std::move(dumped);
  }
  if (!verify_detached(kPacketDomain, bytes, sig, pk))
    return make_error(Errc::bad_signature,
                      "packet signature does not verify for actor " + doc["packet"]["actor"].get<std::string>());
  OpenedPacket out;
  out.body = std::move(doc["packet"]["body"]);
  out.fields = std::move(fields);
  out.packet_bytes = std::move(bytes);
  out.digest = sha256_hex(stored);
  return out;
}

Result<Oid> write_transition_commit(ObjectStore& store, const std::optional<Oid>& parent, const Oid& state,
                                    const std::string& packet_stored, const std::string& message,
                                    std::int64_t time_seconds, const std::optional<std::string>& attestation_stored) {
  GITLOCKS_TRY(packet_blob, store.write_blob(packet_stored));
  Tree txn_entries = {{"packet.json", false, packet_blob}};
  if (attestation_stored) {
    GITLOCKS_TRY(att_blob, store.write_blob(*attestation_stored));
    txn_entries.push_back({"attestation.json", false, att_blob});
  }
  GITLOCKS_TRY(txn, store.write_tree(txn_entries));
  GITLOCKS_TRY(root, store.write_tree({{"state", true, state}, {"txn", true, txn}}));
  Commit c;
  c.tree = root;
  if (parent) c.parents.push_back(*parent);
  c.message = message;
  c.time_seconds = time_seconds;
  return store.write_commit(c);
}

Result<TransitionCommit> read_transition_commit(ObjectStore& store, const Oid& commit) {
  GITLOCKS_TRY(c, store.read_commit(commit));
  TransitionCommit out;
  out.commit = commit;
  out.parents = c.parents;
  out.time_seconds = c.time_seconds;
  GITLOCKS_TRY(root, store.read_tree(c.tree));
  std::optional<Oid> txn;
  for (const auto& e : root) {
    if (e.name == "state" && e.is_tree) out.state = e.oid;
    else if (e.name == "txn" && e.is_tree) txn = e.oid;
    else out.unexpected.push_back(e.name);
  }
  if (out.state.empty()) return make_error(Errc::invalid, "commit " + commit + " has no state tree");
  if (!txn) return make_error(Errc::invalid, "commit " + commit + " has no txn tree");
  GITLOCKS_TRY(t, store.read_tree(*txn));
  std::optional<Oid> packet;
  std::optional<Oid> attestation;
  for (const auto& e : t) {
    if (e.name == "packet.json" && !e.is_tree) packet = e.oid;
    else if (e.name == "attestation.json" && !e.is_tree) attestation = e.oid;
    else out.unexpected.push_back("txn/" + e.name);
  }
  if (attestation) {
    GITLOCKS_TRY(att, store.read_blob(*attestation));
    out.attestation_stored = std::move(att);
  }
  if (!packet) return make_error(Errc::invalid, "commit " + commit + " has no txn/packet.json");
  GITLOCKS_TRY(bytes, store.read_blob(*packet));
  out.packet_stored = std::move(bytes);
  return out;
}

}  // namespace gitlocks
