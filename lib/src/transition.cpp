#include "gitlocks/transition.hpp"

#include <algorithm>

#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "snapshot.h"

namespace gitlocks {

Result<Snapshot> detail::read_unverified_snapshot(ObjectStore& store, const std::optional<Oid>& tip) {
  Snapshot s;
  s.commit = tip;
  if (!tip) return s;
  auto tc = read_transition_commit(store, *tip);
  if (!tc.ok()) return make_error(Errc::store_read, tc.error().message);
  s.state = tc->state;
  StateReader reader(store, s.state);
  GITLOCKS_TRY(version, reader.format_version());
  s.format = version;
  GITLOCKS_TRY(bytes, reader.policy_bytes());
  s.policy_hash = sha256_hex(bytes);
  // Its packet's fields, read once (its signature is the verifier's).
  auto doc = canon_parse(tc->packet_stored, CanonMode::strict);
  const bool has_packet = doc.ok() && doc->is_object() && doc->contains("packet");
  auto fields = has_packet ? packet_fields((*doc)["packet"]) : make_error(Errc::bad_json, "no packet");
  if (!fields.ok()) return make_error(Errc::store_read, "tip packet of " + *tip + " is unreadable");
  s.store_id = fields->header.store;
  auto recorded = recorded_admission_time(tc->attestation_stored, fields->claimed_at_ms);
  if (!recorded.ok()) return make_error(Errc::store_read, "tip attestation: " + recorded.error().message);
  if (*recorded) s.last_time = (*recorded)->ms;
  auto policy_doc = reader.policy();
  if (!policy_doc.ok()) return policy_doc.error();
  auto policy = parse_policy(*policy_doc);
  if (!policy.ok()) return policy.error();
  s.policy = std::move(policy).value();
  return s;
}

Result<Prepared> prepare_candidate(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                   const std::string& command, const std::string& instance, const json& body,
                                   std::int64_t now_ms) {
  const Vault* vault = snap.vault();
  PlanContext ctx{to_hex(key.public_key), instance, vault};
  // Old formats are read and migrated, never written.
  if (snap.commit && snap.format != 2 && !body.contains("migrate"))
    return make_error(Errc::unknown_format, "the store is in format " + std::to_string(snap.format) +
                                                "; run `git-locks migrate` to rewrite it as format 2");
  if (!snap.commit && body.contains("state_format"))
    return make_error(Errc::usage, "new stores are always created in the current format");
  GITLOCKS_TRY(outcome, plan(store, snap.state, ctx, body, now_ms));
  Prepared p;
  GITLOCKS_TRY(pins, result_pins(store, outcome.result_state));
  p.pins = pins;
  const std::int64_t t = std::max(now_ms, snap.last_time.value_or(0));
  if (!p.pins && !outcome.interval.contains(t)) return guard_window_error(outcome, t);
  // Under guard time the notary gives T; a TTL out of the policy's bounds at
  // proposal time is refused here, naming the bound, instead of by the
  // notary as a T outside the interval.
  if (p.pins)
    if (auto e = ttl_bound_error(outcome, now_ms)) return *e;
  PacketHeader h;
  h.actor = ctx.actor;
  h.command = command;
  h.instance = instance;
  h.source = snap.state;
  if (snap.commit) {
    h.store = snap.store_id;
    h.policy_hash = snap.policy_hash;
  } else {
    GITLOCKS_TRY(created, creation_of(outcome.body));
    if (!created) return make_error(Errc::usage, "the store does not exist yet: its first transition creates it");
    h.store = created->policy.store;
    h.policy_hash = created->policy_hash;
  }
  h.epoch = snap.epoch();
  PlanOutcome sent = outcome;
  if (snap.is_private() && outcome.body.contains("ops")) {
    // Business fields never leave the members: the packet carries the body
    // sealed under the current epoch key, bound to this operation.
    const EpochKey* k = vault ? vault->key(snap.epoch()) : nullptr;
    if (!k) return make_error(Errc::not_member, "no key for the store's current epoch");
    GITLOCKS_TRY(sealed, seal_document(outcome.body, *k, snap.epoch(), h.store, sealed_body_location(instance)));
    sent.body = json::parse(sealed);
  }
  p.packet = make_packet(h, sent, p.pins ? std::nullopt : std::optional<std::int64_t>(t));
  GITLOCKS_TRY(stored, seal_packet(p.packet, key));
  p.packet_stored = stored;
  p.admitted_at_ms = t;
  if (p.pins) {
    GITLOCKS_TRY(request, make_admission_request(p.packet, stored, key));
    p.request_stored = request;
  }
  p.outcome = std::move(outcome);
  return p;
}

Result<Prepared> reopen_prepared(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                 const std::string& packet_stored) {
  auto opened = open_packet(packet_stored);
  if (!opened.ok()) return make_error(Errc::store_read, "saved packet: " + opened.error().message);
  const PacketHeader& h = opened->fields.header;
  if (h.actor != to_hex(key.public_key))
    return make_error(Errc::usage, "the saved packet is signed by another key (" + h.actor + ")");
  if (!snap.commit || h.source != snap.state || h.store != snap.store_id || h.policy_hash != snap.policy_hash ||
      h.epoch != snap.epoch())
    return make_error(Errc::stale_generation, "the source changed: the saved packet was built on state " + h.source +
                                                  ", refs/locks/state is at state " +
                                                  (snap.commit ? snap.state.hex() : std::string("(none)")))
        .because(reason::source_changed);
  const Vault* vault = snap.vault();
  json body = opened->body;
  if (body.contains("sealed")) {
    const EpochKey* k = vault ? vault->key(snap.epoch()) : nullptr;
    if (!k) return make_error(Errc::not_member, "no key for the store's current epoch");
    GITLOCKS_TRY(plain, open_document(body, *k, snap.store_id, sealed_body_location(h.instance)));
    body = std::move(plain);
  }
  PlanContext ctx{to_hex(key.public_key), h.instance, vault};
  GITLOCKS_TRY(outcome, plan(store, snap.state, ctx, body));
  const PacketFields& f = opened->fields;
  if (outcome.result_state != f.result || action_name(outcome.action) != f.action)
    return make_error(Errc::store_read, "the saved packet does not re-execute on its source: it says " + f.action +
                                            " -> " + f.result + ", re-planning gives " + action_name(outcome.action) +
                                            " -> " + outcome.result_state);
  Prepared p;
  GITLOCKS_TRY(pins, result_pins(store, outcome.result_state));
  p.pins = pins;
  p.packet = opened->document();
  p.packet_stored = packet_stored;
  GITLOCKS_TRY(recorded,
               recorded_admission_time(std::nullopt, f.claimed_at_ms));  // no attestation yet: the packet's clock
  if (recorded) p.admitted_at_ms = recorded->ms;
  if (p.pins) {
    GITLOCKS_TRY(request, make_admission_request(p.packet, packet_stored, key));
    p.request_stored = request;
  } else if (!f.claimed_at_ms) {
    return make_error(Errc::store_read, "the saved packet carries no admission time and the store has no guard time");
  }
  p.outcome = std::move(outcome);
  return p;
}

Result<Candidate> complete_candidate(ObjectStore& store, const Snapshot& snap, Prepared prepared,
                                     const std::optional<std::string>& attestation_stored, bool allow_test_clock,
                                     CommitOn on) {
  if (on == CommitOn::cut && (!snap.commit || checkpoint_of(prepared.outcome.body) != snap.commit))
    return make_error(Errc::usage, "only a checkpoint of the tip can start a new chain (a cut)");
  Candidate c;
  c.packet = std::move(prepared.packet);
  c.packet_stored = std::move(prepared.packet_stored);
  c.admitted_at_ms = prepared.admitted_at_ms;
  if (prepared.pins) {
    if (!attestation_stored)
      return make_error(Errc::usage, "this store requires trusted admission time: configure a notary");
    auto att = open_attestation(*attestation_stored);
    if (!att.ok())
      return make_error(Errc::store_write, "notary returned an unusable attestation: " + att.error().message);
    GITLOCKS_TRY(fields, packet_fields(c.packet));
    auto checked = check_attestation(*att, fields, c.packet_stored, *prepared.pins, allow_test_clock);
    if (!checked.ok()) return make_error(Errc::store_write, "notary attestation rejected: " + checked.error().message);
    c.admitted_at_ms = att->admitted_at_ms;
    if (snap.last_time && c.admitted_at_ms < *snap.last_time)
      return make_error(Errc::store_write, "notary admitted at " + std::to_string(c.admitted_at_ms) +
                                               ", before the store's last admission " +
                                               std::to_string(*snap.last_time));
    c.attestation_stored = attestation_stored;
  } else if (attestation_stored) {
    return make_error(Errc::usage, "an attestation for a store without guard time");
  }
  GITLOCKS_TRY(commit,
               write_transition_commit(store, on == CommitOn::cut ? std::nullopt : snap.commit,
                                       prepared.outcome.result_state, c.packet_stored, describe_transition(c.packet),
                                       c.admitted_at_ms / 1000, c.attestation_stored));
  c.commit = commit;
  c.outcome = std::move(prepared.outcome);
  return c;
}

Result<Candidate> build_candidate(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                  const std::string& command, const std::string& instance, const json& body,
                                  std::int64_t now_ms, const AdmitFn& admit, bool allow_test_clock) {
  GITLOCKS_TRY(prepared, prepare_candidate(store, snap, key, command, instance, body, now_ms));
  std::optional<std::string> attestation;
  if (prepared.pins) {
    if (!admit) return make_error(Errc::usage, "this store requires trusted admission time: configure a notary");
    GITLOCKS_TRY(att, admit(*prepared.request_stored));
    attestation = std::move(att);
  }
  return complete_candidate(store, snap, std::move(prepared), attestation, allow_test_clock);
}

std::string sealed_body_location(const std::string& instance) { return "txn/body/" + instance; }

std::string describe_transition(const json& packet) {
  // `log` describes unverified commits too: any member may be missing or
  // of another type.
  std::string out = "git-locks: " + string_member(packet, "action", "?");
  static const json kNoBody = json::object();
  auto found = packet.is_object() ? packet.find("body") : packet.end();
  const json& body = packet.is_object() && found != packet.end() && found->is_object() ? *found : kNoBody;
  if (body.contains("sealed")) return out + "\n";
  if (body.contains("ops") && body["ops"].is_array()) {
    std::size_t shown = 0;
    for (const auto& op : body["ops"]) {
      if (!op.is_object()) continue;
      std::string what;
      if (op.contains("path") && op["path"].is_string()) what = op["path"].get<std::string>();
      else if (op.contains("sem") && op["sem"].is_string()) what = "sem " + op["sem"].get<std::string>();
      else if (op.contains("leases") && op["leases"].is_array()) what = std::to_string(op["leases"].size()) + " leases";
      else if (member_is(op, "op", "ticket") && op.contains("wants") && op["wants"].is_array())
        for (const auto& w : op["wants"]) {
          if (!w.is_object()) continue;
          const std::string one = w.contains("path") && w["path"].is_string() ? w["path"].get<std::string>()
                                  : w.contains("sem") && w["sem"].is_string() ? "sem " + w["sem"].get<std::string>()
                                                                              : "";
          if (!one.empty()) what += (what.empty() ? "for " : ", ") + one;
        }
      if (what.empty()) continue;
      if (member_is(op, "op", "force-release") && op.contains("reason") && op["reason"].is_string())
        what += " (force-released: " + op["reason"].get<std::string>() + ")";
      if (member_is(op, "op", "handoff") && op.contains("to_name") && op["to_name"].is_string())
        what += " (handed to " + op["to_name"].get<std::string>() + ")";
      if (shown++ == 3) {
        out += " ...";
        break;
      }
      out += " " + what;
    }
  }
  if (body.contains("name") && body["name"].is_string() && !body["name"].get<std::string>().empty())
    out += " (" + body["name"].get<std::string>() + ")";
  return out + "\n";
}

}  // namespace gitlocks
