#include "gitlocks/plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "gitlocks/attest.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/timefmt.hpp"
#include "gitlocks/vault.hpp"
#include "records.h"
#include "tree_edit.h"

namespace gitlocks {

std::optional<Error> ttl_bound_error(const PlanOutcome& o, std::int64_t now) {
  if (!o.body.is_object() || !o.body.contains("ops") || !o.body["ops"].is_array()) return std::nullopt;
  for (const auto& op : o.body["ops"]) {
    if (!op.is_object() || !op.contains("expires_at") || !op["expires_at"].is_number_integer()) continue;
    const std::int64_t ttl = op["expires_at"].get<std::int64_t>() - now;
    const bool over = ttl > o.max_ttl_ms;
    if (!over && ttl >= o.min_ttl_ms) continue;
    const std::int64_t bound = over ? o.max_ttl_ms : o.min_ttl_ms;
    Error e(Errc::guard_window, "ttl " + format_duration(ttl) +
                                    (over ? " exceeds this store's max_ttl " : " is below this store's min_ttl ") +
                                    format_duration(bound));
    e.fields["ttl_ms"] = std::to_string(ttl);
    e.fields[over ? "max_ttl_ms" : "min_ttl_ms"] = std::to_string(bound);
    return e;
  }
  return std::nullopt;
}

Error guard_window_error(const PlanOutcome& o, std::int64_t t) {
  if (auto e = ttl_bound_error(o, t)) return *e;
  Error e(Errc::guard_window, "admission time " + format_instant_ms(t) + " is outside the guard interval [" +
                                  format_instant_ms(o.interval.lo) + ", " + format_instant_ms(o.interval.hi) + "]");
  e.fields["admitted_at_ms"] = std::to_string(t);
  e.fields["interval_lo_ms"] = std::to_string(o.interval.lo);
  e.fields["interval_hi_ms"] = std::to_string(o.interval.hi);
  return e;
}

std::string lease_id(const std::string& instance, std::size_t op_index, const std::string& resource) {
  return sha256_hex(instance + "\n" + std::to_string(op_index) + "\n" + resource).substr(0, 24);
}

namespace {

constexpr std::size_t kMaxOps = 10000;
constexpr std::size_t kMaxNoteBytes = 1024;
constexpr std::size_t kMaxNameBytes = 256;
constexpr std::int64_t kMaxSemLimit = 1000000;

// A live-or-dead lease (or marker) that stands in the way of an op. The op may
// only be admitted after it expired: T > expires_at.
struct Conflict {
  Conflict(std::int64_t e, Errc r, std::string w, std::string h = "", std::string n = "", std::string p = "",
           std::string b = "", std::string m = "", const Family* f = nullptr)
      : expires_at(e),
        reason(r),
        what(std::move(w)),
        holder(std::move(h)),
        name(std::move(n)),
        path(std::move(p)),
        below(std::move(b)),
        mode(std::move(m)),
        family(f) {}
  std::int64_t expires_at;
  Errc reason;
  std::string what;
  // Who stands in the way (the holder's key and name), for the error's
  // fields; `below` is the key of the path whose marker says the holder has
  // leases under it (the name and the lease are then looked up when the
  // refusal is reported), `family` the family held.
  std::string holder;
  std::string name;
  std::string path;
  std::string below;
  std::string mode;  // of the leases below
  const Family* family;
};

json body_path(std::size_t op, std::initializer_list<json> rest) {
  json p = json::array({"ops", op});
  for (const auto& r : rest) p.push_back(r);
  return p;
}

json time_after(const json& path) {
  return json{{"op", "gt"}, {"left", {{"from", "time"}}}, {"right", {{"from", "body"}, {"path", path}}}};
}

json time_not_after(const json& path) {
  return json{{"op", "lte"}, {"left", {{"from", "time"}}}, {"right", {{"from", "body"}, {"path", path}}}};
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
  if (name.empty() || name.size() > 255)
    return make_error(Errc::usage, std::string(what) + " name must be 1-255 bytes");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f) return make_error(Errc::usage, std::string(what) + " name contains a control character");
  return Ok{};
}

class Planner {
 public:
  Planner(ObjectStore& store, StateReader& reader, const RecordCodec& codec, const Policy& policy,
          const PlanContext& ctx, std::optional<std::int64_t> now, int format)
      : store_(store), reader_(reader), codec_(codec), policy_(policy), ctx_(ctx), now_(now), format_(format) {}

