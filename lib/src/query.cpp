#include "gitlocks/query.hpp"

#include <algorithm>
#include <map>

#include "gitlocks/attest.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/timefmt.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {
namespace {

json lease_row(const ListedLease& listed, std::int64_t now, const std::string& me) {
  const Resource& r = listed.resource;
  const Lease& l = listed.lease;
  json e = {{"kind", record_kind_name(r.kind)},
            {"resource", r.key()},
            {"lease", l.id},
            {"holder", l.holder},
            {"name", l.name},
            {"generation", l.generation},
            {"expires_at", l.expires_at},
            {"expires_in_ms", l.expires_at - now},
            {"created_at", l.created_at},
            {"live", l.live_at(now)},
            {"mine", l.holder == me}};
  if (r.kind == RecordKind::path) {
    e["path"] = l.path;
    e["mode"] = l.mode;
  } else {
    e["sem"] = r.name;
    e["limit"] = listed.limit;
  }
  if (l.note) e["note"] = *l.note;
  if (const auto& gone = listed.released) {
    e["live"] = false;
    e["released_by"] = gone->by;
    e["released_by_name"] = gone->by_name;
    e["release_reason"] = gone->reason;
  }
  return e;
}

// The leases a record shows: its live leases, with `include_expired` also
// the expired ones and the lease an admin force-released last (not live).
void listed_of(const Record& rec, std::int64_t now, bool include_expired, std::vector<ListedLease>& out) {
  for (const Lease& l : rec.leases)
    if (include_expired || l.live_at(now)) out.push_back({rec.resource, rec.limit, l, std::nullopt});
  if (const auto& gone = rec.released; include_expired && gone)
    out.push_back({rec.resource, rec.limit, gone->lease, gone});
}

// How many leases listed_of() gives, without listing them.
std::size_t row_count(const Record& rec, std::int64_t now, bool include_expired) {
  if (include_expired) return rec.leases.size() + (rec.released ? 1 : 0);
  return static_cast<std::size_t>(
      std::count_if(rec.leases.begin(), rec.leases.end(), [&](const Lease& l) { return l.live_at(now); }));
}

bool overlaps_any(const Lease& lease, const std::vector<RepoPath>& filters) {
  auto lp = parse_repo_path(lease.path);
  return lp.ok() &&
         std::any_of(filters.begin(), filters.end(), [&](const RepoPath& f) { return paths_overlap(f, *lp); });
}

// By resource key ("KIND:NAME"), then generation. Keys of one kind share
// their prefix, so their names decide (no key is built).
void sort_listed(std::vector<ListedLease>& leases) {
  std::sort(leases.begin(), leases.end(), [](const ListedLease& x, const ListedLease& y) {
    const Resource& rx = x.resource;
    const Resource& ry = y.resource;
    if (rx.kind != ry.kind) return rx.key() < ry.key();
    if (rx.name != ry.name) return rx.name < ry.name;
    return x.lease.generation < y.lease.generation;
  });
}

json rows_of(const std::vector<ListedLease>& leases, std::int64_t now, const std::string& me) {
  json rows = json::array();
  for (const auto& l : leases) rows.push_back(lease_row(l, now, me));
  return rows;
}

// Every record read: what a listing without filters, or with a filter that
// has leases below it, needs.
Result<std::vector<ListedLease>> scan(StateReader& reader, std::int64_t now, const std::vector<RepoPath>& filters,
                                      bool include_expired) {
  std::vector<ListedLease> out;
  std::vector<ListedLease> of_record;
  GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& rec) {
    const RecordKind kind = rec.resource.kind;
    if (!holds_leases(kind)) return true;
    if (kind == RecordKind::sem && !filters.empty()) return true;
    of_record.clear();
    listed_of(rec, now, include_expired, of_record);
    for (auto& l : of_record) {
      if (kind == RecordKind::path && !filters.empty() && !overlaps_any(l.lease, filters)) continue;
      out.push_back(std::move(l));
    }
    return true;
  }));
  sort_listed(out);
  return out;
}

}  // namespace

std::optional<std::int64_t> admission_time(const TransitionCommit& tc, const json& packet) {
  auto recorded = recorded_admission_time(tc.attestation_stored, loose_claimed_at_ms(packet));
  if (!recorded.ok() || !*recorded) return std::nullopt;
  return (*recorded)->ms;
}

