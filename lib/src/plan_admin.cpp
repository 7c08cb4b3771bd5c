// Owner-signed policy changes ({"admin":{"op":...}}): guard-time-enable and
// guard-time-set (the notary pins), policy-set, and for PRIVATE stores the
// membership ops member-add and member-remove (each leaves a pending keyring
// transition) and rekey (completes it).
#include <algorithm>

#include "gitlocks/attest.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/vault.hpp"
#include "plan_internal.h"
#include "tree_edit.h"

namespace gitlocks::detail {
namespace {

// The state with policy.json replaced by `next` (checked as a policy first):
// the outcome of a time-free admin transition `action`.
Result<PlanOutcome> with_new_policy(ObjectStore& store, StateReader& reader, const json& body, const json& next,
                                    const std::string& action) {
  GITLOCKS_TRY(parsed, parse_policy(next));
  (void)parsed;
  GITLOCKS_TRY(bytes, canon_dump(next));
  GITLOCKS_TRY(blob, store.write_blob(bytes));
  GITLOCKS_TRY(root, detail::tree_apply(store, reader.root(), {{{"policy.json"}, blob}}));
  return time_free_outcome(body, action, *root, 0);
}

// The notary pins a guard-time request names, with the owner's consent to
// disclose each transition's guard window to that notary.
Result<Pins> requested_pins(const json& doc) {
  GITLOCKS_TRY(disclosure, get_string(doc, "disclosure"));
  if (disclosure != kDisclosureGuardWindow)
    return make_error(Errc::usage, "guard time needs explicit consent: --disclosure GUARD_WINDOW");
  GITLOCKS_TRY(audience, get_string(doc, "audience"));
  GITLOCKS_TRY(key, get_string(doc, "service_key"));
  if (audience.empty()) return make_error(Errc::usage, "the audience must not be empty");
  GITLOCKS_TRY(pk, public_key_from_hex(key));
  (void)pk;
  return Pins{audience, key};
}

// PRIVATE membership: add/remove start a keyring transition to epoch E+1
// (the new epoch key sealed to the new member list); rekey completes it by
// re-sealing every record, and the families, under the new key.
Result<PlanOutcome> plan_membership(ObjectStore& store, StateReader& reader, const json& policy_doc,
                                    const Policy& policy, const PlanContext& ctx, const json& body,
                                    const std::string& op) {
  const json& a = body["admin"];
  if (!policy.is_private) return make_error(Errc::usage, "membership applies to PRIVATE stores only");
  const std::string next_epoch = std::to_string(policy.epoch + 1);
  json next = policy_doc;
  if (op == "rekey") {
    GITLOCKS_CHECK(check_keys(a, {"op", "expected_policy_hash"}, "admin op"));
    if (!policy.pending) return make_error(Errc::usage, "no keyring transition is pending");
    if (!ctx.vault) return make_error(Errc::not_member, "rekey needs the owner's keys");
    const Vault& vault = *ctx.vault;
    auto old_codec = make_private_codec(vault, policy.store, policy.epoch);
    auto new_codec = make_private_codec(vault, policy.store, policy.epoch + 1);
    if (!old_codec || !new_codec) return make_error(Errc::not_member, "rekey needs the keys of both epochs");
    reader.set_codec(old_codec.get());
    std::vector<json> records;
    GITLOCKS_CHECK(reader.for_each_record([&](const json& r) {
      records.push_back(r);
      return true;
    }));
    const json& pend = policy_doc["pending"];
    next["epoch"] = policy.epoch + 1;
    next["members"] = pend["members"];
    next["keyring"][next_epoch] = pend["keyring"][next_epoch];
    next.erase("pending");
    if (policy_doc.contains("families")) {
      auto plain =
          open_document(policy_doc["families"], *vault.key(policy.epoch), policy.store, "policy.json#families");
      if (!plain.ok()) return plain.error();
      GITLOCKS_TRY(resealed, seal_document(*plain, *vault.key(policy.epoch + 1), policy.epoch + 1, policy.store,
                                           "policy.json#families"));
      next["families"] = json::parse(resealed);
    }
    GITLOCKS_TRY(root, write_state(store, next, records, 2, new_codec.get()));
    return time_free_outcome(body, "rekey", root, records.size());
  }
  GITLOCKS_CHECK(check_keys(a, {"op", "member", "expected_policy_hash", "keyring"}, "admin op"));
  if (policy.pending)
    return make_error(Errc::usage, "a keyring transition is already pending; run `git-locks member rekey`");
  GITLOCKS_TRY(member, get_string(a, "member"));
  GITLOCKS_TRY(pk, public_key_from_hex(member));
  (void)pk;
  GITLOCKS_TRY(members, next_members(policy_doc["members"].get<std::vector<std::string>>(), member, op == "member-add",
                                     policy.owner));
  if (!a.contains("keyring")) return make_error(Errc::bad_json, "membership change needs the new epoch's keyring");
  next["pending"] = {{"epoch", policy.epoch + 1}, {"members", members}, {"keyring", a["keyring"]}};
  return with_new_policy(store, reader, body, next, op);
}

// The owner's policy-set: a whole new policy document in which only the
// settable fields (kSettablePolicyFields) may differ from the current one.
//   {"admin":{"op":"policy-set","expected_policy_hash":HEX,"policy":{...}}}
// New families may not put leases of the state in conflict: every lease
// the records still hold counts (expired or not: the check cannot depend
// on T, which a time-free transition does not bound), so sweep or release
// them first. The reference verifier's exclusion check at T is then implied.
Result<PlanOutcome> plan_policy_set(ObjectStore& store, StateReader& reader, const json& policy_doc,
                                    const Policy& policy, const json& body) {
  const json& a = body["admin"];
  GITLOCKS_CHECK(check_keys(a, {"op", "expected_policy_hash", "policy"}, "admin op"));
  if (policy.is_private)
    return make_error(Errc::usage,
                      "policy set applies to public stores; a PRIVATE store's policy changes only by membership "
                      "and guard time");
  auto it = a.find("policy");
  if (it == a.end() || !it->is_object()) return make_error(Errc::bad_json, "policy-set needs the new 'policy' object");
  const json& next = *it;
  GITLOCKS_TRY(parsed, parse_policy(next));
  for (const json* doc : {&next, &policy_doc})
    for (const auto& [k, v] : doc->items()) {
      if (is_settable_policy_field(k)) continue;
      const json* other = doc == &next ? &policy_doc : &next;
      if (!other->contains(k) || (*other)[k] != v)
        return make_error(Errc::usage, "policy set cannot change '" + k +
                                           "': only min_ttl_ms, max_ttl_ms, families, require_claim, enforce, "
                                           "admins and bots change this way");
    }
  GITLOCKS_TRY(bytes, canon_dump(next));
  GITLOCKS_TRY(current_bytes, reader.policy_bytes());
  if (bytes == current_bytes) return make_error(Errc::usage, "the new policy is the current one: nothing to change");
  if (next.value("families", json::array()) != policy_doc.value("families", json::array())) {
    std::vector<Lease> leases;
    GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& r) {
      if (r.resource.kind == RecordKind::path) leases.insert(leases.end(), r.leases.begin(), r.leases.end());
      return true;
    }));
    for (const auto& f : parsed.families) {
      std::vector<const Lease*> on;
      for (const auto& l : leases) {
        auto lp = parse_repo_path(l.path, policy.path_case());
        if (!lp.ok()) return lp.error();
        for (const auto& m : f.members)
          if (paths_overlap(*lp, m)) {
            on.push_back(&l);
            break;
          }
      }
      for (const Lease* l : on) {
        const bool clash = f.exclusive ? l->holder != on.front()->holder : l->exclusive();
        if (clash)
          return Error(Errc::family_policy,
                       "family '" + f.name + "' would be " + (f.exclusive ? "exclusive" : "shared") +
                           " while the state holds lease " + l->id + " on '" + l->path + "' by " + l->label() +
                           (f.exclusive ? " and another holder's" : " in exclusive mode") +
                           ": release it, or sweep it once expired, before changing the family",
                       {{"lease", l->id}, {"holder", l->holder}, {"holder_name", l->name}, {"family", f.name}});
      }
    }
  }
  GITLOCKS_TRY(blob, store.write_blob(bytes));
  GITLOCKS_TRY(root, detail::tree_apply(store, reader.root(), {{{"policy.json"}, blob}}));
  return time_free_outcome(body, "policy-set", *root, 0);
}

