#include "leases.h"

#include <algorithm>

#include "gitlocks/crypto.hpp"
#include "gitlocks/hex.hpp"
#include "gitlocks/limits.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/state.hpp"
#include "vault_host.h"

namespace gitlocks::cli {

bool is_lease_id(const std::string& s) { return is_hex(s, kLeaseIdHexDigits); }

Result<std::optional<Record>> LeaseResolver::record(const std::string& resource) {
  StateReader reader(store_, snap_.state, snap_.codec());
  return reader.valid_record(resource);
}

namespace {

// How an op names lease `l` of `record`: its path as claimed, or its semaphore.
ops::Target target_of(const Record& record, const Lease& l) {
  const Resource& r = record.resource;
  return r.kind == RecordKind::sem ? ops::Target::semaphore(r.name) : ops::Target::path(l.path);
}

}  // namespace

Result<const ops::Target*> LeaseResolver::find_id(const std::string& id) {
  if (auto hit = found_.find(id); hit != found_.end()) return &hit->second;
  // The newest transitions name the lease (issued or renewed): its one
  // record answers. Only when they do not, or bodies are sealed, is the
  // whole state scanned.
  if (!ids_ && snap_.commit && !snap_.is_private()) {
    GITLOCKS_TRY(res, lease_resource_in_history(store_, *snap_.commit, id));
    if (res) {
      GITLOCKS_TRY(rec, record(*res));
      if (!rec) return nullptr;
      for (const Lease& l : rec->leases)
        if (l.id == id) return &found_.emplace(id, target_of(*rec, l)).first->second;
      if (const auto& gone = rec->released; gone && gone->lease.id == id)
        released_.emplace(id, ops::Target::path(gone->lease.path));
      return nullptr;  // released, swept or reclaimed since
    }
  }
  if (!ids_) {
    std::map<std::string, ops::Target> ids;
    StateReader reader(store_, snap_.state, snap_.codec());
    GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& rec) {
      for (const Lease& l : rec.leases) ids[l.id] = target_of(rec, l);  // none in a family record
      if (const auto& gone = rec.released) released_.emplace(gone->lease.id, ops::Target::path(gone->lease.path));
      return true;
    }));
    ids_ = std::move(ids);
  }
  auto it = ids_->find(id);
  return it == ids_->end() ? nullptr : &it->second;
}

Result<std::vector<json>> LeaseResolver::force_ops_for(const LeaseRef& ref, const std::string& reason) {
  std::vector<json> out;
  auto make = [&](const std::string& path, const Lease& l) {
    json op = ops::force_release(path, l.id, reason);
    if (ref.generation) op["generation"] = *ref.generation;
    return op;
  };
  if (is_lease_id(ref.text)) {
    GITLOCKS_TRY(found, find_id(ref.text));
    if (found) {
      if (found->sem) return make_error(Errc::usage, "release --force takes path leases only, not semaphore slots");
      GITLOCKS_TRY(text, normalize_path_input(found->name, snap_.path_case()));
      GITLOCKS_TRY(p, parse_repo_path(text, snap_.path_case()));
      GITLOCKS_TRY(rec, record(path_resource(p.key())));
      if (rec)
        for (const Lease& l : rec->leases)
          if (l.id == ref.text) out.push_back(make(l.path, l));
      if (!out.empty()) return out;
    }
  }
  GITLOCKS_TRY(text, normalize_path_input(ref.text, snap_.path_case()));
  GITLOCKS_TRY(p, parse_repo_path(text, snap_.path_case()));
  GITLOCKS_TRY(rec, record(path_resource(p.key())));
  if (rec)
    for (const Lease& l : rec->leases) out.push_back(make(l.path, l));
  if (out.empty())
    return make_error(Errc::not_holder, "no lease on '" + ref.text + "'" +
                                            (is_lease_id(ref.text) ? " (and no lease has id " + ref.text + ")" : ""));
  return out;
}

Result<json> LeaseResolver::op_for(const LeaseRef& ref, bool extend) {
  auto make = [&](const ops::Target& t, const std::string& lease) {
    return extend ? ops::extend(t, lease, ref.generation) : ops::release(t, lease, ref.generation);
  };
  const bool try_id =
      ref.kind == LeaseRef::Kind::id || (ref.kind == LeaseRef::Kind::id_or_path && is_lease_id(ref.text));
  if (try_id) {
    GITLOCKS_TRY(found, find_id(ref.text));
    if (found) return make(*found, ref.text);
    // Force-released by an admin: the planner says by whom and why.
    if (auto gone = released_.find(ref.text); gone != released_.end()) return make(gone->second, ref.text);
    if (ref.kind == LeaseRef::Kind::id)
      return make_error(Errc::not_holder,
                        "no lease " + ref.text + " in the current state (released, swept or reclaimed)");
  }
  const bool sem = ref.kind == LeaseRef::Kind::sem;
  std::string resource;
  std::string target = ref.text;
  if (sem) {
    resource = sem_resource(ref.text);
  } else {
    // As typed: NFC, folded in a case-insensitive store (path.hpp).
    GITLOCKS_TRY(text, normalize_path_input(ref.text, snap_.path_case()));
    GITLOCKS_TRY(p, parse_repo_path(text, snap_.path_case()));
    resource = path_resource(p.key());
    target = text;
  }
  GITLOCKS_TRY(rec, record(resource));
  const ops::Target t = sem ? ops::Target::semaphore(target) : ops::Target::path(target);
  std::optional<std::string> other;
  if (rec) {
    for (const Lease& l : rec->leases) {
      if (l.holder == actor_) return make(t, l.id);
      if (!other) other = l.id;
    }
  }
  // Not ours: let the planner name the refusal when it can (a stale
  // generation, our lease force-released by an admin).
  if (rec && ref.generation) return make(t, "");
  if (rec && !sem) {
    if (const auto& gone = rec->released; gone && gone->lease.holder == actor_) return make(t, "");
  }
  if (other) return make(t, *other);
  std::string what = sem ? "slot of semaphore '" + ref.text + "'" : "lease on '" + ref.text + "'";
  if (try_id) what += " (and no lease has id " + ref.text + ")";
  return make_error(Errc::not_holder, "you hold no " + what);
}

Intents intents_near(ObjectStore& store, const Snapshot& snap, std::int64_t now, const std::vector<std::string>& paths,
                     const std::string& actor) {
  Intents out;
  if (!snap.commit || (snap.is_private() && !snap.codec())) return out;
  std::vector<RepoPath> parsed;
  for (const auto& text : paths) {
    auto canon = normalize_path_input(text, snap.path_case());
    if (!canon.ok()) continue;
    auto p = parse_repo_path(*canon, snap.path_case());
    if (p.ok()) parsed.push_back(std::move(*p));
  }
  StateReader reader(store, snap.state, snap.codec());
  auto found = others_intents(reader, now, parsed, actor);
  if (!found.ok()) return out;
  for (const ListedLease& l : *found) {
    out.list.push_back(intent_json(l.lease));
    out.warnings.push_back(intent_warning(l.lease, now));
  }
  return out;
}

}  // namespace gitlocks::cli