  Status run(json& body, PlanOutcome& out) {
    GITLOCKS_CHECK(check_keys(body, {"created_at", "name", "ops"}, "body"));
    GITLOCKS_TRY(created, get_int(body, "created_at"));
    if (created < 0) return make_error(Errc::usage, "created_at must not be negative");
    created_at_ = created;
    GITLOCKS_TRY(name, get_string(body, "name"));
    if (name.size() > kMaxNameBytes) return make_error(Errc::usage, "holder name longer than 256 bytes");
    name_ = name;
    auto ops = body.find("ops");
    if (ops == body.end() || !ops->is_array() || ops->empty())
      return make_error(Errc::bad_json, "body needs a non-empty 'ops' array");
    if (ops->size() > kMaxOps) return make_error(Errc::usage, "more than 10000 operations in one transition");
    guards_ = json::array();
    leases_ = json::array();
    std::string action;
    for (std::size_t i = 0; i < ops->size(); ++i) {
      json& op = (*ops)[i];
      if (!op.is_object()) return make_error(Errc::bad_json, "op " + std::to_string(i) + " must be an object");
      GITLOCKS_TRY(kind, get_string(op, "op"));
      Status st = Ok{};
      std::string act = kind;
      if (kind == "claim") {
        st = claim(op, i);
        if (st.ok() && op.contains("after")) act = "reclaim";
      } else if (kind == "sem-acquire") {
        st = sem_acquire(op, i);
      } else if (kind == "extend") {
        st = extend(op, i);
      } else if (kind == "release" || kind == "sem-release") {
        st = release(op, i, kind == "sem-release");
      } else if (kind == "sweep") {
        st = sweep(op, i);
      } else {
        return make_error(Errc::bad_json, "unknown op '" + kind + "'");
      }
      if (!st.ok()) {
        Error e = st.error();
        if (ops->size() > 1) e.message = "op " + std::to_string(i) + " (" + kind + "): " + e.message;
        e.fields["op_index"] = std::to_string(i);
        e.fields["op_kind"] = kind;
        return e;
      }
      action = i == 0 ? act : "batch";
    }
    out.action = action;
    out.guards = guards_;
    out.leases = leases_;
    return Ok{};
  }

  // Writes dirty records and returns the successor state tree.
  Result<Oid> write(std::size_t& records_written) {
    detail::TreeUpdates updates;
    for (const auto& res : dirty_) {
      const json& rec = cache_.at(res);
      auto loc = codec_.location(res, format_);
      if (records::is_empty(rec)) {
        updates[loc] = std::nullopt;
        continue;
      }
      GITLOCKS_TRY(bytes, codec_.encode(loc, rec));
      GITLOCKS_TRY(id, store_.write_blob(bytes));
      if (&codec_ == &plain_codec()) store_.keep_written_parse(id, rec);
      updates[loc] = id;
      ++records_written;
    }
    GITLOCKS_TRY(root, detail::tree_apply(store_, reader_.root(), updates));
    if (!root) return make_error(Errc::store_write, "successor state is empty");
    return *root;
  }

 private:
  // The cached record of a resource; null json if it does not exist.
  Result<json*> get(const std::string& res) {
    auto it = cache_.find(res);
    if (it != cache_.end()) return &it->second;
    GITLOCKS_TRY(rec, reader_.record(res));
    json v = nullptr;
    if (rec) {
      GITLOCKS_CHECK(records::validate(*rec, res));
      v = std::move(*rec);
    }
    return &cache_.emplace(res, std::move(v)).first->second;
  }

  Result<json*> get_for_write(const std::string& res, const json& fresh) {
    GITLOCKS_TRY(rec, get(res));
    if (rec->is_null()) *rec = fresh;
    dirty_.insert(res);
    return rec;
  }

  std::vector<const Family*> families_of(const RepoPath& p) const {
    std::vector<const Family*> out;
    for (const auto& f : policy_.families)
      for (const auto& m : f.members)
        if (paths_overlap(m, p)) {
          out.push_back(&f);
          break;
        }
    return out;
  }

  static std::vector<std::string> ancestors(const RepoPath& p) {
    std::vector<std::string> out;
    std::string acc;
    for (std::size_t i = 0; i + 1 < p.components.size(); ++i) {
      if (i) acc += '/';
      acc += p.components[i];
      out.push_back(acc);
    }
    return out;
  }

  std::string holder_label(const json& lease) const {
    std::string n = lease.value("name", "");
    std::string k = lease.value("holder", "");
    return (n.empty() ? std::string("holder") : n) + " (" + k.substr(0, 12) + ")";
  }

  // The refusal for conflict `c`: "<what> until 2026-12-01T11:16:33Z, in
  // 9m59s" (relative to T when proposing), with the holder's key and name,
  // the raw expiry and the path in the error's fields. A holder known only
  // from a marker or a family record is named from its live lease there.
  Error conflict_error(const Conflict& c, const std::string& suffix = "") {
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
    return e;
  }

  // `text` followed by the instant `at` ("2026-12-01T11:16:33Z, in 9m59s"
  // when proposing at T), with at, T and the holder in the fields.
  Error refusal(Errc code, const std::string& text, std::int64_t at, const std::string& holder,
                const std::string& name) const {
    Error e(code, text + " " + (now_ ? format_when(at, *now_) : format_instant(at)));
    e.fields["expires_at_ms"] = std::to_string(at);
    if (now_) e.fields["checked_at_ms"] = std::to_string(*now_);
    if (!holder.empty()) {
      e.fields["holder"] = holder;
      e.fields["holder_name"] = name;
    }
    return e;
  }

  // Finds the live lease of `c.holder` that its marker (below) or family
  // entry stands for, for its name and path. Reads only the records the
  // index points at (list_leases with filters); a refusal's cost.
  void name_from_lease(Conflict& c) {
    std::vector<RepoPath> filters;
    if (!c.below.empty()) {
      auto p = parse_repo_path(c.below);
      if (p.ok()) filters.push_back(*p);
    } else {
      filters = c.family->members;
    }
    if (filters.empty()) return;
    auto rows = list_leases(reader_, *now_, filters, false, "");
    if (!rows.ok()) return;
    const bool want_exclusive = c.mode == "exclusive";
    for (const auto& r : *rows) {
      if (r.value("holder", "") != c.holder || !r.contains("path")) continue;
      const std::string path = r["path"].get<std::string>();
      if (!c.below.empty() && (path == c.below || path == c.below + "/")) continue;
      if (!c.below.empty() && want_exclusive && r.value("mode", "") != "exclusive") continue;
      c.name = r.value("name", "");
      c.path = path;
      return;
    }
  }