Result<std::vector<ListedLease>> listed_leases(StateReader& reader, std::int64_t now,
                                               const std::vector<RepoPath>& filters, bool include_expired) {
  if (filters.empty()) return scan(reader, now, filters, include_expired);
  // The records that can hold a lease overlapping a filter without a scan:
  // the filter's own and its ancestors' (by resource, each read once).
  std::map<std::string, std::optional<Record>> records;
  for (const auto& f : filters) {
    std::vector<std::string> keys = proper_ancestors(f);
    keys.push_back(f.key());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::string resource = path_resource(keys[i]);
      auto at = records.find(resource);
      if (at == records.end()) {
        GITLOCKS_TRY(rec, reader.valid_record(resource));
        at = records.emplace(resource, std::move(rec)).first;
      }
      // Leases strictly below a filter are known only to its markers: when
      // any holder has some, the listing needs every record.
      const std::optional<Record>& rec = at->second;
      if (i + 1 == keys.size() && rec && !rec->below.empty()) return scan(reader, now, filters, include_expired);
    }
  }
  std::vector<ListedLease> out;
  std::vector<ListedLease> of_record;
  for (const auto& [resource, rec] : records) {
    if (!rec || rec->resource.kind != RecordKind::path) continue;
    of_record.clear();
    listed_of(*rec, now, include_expired, of_record);
    for (auto& l : of_record)
      if (overlaps_any(l.lease, filters)) out.push_back(std::move(l));
  }
  sort_listed(out);
  return out;
}

Result<std::vector<ListedLease>> others_intents(StateReader& reader, std::int64_t now,
                                                const std::vector<RepoPath>& paths, const std::string& actor) {
  std::vector<ListedLease> out;
  if (paths.empty()) return out;
  GITLOCKS_TRY(listed, listed_leases(reader, now, paths, false));
  for (auto& l : listed)
    if (l.resource.kind == RecordKind::path && l.lease.intent() && l.lease.holder != actor) out.push_back(std::move(l));
  return out;
}

json intent_json(const Lease& intent) {
  return {{"holder", intent.holder},
          {"holder_name", intent.name},
          {"path", intent.path},
          {"lease", intent.id},
          {"expires_at", intent.expires_at}};
}

std::string intent_warning(const Lease& intent, std::int64_t now) {
  return intent.label() + " intends to change " + intent.path + " until " + format_when(intent.expires_at, now);
}

Result<json> list_leases(StateReader& reader, std::int64_t now, const std::vector<RepoPath>& filters,
                         bool include_expired, const std::string& me) {
  GITLOCKS_TRY(leases, listed_leases(reader, now, filters, include_expired));
  return rows_of(leases, now, me);
}

Status for_each_lease(StateReader& reader, std::int64_t now, bool include_expired, const std::string& me,
                      const std::function<void(std::size_t rows)>& begin,
                      const std::function<bool(const json& row)>& fn) {
  // Pass 1: the resources with rows to show, sorted (records are stored by a
  // hash of their name, so the tree order is not the listing's order).
  std::vector<std::string> resources;
  std::size_t count = 0;
  GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& rec) {
    if (!holds_leases(rec.resource.kind)) return true;
    const std::size_t n = row_count(rec, now, include_expired);
    if (n == 0) return true;
    count += n;
    resources.push_back(rec.resource.key());
    return true;
  }));
  std::sort(resources.begin(), resources.end());
  begin(count);
  // Pass 2: each record again, its rows in generation order.
  for (const auto& resource : resources) {
    GITLOCKS_TRY(rec, reader.valid_record(resource));
    if (!rec) return make_error(Errc::store_read, "record of " + resource + " vanished between two reads");
    std::vector<ListedLease> batch;
    listed_of(*rec, now, include_expired, batch);
    sort_listed(batch);
    for (const auto& l : batch)
      if (!fn(lease_row(l, now, me))) return Ok{};
  }
  return Ok{};
}

