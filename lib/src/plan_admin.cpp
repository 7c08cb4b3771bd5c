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

// The admin ops.
enum class AdminKind {
  guard_time_enable,
  guard_time_set,
  policy_set,
  member_add,
  member_remove,
  rekey,
  checkpoint,
  unknown
};

// A notary-pins request: {"audience","service_key","disclosure"}.
struct PinsRequest {
  Result<std::string> disclosure;
  Result<std::string> audience;
  Result<std::string> service_key;
};

PinsRequest read_pins_request(const json& doc) {
  return {get_string(doc, "disclosure"), get_string(doc, "audience"), get_string(doc, "service_key")};
}

// guard-time-set's "guard_time": the new pins, null (off), or a fault.
enum class GuardTimeField { absent, null, not_object, object };

// An admin body, read once here: its op and every field the op names. A
// field's fault (missing, wrong type) is kept and raised at the step that
// has always checked it, so a body with several faults is refused for the
// same one as before; the checks below read no field by name.
struct AdminOp {
  Result<std::string> op;
  AdminKind kind = AdminKind::unknown;
  Result<std::string> expected_policy_hash;
  Status keys;                // the op's own member set (check_keys)
  PinsRequest pins;           // guard-time-enable (the admin object), guard-time-set (guard_time)
  GuardTimeField guard_time;  // guard-time-set
  Status guard_time_keys;
  const json* policy;          // policy-set: the new policy object (null: absent or not an object)
  Result<std::string> member;  // member-add, member-remove
  const json* keyring;         // member-add, member-remove: the new epoch key sealed to each member
  Result<std::string> prev;    // checkpoint: the commit it follows
};

AdminKind admin_kind(const std::string& op) {
  if (op == "guard-time-enable") return AdminKind::guard_time_enable;
  if (op == "guard-time-set") return AdminKind::guard_time_set;
  if (op == "policy-set") return AdminKind::policy_set;
  if (op == "member-add") return AdminKind::member_add;
  if (op == "member-remove") return AdminKind::member_remove;
  if (op == "rekey") return AdminKind::rekey;
  if (op == "checkpoint") return AdminKind::checkpoint;
  return AdminKind::unknown;
}

AdminOp read_admin(const json& a) {
  static const json kNull;
  AdminOp out{get_string(a, "op"),
              AdminKind::unknown,
              get_string(a, "expected_policy_hash"),
              Ok{},
              read_pins_request(kNull),
              GuardTimeField::absent,
              Ok{},
              nullptr,
              get_string(a, "member"),
              nullptr,
              get_string(a, "prev")};
  if (out.op.ok()) out.kind = admin_kind(*out.op);
  switch (out.kind) {
    case AdminKind::guard_time_enable:
      out.keys = check_keys(a, {"op", "audience", "service_key", "disclosure", "expected_policy_hash"}, "admin op");
      out.pins = read_pins_request(a);
      break;
    case AdminKind::guard_time_set: {
      out.keys = check_keys(a, {"op", "expected_policy_hash", "guard_time"}, "admin op");
      auto it = a.is_object() ? a.find("guard_time") : a.end();
      if (it == a.end()) {
        out.guard_time = GuardTimeField::absent;
      } else if (it->is_null()) {
        out.guard_time = GuardTimeField::null;
      } else if (!it->is_object()) {
        out.guard_time = GuardTimeField::not_object;
      } else {
        out.guard_time = GuardTimeField::object;
        out.guard_time_keys = check_keys(*it, {"audience", "service_key", "disclosure"}, "guard_time");
        out.pins = read_pins_request(*it);
      }
      break;
    }
    case AdminKind::policy_set: {
      out.keys = check_keys(a, {"op", "expected_policy_hash", "policy"}, "admin op");
      auto it = a.is_object() ? a.find("policy") : a.end();
      if (it != a.end() && it->is_object()) out.policy = &*it;
      break;
    }
    case AdminKind::member_add:
    case AdminKind::member_remove: {
      out.keys = check_keys(a, {"op", "member", "expected_policy_hash", "keyring"}, "admin op");
      auto it = a.is_object() ? a.find("keyring") : a.end();
      if (it != a.end()) out.keyring = &*it;
      break;
    }
    case AdminKind::rekey:
      out.keys = check_keys(a, {"op", "expected_policy_hash"}, "admin op");
      break;
    case AdminKind::checkpoint:
      out.keys = check_keys(a, {"op", "expected_policy_hash", "prev"}, "admin op");
      break;
    case AdminKind::unknown:
      break;
  }
  return out;
}

// The state with policy.json replaced by the document of `next` (checked as
// a policy first): the outcome of a time-free admin transition `action`.
Result<PlanOutcome> with_new_policy(ObjectStore& store, StateReader& reader, const json& body, const Policy& next,
                                    Action action) {
  const json doc = policy_document(next);
  GITLOCKS_TRY(parsed, parse_policy(doc));
  (void)parsed;
  GITLOCKS_TRY(bytes, canon_dump(doc));
  GITLOCKS_TRY(blob, store.write_blob(bytes));
  GITLOCKS_TRY(root, detail::tree_apply(store, reader.root(), {{{"policy.json"}, blob}}));
  return time_free_outcome(body, action, *root, 0);
}