  // Checks what a body declares about conflicts (reclaims, after) or, when
  // proposing, fills it in.
  Status resolve(json& op, const std::vector<Conflict>& conflicts, json must_reclaim) {
    if (now_) {
      for (const auto& c : conflicts)
        if (c.expires_at >= *now_) return conflict_error(c);
      if (must_reclaim.empty()) op.erase("reclaims");
      else op["reclaims"] = must_reclaim;
      if (conflicts.empty()) {
        op.erase("after");
      } else {
        std::int64_t after = 0;
        for (const auto& c : conflicts) after = std::max(after, c.expires_at);
        op["after"] = after;
      }
      return Ok{};
    }
    json declared = op.contains("reclaims") ? op["reclaims"] : json::array();
    if (op.contains("reclaims") && (declared.empty() || !declared.is_array()))
      return make_error(Errc::bad_json, "'reclaims' must be a non-empty array when present");
    if (declared != must_reclaim)
      return make_error(Errc::stale_generation, "declared reclaims do not match the leases in the state")
          .because(reason::reclaim_mismatch);
    if (conflicts.empty()) {
      if (op.contains("after")) return make_error(Errc::bad_json, "'after' declared without a conflict");
      return Ok{};
    }
    auto after = get_int(op, "after");
    if (!after.ok()) return conflict_error(conflicts.front(), " (no 'after' declared)");
    for (const auto& c : conflicts)
      if (c.expires_at > *after) return conflict_error(c);
    return Ok{};
  }

  // The derived data of a lease on path `p`: `marker` edits the intention
  // markers of every ancestor, `family` the holder entry of every exclusive
  // family the path belongs to.
  template <class MarkerFn, class FamilyFn>
  Status update_derived(const RepoPath& p, MarkerFn marker, FamilyFn family) {
    for (const auto& a : ancestors(p)) {
      GITLOCKS_TRY(rec, get_for_write(path_resource(a), records::new_path(a)));
      marker(*rec);
    }
    for (const Family* f : families_of(p)) {
      if (!f->exclusive) continue;
      GITLOCKS_TRY(rec, get_for_write(family_resource(f->name), records::new_family(f->name)));
      family(*rec);
    }
    return Ok{};
  }

  // A lease is being removed from path `p`.
  Status forget_path_lease(const RepoPath& p, const json& lease) {
    const std::string holder = lease["holder"].get<std::string>();
    const bool excl = lease["mode"] == "exclusive";
    return update_derived(
        p, [&](json& rec) { records::drop_marker(rec, holder, excl); },
        [&](json& rec) { records::drop_family_holder(rec, holder); });
  }

  // The actor's new lease on path `p`.
  Status remember_path_lease(const RepoPath& p, bool excl, std::int64_t until) {
    return update_derived(
        p, [&](json& rec) { records::bump_marker(rec, ctx_.actor, excl, until); },
        [&](json& rec) { records::bump_family_holder(rec, ctx_.actor, until); });
  }

  // The actor's lease on path `p` was renewed until `until`.
  Status remember_path_lease_renewal(const RepoPath& p, bool excl, std::int64_t until) {
    return update_derived(
        p, [&](json& rec) { records::renew_marker(rec, ctx_.actor, excl, until); },
        [&](json& rec) { records::renew_family_holder(rec, ctx_.actor, until); });
  }

  Result<std::int64_t> expiry(const json& op) {
    GITLOCKS_TRY(e, get_int(op, "expires_at"));
    if (e < 0) return make_error(Errc::usage, "expires_at must not be negative");
    return e;
  }

