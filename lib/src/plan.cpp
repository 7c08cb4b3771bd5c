// The planner's public entries (plan.hpp): plan() checks a body and hands it
// to creation (here), migration (plan_migrate.cpp), an admin change
// (plan_admin.cpp) or the ops planner (plan_ops.cpp); propose_sweep, lease
// ids and the errors that explain an admission time outside the interval.
#include "gitlocks/plan.hpp"

#include "gitlocks/crypto.hpp"
#include "gitlocks/limits.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/timefmt.hpp"
#include "plan_internal.h"

namespace gitlocks {

std::optional<Error> ttl_bound_error(const PlanOutcome& o, std::int64_t now) {
  // The leases the ops issued or renewed (claim, sem-acquire, extend: the
  // ops with an expiry), in the order of their ops.
  for (const IssuedLease& l : o.leases) {
    const std::int64_t ttl = l.expires_at - now;
    const bool over = ttl > o.max_ttl_ms;
    if (!over && ttl >= o.min_ttl_ms) continue;
    const std::int64_t bound = over ? o.max_ttl_ms : o.min_ttl_ms;
    Error e(Errc::guard_window, "ttl " + format_duration(ttl) +
                                    (over ? " exceeds this store's max_ttl " : " is below this store's min_ttl ") +
                                    format_duration(bound));
    e.fields["ttl_ms"] = ttl;
    e.fields[over ? "max_ttl_ms" : "min_ttl_ms"] = bound;
    return e;
  }
  return std::nullopt;
}

Error guard_window_error(const PlanOutcome& o, std::int64_t t) {
  if (auto e = ttl_bound_error(o, t)) return *e;
  Error e(Errc::guard_window, "admission time " + format_instant_ms(t) + " is outside the guard interval [" +
                                  format_instant_ms(o.interval.lo) + ", " + format_instant_ms(o.interval.hi) + "]");
  e.fields["admitted_at_ms"] = t;
  e.fields["interval_lo_ms"] = o.interval.lo;
  e.fields["interval_hi_ms"] = o.interval.hi;
  return e;
}

void to_json(json& j, const IssuedLease& l) {
  j = {{"resource", l.resource}, {"lease", l.lease}, {"generation", l.generation}, {"expires_at", l.expires_at}};
}

std::string lease_id(const std::string& instance, std::size_t op_index, const std::string& resource) {
  return sha256_hex(instance + "\n" + std::to_string(op_index) + "\n" + resource).substr(0, kLeaseIdHexDigits);
}

const char* action_name(Action a) {
  switch (a) {
    case Action::init:
      return "init";
    case Action::claim:
      return "claim";
    case Action::reclaim:
      return "reclaim";
    case Action::extend:
      return "extend";
    case Action::release:
      return "release";
    case Action::sweep:
      return "sweep";
    case Action::sem_acquire:
      return "sem-acquire";
    case Action::sem_release:
      return "sem-release";
    case Action::force_release:
      return "force-release";
    case Action::batch:
      return "batch";
    case Action::guard_time_enable:
      return "guard-time-enable";
    case Action::guard_time_set:
      return "guard-time-set";
    case Action::policy_set:
      return "policy-set";
    case Action::member_add:
      return "member-add";
    case Action::member_remove:
      return "member-remove";
    case Action::rekey:
      return "rekey";
    case Action::migrate:
      return "migrate";
    case Action::checkpoint:
      return "checkpoint";
    case Action::handoff:
      return "handoff";
    case Action::ticket:
      return "ticket";
    case Action::ticket_renew:
      return "ticket-renew";
    case Action::ticket_drop:
      return "ticket-drop";
  }
  return "batch";
}

namespace detail {

// The outcome of a transition without guards (creation, policy changes,
// migration): the universal interval, no leases.
PlanOutcome time_free_outcome(const json& body, Action action, const Oid& root, std::size_t records) {
  PlanOutcome out;
  out.body = body;
  out.action = action;
  out.result_state = root;
  out.guards.clear();
  out.interval = kUniversalInterval;
  out.records_written = records;
  return out;
}

}  // namespace detail

namespace {

// Creation. {"init":POLICY} creates a format-2 store; old histories may carry
// {"init":POLICY,"state_format":"gitlocks-state-v1"} (replayed, never written
// by build_candidate).
Result<PlanOutcome> plan_init(ObjectStore& store, const PlanContext& ctx, const json& body) {
  GITLOCKS_CHECK(check_keys(body, {"init", "state_format"}, "init body"));
  auto init = body.find("init");
  if (init == body.end())
    return make_error(Errc::bad_json, "the store does not exist yet: its first transition is {\"init\":POLICY}");
  const json& doc = *init;
  GITLOCKS_TRY(policy, parse_policy(doc));
  if (policy.owner != ctx.actor) return make_error(Errc::usage, "the store's owner must sign its creation");
  std::string_view format = kStateFormat;
  if (body.contains("state_format")) {
    if (body["state_format"] != kStateFormatV1)
      return make_error(Errc::unknown_format, "unknown state_format " + body["state_format"].dump());
    format = kStateFormatV1;
  }
  GITLOCKS_TRY(policy_bytes, canon_dump(doc));
  GITLOCKS_TRY(format_bytes, canon_dump(json{{"format", format}}));
  GITLOCKS_TRY(policy_id, store.write_blob(policy_bytes));
  GITLOCKS_TRY(format_id, store.write_blob(format_bytes));
  GITLOCKS_TRY(root, store.write_tree({{"format.json", false, format_id}, {"policy.json", false, policy_id}}));
  return detail::time_free_outcome(body, Action::init, root, 0);
}

}  // namespace

Result<std::optional<Creation>> creation_of(const json& body) {
  if (!body.is_object()) return std::optional<Creation>();
  auto init = body.find("init");
  if (init == body.end()) return std::optional<Creation>();
  GITLOCKS_TRY(policy, parse_policy(*init));
  GITLOCKS_TRY(bytes, canon_dump(*init));
  return std::optional<Creation>(Creation{std::move(policy), sha256_hex(bytes)});
}

std::optional<Oid> checkpoint_of(const json& body) {
  if (!body.is_object()) return std::nullopt;
  auto admin = body.find("admin");
  if (admin == body.end() || !admin->is_object()) return std::nullopt;
  auto op = admin->find("op");
  auto prev = admin->find("prev");
  if (op == admin->end() || *op != "checkpoint" || prev == admin->end() || !prev->is_string()) return std::nullopt;
  return Oid::from_hex(prev->get_ref<const std::string&>());
}

Result<PlanOutcome> plan(ObjectStore& store, const Oid& source_state, const PlanContext& ctx, const json& body,
                         std::optional<std::int64_t> now) {
  // A proposed expiry beyond the safe timestamp domain (a host's now + TTL
  // near 2^53-1) is refused as what it is, before the generic range check.
  auto beyond_safe = [](const json& v) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxSafeInteger);
    return v.get<std::int64_t>() > kMaxSafeInteger;
  };
  if (body.is_object() && body.contains("ops") && body["ops"].is_array())
    for (std::size_t i = 0; i < body["ops"].size(); ++i) {
      const json& op = body["ops"][i];
      if (op.is_object() && op.contains("expires_at") && beyond_safe(op["expires_at"]))
        return make_error(Errc::arithmetic_overflow, "op " + std::to_string(i) + ": expires_at " +
                                                         op["expires_at"].dump() +
                                                         " is beyond the safe timestamp domain [0, 2^53-1]");
    }
  GITLOCKS_CHECK(canon_check(body));
  if (!body.is_object()) return make_error(Errc::bad_json, "body must be an object");
  if (source_state.empty()) return plan_init(store, ctx, body);
  if (body.contains("init")) return make_error(Errc::usage, "the store already exists");
  StateReader reader(store, source_state);
  GITLOCKS_TRY(version, reader.format_version());
  GITLOCKS_TRY(policy_doc, reader.policy());
  GITLOCKS_TRY(policy, parse_policy(policy_doc));
  if (body.contains("migrate")) return detail::plan_migrate(store, reader, version, policy_doc, body);
  if (body.contains("admin")) return detail::plan_admin(store, reader, policy, ctx, body);
  GITLOCKS_TRY(sealed, state_codec(policy, ctx.vault));
  if (policy.is_private) {
    if (policy.pending)
      return make_error(Errc::usage, "a keyring transition to epoch " + std::to_string(policy.epoch + 1) +
                                         " is pending: run `git-locks member rekey` first");
    reader.set_codec(sealed.get());
    GITLOCKS_CHECK(unseal_families(policy, *ctx.vault));
  }
  const RecordCodec& codec = sealed ? *sealed : plain_codec();
  PlanOutcome out;
  out.body = body;
  detail::Planner planner(store, reader, codec, policy, ctx, now, version);
  GITLOCKS_CHECK(planner.run(out.body, out));
  if (ctx.check_only) return out;
  GITLOCKS_TRY(interval, guard_interval(out.guards));
  out.interval = interval;
  out.min_ttl_ms = policy.min_ttl_ms;
  out.max_ttl_ms = policy.max_ttl_ms;
  GITLOCKS_TRY(root, planner.write(out.records_written));
  out.result_state = root;
  return out;
}

Result<std::optional<json>> propose_sweep(ObjectStore& store, const Oid& source_state, std::int64_t now,
                                          const Vault* vault) {
  StateReader reader(store, source_state);
  GITLOCKS_CHECK(reader.format_version());
  GITLOCKS_TRY(doc, reader.policy());
  GITLOCKS_TRY(pol, parse_policy(doc));
  GITLOCKS_TRY(sealed, state_codec(pol, vault));
  if (sealed) reader.set_codec(sealed.get());
  // Every lease no longer live at `now` (a sweep needs T > expires_at).
  std::vector<ops::Swept> swept;
  GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& rec) {
    const Resource& r = rec.resource;
    for (const Lease& l : rec.leases) {  // none in a family record
      if (l.live_at(now)) continue;
      swept.push_back({r.kind == RecordKind::sem ? ops::Target::semaphore(r.name) : ops::Target::path(l.path), l.id,
                       l.generation, l.expires_at});
    }
    return true;
  }));
  if (swept.empty()) return std::optional<json>{};
  return std::optional<json>{ops::sweep(swept)};
}

}  // namespace gitlocks