// The notary pins a guard-time request names, with the owner's consent to
// disclose each transition's guard window to that notary.
Result<Pins> requested_pins(const PinsRequest& r) {
  GITLOCKS_TRY(disclosure, r.disclosure);
  if (disclosure != kDisclosureGuardWindow)
    return make_error(Errc::usage, "guard time needs explicit consent: --disclosure GUARD_WINDOW");
  GITLOCKS_TRY(audience, r.audience);
  GITLOCKS_TRY(key, r.service_key);
  if (audience.empty()) return make_error(Errc::usage, "the audience must not be empty");
  GITLOCKS_TRY(pk, public_key_from_hex(key));
  (void)pk;
  return Pins{audience, key};
}

// PRIVATE membership: add/remove start a keyring transition to epoch E+1
// (the new epoch key sealed to the new member list); rekey completes it by
// re-sealing every record, and the families, under the new key.
Result<PlanOutcome> plan_membership(ObjectStore& store, StateReader& reader, const Policy& policy,
                                    const PlanContext& ctx, const json& body, const AdminOp& a) {
  if (!policy.is_private) return make_error(Errc::usage, "membership applies to PRIVATE stores only");
  if (a.kind == AdminKind::rekey) {
    GITLOCKS_CHECK(a.keys);
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
    GITLOCKS_TRY(families, resealed_families(policy, *vault.key(policy.epoch), *vault.key(policy.epoch + 1)));
    GITLOCKS_TRY(root,
                 write_state(store, policy_document(policy_rekeyed(policy, families)), records, 2, new_codec.get()));
    return time_free_outcome(body, Action::rekey, root, records.size());
  }
  GITLOCKS_CHECK(a.keys);
  if (policy.pending)
    return make_error(Errc::usage, "a keyring transition is already pending; run `git-locks member rekey`");
  GITLOCKS_TRY(member, a.member);
  GITLOCKS_TRY(pk, public_key_from_hex(member));
  (void)pk;
  GITLOCKS_TRY(members, next_members(policy.members, member, a.kind == AdminKind::member_add, policy.owner));
  if (!a.keyring) return make_error(Errc::bad_json, "membership change needs the new epoch's keyring");
  GITLOCKS_TRY(keyring, parse_pending_keyring(*a.keyring));
  Policy next = policy;
  next.pending = true;
  next.pending_members = std::move(members);
  next.pending_keyring = std::move(keyring);
  return with_new_policy(store, reader, body, next,
                         a.kind == AdminKind::member_add ? Action::member_add : Action::member_remove);
}

// The owner's checkpoint: the state as it is, vouched for at the commit the
// body names (replay checks that `prev` is the commit's parent: the planner
// sees states, not commits).
//   {"admin":{"op":"checkpoint","expected_policy_hash":HEX,"prev":COMMIT}}
Result<PlanOutcome> plan_checkpoint(StateReader& reader, const json& body, const AdminOp& a) {
  GITLOCKS_CHECK(a.keys);
  GITLOCKS_TRY(prev, a.prev);
  if (!Oid::from_hex(prev))
    return make_error(Errc::bad_json, "checkpoint: prev must be a commit id (40 lowercase hex digits)");
  return time_free_outcome(body, Action::checkpoint, reader.root(), 0);
}