  Status claim(json& op, std::size_t i) {
    GITLOCKS_CHECK(check_keys(op, {"op", "path", "mode", "expires_at", "note", "reclaims", "after"}, "claim op"));
    GITLOCKS_TRY(path_text, get_string(op, "path"));
    // NFC, and folded in a case-insensitive store: one spelling per resource.
    GITLOCKS_TRY(p, parse_repo_path(path_text, policy_.path_case()));
    if (p.display() != path_text) return make_error(Errc::bad_path, "path is not normalised");
    GITLOCKS_TRY(mode, get_string(op, "mode"));
    if (mode != "exclusive" && mode != "shared") return make_error(Errc::usage, "mode must be exclusive or shared");
    const bool excl = mode == "exclusive";
    GITLOCKS_TRY(expires_at, expiry(op));
    GITLOCKS_TRY(note, opt_string(op, "note", kMaxNoteBytes));
    const std::string key = p.key();
    const std::string res = path_resource(key);
    auto fams = families_of(p);
    for (const Family* f : fams)
      if (!f->exclusive && excl)
        return make_error(Errc::family_policy,
                          "family '" + f->name + "' is shared: its members may only be claimed in shared mode");

    std::vector<Conflict> conflicts;
    for (const auto& a : ancestors(p)) {
      GITLOCKS_TRY(rec, get(path_resource(a)));
      if (rec->is_null()) continue;
      for (const auto& l : (*rec)["leases"])
        if (l["holder"] != ctx_.actor && (excl || l["mode"] == "exclusive"))
          conflicts.push_back({l["expires_at"].get<std::int64_t>(), Errc::held_path,
                               "'" + a + "/' is held " + l["mode"].get<std::string>() + " by " + holder_label(l),
                               l.value("holder", ""), l.value("name", ""), l.value("path", a + "/")});
    }
    json must_reclaim = json::array();
    GITLOCKS_TRY(target, get(res));
    if (!target->is_null()) {
      for (const auto& l : (*target)["leases"]) {
        bool own = l["holder"] == ctx_.actor;
        if (!own && !excl && l["mode"] == "shared") continue;
        conflicts.push_back(
            {l["expires_at"].get<std::int64_t>(), own ? Errc::already_held : Errc::held_path,
             own ? "you already hold '" + key + "' (lease " + l["id"].get<std::string>() + "); extend it instead"
                 : "'" + key + "' is held " + l["mode"].get<std::string>() + " by " + holder_label(l),
             l.value("holder", ""), l.value("name", ""), l.value("path", key)});
        must_reclaim.push_back({{"lease", l["id"]}, {"generation", l["generation"]}, {"expires_at", l["expires_at"]}});
      }
      for (const auto& [h, m] : (*target)["below"].items()) {
        if (h == ctx_.actor) continue;
        if (m["x"].get<std::int64_t>() > 0)
          conflicts.push_back({m["xu"].get<std::int64_t>(), Errc::held_path,
                               "a path below '" + key + "/' is held exclusive by " + h.substr(0, 12), h, "", "", key,
                               "exclusive"});
        if (excl && m["s"].get<std::int64_t>() > 0)
          conflicts.push_back({m["su"].get<std::int64_t>(), Errc::held_path,
                               "a path below '" + key + "/' is held shared by " + h.substr(0, 12), h, "", "", key,
                               "shared"});
      }
    }
    for (const Family* f : fams) {
      if (!f->exclusive) continue;
      GITLOCKS_TRY(rec, get(family_resource(f->name)));
      if (rec->is_null()) continue;
      for (const auto& [h, e] : (*rec)["holders"].items())
        if (h != ctx_.actor)
          conflicts.push_back({e["until"].get<std::int64_t>(), Errc::family_policy,
                               "family '" + f->name + "' is held by " + h.substr(0, 12), h, "", "", "", "", f});
    }
    GITLOCKS_CHECK(resolve(op, conflicts, must_reclaim));

    // Effects: copy body values into the state; nothing depends on T.
    GITLOCKS_TRY(rec, get_for_write(res, records::new_path(key)));
    for (const auto& r : must_reclaim) {
      auto& leases = (*rec)["leases"];
      auto it = std::find_if(leases.begin(), leases.end(), [&](const json& l) { return l["id"] == r["lease"]; });
      json old = *it;
      leases.erase(it);
      GITLOCKS_CHECK(forget_path_lease(p, old));
    }
    std::int64_t gen = (*rec)["generation"].get<std::int64_t>() + 1;
    (*rec)["generation"] = gen;
    json lease = {{"id", lease_id(ctx_.instance, i, res)},
                  {"holder", ctx_.actor},
                  {"name", name_},
                  {"mode", mode},
                  {"generation", gen},
                  {"expires_at", expires_at},
                  {"created_at", created_at_},
                  {"path", p.display()}};
    if (note) lease["note"] = *note;
    (*rec)["leases"].push_back(lease);
    GITLOCKS_CHECK(remember_path_lease(p, excl, expires_at));
    leases_.push_back({{"resource", res}, {"lease", lease["id"]}, {"generation", gen}, {"expires_at", expires_at}});

    for (auto& g : ttl_guards(policy_, body_path(i, {}))) guards_.push_back(g);
    if (op.contains("after")) guards_.push_back(time_after(body_path(i, {"after"})));
    return Ok{};
  }

