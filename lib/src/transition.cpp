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
  auto doc = canon_parse(tc->packet_stored, CanonMode::strict);
  if (!doc.ok() || !doc->contains("packet") || !(*doc)["packet"].is_object())
    return make_error(Errc::store_read, "tip packet of " + *tip + " is unreadable");
  const json& p = (*doc)["packet"];
  if (p.contains("store") && p["store"].is_string()) s.store_id = p["store"].get<std::string>();
  if (p.contains("claimed_at_ms") && p["claimed_at_ms"].is_number_integer())
    s.last_time = p["claimed_at_ms"].get<std::int64_t>();
  if (tc->attestation_stored) {
    auto att = open_attestation(*tc->attestation_stored);
    if (!att.ok()) return make_error(Errc::store_read, "tip attestation: " + att.error().message);
    s.last_time = (*att)["admitted_at_ms"].get<std::int64_t>();
  }
  auto policy_doc = reader.policy();
  if (!policy_doc.ok()) return policy_doc.error();
  auto policy = parse_policy(*policy_doc);
  if (!policy.ok()) return policy.error();
  s.guard_time = policy->guard_time;
  s.is_private = policy->is_private;
  s.epoch = policy->epoch;
  return s;
}

Result<Candidate> build_candidate(ObjectStore& store, const Snapshot& snap, const KeyPair& key,
                                  const std::string& command, const std::string& instance, const json& body,
                                  std::int64_t now_ms, const AdmitFn& admit, const Vault* vault,
                                  bool allow_test_clock) {
  PlanContext ctx{to_hex(key.public_key), instance, vault};
  // Old formats are read and migrated, never written.
  if (snap.commit && snap.format != 2 && !body.contains("migrate"))
    return make_error(Errc::unknown_format, "the store is in format " + std::to_string(snap.format) +
                                                "; run `git-locks migrate` to rewrite it as format 2");
  if (!snap.commit && body.contains("state_format"))
    return make_error(Errc::usage, "new stores are always created in the current format");
  GITLOCKS_TRY(outcome, plan(store, snap.state, ctx, body, now_ms));
  // Guard time applies from the activation on: to the transition that
  // installs the pins as well.
  std::optional<Pins> pins = snap.guard_time;
  if (!pins && outcome.action == "guard-time-enable") {
    const json& a = outcome.body["admin"];
    pins = Pins{a["audience"].get<std::string>(), a["service_key"].get<std::string>()};
  }
  if (pins && !admit) return make_error(Errc::usage, "this store requires trusted admission time: configure a notary");
  const std::int64_t t = std::max(now_ms, snap.last_time.value_or(0));
  if (!pins && !outcome.interval.contains(t))
    return make_error(Errc::guard_window, "admission time " + std::to_string(t) + " is outside the guard interval [" +
                                              std::to_string(outcome.interval.lo) + ", " +
                                              std::to_string(outcome.interval.hi) + "]");
  PacketHeader h;
  h.actor = ctx.actor;
  h.command = command;
  h.instance = instance;
  h.source = snap.state;
  if (snap.commit) {
    h.store = snap.store_id;
    h.policy_hash = snap.policy_hash;
  } else {
    const json& pol = outcome.body["init"];
    h.store = pol["store"].get<std::string>();
    GITLOCKS_TRY(pb, canon_dump(pol));
    h.policy_hash = sha256_hex(pb);
  }
  h.epoch = snap.epoch;
  Candidate c;
  PlanOutcome sent = outcome;
  if (snap.is_private && outcome.body.contains("ops")) {
    // Business fields never leave the members: the packet carries the body
    // sealed under the current epoch key, bound to this operation.
    const EpochKey* k = vault ? vault->key(snap.epoch) : nullptr;
    if (!k) return make_error(Errc::not_member, "no key for the store's current epoch");
    GITLOCKS_TRY(sealed, seal_document(outcome.body, *k, snap.epoch, h.store, sealed_body_location(instance)));
    sent.body = json::parse(sealed);
  }
  c.packet = make_packet(h, sent, pins ? std::nullopt : std::optional<std::int64_t>(t));
  GITLOCKS_TRY(stored, seal_packet(c.packet, key));
  c.packet_stored = stored;
  c.admitted_at_ms = t;
  if (pins) {
    GITLOCKS_TRY(request, make_admission_request(c.packet, stored, key));
    GITLOCKS_TRY(att_stored, admit(request));
    auto att = open_attestation(att_stored);
    if (!att.ok()) return make_error(Errc::store_write, "notary returned an unusable attestation: " + att.error().message);
    auto checked = check_attestation(*att, c.packet, stored, *pins, allow_test_clock);
    if (!checked.ok()) return make_error(Errc::store_write, "notary attestation rejected: " + checked.error().message);
    c.admitted_at_ms = (*att)["admitted_at_ms"].get<std::int64_t>();
    if (snap.last_time && c.admitted_at_ms < *snap.last_time)
      return make_error(Errc::store_write, "notary admitted at " + std::to_string(c.admitted_at_ms) +
                                               ", before the store's last admission " + std::to_string(*snap.last_time));
    c.attestation_stored = att_stored;
  }
  GITLOCKS_TRY(commit, write_transition_commit(store, snap.commit, outcome.result_state, stored,
                                               describe_transition(c.packet), c.admitted_at_ms / 1000,
                                               c.attestation_stored));
  c.commit = commit;
  c.outcome = std::move(outcome);
  return c;
}

std::string sealed_body_location(const std::string& instance) { return "txn/body/" + instance; }

std::string describe_transition(const json& packet) {
  std::string action = packet.value("action", "?");
  std::string out = "git-locks: " + action;
  const json& body = packet["body"];
  if (body.contains("sealed")) return out + "\n";
  if (body.contains("ops") && body["ops"].is_array()) {
    std::size_t shown = 0;
    for (const auto& op : body["ops"]) {
      if (!op.is_object()) continue;
      std::string what;
      if (op.contains("path") && op["path"].is_string()) what = op["path"].get<std::string>();
      else if (op.contains("sem") && op["sem"].is_string()) what = "sem " + op["sem"].get<std::string>();
      else if (op.contains("leases") && op["leases"].is_array()) what = std::to_string(op["leases"].size()) + " leases";
      if (what.empty()) continue;
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
