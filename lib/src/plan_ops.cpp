// The ops planner: Planner::run plans a body's ops in order and
// Planner::write records the successor state. Here too: the record cache,
// the derived data a path lease keeps (ancestors' intention markers,
// exclusive families' holders), and the ops on existing leases: extend,
// release, sem-release and sweep. claim and sem-acquire are in
// plan_acquire.cpp, conflicts and refusals in plan_conflicts.cpp.
#include <algorithm>

#include "gitlocks/limits.hpp"
#include "gitlocks/timefmt.hpp"
#include "plan_internal.h"
#include "records.h"
#include "tree_edit.h"

namespace gitlocks::detail {

json body_path(std::size_t op, std::initializer_list<json> rest) {
  json p = json::array({"ops", op});
  for (const auto& r : rest) p.push_back(r);
  return p;
}

Result<std::optional<std::string>> opt_string(const json& op, const char* key, std::size_t max_bytes) {
  auto it = op.find(key);
  if (it == op.end()) return std::optional<std::string>{};
  if (!it->is_string()) return make_error(Errc::bad_json, std::string("'") + key + "' must be a string");
  auto s = it->get<std::string>();
  if (s.size() > max_bytes)
    return make_error(Errc::usage, std::string("'") + key + "' longer than " + std::to_string(max_bytes) + " bytes");
  return std::optional<std::string>{s};
}

Status check_name(const std::string& name, const char* what) {
  if (name.empty() || name.size() > kMaxSemNameBytes)
    return make_error(Errc::usage,
                      std::string(what) + " name must be 1-" + std::to_string(kMaxSemNameBytes) + " bytes");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f) return make_error(Errc::usage, std::string(what) + " name contains a control character");
  return Ok{};
}

Status Planner::run(json& body, PlanOutcome& out) {
  GITLOCKS_CHECK(check_keys(body, {"created_at", "name", "ops"}, "body"));
  GITLOCKS_TRY(created, get_int(body, "created_at"));
  if (created < 0) return make_error(Errc::usage, "created_at must not be negative");
  created_at_ = created;
  GITLOCKS_TRY(name, get_string(body, "name"));
  if (name.size() > kMaxNameBytes)
    return make_error(Errc::usage, "holder name longer than " + std::to_string(kMaxNameBytes) + " bytes");
  name_ = name;
  auto ops = body.find("ops");
  if (ops == body.end() || !ops->is_array() || ops->empty())
    return make_error(Errc::bad_json, "body needs a non-empty 'ops' array");
  if (ops->size() > kMaxOps)
    return make_error(Errc::usage, "more than " + std::to_string(kMaxOps) + " operations in one transition");
  guards_.clear();
  leases_.clear();
  Action action = Action::batch;
  std::size_t counted = 0;  // ops other than ticket-drop
  for (std::size_t i = 0; i < ops->size(); ++i) {
    json& op = (*ops)[i];
    if (!op.is_object()) return make_error(Errc::bad_json, "op " + std::to_string(i) + " must be an object");
    GITLOCKS_TRY(kind, get_string(op, "op"));
    if (ctx_.check_only && kind != "claim") return make_error(Errc::usage, "a check-only plan takes claim ops only");
    std::optional<Result<Op>> read = read_op(kind, op);
    if (!read) return make_error(Errc::bad_json, "unknown op '" + kind + "'");
    Action act = Action::batch;
    auto plan_op = [&]() -> Status {
      GITLOCKS_TRY(typed, std::move(*read));
      auto handle = [&]() -> Status {
        if (auto* c = std::get_if<ClaimOp>(&typed)) {
          GITLOCKS_CHECK(claim(*c, i));
          act = c->declared.has_after ? Action::reclaim : Action::claim;
          return Ok{};
        }
        if (auto* s = std::get_if<SemAcquireOp>(&typed)) {
          act = Action::sem_acquire;
          return sem_acquire(*s, i);
        }
        if (auto* e = std::get_if<ExtendOp>(&typed)) {
          act = Action::extend;
          return extend(*e, i);
        }
        if (auto* r = std::get_if<ReleaseOp>(&typed)) {
          act = r->sem ? Action::sem_release : Action::release;
          return release(*r);
        }
        if (auto* f = std::get_if<ForceReleaseOp>(&typed)) {
          act = Action::force_release;
          return force_release(*f);
        }
        if (auto* h = std::get_if<HandoffOp>(&typed)) {
          act = Action::handoff;
          return handoff(*h, i);
        }
        if (auto* t = std::get_if<TicketOp>(&typed)) {
          act = Action::ticket;
          return ticket(*t, i);
        }
        if (auto* t = std::get_if<TicketRenewOp>(&typed)) {
          act = Action::ticket_renew;
          return ticket_renew(*t, i);
        }
        if (auto* t = std::get_if<TicketDropOp>(&typed)) {
          act = Action::ticket_drop;
          return ticket_drop(*t, i);
        }
        act = Action::sweep;
        return sweep(std::get<SweepOp>(typed), i);
      };
      GITLOCKS_CHECK(handle());
      // A proposal's op, completed by the planner, is written back from its
      // type; a replayed body is signed and stays as it is.
      if (now_) op = write_op(typed);
      return Ok{};
    };
    Status st = plan_op();
    if (!st.ok()) {
      Error e = st.error();
      // Of several ops, the failing one is named: in the message and in the
      // fields a host branches on (op_index, op_kind).
      if (ops->size() > 1) {
        e.message = "op " + std::to_string(i) + " (" + kind + "): " + e.message;
        e.fields["op_index"] = i;
        e.fields["op_kind"] = kind;
      }
      return e;
    }
    // Ticket-drops do not count toward the action (docs/FORMAT.md
    // "Tickets"): a waiter's admission drops its ticket in the same
    // transition as its claim, and a new ticket drops lapsed ones first.
    // The action is the other ops' (batch if several), ticket-drop if none.
    if (act != Action::ticket_drop) {
      action = counted == 0 ? act : Action::batch;
      ++counted;
    } else if (counted == 0) {
      action = Action::ticket_drop;
    }
  }
  out.action = action;
  out.guards = guards_;
  out.leases = leases_;
  return Ok{};
}