  Status sem_acquire(json& op, std::size_t i) {
    GITLOCKS_CHECK(check_keys(op, {"op", "sem", "limit", "expires_at", "note", "reclaims", "after"}, "sem-acquire op"));
    GITLOCKS_TRY(name, get_string(op, "sem"));
    GITLOCKS_CHECK(check_name(name, "semaphore"));
    GITLOCKS_TRY(limit, get_int(op, "limit"));
    if (limit < 1 || limit > kMaxSemLimit) return make_error(Errc::usage, "semaphore limit must be 1..1000000");
    GITLOCKS_TRY(expires_at, expiry(op));
    GITLOCKS_TRY(note, opt_string(op, "note", kMaxNoteBytes));
    const std::string res = sem_resource(name);
    GITLOCKS_TRY(existing, get(res));
    json leases = existing->is_null() ? json::array() : (*existing)["leases"];

    json reclaim = json::array();
    std::vector<Conflict> conflicts;
    if (now_) {
      for (const auto& l : leases) {
        bool own = l["holder"] == ctx_.actor;
        std::int64_t e = l["expires_at"].get<std::int64_t>();
        if (e < *now_) {
          reclaim.push_back({{"lease", l["id"]}, {"generation", l["generation"]}, {"expires_at", l["expires_at"]}});
          conflicts.push_back({e, Errc::full_semaphore, "slot"});
        } else if (own) {
          return make_error(Errc::already_held, "you already hold a slot of semaphore '" + name + "' (lease " +
                                                    l["id"].get<std::string>() + "); extend it instead");
        }
      }
      GITLOCKS_CHECK(resolve(op, conflicts, reclaim));
    } else {
      auto declared = op.find("reclaims");
      if (declared != op.end()) {
        if (!declared->is_array() || declared->empty())
          return make_error(Errc::bad_json, "'reclaims' must be a non-empty array when present");
        for (const auto& r : *declared) {
          GITLOCKS_CHECK(check_keys(r, {"lease", "generation", "expires_at"}, "reclaim"));
          auto it = std::find_if(leases.begin(), leases.end(), [&](const json& l) { return l["id"] == r["lease"]; });
          if (it == leases.end() || (*it)["generation"] != r["generation"] || (*it)["expires_at"] != r["expires_at"])
            return make_error(Errc::stale_generation, "declared reclaim does not match the semaphore's leases")
                .because(reason::reclaim_mismatch);
          conflicts.push_back({(*it)["expires_at"].get<std::int64_t>(), Errc::full_semaphore, "slot"});
          reclaim.push_back(r);
        }
      }
      GITLOCKS_CHECK(resolve(op, conflicts, reclaim));
    }
    // Remaining leases after reclaim.
    json remaining = json::array();
    for (const auto& l : leases) {
      bool reclaimed =
          std::any_of(reclaim.begin(), reclaim.end(), [&](const json& r) { return r["lease"] == l["id"]; });
      if (reclaimed) continue;
      if (l["holder"] == ctx_.actor)
        return make_error(Errc::already_held, "you already hold a slot of semaphore '" + name + "'; extend it instead");
      remaining.push_back(l);
    }
    if (!remaining.empty() && (*existing)["limit"].get<std::int64_t>() != limit)
      return make_error(Errc::limit_mismatch, "semaphore '" + name + "' has limit " +
                                                  std::to_string((*existing)["limit"].get<std::int64_t>()) +
                                                  " while held; every holder must agree on the limit");
    if (static_cast<std::int64_t>(remaining.size()) >= limit) {
      // Name the holders; the one whose slot frees first is in the fields.
      const json* first = &remaining[0];
      std::string holders;
      for (const auto& l : remaining) {
        if (l["expires_at"].get<std::int64_t>() < (*first)["expires_at"].get<std::int64_t>()) first = &l;
        if (holders.size() < 400) holders += (holders.empty() ? "" : ", ") + holder_label(l);
      }
      const std::int64_t frees = (*first)["expires_at"].get<std::int64_t>();
      Error e = refusal(Errc::full_semaphore,
                        "semaphore '" + name + "' is full (" + std::to_string(remaining.size()) + "/" +
                            std::to_string(limit) + "): held by " + holders + "; the first slot frees",
                        frees, (*first).value("holder", ""), (*first).value("name", ""));
      e.message += " unless released sooner";
      return e;
    }

    GITLOCKS_TRY(rec, get_for_write(res, records::new_sem(name, limit)));
    (*rec)["leases"] = remaining;
    (*rec)["limit"] = limit;
    std::int64_t gen = (*rec)["generation"].get<std::int64_t>() + 1;
    (*rec)["generation"] = gen;
    json lease = {{"id", lease_id(ctx_.instance, i, res)},
                  {"holder", ctx_.actor},
                  {"name", name_},
                  {"generation", gen},
                  {"expires_at", expires_at},
                  {"created_at", created_at_}};
    if (note) lease["note"] = *note;
    (*rec)["leases"].push_back(lease);
    leases_.push_back({{"resource", res}, {"lease", lease["id"]}, {"generation", gen}, {"expires_at", expires_at}});
    for (auto& g : ttl_guards(policy_, body_path(i, {}))) guards_.push_back(g);
    if (op.contains("after")) guards_.push_back(time_after(body_path(i, {"after"})));
    return Ok{};
  }

  // Resolves "path" or "sem" of an op to a resource and (for paths) a RepoPath.
  Status target_of(const json& op, bool sem_only, std::string& res, std::optional<RepoPath>& path) {
    bool has_path = op.contains("path");
    bool has_sem = op.contains("sem");
    if (has_path == has_sem || (sem_only && !has_sem))
      return make_error(Errc::bad_json, sem_only ? "op needs 'sem'" : "op needs exactly one of 'path' or 'sem'");
    if (has_path) {
      GITLOCKS_TRY(text, get_string(op, "path"));
      GITLOCKS_TRY(p, parse_repo_path(text, policy_.path_case()));
      res = path_resource(p.key());
      path = p;
    } else {
      GITLOCKS_TRY(name, get_string(op, "sem"));
      GITLOCKS_CHECK(check_name(name, "semaphore"));
      res = sem_resource(name);
    }
    return Ok{};
  }