// The owner's replacement of the notary pins, or guard time off (null):
//   {"admin":{"op":"guard-time-set","expected_policy_hash":HEX,
//             "guard_time":{"audience":A,"service_key":HEX,"disclosure":"GUARD_WINDOW"}|null}}
// Seed 002's "explicit supported migration before any signer change". Like
// the activation, it is judged by the time source of its result: the new
// notary attests it, and a switch-off carries the owner's clock reading, so
// a lost notary key stops no store. Commits before it keep the pins they
// were attested under.
Result<PlanOutcome> plan_guard_time_set(ObjectStore& store, StateReader& reader, const json& policy_doc,
                                        const Policy& policy, const json& body) {
  const json& a = body["admin"];
  GITLOCKS_CHECK(check_keys(a, {"op", "expected_policy_hash", "guard_time"}, "admin op"));
  if (!policy.guard_time)
    return make_error(Errc::usage, "guard time is not enabled: turn it on with `git-locks guard-time enable`");
  if (policy.pending)
    return make_error(Errc::usage,
                      "a keyring transition is pending: change guard time once it is complete (run `git-locks "
                      "member rekey` first)");
  auto it = a.find("guard_time");
  if (it == a.end())
    return make_error(Errc::bad_json, "guard-time-set needs 'guard_time': the new pins, or null to turn it off");
  json next = policy_doc;
  if (it->is_null()) {
    next.erase("guard_time");
  } else {
    if (!it->is_object()) return make_error(Errc::bad_json, "guard-time-set: 'guard_time' must be an object or null");
    GITLOCKS_CHECK(check_keys(*it, {"audience", "service_key", "disclosure"}, "guard_time"));
    GITLOCKS_TRY(pins, requested_pins(*it));
    if (*policy.guard_time == pins)
      return make_error(Errc::usage, "guard time already uses these pins: nothing to change");
    next["guard_time"] = guard_time_doc(pins);
  }
  return with_new_policy(store, reader, body, next, "guard-time-set");
}

}  // namespace