Result<Oid> Planner::write(std::size_t& records_written) {
  detail::TreeUpdates updates;
  for (const auto& res : dirty_) {
    const Record& rec = *cache_.at(res);
    auto loc = codec_.location(res, format_);
    if (rec.carries_nothing()) {
      updates[loc] = std::nullopt;
      continue;
    }
    json doc = rec.to_json();
    GITLOCKS_TRY(bytes, codec_.encode(loc, doc));
    GITLOCKS_TRY(id, store_.write_blob(bytes));
    if (&codec_ == &plain_codec()) store_.keep_written_parse(id, std::move(doc));
    updates[loc] = id;
    ++records_written;
  }
  GITLOCKS_TRY(root, detail::tree_apply(store_, reader_.root(), updates));
  if (!root) return make_error(Errc::store_write, "successor state is empty");
  return *root;
}

Result<const Record*> Planner::get(const std::string& res) {
  auto it = cache_.find(res);
  if (it == cache_.end()) {
    GITLOCKS_TRY(rec, reader_.valid_record(res));
    it = cache_.emplace(res, std::move(rec)).first;
  }
  return it->second ? &*it->second : nullptr;
}

Result<Record*> Planner::get_for_write(const std::string& res, const Record& fresh) {
  GITLOCKS_CHECK(get(res));
  std::optional<Record>& rec = cache_.at(res);
  if (!rec) rec = fresh;
  dirty_.insert(res);
  return &*rec;
}

template <class MarkerFn, class FamilyFn>
Status Planner::update_derived(const RepoPath& p, PathMode mode, MarkerFn marker, FamilyFn family) {
  for (const auto& a : proper_ancestors(p)) {
    GITLOCKS_TRY(rec, get_for_write(path_resource(a), Record::path(a)));
    marker(*rec);
  }
  if (mode == PathMode::intent) return Ok{};  // an intent holds no family
  for (const Family* f : families_of(policy_, p)) {
    if (!f->exclusive) continue;
    GITLOCKS_TRY(rec, get_for_write(family_resource(f->name), Record::family(f->name)));
    family(*rec);
  }
  return Ok{};
}

Status Planner::forget_path_lease(const RepoPath& p, const Lease& lease) {
  const std::string& holder = lease.holder;
  const PathMode mode = lease.path_mode();
  return update_derived(
      p, mode, [&](Record& rec) { records::drop_marker(rec, holder, mode); },
      [&](Record& rec) { records::drop_family_holder(rec, holder); });
}

Status Planner::remember_path_lease(const RepoPath& p, PathMode mode, std::int64_t until, const std::string& holder) {
  return update_derived(
      p, mode, [&](Record& rec) { records::bump_marker(rec, holder, mode, until); },
      [&](Record& rec) { records::bump_family_holder(rec, holder, until); });
}

Status Planner::remember_path_lease_renewal(const RepoPath& p, PathMode mode, std::int64_t until) {
  return update_derived(
      p, mode, [&](Record& rec) { records::renew_marker(rec, ctx_.actor, mode, until); },
      [&](Record& rec) { records::renew_family_holder(rec, ctx_.actor, until); });
}