// The owner's policy-set: a whole new policy document in which only the
// settable fields (kSettablePolicyFields) may differ from the current one.
//   {"admin":{"op":"policy-set","expected_policy_hash":HEX,"policy":{...}}}
// New families may not put leases of the state in conflict: every lease
// the records still hold counts (expired or not: the check cannot depend
// on T, which a time-free transition does not bound), so sweep or release
// them first. The reference verifier's exclusion check at T is then implied.
Result<PlanOutcome> plan_policy_set(ObjectStore& store, StateReader& reader, const Policy& policy, const json& body,
                                    const AdminOp& a) {
  GITLOCKS_CHECK(a.keys);
  if (policy.is_private)
    return make_error(Errc::usage,
                      "policy set applies to public stores; a PRIVATE store's policy changes only by membership "
                      "and guard time");
  if (!a.policy) return make_error(Errc::bad_json, "policy-set needs the new 'policy' object");
  const json& next = *a.policy;
  GITLOCKS_TRY(parsed, parse_policy(next));
  if (auto field = unsettable_difference(parsed, policy))
    return make_error(Errc::usage, "policy set cannot change '" + *field +
                                       "': only min_ttl_ms, max_ttl_ms, families, require_claim, enforce, "
                                       "admins, bots and checkpoint change this way");
  GITLOCKS_TRY(bytes, canon_dump(next));
  GITLOCKS_TRY(current_bytes, reader.policy_bytes());
  if (bytes == current_bytes) return make_error(Errc::usage, "the new policy is the current one: nothing to change");
  if (parsed.families != policy.families) {
    std::vector<Lease> leases;
    GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& r) {
      // Intents lock nothing: a family never clashes with one.
      if (r.resource.kind == RecordKind::path)
        for (const Lease& l : r.leases)
          if (!l.intent()) leases.push_back(l);
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
  return time_free_outcome(body, Action::policy_set, *root, 0);
}

// The owner's replacement of the notary pins, or guard time off (null):
//   {"admin":{"op":"guard-time-set","expected_policy_hash":HEX,
//             "guard_time":{"audience":A,"service_key":HEX,"disclosure":"GUARD_WINDOW"}|null}}
// Seed 002's "explicit supported migration before any signer change". Like
// the activation, it is judged by the time source of its result: the new
// notary attests it, and a switch-off carries the owner's clock reading, so
// a lost notary key stops no store. Commits before it keep the pins they
// were attested under.
Result<PlanOutcome> plan_guard_time_set(ObjectStore& store, StateReader& reader, const Policy& policy, const json& body,
                                        const AdminOp& a) {
  GITLOCKS_CHECK(a.keys);
  if (!policy.guard_time)
    return make_error(Errc::usage, "guard time is not enabled: turn it on with `git-locks guard-time enable`");
  if (policy.pending)
    return make_error(Errc::usage,
                      "a keyring transition is pending: change guard time once it is complete (run `git-locks "
                      "member rekey` first)");
  std::optional<Pins> next;
  switch (a.guard_time) {
    case GuardTimeField::absent:
      return make_error(Errc::bad_json, "guard-time-set needs 'guard_time': the new pins, or null to turn it off");
    case GuardTimeField::not_object:
      return make_error(Errc::bad_json, "guard-time-set: 'guard_time' must be an object or null");
    case GuardTimeField::null:
      break;
    case GuardTimeField::object: {
      GITLOCKS_CHECK(a.guard_time_keys);
      GITLOCKS_TRY(pins, requested_pins(a.pins));
      if (*policy.guard_time == pins)
        return make_error(Errc::usage, "guard time already uses these pins: nothing to change");
      next = pins;
      break;
    }
  }
  Policy edited = policy;
  edited.guard_time = next;
  return with_new_policy(store, reader, body, edited, Action::guard_time_set);
}

}  // namespace

// Owner-signed policy changes: the owner and the expected policy hash are
// checked here for every op. guard-time-enable pins a notary:
//   {"admin":{"op":"guard-time-enable","audience":A,"service_key":HEX,
//             "disclosure":"GUARD_WINDOW","expected_policy_hash":HEX}}
Result<PlanOutcome> plan_admin(ObjectStore& store, StateReader& reader, const Policy& policy, const PlanContext& ctx,
                               const json& body) {
  GITLOCKS_CHECK(check_keys(body, {"admin"}, "admin body"));
  const AdminOp a = read_admin(body.at("admin"));
  GITLOCKS_TRY(op, a.op);
  // A checkpoint changes nothing: the owner, or a key the policy names
  // for it (checkpoint.signers), may publish one.
  if (a.kind == AdminKind::checkpoint ? !policy.may_checkpoint(ctx.actor) : ctx.actor != policy.owner)
    return make_error(Errc::not_holder,
                      a.kind == AdminKind::checkpoint
                          ? "only the store's owner (" + policy.owner.substr(0, 12) +
                                ") or a checkpoint signer its policy names may publish a checkpoint"
                          : "only the store's owner (" + policy.owner.substr(0, 12) + ") may change its policy")
        .because(reason::not_owner);
  GITLOCKS_TRY(expected, a.expected_policy_hash);
  GITLOCKS_TRY(current_bytes, reader.policy_bytes());
  if (expected != sha256_hex(current_bytes))
    return make_error(Errc::stale_generation,
                      "the policy changed: expected policy hash " + expected + ", current " + sha256_hex(current_bytes))
        .because(reason::policy_changed);
  switch (a.kind) {
    case AdminKind::member_add:
    case AdminKind::member_remove:
    case AdminKind::rekey:
      return plan_membership(store, reader, policy, ctx, body, a);
    case AdminKind::policy_set:
      return plan_policy_set(store, reader, policy, body, a);
    case AdminKind::guard_time_set:
      return plan_guard_time_set(store, reader, policy, body, a);
    case AdminKind::checkpoint:
      return plan_checkpoint(reader, body, a);
    case AdminKind::unknown:
      return make_error(Errc::bad_json, "unknown admin op '" + op + "'");
    case AdminKind::guard_time_enable:
      break;
  }
  GITLOCKS_CHECK(a.keys);
  if (policy.pending)
    return make_error(Errc::usage,
                      "a keyring transition is pending: guard time needs an active keyring without a "
                      "pending transition (run `git-locks member rekey` first)");
  GITLOCKS_TRY(pins, requested_pins(a.pins));
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
  Policy next = policy;
  next.guard_time = pins;
  return with_new_policy(store, reader, body, next, Action::guard_time_enable);
}

}  // namespace gitlocks::detail
