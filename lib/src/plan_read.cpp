// Reading and writing ops: each op of a body becomes a typed Op
// (plan_internal.h) before it looks at the state, and a proposal's op is
// written back from its type once planned. The checks run in the order the
// planner has always run them, so a body with several faults is refused for
// the same one as before: a verdict never depends on how the planner is
// organised.
#include "gitlocks/hex.hpp"
#include "gitlocks/limits.hpp"
#include "plan_internal.h"

namespace gitlocks::detail {

std::optional<Result<Op>> Planner::read_op(const std::string& kind, const json& op) {
  auto typed = [](auto r) -> std::optional<Result<Op>> {
    if (!r.ok()) return Result<Op>(r.error());
    return Result<Op>(Op(std::move(r).value()));
  };
  if (kind == "claim") return typed(read_claim(op));
  if (kind == "sem-acquire") return typed(read_sem_acquire(op));
  if (kind == "extend") return typed(read_extend(op));
  if (kind == "release" || kind == "sem-release") return typed(read_release(op, kind == "sem-release"));
  if (kind == "sweep") {
    // Built in place: GCC 12 warns (falsely) of an uninitialised vector when
    // a SweepOp is moved through the variant.
    auto r = read_sweep(op);
    if (!r.ok()) return Result<Op>(r.error());
    Op typed_op(std::in_place_type<SweepOp>);
    std::get<SweepOp>(typed_op).leases = std::move(r->leases);
    return Result<Op>(std::move(typed_op));
  }
  if (kind == "force-release") return typed(read_force_release(op));
  if (kind == "handoff") return typed(read_handoff(op));
  if (kind == "ticket") return typed(read_ticket(op));
  if (kind == "ticket-renew") return typed(read_ticket_renew(op));
  if (kind == "ticket-drop") return typed(read_ticket_drop(op));
  return std::nullopt;
}

Result<std::int64_t> Planner::expiry(const json& op) {
  GITLOCKS_TRY(e, get_int(op, "expires_at"));
  if (e < 0) return make_error(Errc::usage, "expires_at must not be negative");
  return e;
}

// "path" or "sem" of an op: a resource and (for paths) the parsed path.
Result<OpTarget> Planner::target_of(const json& op, bool sem_only) {
  bool has_path = op.contains("path");
  bool has_sem = op.contains("sem");
  if (has_path == has_sem || (sem_only && !has_sem))
    return make_error(Errc::bad_json, sem_only ? "op needs 'sem'" : "op needs exactly one of 'path' or 'sem'");
  OpTarget t;
  if (has_path) {
    GITLOCKS_TRY(text, get_string(op, "path"));
    GITLOCKS_TRY(p, parse_repo_path(text, policy_.path_case()));
    t.res = path_resource(p.key());
    t.path = p;
    t.text = text;
  } else {
    GITLOCKS_TRY(name, get_string(op, "sem"));
    GITLOCKS_CHECK(check_name(name, "semaphore"));
    t.res = sem_resource(name);
    t.text = name;
  }
  return t;
}

Status Planner::lease_ref(const json& op, std::string& lease, std::optional<std::int64_t>& generation) {
  GITLOCKS_TRY(id, get_string(op, "lease"));
  lease = id;
  // A proposal may leave the generation out: own_lease fills it in.
  if (!(now_ && !op.contains("generation"))) {
    GITLOCKS_TRY(g, get_int(op, "generation"));
    generation = g;
  }
  return Ok{};
}

// A new lease's expiry and optional note (claim, sem-acquire).
Status Planner::new_lease_terms(const json& op, std::int64_t& expires_at, std::optional<std::string>& note) {
  GITLOCKS_TRY(e, expiry(op));
  expires_at = e;
  GITLOCKS_TRY(n, opt_string(op, "note", kMaxNoteBytes));
  note = n;
  return Ok{};
}

Result<ClaimOp> Planner::read_claim(const json& op) {
  GITLOCKS_CHECK(
      check_keys(op, {"op", "path", "mode", "expires_at", "note", "reclaims", "after", "passes"}, "claim op"));
  ClaimOp c;
  GITLOCKS_TRY(path_text, get_string(op, "path"));
  // NFC, and folded in a case-insensitive store: one spelling per resource.
  GITLOCKS_TRY(p, parse_repo_path(path_text, policy_.path_case()));
  if (p.display() != path_text) return make_error(Errc::bad_path, "path is not normalised");
  c.path = p;
  GITLOCKS_TRY(mode, get_string(op, "mode"));
  if (!parse_path_mode(mode)) return make_error(Errc::usage, "mode must be exclusive, shared or intent");
  c.mode = mode;
  c.exclusive = mode == "exclusive";
  GITLOCKS_CHECK(new_lease_terms(op, c.expires_at, c.note));
  c.declared = read_declared(op);
  if (auto list = op.find("passes"); list != op.end()) {
    c.passes.has = true;
    if (!list->is_array()) c.passes.shape = make_error(Errc::bad_json, "'passes' must be an array");
    for (const json& e : list->is_array() ? *list : json::array()) {
      auto keys = check_keys(e, {"ticket", "until"}, "pass");
      auto ticket = get_string(e, "ticket");
      auto until = get_int(e, "until");
      if (!keys.ok() || !ticket.ok() || !until.ok()) {
        c.passes.shape = make_error(Errc::bad_json, "a pass is {\"ticket\":ID,\"until\":MS}");
        break;
      }
      c.passes.list.push_back({*ticket, *until});
    }
  }
  return c;
}

Result<SemAcquireOp> Planner::read_sem_acquire(const json& op) {
  GITLOCKS_CHECK(check_keys(op, {"op", "sem", "limit", "expires_at", "note", "reclaims", "after"}, "sem-acquire op"));
  SemAcquireOp s;
  GITLOCKS_TRY(name, get_string(op, "sem"));
  GITLOCKS_CHECK(check_name(name, "semaphore"));
  s.name = name;
  GITLOCKS_TRY(limit, get_int(op, "limit"));
  if (limit < 1 || limit > kMaxSemLimit)
    return make_error(Errc::usage, "semaphore limit must be 1.." + std::to_string(kMaxSemLimit));
  s.limit = limit;
  GITLOCKS_CHECK(new_lease_terms(op, s.expires_at, s.note));
  s.declared = read_declared(op);
  return s;
}

Result<ExtendOp> Planner::read_extend(const json& op) {
  GITLOCKS_CHECK(
      check_keys(op, {"op", "path", "sem", "lease", "generation", "prev_expires_at", "expires_at"}, "extend op"));
  ExtendOp e;
  GITLOCKS_TRY(target, target_of(op, false));
  e.target = std::move(target);
  GITLOCKS_TRY(expires_at, expiry(op));
  e.expires_at = expires_at;
  GITLOCKS_CHECK(lease_ref(op, e.lease, e.generation));
  e.has_prev_expires_at = op.contains("prev_expires_at");
  e.prev_expires_at = get_int(op, "prev_expires_at");
  return e;
}

Result<ReleaseOp> Planner::read_release(const json& op, bool sem) {
  GITLOCKS_CHECK(
      check_keys(op, {"op", sem ? "sem" : "path", "lease", "generation"}, sem ? "sem-release op" : "release op"));
  ReleaseOp r;
  GITLOCKS_TRY(target, target_of(op, sem));
  r.target = std::move(target);
  r.sem = sem;
  GITLOCKS_CHECK(lease_ref(op, r.lease, r.generation));
  return r;
}

// An admin's release of another holder's path lease (docs/FORMAT.md
// "force-release"); who may is checked here, before the lease is named.
Result<ForceReleaseOp> Planner::read_force_release(const json& op) {
  GITLOCKS_CHECK(check_keys(op, {"op", "path", "lease", "generation", "reason"}, "force-release op"));
  if (!op.contains("path")) return make_error(Errc::bad_json, "force-release needs 'path' (path leases only)");
  ForceReleaseOp f;
  GITLOCKS_TRY(target, target_of(op, false));
  f.target = std::move(target);
  GITLOCKS_TRY(why, get_string(op, "reason"));
  if (why.empty() || why.size() > kMaxNoteBytes)
    return make_error(Errc::usage, "a force-release needs a reason of 1-" + std::to_string(kMaxNoteBytes) + " bytes");
  for (unsigned char c : why)
    if (c < 0x20 || c == 0x7f) return make_error(Errc::usage, "the force-release reason contains a control character");
  f.reason = why;
  if (!policy_.is_admin(ctx_.actor))
    return make_error(Errc::not_holder, "only the owner or an admin named in the policy may force-release a lease (" +
                                            ctx_.actor.substr(0, 12) + " is neither)")
        .because(reason::not_admin);
  GITLOCKS_TRY(id, get_string(op, "lease"));
  f.lease = id;
  f.has_generation = op.contains("generation");
  f.generation = get_int(op, "generation");
  return f;
}

// A hand-off of the actor's lease (docs/FORMAT.md "Hand-off").
Result<HandoffOp> Planner::read_handoff(const json& op) {
  GITLOCKS_CHECK(check_keys(op,
                            {"op", "path", "sem", "lease", "generation", "prev_expires_at", "to", "to_name",
                             "expires_at", "note", "reclaims", "after"},
                            "handoff op"));
  HandoffOp h;
  GITLOCKS_TRY(target, target_of(op, false));
  if (target.path && target.path->display() != target.text) return make_error(Errc::bad_path, "path is not normalised");
  h.target = std::move(target);
  GITLOCKS_TRY(to, get_string(op, "to"));
  if (!is_hex(to, 64)) return make_error(Errc::usage, "'to' must be a key: 64 lowercase hex digits");
  h.to = to;
  GITLOCKS_TRY(to_name, get_string(op, "to_name"));
  if (to_name.size() > kMaxNameBytes)
    return make_error(Errc::usage, "holder name longer than " + std::to_string(kMaxNameBytes) + " bytes");
  h.to_name = to_name;
  GITLOCKS_CHECK(new_lease_terms(op, h.expires_at, h.note));
  GITLOCKS_CHECK(lease_ref(op, h.lease, h.generation));
  h.has_prev_expires_at = op.contains("prev_expires_at");
  h.prev_expires_at = get_int(op, "prev_expires_at");
  h.declared = read_declared(op);
  return h;
}

Result<SweepOp> Planner::read_sweep(const json& op) {
  GITLOCKS_CHECK(check_keys(op, {"op", "leases"}, "sweep op"));
  auto list = op.find("leases");
  if (list == op.end() || !list->is_array() || list->empty())
    return make_error(Errc::bad_json, "sweep needs a non-empty 'leases' array");
  SweepOp s;
  for (const json& entry : *list) s.leases.push_back(read_swept(entry));
  return s;
}

Result<SweptLease> Planner::read_swept(const json& entry) {
  GITLOCKS_CHECK(check_keys(entry, {"path", "sem", "lease", "generation", "expires_at"}, "swept lease"));
  SweptLease s;
  GITLOCKS_TRY(target, target_of(entry, false));
  s.target = std::move(target);
  GITLOCKS_TRY(id, get_string(entry, "lease"));
  s.lease = id;
  GITLOCKS_TRY(gen, get_int(entry, "generation"));
  s.generation = gen;
  GITLOCKS_TRY(exp, get_int(entry, "expires_at"));
  s.expires_at = exp;
  return s;
}

// "reclaims" and "after" of a claim or sem-acquire, as declared; resolve()
// (plan_conflicts.cpp) checks them against the state or decides them.
Declared Planner::read_declared(const json& op) {
  Declared d;
  auto list = op.find("reclaims");
  if (list != op.end()) {
    d.has_reclaims = true;
    d.reclaims_listed = list->is_array() && !list->empty();
    if (d.reclaims_listed)
      for (const json& e : *list) {
        ReclaimEntry entry;
        entry.keys = check_keys(e, {"lease", "generation", "expires_at"}, "reclaim");
        auto lease = get_string(e, "lease");
        auto generation = get_int(e, "generation");
        auto expires_at = get_int(e, "expires_at");
        if (lease.ok() && generation.ok() && expires_at.ok()) entry.value = Reclaim{*lease, *generation, *expires_at};
        d.reclaims.push_back(std::move(entry));
      }
  }
  if (op.contains("after")) {
    d.has_after = true;
    auto after = get_int(op, "after");
    if (after.ok()) d.after = *after;
  }
  return d;
}

namespace {

const char* target_key(const OpTarget& t) { return t.path ? "path" : "sem"; }

void write_declared(json& j, const Declared& d) {
  if (d.has_reclaims) {
    json list = json::array();
    for (const ReclaimEntry& e : d.reclaims)
      if (e.value)
        list.push_back(
            {{"lease", e.value->lease}, {"generation", e.value->generation}, {"expires_at", e.value->expires_at}});
    j["reclaims"] = std::move(list);
  }
  if (d.has_after && d.after) j["after"] = *d.after;
}

json op_json(const ClaimOp& c) {
  json j = {{"op", "claim"}, {"path", c.path.display()}, {"mode", c.mode}, {"expires_at", c.expires_at}};
  if (c.note) j["note"] = *c.note;
  write_declared(j, c.declared);
  if (c.passes.has) {
    json list = json::array();
    for (const Pass& p : c.passes.list) list.push_back({{"ticket", p.ticket}, {"until", p.until}});
    j["passes"] = std::move(list);
  }
  return j;
}

json op_json(const TicketOp& t) {
  json wants = json::array();
  for (const TicketWant& w : t.wants) wants.push_back(w.to_json());
  json j = {{"op", "ticket"}, {"wants", std::move(wants)}, {"expires_at", t.expires_at}};
  if (t.has_behind) j["behind"] = t.behind;
  return j;
}

json op_json(const TicketRenewOp& t) {
  json j = {{"op", "ticket-renew"}, {"ticket", t.ticket}, {"expires_at", t.expires_at}};
  if (t.has_prev_expires_at && t.prev_expires_at.ok()) j["prev_expires_at"] = *t.prev_expires_at;
  return j;
}

json op_json(const TicketDropOp& t) {
  json j = {{"op", "ticket-drop"}, {"ticket", t.ticket}};
  if (t.has_expires_at && t.expires_at.ok()) j["expires_at"] = *t.expires_at;
  return j;
}

json op_json(const SemAcquireOp& s) {
  json j = {{"op", "sem-acquire"}, {"sem", s.name}, {"limit", s.limit}, {"expires_at", s.expires_at}};
  if (s.note) j["note"] = *s.note;
  write_declared(j, s.declared);
  return j;
}

json op_json(const ExtendOp& e) {
  json j = {{"op", "extend"}, {target_key(e.target), e.target.text}, {"lease", e.lease}, {"expires_at", e.expires_at}};
  if (e.generation) j["generation"] = *e.generation;
  if (e.has_prev_expires_at && e.prev_expires_at.ok()) j["prev_expires_at"] = *e.prev_expires_at;
  return j;
}

json op_json(const ReleaseOp& r) {
  json j = {{"op", r.sem ? "sem-release" : "release"}, {target_key(r.target), r.target.text}, {"lease", r.lease}};
  if (r.generation) j["generation"] = *r.generation;
  return j;
}

json op_json(const ForceReleaseOp& f) {
  json j = {{"op", "force-release"}, {"path", f.target.text}, {"lease", f.lease}, {"reason", f.reason}};
  if (f.has_generation && f.generation.ok()) j["generation"] = *f.generation;
  return j;
}

json op_json(const HandoffOp& h) {
  json j = {{"op", "handoff"},      {target_key(h.target), h.target.text}, {"lease", h.lease}, {"to", h.to},
            {"to_name", h.to_name}, {"expires_at", h.expires_at}};
  if (h.generation) j["generation"] = *h.generation;
  if (h.has_prev_expires_at && h.prev_expires_at.ok()) j["prev_expires_at"] = *h.prev_expires_at;
  if (h.note) j["note"] = *h.note;
  write_declared(j, h.declared);
  return j;
}

json op_json(const SweepOp& s) {
  json list = json::array();
  for (const auto& entry : s.leases) {
    if (!entry.ok()) continue;  // a proposal with a faulty entry is refused
    const SweptLease& l = *entry;
    list.push_back({{target_key(l.target), l.target.text},
                    {"lease", l.lease},
                    {"generation", l.generation},
                    {"expires_at", l.expires_at}});
  }
  return {{"op", "sweep"}, {"leases", std::move(list)}};
}

}  // namespace

json Planner::write_op(const Op& op) {
  return std::visit([](const auto& o) { return op_json(o); }, op);
}

}  // namespace gitlocks::detail