  // Finds a lease by id for extend/release; applies holder and generation
  // checks. In propose mode fills "generation" when absent.
  Result<json*> own_lease(json& op, const std::string& res, const std::string& verb) {
    GITLOCKS_TRY(id, get_string(op, "lease"));
    if (now_ && !op.contains("generation")) {
      // filled below once the lease is found
    } else {
      GITLOCKS_TRY(g, get_int(op, "generation"));
      (void)g;
    }
    GITLOCKS_TRY(rec, get(res));
    // An empty id: the host found no lease of the actor's on the resource.
    const std::string which = id.empty() ? "no lease of yours" : "no lease " + id;
    if (rec->is_null()) return make_error(Errc::not_holder, which + " on " + res);
    auto& leases = (*rec)["leases"];
    auto it = std::find_if(leases.begin(), leases.end(), [&](const json& l) { return l["id"] == id; });
    if (it == leases.end()) {
      bool stale = op.contains("generation") && op["generation"].is_number_integer() &&
                   op["generation"].get<std::int64_t>() < (*rec)["generation"].get<std::int64_t>();
      if (!stale) return make_error(Errc::not_holder, which + " on " + res);
      return make_error(Errc::stale_generation, which + " on " + res + " at generation " + op["generation"].dump() +
                                                    ": superseded (generation now " +
                                                    std::to_string((*rec)["generation"].get<std::int64_t>()) + ")")
          .because(reason::superseded);
    }
    if ((*it)["holder"] != ctx_.actor)
      return make_error(Errc::not_holder, "cannot " + verb + " lease " + id + ": it is held by " + holder_label(*it));
    if (now_ && !op.contains("generation")) op["generation"] = (*it)["generation"];
    if (op["generation"] != (*it)["generation"])
      return make_error(Errc::stale_generation, "lease " + id + " has generation " +
                                                    std::to_string((*it)["generation"].get<std::int64_t>()) + ", not " +
                                                    op["generation"].dump());
    return &*it;
  }

  Status extend(json& op, std::size_t i) {
    GITLOCKS_CHECK(
        check_keys(op, {"op", "path", "sem", "lease", "generation", "prev_expires_at", "expires_at"}, "extend op"));
    std::string res;
    std::optional<RepoPath> p;
    GITLOCKS_CHECK(target_of(op, false, res, p));
    GITLOCKS_TRY(expires_at, expiry(op));
    GITLOCKS_TRY(lease, own_lease(op, res, "extend"));
    const std::int64_t current = (*lease)["expires_at"].get<std::int64_t>();
    if (now_ && !op.contains("prev_expires_at")) op["prev_expires_at"] = current;
    GITLOCKS_TRY(prev, get_int(op, "prev_expires_at"));
    if (prev != current)
      return make_error(Errc::stale_generation, "lease expiry changed since the request was made")
          .because(reason::expiry_changed);
    if (expires_at <= prev) {
      Error e(Errc::guard_window, "a renewal must move the expiry later: " + format_instant_ms(expires_at) +
                                      " is not after the current expiry " + format_instant_ms(prev));
      e.fields["expires_at_ms"] = std::to_string(expires_at);
      e.fields["prev_expires_at_ms"] = std::to_string(prev);
      return e;
    }
    if (now_ && *now_ > prev) {
      Error e(Errc::guard_window, "lease " + (*lease)["id"].get<std::string>() + " expired " +
                                      format_when(prev, *now_) + "; claim it again instead");
      e.fields["prev_expires_at_ms"] = std::to_string(prev);
      e.fields["checked_at_ms"] = std::to_string(*now_);
      return e;
    }
    GITLOCKS_TRY(rec, get_for_write(res, nullptr));
    (void)rec;
    (*lease)["expires_at"] = expires_at;
    const std::int64_t gen = (*lease)["generation"].get<std::int64_t>();
    const std::string id = (*lease)["id"].get<std::string>();
    if (p) GITLOCKS_CHECK(remember_path_lease_renewal(*p, (*lease)["mode"] == "exclusive", expires_at));
    leases_.push_back({{"resource", res}, {"lease", id}, {"generation", gen}, {"expires_at", expires_at}});
    guards_.push_back(time_not_after(body_path(i, {"prev_expires_at"})));
    for (auto& g : ttl_guards(policy_, body_path(i, {}))) guards_.push_back(g);
    return Ok{};
  }

  Status remove_lease(const std::string& res, const std::optional<RepoPath>& p, const std::string& id) {
    GITLOCKS_TRY(rec, get_for_write(res, nullptr));
    auto& leases = (*rec)["leases"];
    auto it = std::find_if(leases.begin(), leases.end(), [&](const json& l) { return l["id"] == id; });
    json old = *it;
    leases.erase(it);
    if (p) GITLOCKS_CHECK(forget_path_lease(*p, old));
    return Ok{};
  }

  Status release(json& op, std::size_t /*i*/, bool sem) {
    GITLOCKS_CHECK(
        check_keys(op, {"op", sem ? "sem" : "path", "lease", "generation"}, sem ? "sem-release op" : "release op"));
    std::string res;
    std::optional<RepoPath> p;
    GITLOCKS_CHECK(target_of(op, sem, res, p));
    GITLOCKS_TRY(lease, own_lease(op, res, "release"));
    std::string id = (*lease)["id"].get<std::string>();
    return remove_lease(res, p, id);
  }

  Status sweep(json& op, std::size_t i) {
    GITLOCKS_CHECK(check_keys(op, {"op", "leases"}, "sweep op"));
    auto list = op.find("leases");
    if (list == op.end() || !list->is_array() || list->empty())
      return make_error(Errc::bad_json, "sweep needs a non-empty 'leases' array");
    for (std::size_t j = 0; j < list->size(); ++j) {
      json& s = (*list)[j];
      GITLOCKS_CHECK(check_keys(s, {"path", "sem", "lease", "generation", "expires_at"}, "swept lease"));
      std::string res;
      std::optional<RepoPath> p;
      GITLOCKS_CHECK(target_of(s, false, res, p));
      GITLOCKS_TRY(id, get_string(s, "lease"));
      GITLOCKS_TRY(gen, get_int(s, "generation"));
      GITLOCKS_TRY(exp, get_int(s, "expires_at"));
      GITLOCKS_TRY(rec, get(res));
      bool found = false;
      if (!rec->is_null())
        for (const auto& l : (*rec)["leases"])
          if (l["id"] == id && l["generation"] == gen && l["expires_at"] == exp) found = true;
      if (!found)
        return make_error(Errc::stale_generation, "swept lease " + id + " is not in the state as declared")
            .because(reason::sweep_mismatch);
      if (now_ && exp >= *now_)
        return make_error(Errc::held_path, "lease " + id + " has not expired").because(reason::not_expired);
      GITLOCKS_CHECK(remove_lease(res, p, id));
      guards_.push_back(time_after(body_path(i, {"leases", j, "expires_at"})));
    }
    return Ok{};
  }