Result<std::optional<std::string>> lease_resource_in_history(ObjectStore& store, const Oid& tip, const std::string& id,
                                                             std::size_t depth) {
  using Found = std::optional<std::string>;
  // The resource an op of a verified packet names (its path as admitted is
  // already normalised; parsing it again costs nothing and keeps one rule).
  auto resource_of = [](const json& op) -> Found {
    if (auto p = op.find("path"); p != op.end() && p->is_string()) {
      auto path = parse_repo_path(p->get<std::string>());
      if (path.ok()) return path_resource(path->key());
      return std::nullopt;
    }
    if (auto s = op.find("sem"); s != op.end() && s->is_string()) return sem_resource(s->get<std::string>());
    return std::nullopt;
  };
  Oid cur = tip;
  for (std::size_t n = 0; n < depth && !cur.empty(); ++n) {
    GITLOCKS_TRY(tc, read_transition_commit(store, cur));
    auto doc = canon_parse(tc.packet_stored, CanonMode::strict);
    if (!doc.ok()) return doc.error();
    const json& packet = (*doc)["packet"];
    const json* ops = nullptr;
    if (packet.contains("body") && packet["body"].is_object()) {
      auto it = packet["body"].find("ops");
      if (it != packet["body"].end() && it->is_array()) ops = &*it;
    }
    if (ops && packet.contains("instance") && packet["instance"].is_string()) {
      const std::string instance = packet["instance"].get<std::string>();
      for (std::size_t i = 0; i < ops->size(); ++i) {
        const json& op = (*ops)[i];
        if (!op.is_object() || !op.contains("op") || !op["op"].is_string()) continue;
        const std::string kind = op["op"].get<std::string>();
        auto res = resource_of(op);
        if (!res) continue;
        if ((kind == "claim" || kind == "sem-acquire") && lease_id(instance, i, *res) == id) return Found{*res};
        if (auto l = op.find("lease"); l != op.end() && *l == id) return Found{*res};
      }
    }
    // Across a cut when the chain it follows is here (docs/FORMAT.md "The cut").
    GITLOCKS_TRY(c, store.read_commit(cur));
    cur = chain_parent(store, cur, c).value_or(Oid{});
  }
  return Found{};
}

}  // namespace gitlocks

