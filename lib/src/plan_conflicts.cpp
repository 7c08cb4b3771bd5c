// Conflicts of the ops planner: checking what a body declares about the
// leases in its way (reclaims, after) or, when proposing, filling it in;
// and the refusals that name who stands in the way and until when.
#include <algorithm>

#include "gitlocks/query.hpp"
#include "gitlocks/timefmt.hpp"
#include "plan_internal.h"

namespace gitlocks::detail {

// The refusal for conflict `c`: "<what> until 2026-12-01T11:16:33Z, in
// 9m59s" (relative to T when proposing), with the holder's key and name,
// the raw expiry and the path in the error's fields. A holder known only
// from a marker or a family record is named from its live lease there.
Error Planner::conflict_error(const Conflict& c, const std::string& suffix) {
  Conflict n = c;
  if (now_ && n.name.empty() && !n.holder.empty() && (!n.below.empty() || n.family)) name_from_lease(n);
  std::string what = n.what;
  const std::string key12 = n.holder.substr(0, 12);
  if (!n.name.empty() && !n.below.empty() && !n.path.empty())
    what = "'" + n.path + "' (below '" + n.below + "/') is held " + n.mode + " by " + n.name + " (" + key12 + ")";
  else if (!n.name.empty() && n.family && !n.path.empty())
    what = "family '" + n.family->name + "' is held by " + n.name + " (" + key12 + "), through '" + n.path + "'";
  Error e = refusal(c.reason, what + suffix + " until", n.expires_at, n.holder, n.name);
  if (!n.path.empty()) e.fields["path"] = n.path;
  if (n.family) e.fields["family"] = n.family->name;
  if (!n.ticket.empty()) {
    e.fields["ticket"] = n.ticket;
    e.fields["ticket_seq"] = n.ticket_seq;
    e = std::move(e).because(reason::queued_behind);
  }
  return e;
}

// `text` followed by the instant `at` ("2026-12-01T11:16:33Z, in 9m59s"
// when proposing at T), with at, T and the holder in the fields.
Error Planner::refusal(Errc code, const std::string& text, std::int64_t at, const std::string& holder,
                       const std::string& name) const {
  Error e(code, text + " " + (now_ ? format_when(at, *now_) : format_instant(at)));
  e.fields["expires_at_ms"] = at;
  if (now_) e.fields["checked_at_ms"] = *now_;
  if (!holder.empty()) {
    e.fields["holder"] = holder;
    e.fields["holder_name"] = name;
  }
  return e;
}

// Finds the live lease of `c.holder` that its marker (below) or family
// entry stands for, for its name and path. Reads only the records the
// index points at (list_leases with filters); a refusal's cost.
void Planner::name_from_lease(Conflict& c) {
  std::vector<RepoPath> filters;
  if (!c.below.empty()) {
    auto p = parse_repo_path(c.below);
    if (p.ok()) filters.push_back(*p);
  } else {
    filters = c.family->members;
  }
  if (filters.empty()) return;
  auto leases = listed_leases(reader_, *now_, filters, false);
  if (!leases.ok()) return;
  const bool want_exclusive = c.mode == "exclusive";
  for (const ListedLease& listed : *leases) {
    const Lease& l = listed.lease;
    if (l.holder != c.holder || listed.resource.kind != RecordKind::path || l.intent()) continue;
    if (!c.below.empty() && (l.path == c.below || l.path == c.below + "/")) continue;
    if (!c.below.empty() && want_exclusive && l.mode != "exclusive") continue;
    c.name = l.name;
    c.path = l.path;
    return;
  }
}

// Checks what a body declares about conflicts (reclaims, after) or, when
// proposing, decides it.
Status Planner::resolve(Declared& d, const std::vector<Conflict>& conflicts, const std::vector<Reclaim>& must_reclaim) {
  if (now_) {
    for (const auto& c : conflicts)
      if (live_until(c.expires_at, *now_)) return conflict_error(c);
    d.has_reclaims = !must_reclaim.empty();
    d.reclaims_listed = d.has_reclaims;
    d.reclaims.clear();
    for (const Reclaim& r : must_reclaim) d.reclaims.push_back({Ok{}, r});
    d.has_after = !conflicts.empty();
    d.after.reset();
    if (d.has_after) {
      std::int64_t after = 0;
      for (const auto& c : conflicts) after = std::max(after, c.expires_at);
      d.after = after;
    }
    return Ok{};
  }
  if (d.has_reclaims && !d.reclaims_listed)
    return make_error(Errc::bad_json, "'reclaims' must be a non-empty array when present");
  // Declared exactly as the state has them: the same leases, in order, each
  // an object of exactly those three fields.
  bool same = d.reclaims.size() == must_reclaim.size();
  for (std::size_t k = 0; same && k < must_reclaim.size(); ++k)
    same = d.reclaims[k].keys.ok() && d.reclaims[k].value && *d.reclaims[k].value == must_reclaim[k];
  if (!same)
    return make_error(Errc::stale_generation, "declared reclaims do not match the leases in the state")
        .because(reason::reclaim_mismatch);
  if (conflicts.empty()) {
    if (d.has_after) return make_error(Errc::bad_json, "'after' declared without a conflict");
    return Ok{};
  }
  if (!d.after) return conflict_error(conflicts.front(), " (no 'after' declared)");
  for (const auto& c : conflicts)
    if (c.expires_at > *d.after) return conflict_error(c);
  return Ok{};
}

}  // namespace gitlocks::detail