// Finds lease `id` for extend/release; applies holder and generation
// checks. In propose mode fills in `generation` when absent.
Result<Lease> Planner::own_lease(const std::string& res, const std::string& id, std::optional<std::int64_t>& generation,
                                 const std::string& verb) {
  GITLOCKS_TRY(rec, get(res));
  // An empty id: the host found no lease of the actor's on the resource.
  const std::string which = id.empty() ? "no lease of yours" : "no lease " + id;
  if (!rec) return make_error(Errc::not_holder, which + " on " + res);
  const Lease* held = rec->lease(id);
  if (!held) {
    // The holder's next move after an admin took the lease away says so.
    if (const auto& gone = rec->released) {
      const Lease& was = gone->lease;
      if (was.holder == ctx_.actor && (id.empty() || id == was.id)) {
        Error e(Errc::not_holder, "lease " + was.id + " on " + res + ": force-released by " +
                                      (gone->by_name.empty() ? "an admin" : gone->by_name) + ": " + gone->reason +
                                      " (admin key " + gone->by.substr(0, 12) + "); claim it again when it is free");
        e.fields["lease"] = was.id;
        e.fields["released_by"] = gone->by;
        e.fields["released_by_name"] = gone->by_name;
        e.fields["release_reason"] = gone->reason;
        return std::move(e).because(reason::force_released);
      }
    }
    const bool stale = generation && *generation < rec->generation;
    if (!stale) return make_error(Errc::not_holder, which + " on " + res);
    return make_error(Errc::stale_generation, which + " on " + res + " at generation " + std::to_string(*generation) +
                                                  ": superseded (generation now " + std::to_string(rec->generation) +
                                                  ")")
        .because(reason::superseded);
  }
  const Lease found = *held;
  if (found.holder != ctx_.actor)
    return make_error(Errc::not_holder, "cannot " + verb + " lease " + id + ": it is held by " + found.label());
  if (!generation) generation = found.generation;
  const std::int64_t gen = *generation;
  if (gen != found.generation)
    return make_error(Errc::stale_generation, "lease " + id + " has generation " + std::to_string(found.generation) +
                                                  ", not " + std::to_string(gen));
  return found;
}

Status Planner::extend(ExtendOp& x, std::size_t i) {
  const std::string& res = x.target.res;
  const std::optional<RepoPath>& p = x.target.path;
  const std::int64_t expires_at = x.expires_at;
  GITLOCKS_TRY(held, own_lease(res, x.lease, x.generation, "extend"));
  const std::int64_t current = held.expires_at;
  if (now_ && !x.has_prev_expires_at) {
    x.has_prev_expires_at = true;
    x.prev_expires_at = current;
  }
  GITLOCKS_TRY(prev, x.prev_expires_at);
  if (prev != current)
    return make_error(Errc::stale_generation, "lease expiry changed since the request was made")
        .because(reason::expiry_changed);
  if (expires_at <= prev) {
    Error e(Errc::guard_window, "a renewal must move the expiry later: " + format_instant_ms(expires_at) +
                                    " is not after the current expiry " + format_instant_ms(prev));
    e.fields["expires_at_ms"] = expires_at;
    e.fields["prev_expires_at_ms"] = prev;
    return e;
  }
  if (now_ && *now_ > prev) {
    Error e(Errc::guard_window,
            "lease " + held.id + " expired " + format_when(prev, *now_) + "; claim it again instead");
    e.fields["prev_expires_at_ms"] = prev;
    e.fields["checked_at_ms"] = *now_;
    return e;
  }
  GITLOCKS_TRY(rec, get_for_write(res, Record{}));
  rec->lease(held.id)->expires_at = expires_at;
  if (p) GITLOCKS_CHECK(remember_path_lease_renewal(*p, held.path_mode(), expires_at));
  leases_.push_back({res, held.id, held.generation, expires_at});
  guards_.push_back(time_not_after(body_path(i, {"prev_expires_at"}), prev));
  for (auto& g : ttl_time_guards(policy_, body_path(i, {}), expires_at)) guards_.push_back(std::move(g));
  return Ok{};
}

Status Planner::remove_lease(const std::string& res, const std::optional<RepoPath>& p, const std::string& id) {
  GITLOCKS_TRY(rec, get_for_write(res, Record{}));
  auto it = std::find_if(rec->leases.begin(), rec->leases.end(), [&](const Lease& l) { return l.id == id; });
  const Lease old = *it;
  rec->leases.erase(it);
  if (p) GITLOCKS_CHECK(forget_path_lease(*p, old));
  return Ok{};
}

Status Planner::release(ReleaseOp& r) {
  GITLOCKS_TRY(lease, own_lease(r.target.res, r.lease, r.generation, "release"));
  return remove_lease(r.target.res, r.target.path, lease.id);
}