// Owner-signed policy changes: the owner and the expected policy hash are
// checked here for every op. guard-time-enable pins a notary:
//   {"admin":{"op":"guard-time-enable","audience":A,"service_key":HEX,
//             "disclosure":"GUARD_WINDOW","expected_policy_hash":HEX}}
Result<PlanOutcome> plan_admin(ObjectStore& store, StateReader& reader, const json& policy_doc, const Policy& policy,
                               const PlanContext& ctx, const json& body) {
  GITLOCKS_CHECK(check_keys(body, {"admin"}, "admin body"));
  const json& a = body["admin"];
  GITLOCKS_TRY(op, get_string(a, "op"));
  if (ctx.actor != policy.owner)
    return make_error(Errc::not_holder,
                      "only the store's owner (" + policy.owner.substr(0, 12) + ") may change its policy")
        .because(reason::not_owner);
  GITLOCKS_TRY(expected, get_string(a, "expected_policy_hash"));
  GITLOCKS_TRY(current_bytes, reader.policy_bytes());
  if (expected != sha256_hex(current_bytes))
    return make_error(Errc::stale_generation,
                      "the policy changed: expected policy hash " + expected + ", current " + sha256_hex(current_bytes))
        .because(reason::policy_changed);
  if (op == "member-add" || op == "member-remove" || op == "rekey")
    return plan_membership(store, reader, policy_doc, policy, ctx, body, op);
  if (op == "policy-set") return plan_policy_set(store, reader, policy_doc, policy, body);
  if (op == "guard-time-set") return plan_guard_time_set(store, reader, policy_doc, policy, body);
  if (op != "guard-time-enable") return make_error(Errc::bad_json, "unknown admin op '" + op + "'");
  GITLOCKS_CHECK(check_keys(a, {"op", "audience", "service_key", "disclosure", "expected_policy_hash"}, "admin op"));
  if (policy.pending)
    return make_error(Errc::usage,
                      "a keyring transition is pending: guard time needs an active keyring without a "
                      "pending transition (run `git-locks member rekey` first)");
  GITLOCKS_TRY(pins, requested_pins(a));
  // The same pins again is no request at all: the field says so (a host
  // reports ALREADY_ENABLED and writes nothing); other pins are a change of
  // notary, which is its own transition (guard-time-set).
  if (policy.guard_time && *policy.guard_time == pins)
    return make_error(Errc::usage, "ALREADY_ENABLED: guard time is already enabled with these pins")
        .because(reason::already_enabled);
  if (policy.guard_time)
    return make_error(Errc::usage,
                      "guard time is enabled with other pins; replace them with `git-locks guard-time migrate` "
                      "(an owner-signed guard-time-set)");
  json next = policy_doc;
  next["guard_time"] = guard_time_doc(pins);
  return with_new_policy(store, reader, body, next, "guard-time-enable");
}

}  // namespace gitlocks::detail