namespace gitlocks {

bool clears_with_time(Errc c) {
  return c == Errc::held_path || c == Errc::full_semaphore || c == Errc::family_policy ||
         c == Errc::stale_retries_exhausted;
}

bool is_path_conflict(Errc c) { return c == Errc::held_path || c == Errc::family_policy; }

bool wants_conflict(const Policy& policy, const Wanted& a, const Wanted& b) {
  if (a.path.has_value() != b.path.has_value()) return false;
  if (!a.path) return a.sem == b.sem;
  if (!(a.shared && b.shared) && paths_overlap(*a.path, *b.path)) return true;
  const auto of_b = families_of(policy, *b.path);
  for (const Family* f : families_of(policy, *a.path))
    if (f->exclusive && std::find(of_b.begin(), of_b.end(), f) != of_b.end()) return true;
  return false;
}

Error lease_lost_by_refusal(const std::string& lease, const std::string& resource, std::int64_t expires_at,
                            std::int64_t now, const Error& refusal) {
  const bool by_admin = refusal.has_reason(reason::force_released);
  if (!by_admin && !live_until(expires_at, now)) return lease_lost_by_expiry(lease, resource, expires_at, now);
  Error e(Errc::lease_lost,
          by_admin ? "lost: " + refusal.message
                   : "lost: the lease " + lease + " on " + resource + ": its renewal was refused (" +
                         std::string(refusal.reason()) + "): " + refusal.message,
          refusal.fields);
  if (!by_admin) {
    e.fields["refusal_code"] = std::string(errc_name(refusal.code));
    e.fields["refusal_reason"] = std::string(refusal.reason());
  }
  e.fields["lease"] = lease;
  e.fields["resource"] = resource;
  return std::move(e).because(by_admin ? reason::force_released : reason::renewal_refused);
}

Error lease_lost_by_expiry(const std::string& lease, const std::string& resource, std::int64_t expires_at,
                           std::int64_t now) {
  Error e(Errc::lease_lost,
          "lost: the lease " + lease + " on " + resource + " expired " + format_when(expires_at, now) +
              ", before a renewal was published",
          {{"lease", lease}, {"resource", resource}, {"expires_at_ms", expires_at}, {"checked_at_ms", now}});
  return std::move(e).because(reason::expired);
}

Result<std::vector<RepoPath>> path_filters(const std::vector<std::string>& typed, PathCase path_case) {
  std::vector<RepoPath> out;
  out.reserve(typed.size());
  for (const auto& p : typed) {
    GITLOCKS_TRY(text, normalize_path_input(p, path_case));
    GITLOCKS_TRY(rp, parse_repo_path(text, path_case));
    out.push_back(std::move(rp));
  }
  return out;
}

Result<std::string> resource_of(const std::string& typed, PathCase path_case) {
  if (typed.rfind("sem:", 0) == 0) return typed;
  GITLOCKS_TRY(text, normalize_path_input(typed.rfind("path:", 0) == 0 ? typed.substr(5) : typed, path_case));
  GITLOCKS_TRY(p, parse_repo_path(text, path_case));
  return path_resource(p.key());
}

Result<json> readable_policy(StateReader& reader, const Snapshot& snap) {
  GITLOCKS_TRY(policy, reader.policy());
  if (const Vault* vault = snap.vault(); vault && policy.contains("families")) {  // PRIVATE: the sealed families
    const EpochKey* key = vault->key(snap.epoch());
    if (!key) return make_error(Errc::not_member, "no key of epoch " + std::to_string(snap.epoch()) + " in this vault");
    auto families = open_document(policy["families"], *key, snap.store_id, "policy.json#families");
    if (!families.ok()) return make_error(Errc::store_read, "policy.json families: " + families.error().message);
    policy["families"] = std::move(*families);
  }
  return policy;
}

Result<json> status_head(StateReader& reader, const Snapshot& snap, std::int64_t now) {
  if (!snap.commit) return make_error(Errc::usage, "status_head needs a store");
  GITLOCKS_TRY(policy, readable_policy(reader, snap));
  json out = {{"store", snap.store_id}, {"commit", *snap.commit}, {"now_ms", now}};
  out["policy"] = {{"min_ttl_ms", policy["min_ttl_ms"]},
                   {"max_ttl_ms", policy["max_ttl_ms"]},
                   {"families", policy["families"]},
                   {"owner", policy["owner"]}};
  out["policy_hash"] = snap.policy_hash;
  out["guard_time"] = snap.guard_time() ? json{{"enabled", true},
                                               {"audience", snap.guard_time()->audience},
                                               {"service_key", snap.guard_time()->service_key}}
                                        : json{{"enabled", false}};
  out["leases"] = json::array();
  // The waiters' queue (docs/FORMAT.md "Tickets"): its live tickets, in order.
  json queue = json::array();
  GITLOCKS_TRY(q, reader.valid_record(kQueueResource));
  if (q)
    for (const Ticket& t : q->tickets) {
      if (!t.live_at(now)) continue;
      json wants = json::array();
      for (const TicketWant& w : t.wants) wants.push_back(w.to_json());
      queue.push_back({{"ticket", t.id},
                       {"seq", t.seq},
                       {"holder", t.holder},
                       {"holder_name", t.name},
                       {"wants", std::move(wants)},
                       {"expires_at", t.expires_at},
                       {"created_at", t.created_at}});
    }
  out["queue"] = std::move(queue);
  return out;
}

Result<json> status_document(StateReader& reader, const Snapshot& snap, const StatusQuery& q) {
  GITLOCKS_TRY(doc, status_head(reader, snap, q.now));
  GITLOCKS_TRY(rows, list_leases(reader, q.now, q.paths, q.include_expired, q.me));
  doc["leases"] = std::move(rows);
  return doc;
}

Result<json> fence(StateReader& reader, const std::string& resource, std::int64_t generation, std::int64_t now) {
  GITLOCKS_TRY(rec, reader.valid_record(resource));
  return fence_record(rec, resource, generation, now);
}

Result<json> fence_record(const std::optional<Record>& rec, const std::string& resource, std::int64_t generation,
                          std::int64_t now) {
  // A family record has no generation: it is at 0, as a resource never claimed.
  const std::int64_t current = rec ? rec->generation : 0;
  if (rec) {
    for (const Lease& l : rec->leases) {
      if (l.generation != generation || !l.live_at(now)) continue;
      return json{
          {"resource", resource}, {"generation", generation},  {"live", true}, {"lease", l.id}, {"holder", l.holder},
          {"name", l.name},       {"expires_at", l.expires_at}};
    }
  }
  return Error(Errc::stale_generation,
               "generation " + std::to_string(generation) + " of " + resource + " is not live (current generation " +
                   std::to_string(current) + ")",
               {{"resource", resource}, {"generation", generation}, {"current_generation", current}});
}

bool needs_structural_note(const ReplaySummary& s, const MemberVault& mv) {
  return s.structural > 0 || (mv.is_private && !mv.vault);
}

json replay_summary_json(const ReplaySummary& s, const MemberVault& mv) {
  auto opt = [](const std::optional<Oid>& o) { return o ? json(*o) : json(nullptr); };
  json out = {{"commits", s.commits},
              {"invalid", s.invalid},
              {"structural", s.structural},
              {"tip", opt(s.tip)},
              {"first_invalid", opt(s.first_invalid)},
              {"private", mv.is_private},
              {"member", mv.vault.has_value()},
              {"checkpoints", {{"valid", s.checkpoints}, {"invalid", s.invalid_checkpoints}}},
              {"cut_start", opt(s.cut_start)}};
  if (needs_structural_note(s, mv)) out["note"] = std::string(kStructuralNote);
  return out;
}

}  // namespace gitlocks
