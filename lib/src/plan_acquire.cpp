// The ops that admit a new lease: claim (a path, exclusive or shared) and
// sem-acquire (a slot of a semaphore). Each collects what stands in the
// way, lets resolve() (plan_conflicts.cpp) check or fill in what the body
// declares about it, then records the lease and its guards.
#include <algorithm>
#include <limits>
#include <set>

#include "gitlocks/limits.hpp"
#include "plan_internal.h"
#include "records.h"

namespace gitlocks::detail {
namespace {

// A full semaphore's refusal names its holders until the list is this long.
constexpr std::size_t kHolderListBytes = 400;

}  // namespace

// `holder`'s new lease of op `i` on `res` (its id: lease_id of this
// transition's instance, the op and the resource).
Lease Planner::new_lease(std::size_t i, const std::string& res, std::int64_t generation, std::int64_t expires_at,
                         const std::optional<std::string>& note, const Holder& holder) const {
  Lease l;
  l.id = lease_id(ctx_.instance, i, res);
  l.holder = holder.key;
  l.name = holder.name;
  l.generation = generation;
  l.expires_at = expires_at;
  l.created_at = created_at_;
  l.note = note;
  return l;
}

// Stores `lease` in `rec` and lists it in the outcome.
void Planner::issue(Record& rec, const std::string& res, const Lease& lease) {
  rec.leases.push_back(lease);
  leases_.push_back({res, lease.id, lease.generation, lease.expires_at});
}

Status Planner::claim(ClaimOp& c, std::size_t i) {
  return admit_path(c.path, c.mode, c.expires_at, c.note, c.declared, i, actor(), &c.passes);
}

Status Planner::path_conflicts(const RepoPath& p, PathMode pm, const std::string& who, std::vector<Conflict>& conflicts,
                               std::vector<Reclaim>* must_reclaim, std::vector<std::string>* reclaimed,
                               std::optional<std::string>* superseded) {
  const bool excl = pm == PathMode::exclusive;
  // An intent (docs/FORMAT.md "Intent") conflicts with nothing and nothing
  // conflicts with it; only the holder's own lease on the path stands in
  // its way.
  const bool intent = pm == PathMode::intent;
  const std::string key = p.key();
  const std::string res = path_resource(key);
  for (const auto& a : proper_ancestors(p)) {
    GITLOCKS_TRY(rec, get(path_resource(a)));
    if (!rec) continue;
    for (const Lease& l : rec->leases)
      if (l.holder != who && !intent && !l.intent() && (excl || l.exclusive()))
        conflicts.push_back({l.expires_at, Errc::held_path, "'" + a + "/' is held " + l.mode + " by " + l.label(),
                             l.holder, l.name, l.path});
  }
  GITLOCKS_TRY(target, get(res));
  if (target) {
    for (const Lease& l : target->leases) {
      const bool own = l.holder == who;
      // A lock replaces its holder's intent on the same path, in the same op.
      if (own && l.intent() && !intent) {
        if (superseded) *superseded = l.id;
        continue;
      }
      if (!own && (intent || l.intent())) continue;
      if (!own && !excl && !l.exclusive()) continue;
      const std::string already =
          who == ctx_.actor ? "you already hold '" + key + "' (lease " + l.id + "); extend it instead"
                            : l.name + " (" + who.substr(0, 12) + ") already holds '" + key + "' (lease " + l.id + ")";
      conflicts.push_back({l.expires_at, own ? Errc::already_held : Errc::held_path,
                           own ? already : "'" + key + "' is held " + l.mode + " by " + l.label(), l.holder, l.name,
                           l.path});
      if (must_reclaim) must_reclaim->push_back({l.id, l.generation, l.expires_at});
      if (reclaimed) reclaimed->push_back(l.id);
    }
    for (const auto& [h, m] : target->below) {
      if (h == who || intent) continue;
      if (m.exclusive > 0)
        conflicts.push_back({m.exclusive_until, Errc::held_path,
                             "a path below '" + key + "/' is held exclusive by " + h.substr(0, 12), h, "", "", key,
                             "exclusive"});
      if (excl && m.shared > 0)
        conflicts.push_back({m.shared_until, Errc::held_path,
                             "a path below '" + key + "/' is held shared by " + h.substr(0, 12), h, "", "", key,
                             "shared"});
    }
  }
  if (intent) return Ok{};
  for (const Family* f : families_of(policy_, p)) {
    if (!f->exclusive) continue;
    GITLOCKS_TRY(rec, get(family_resource(f->name)));
    if (!rec) continue;
    for (const auto& [h, e] : rec->holders)
      if (h != who)
        conflicts.push_back({e.until, Errc::family_policy, "family '" + f->name + "' is held by " + h.substr(0, 12), h,
                             "", "", "", "", f});
  }
  return Ok{};
}

Status Planner::admit_path(const RepoPath& p, const std::string& mode, std::int64_t expires_at,
                           const std::optional<std::string>& note, Declared& declared, std::size_t i,
                           const Holder& holder, DeclaredPasses* passes) {
  // The mode was checked when the op was read (or is the handed lease's).
  const PathMode pm = parse_path_mode(mode).value_or(PathMode::exclusive);
  const bool excl = pm == PathMode::exclusive;
  const std::string key = p.key();
  const std::string res = path_resource(key);
  const std::string& who = holder.key;
  for (const Family* f : families_of(policy_, p))
    if (!f->exclusive && excl)
      return make_error(Errc::family_policy,
                        "family '" + f->name + "' is shared: its members may only be claimed in shared mode");

  std::vector<Conflict> conflicts;
  std::vector<Reclaim> must_reclaim;
  std::vector<std::string> reclaimed;  // the ids in must_reclaim, then the holder's own intent a lock replaces
  std::optional<std::string> superseded;
  GITLOCKS_CHECK(path_conflicts(p, pm, who, conflicts, &must_reclaim, &reclaimed, &superseded));
  // The queue (docs/FORMAT.md "Tickets"): an intent never waits, and the
  // claims rule's check-only plans ask whose leases are in the way, not
  // who waits.
  if (passes && pm == PathMode::intent && passes->has)
    return make_error(Errc::bad_json, "an intent waits for nobody: it declares no 'passes'");
  if (passes && pm != PathMode::intent && !ctx_.check_only)
    GITLOCKS_CHECK(queue_for_claim(Wanted{p, !excl, ""}, who, *passes, conflicts, i));
  GITLOCKS_CHECK(resolve(declared, conflicts, must_reclaim));
  if (ctx_.check_only) return Ok{};

  // Effects: copy body values into the state; nothing depends on T.
  GITLOCKS_TRY(rec, get_for_write(res, Record::path(key)));
  if (superseded) reclaimed.push_back(*superseded);
  for (const std::string& id : reclaimed) {
    auto it = std::find_if(rec->leases.begin(), rec->leases.end(), [&](const Lease& l) { return l.id == id; });
    const Lease old = *it;
    rec->leases.erase(it);
    GITLOCKS_CHECK(forget_path_lease(p, old));
  }
  const std::int64_t gen = ++rec->generation;
  Lease lease = new_lease(i, res, gen, expires_at, note, holder);
  lease.mode = mode;
  lease.path = p.display();
  issue(*rec, res, lease);
  GITLOCKS_CHECK(remember_path_lease(p, pm, expires_at, who));

  for (auto& g : ttl_time_guards(policy_, body_path(i, {}), expires_at)) guards_.push_back(std::move(g));
  // resolve() leaves `after` declared only with its value (a mistyped one is refused).
  if (declared.after) guards_.push_back(time_after(body_path(i, {"after"}), *declared.after));
  return Ok{};
}

Status Planner::sem_acquire(SemAcquireOp& s, std::size_t i) {
  const std::string& name = s.name;
  const std::int64_t limit = s.limit;
  const std::string res = sem_resource(name);
  GITLOCKS_TRY(existing, get(res));
  static const std::vector<Lease> kNone;
  const std::vector<Lease>& leases = existing ? existing->leases : kNone;  // read before the record is edited

  std::vector<Reclaim> reclaim;
  std::set<std::string> reclaimed;  // the ids in reclaim
  std::vector<Conflict> conflicts;
  // The live tickets of others queued before this sem-acquire
  // (docs/FORMAT.md "Tickets"): each takes a slot first.
  std::int64_t ahead = 0;
  const Ticket* first_ticket = nullptr;
  if (now_) {
    for (const Lease& l : leases) {
      if (!l.live_at(*now_)) {
        reclaim.push_back({l.id, l.generation, l.expires_at});
        reclaimed.insert(l.id);
        conflicts.push_back({l.expires_at, Errc::full_semaphore, "slot"});
      } else if (l.holder == ctx_.actor) {
        return make_error(Errc::already_held, "you already hold a slot of semaphore '" + name + "' (lease " + l.id +
                                                  "); extend it instead");
      }
    }
    GITLOCKS_CHECK(queue_for_sem(name, *now_, true, conflicts, ahead, first_ticket));
    GITLOCKS_CHECK(resolve(s.declared, conflicts, reclaim));
  } else {
    const Declared& d = s.declared;
    if (d.has_reclaims && !d.reclaims_listed)
      return make_error(Errc::bad_json, "'reclaims' must be a non-empty array when present");
    for (const ReclaimEntry& r : d.reclaims) {
      GITLOCKS_CHECK(r.keys);
      // An entry that lacks a field or mistypes one matches no lease.
      auto it =
          std::find_if(leases.begin(), leases.end(), [&](const Lease& l) { return r.value && l.id == r.value->lease; });
      if (it == leases.end() || it->generation != r.value->generation || it->expires_at != r.value->expires_at)
        return make_error(Errc::stale_generation, "declared reclaim does not match the semaphore's leases")
            .because(reason::reclaim_mismatch);
      conflicts.push_back({it->expires_at, Errc::full_semaphore, "slot"});
      reclaim.push_back(*r.value);
      reclaimed.insert(it->id);
    }
    GITLOCKS_CHECK(queue_for_sem(name, d.after.value_or(std::numeric_limits<std::int64_t>::min()), false, conflicts,
                                 ahead, first_ticket));
    GITLOCKS_CHECK(resolve(s.declared, conflicts, reclaim));
  }
  // Remaining leases after reclaim.
  std::vector<Lease> remaining;
  for (const Lease& l : leases) {
    if (reclaimed.count(l.id)) continue;
    if (l.holder == ctx_.actor)
      return make_error(Errc::already_held, "you already hold a slot of semaphore '" + name + "'; extend it instead");
    remaining.push_back(l);
  }
  if (!remaining.empty() && existing->limit != limit)
    return make_error(Errc::limit_mismatch, "semaphore '" + name + "' has limit " + std::to_string(existing->limit) +
                                                " while held; every holder must agree on the limit");
  if (static_cast<std::int64_t>(remaining.size()) >= limit) {
    // Name the holders; the one whose slot frees first is in the fields.
    const Lease* first = &remaining[0];
    std::string holders;
    for (const Lease& l : remaining) {
      if (l.expires_at < first->expires_at) first = &l;
      if (holders.size() < kHolderListBytes) holders += (holders.empty() ? "" : ", ") + l.label();
    }
    Error e = refusal(Errc::full_semaphore,
                      "semaphore '" + name + "' is full (" + std::to_string(remaining.size()) + "/" +
                          std::to_string(limit) + "): held by " + holders + "; the first slot frees",
                      first->expires_at, first->holder, first->name);
    e.message += " unless released sooner";
    return e;
  }
  if (static_cast<std::int64_t>(remaining.size()) + ahead >= limit) {
    Error e(Errc::full_semaphore,
            "semaphore '" + name + "' has " + std::to_string(limit - static_cast<std::int64_t>(remaining.size())) +
                " free slot(s) of " + std::to_string(limit) + ", and " + std::to_string(ahead) +
                " waiter(s) queued before you take them first: the first is " + first_ticket->label());
    e.fields["holder"] = first_ticket->holder;
    e.fields["holder_name"] = first_ticket->name;
    e.fields["ticket"] = first_ticket->id;
    e.fields["ticket_seq"] = first_ticket->seq;
    e.fields["expires_at_ms"] = first_ticket->expires_at;
    if (now_) e.fields["checked_at_ms"] = *now_;
    return std::move(e).because(reason::queued_behind);
  }

  GITLOCKS_TRY(rec, get_for_write(res, Record::sem(name, limit)));
  rec->leases = std::move(remaining);
  rec->limit = limit;
  const std::int64_t gen = ++rec->generation;
  issue(*rec, res, new_lease(i, res, gen, s.expires_at, s.note, actor()));
  for (auto& g : ttl_time_guards(policy_, body_path(i, {}), s.expires_at)) guards_.push_back(std::move(g));
  if (s.declared.after) guards_.push_back(time_after(body_path(i, {"after"}), *s.declared.after));
  return Ok{};
}

}  // namespace gitlocks::detail