// An admin's release of another holder's path lease (docs/FORMAT.md
// "force-release"): {"op","path","lease","generation","reason"}. The
// record keeps the last one as its "released" entry, so the holder's next
// refusal, status --all and the timeline can say who and why.
Status Planner::force_release(ForceReleaseOp& f) {
  const std::string& res = f.target.res;
  const std::string& id = f.lease;
  GITLOCKS_TRY(rec, get(res));
  const Lease* found = rec ? rec->lease(id) : nullptr;
  if (!found) return make_error(Errc::not_holder, "no lease " + id + " on " + res);
  if (now_ && !f.has_generation) {
    f.has_generation = true;
    f.generation = found->generation;
  }
  GITLOCKS_TRY(gen, f.generation);
  if (gen != found->generation)
    return make_error(Errc::stale_generation, "lease " + id + " has generation " + std::to_string(found->generation) +
                                                  ", not " + std::to_string(gen));
  GITLOCKS_TRY(w, get_for_write(res, Record{}));
  w->released = Released{*found, ctx_.actor, name_, f.reason};
  return remove_lease(res, f.target.path, id);
}

// A hand-off (docs/FORMAT.md "Hand-off"): the actor's live lease ends and
// the receiver holds the resource from this same transition, at the next
// generation, as if it had claimed it: no state lies between in which a
// third writer could take it. Guards: the lease is still live at T
// (T <= prev_expires_at, as a renewal) and the new lease's TTL bounds.
Status Planner::handoff(HandoffOp& h, std::size_t i) {
  const std::string& res = h.target.res;
  const std::optional<RepoPath>& p = h.target.path;
  GITLOCKS_TRY(held, own_lease(res, h.lease, h.generation, "hand off"));
  if (now_ && !h.has_prev_expires_at) {
    h.has_prev_expires_at = true;
    h.prev_expires_at = held.expires_at;
  }
  GITLOCKS_TRY(prev, h.prev_expires_at);
  if (prev != held.expires_at)
    return make_error(Errc::stale_generation, "lease expiry changed since the request was made")
        .because(reason::expiry_changed);
  if (now_ && *now_ > prev) {
    Error e(Errc::guard_window, "lease " + held.id + " expired " + format_when(prev, *now_) +
                                    "; an expired lease cannot be handed off (the receiver can claim it)");
    e.fields["prev_expires_at_ms"] = prev;
    e.fields["checked_at_ms"] = *now_;
    return e;
  }
  if (h.to == ctx_.actor) return make_error(Errc::usage, "lease " + held.id + " is yours already: extend it instead");
  if (policy_.is_private && std::find(policy_.members.begin(), policy_.members.end(), h.to) == policy_.members.end())
    return make_error(Errc::not_member, "cannot hand lease " + held.id + " to " + h.to.substr(0, 12) +
                                            ": not a member of this PRIVATE store");
  GITLOCKS_CHECK(remove_lease(res, p, held.id));
  const Holder to{h.to, h.to_name};
  if (p) {
    GITLOCKS_CHECK(admit_path(*p, held.mode, h.expires_at, h.note, h.declared, i, to));
  } else {
    if (h.declared.has_reclaims || h.declared.has_after)
      return make_error(Errc::bad_json, "a semaphore hand-off declares no 'reclaims' or 'after'");
    GITLOCKS_TRY(rec, get_for_write(res, Record{}));
    for (const Lease& l : rec->leases)
      if (l.holder == h.to)
        return make_error(Errc::already_held, h.to_name + " (" + h.to.substr(0, 12) +
                                                  ") already holds a slot of semaphore '" + h.target.text +
                                                  "' (lease " + l.id + ")");
    const std::int64_t gen = ++rec->generation;
    issue(*rec, res, new_lease(i, res, gen, h.expires_at, h.note, to));
    for (auto& g : ttl_time_guards(policy_, body_path(i, {}), h.expires_at)) guards_.push_back(std::move(g));
  }
  guards_.push_back(time_not_after(body_path(i, {"prev_expires_at"}), prev));
  return Ok{};
}

Status Planner::sweep(const SweepOp& op, std::size_t i) {
  for (std::size_t j = 0; j < op.leases.size(); ++j) {
    GITLOCKS_TRY(s, op.leases[j]);
    const std::string& res = s.target.res;
    const std::optional<RepoPath>& p = s.target.path;
    const std::string& id = s.lease;
    const std::int64_t gen = s.generation;
    const std::int64_t exp = s.expires_at;
    GITLOCKS_TRY(rec, get(res));
    const Lease* l = rec ? rec->lease(id) : nullptr;
    if (!l || l->generation != gen || l->expires_at != exp)
      return make_error(Errc::stale_generation, "swept lease " + id + " is not in the state as declared")
          .because(reason::sweep_mismatch);
    if (now_ && live_until(exp, *now_))
      return make_error(Errc::held_path, "lease " + id + " has not expired").because(reason::not_expired);
    GITLOCKS_CHECK(remove_lease(res, p, id));
    guards_.push_back(time_after(body_path(i, {"leases", j, "expires_at"}), exp));
  }
  return Ok{};
}

}  // namespace gitlocks::detail