  ObjectStore& store_;
  StateReader& reader_;
  const RecordCodec& codec_;
  const Policy& policy_;
  const PlanContext& ctx_;
  std::optional<std::int64_t> now_;
  int format_;  // layout of the source state, kept by its successor
  std::int64_t created_at_ = 0;
  std::string name_;
  std::map<std::string, json> cache_;
  std::set<std::string> dirty_;
  json guards_;
  json leases_;
};

// The outcome of a transition without guards (creation, policy changes,
// migration): the universal interval, no leases.
PlanOutcome time_free_outcome(const json& body, const std::string& action, const Oid& root, std::size_t records) {
  PlanOutcome out;
  out.body = body;
  out.action = action;
  out.result_state = root;
  out.guards = json::array();
  out.interval = kUniversalInterval;
  out.leases = json::array();
  out.records_written = records;
  return out;
}

// Creation. {"init":POLICY} creates a format-2 store; old histories may carry
// {"init":POLICY,"state_format":"gitlocks-state-v1"} (replayed, never written
// by build_candidate).
Result<PlanOutcome> plan_init(ObjectStore& store, const PlanContext& ctx, const json& body) {
  GITLOCKS_CHECK(check_keys(body, {"init", "state_format"}, "init body"));
  const json& doc = body["init"];
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
  return time_free_outcome(body, "init", root, 0);
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
  json members = policy_doc["members"];
  auto it = std::find(members.begin(), members.end(), json(member));
  if (op == "member-add") {
    if (it != members.end()) return make_error(Errc::usage, "already a member: " + member.substr(0, 12));
    members.push_back(member);
  } else {
    if (it == members.end()) return make_error(Errc::usage, "not a member: " + member.substr(0, 12));
    if (member == policy.owner) return make_error(Errc::usage, "the owner cannot be removed");
    members.erase(it);
  }
  if (!a.contains("keyring")) return make_error(Errc::bad_json, "membership change needs the new epoch's keyring");
  next["pending"] = {{"epoch", policy.epoch + 1}, {"members", members}, {"keyring", a["keyring"]}};
  GITLOCKS_TRY(checked, parse_policy(next));
  (void)checked;
  GITLOCKS_TRY(bytes, canon_dump(next));
  GITLOCKS_TRY(blob, store.write_blob(bytes));
  GITLOCKS_TRY(root, detail::tree_apply(store, reader.root(), {{{"policy.json"}, blob}}));
  return time_free_outcome(body, op, *root, 0);
}

// Owner-signed policy changes. The only one so far enables guard time:
//   {"admin":{"op":"guard-time-enable","audience":A,"service_key":HEX,
//             "disclosure":"GUARD_WINDOW","expected_policy_hash":HEX}}
Result<PlanOutcome> plan_admin(ObjectStore& store, StateReader& reader, const json& policy_doc, const Policy& policy,
                               const PlanContext& ctx, const json& body) {
  GITLOCKS_CHECK(check_keys(body, {"admin"}, "admin body"));
  const json& a = body["admin"];
  GITLOCKS_TRY(op, get_string(a, "op"));
  if (ctx.actor != policy.owner)
    return make_error(Errc::not_holder,
                      "only the store's owner (" + policy.owner.substr(0, 12) + ") may change its policy");
  GITLOCKS_TRY(expected, get_string(a, "expected_policy_hash"));
  GITLOCKS_TRY(current_bytes, reader.policy_bytes());
  if (expected != sha256_hex(current_bytes))
    return make_error(Errc::stale_generation,
                      "the policy changed: expected policy hash " + expected + ", current " + sha256_hex(current_bytes))
        .because(reason::policy_changed);
  if (op == "member-add" || op == "member-remove" || op == "rekey")
    return plan_membership(store, reader, policy_doc, policy, ctx, body, op);
  if (op != "guard-time-enable") return make_error(Errc::bad_json, "unknown admin op '" + op + "'");
  GITLOCKS_CHECK(check_keys(a, {"op", "audience", "service_key", "disclosure", "expected_policy_hash"}, "admin op"));
  if (policy.pending)
    return make_error(Errc::usage,
                      "a keyring transition is pending: guard time needs an active keyring without a "
                      "pending transition (run `git-locks member rekey` first)");
  GITLOCKS_TRY(disclosure, get_string(a, "disclosure"));
  if (disclosure != kDisclosureGuardWindow)
    return make_error(Errc::usage, "guard time needs explicit consent: --disclosure GUARD_WINDOW");
  GITLOCKS_TRY(audience, get_string(a, "audience"));
  GITLOCKS_TRY(key, get_string(a, "service_key"));
  if (audience.empty()) return make_error(Errc::usage, "the audience must not be empty");
  GITLOCKS_TRY(pk, public_key_from_hex(key));
  (void)pk;
  Pins pins{audience, key};
  // The same pins again is no request at all: the field says so (a host
  // reports ALREADY_ENABLED and writes nothing); other pins contradict the
  // policy (there is no signer rotation).
  if (policy.guard_time && *policy.guard_time == pins)
    return make_error(Errc::usage, "ALREADY_ENABLED: guard time is already enabled with these pins")
        .because(reason::already_enabled);
  if (policy.guard_time)
    return make_error(Errc::usage,
                      "guard time is enabled with other pins; replacing them (signer rotation) is "
                      "not supported");
  json next = policy_doc;
  next["guard_time"] = guard_time_doc(pins);
  GITLOCKS_TRY(parsed, parse_policy(next));
  (void)parsed;
  GITLOCKS_TRY(bytes, canon_dump(next));
  GITLOCKS_TRY(blob, store.write_blob(bytes));
  GITLOCKS_TRY(root, detail::tree_apply(store, reader.root(), {{{"policy.json"}, blob}}));
  return time_free_outcome(body, "guard-time-enable", *root, 0);
}

// Offline migration of the layout, format 1 -> 2:
//   {"migrate":{"from":"gitlocks-state-v1","to":"gitlocks-state-v2"}}
// Every record is carried over unchanged; only their locations change.
Result<PlanOutcome> plan_migrate(ObjectStore& store, StateReader& reader, int version, const json& policy_doc,
                                 const json& body) {
  GITLOCKS_CHECK(check_keys(body, {"migrate"}, "migrate body"));
  const json& m = body["migrate"];
  GITLOCKS_CHECK(check_keys(m, {"from", "to"}, "migrate op"));
  if (!m.contains("from") || m["from"] != kStateFormatV1 || !m.contains("to") || m["to"] != kStateFormat)
    return make_error(Errc::unknown_format, "this git-locks migrates only " + std::string(kStateFormatV1) + " to " +
                                                std::string(kStateFormat));
  if (version != 1) return make_error(Errc::usage, "the store is already in " + std::string(kStateFormat));
  std::vector<json> records;
  Status bad = Ok{};
  GITLOCKS_CHECK(reader.for_each_record([&](const json& rec) {
    if (!rec.is_object() || !rec.contains("kind") || !rec["kind"].is_string() || !rec.contains("name") ||
        !rec["name"].is_string()) {
      bad = make_error(Errc::store_read, "a format-1 record has no kind/name");
      return false;
    }
    records.push_back(rec);
    return true;
  }));
  GITLOCKS_CHECK(bad);
  GITLOCKS_TRY(root, write_state(store, policy_doc, records, 2));
  return time_free_outcome(body, "migrate", root, records.size());
}

}  // namespace

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
  if (body.contains("migrate")) return plan_migrate(store, reader, version, policy_doc, body);
  if (body.contains("admin")) return plan_admin(store, reader, policy_doc, policy, ctx, body);
  std::unique_ptr<RecordCodec> sealed;
  if (policy.is_private) {
    if (!ctx.vault) return make_error(Errc::not_member, "the store is PRIVATE: planning needs a member's key");
    if (policy.pending)
      return make_error(Errc::usage, "a keyring transition to epoch " + std::to_string(policy.epoch + 1) +
                                         " is pending: run `git-locks member rekey` first");
    sealed = make_private_codec(*ctx.vault, policy.store, policy.epoch);
    if (!sealed) return make_error(Errc::not_member, "this key cannot open epoch " + std::to_string(policy.epoch));
    reader.set_codec(sealed.get());
    GITLOCKS_CHECK(unseal_families(policy, policy_doc, *ctx.vault));
  }
  const RecordCodec& codec = sealed ? *sealed : plain_codec();
  PlanOutcome out;
  out.body = body;
  Planner planner(store, reader, codec, policy, ctx, now, version);
  GITLOCKS_CHECK(planner.run(out.body, out));
  GITLOCKS_TRY(interval, derive_interval(out.guards, out.body));
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
  std::unique_ptr<RecordCodec> sealed;
  GITLOCKS_TRY(priv, reader.is_private());
  if (priv) {
    GITLOCKS_TRY(doc, reader.policy());
    GITLOCKS_TRY(pol, parse_policy(doc));
    if (vault) sealed = make_private_codec(*vault, pol.store, pol.epoch);
    if (!sealed) return make_error(Errc::not_member, "the store is PRIVATE: sweeping needs a member's key");
    reader.set_codec(sealed.get());
  }
  json leases = json::array();
  Status bad = Ok{};
  GITLOCKS_CHECK(reader.for_each_record([&](const json& rec) {
    auto kind = rec.value("kind", "");
    if (kind != "path" && kind != "sem") return true;
    for (const auto& l : rec["leases"]) {
      if (l["expires_at"].get<std::int64_t>() >= now) continue;
      json s = {{"lease", l["id"]}, {"generation", l["generation"]}, {"expires_at", l["expires_at"]}};
      if (kind == "path") s["path"] = l["path"];
      else s["sem"] = rec["name"];
      leases.push_back(s);
    }
    return true;
  }));
  if (leases.empty()) return std::optional<json>{};
  return std::optional<json>{json{{"op", "sweep"}, {"leases", leases}}};
}

}  // namespace gitlocks
