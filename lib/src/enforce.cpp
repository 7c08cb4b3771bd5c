// Claims bind the work (enforce.hpp): the planner decides, on a dry run,
// whether a shared claim of the changed paths by the commit's signer would
// be refused as a path conflict; the refusals become the commit's verdict.
#include "gitlocks/enforce.hpp"

#include <algorithm>
#include <map>

#include "gitlocks/crypto.hpp"
#include "gitlocks/limits.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/sshsig.hpp"
#include "gitlocks/state.hpp"

namespace gitlocks {
namespace {

// The probe's actor when the commit has no holder: no real Ed25519 key is
// all zeros, so it holds nothing and everything held is another's.
const std::string kNoHolder(2 * kPublicKeyBytes, '0');
// The probe's operation id: nothing it plans is ever published.
const std::string kProbeInstance(64, '0');

std::string short_id(const Oid& id) { return id.hex().substr(0, 12); }

std::string field(const Error& e, const std::string& name) {
  auto it = e.fields.find(name);
  return it == e.fields.end() ? "" : it->second.text();
}

bool stops_the_check(const Error& e) {
  return e.code == Errc::store_read || e.code == Errc::not_member || e.code == Errc::invalid ||
         e.code == Errc::invalid_history || e.code == Errc::unknown_format;
}

// Finds, for one signer, which of a set of canonical paths the planner
// refuses as a path conflict, and who is in the way.
class ConflictFinder {
 public:
  ConflictFinder(ObjectStore& store, const EnforcementView& view, const std::optional<std::string>& signer,
                 StateReader& reader, std::int64_t probe_ttl)
      : store_(store), view_(view), signer_(signer), reader_(reader), probe_ttl_(probe_ttl) {}

  // conflicts[i] is set when paths[i] is refused.
  Status run(const std::vector<std::string>& paths, std::vector<std::optional<Error>>& conflicts) {
    conflicts.assign(paths.size(), std::nullopt);
    for (std::size_t at = 0; at < paths.size(); at += kMaxOps)
      GITLOCKS_CHECK(bisect(paths, at, std::min(paths.size(), at + kMaxOps), conflicts));
    return Ok{};
  }

 private:
  Result<PlanOutcome> probe(const std::vector<std::string>& paths, std::size_t from, std::size_t to) {
    json claims = json::array();
    for (std::size_t i = from; i < to; ++i)
      claims.push_back(ops::claim(paths[i], ops::Mode::shared, view_.now + probe_ttl_));
    json body = {{"created_at", view_.now}, {"name", "git-locks check"}, {"ops", std::move(claims)}};
    HashOnlyScope dry_run(store_);
    return plan(store_, view_.snap->state, {signer_ ? *signer_ : kNoHolder, kProbeInstance, view_.snap->vault(), true},
                body, view_.now);
  }

  // Probes [from, to) at once; a refusal splits the range until each
  // refused path stands alone, so n paths with k in the way cost
  // O(k log n) plans, not n.
  Status bisect(const std::vector<std::string>& paths, std::size_t from, std::size_t to,
                std::vector<std::optional<Error>>& conflicts) {
    if (from >= to) return Ok{};
    auto r = probe(paths, from, to);
    if (r.ok()) return Ok{};
    if (stops_the_check(r.error())) return r.error();
    if (to - from > 1) {
      const std::size_t mid = from + (to - from) / 2;
      GITLOCKS_CHECK(bisect(paths, from, mid, conflicts));
      return bisect(paths, mid, to, conflicts);
    }
    // One path: a conflict is in the way; anything else (the signer's own
    // lease: already-held) is not the rule's business.
    if (!is_path_conflict(r.error().code)) return Ok{};
    Error e = r.error();
    name_lease(e);
    conflicts[from] = std::move(e);
    return Ok{};
  }

  // The lease in the way, looked up by its holder and claimed path.
  void name_lease(Error& e) {
    const std::string holder = field(e, "holder");
    const std::string claimed = field(e, "path");
    e.fields.erase("path");
    e.fields.erase("checked_at_ms");
    if (claimed.empty()) return;
    e.fields["claimed_path"] = claimed;
    auto filter = parse_repo_path(claimed);
    if (!filter.ok()) return;
    auto leases = listed_leases(reader_, view_.now, {*filter}, false);
    if (!leases.ok()) return;
    for (const ListedLease& listed : *leases) {
      if (listed.lease.holder != holder || listed.lease.path != claimed || listed.lease.intent()) continue;
      e.fields["lease"] = listed.lease.id;
      return;
    }
  }

  ObjectStore& store_;
  const EnforcementView& view_;
  const std::optional<std::string>& signer_;
  StateReader& reader_;
  std::int64_t probe_ttl_;
};

// The refusal of `path` (as the commit spells it) changed by `commit`, from
// what path_refusals said of it: the commit, the path and the signer named
// in the fields and the message.
Error commit_refusal(const Oid& commit, const std::string& path, const std::optional<std::string>& signer,
                     const Error& why) {
  Error e = why;
  e.fields["commit"] = commit.hex();
  e.fields["path"] = path;
  e.fields["signer"] = signer ? *signer : "";
  if (why.code == Errc::bad_path) {
    e.message = "commit " + short_id(commit) + " changes " + why.message;
    return e;
  }
  if (why.has_reason(reason::claim_required)) {
    e.message = "commit " + short_id(commit) + " changes " + path + ": " + why.message;
    return e;
  }
  const std::string name = field(why, "holder_name").empty() ? "the holder" : field(why, "holder_name");
  e.message = "commit " + short_id(commit) + " changes " + path + ": " + why.message +
              " (wait for the lease to end, ask " + name + " to release it, or ask an admin to force-release it)";
  return e;
}

// Policy `require_claim`: a change of a path it covers needs a live lease of
// the signer's own (exclusive or shared: an intent claims nothing) on the
// path or on one of its ancestors. A
// bot key from the policy is exempt (from this rule only: another holder's
// claim still refuses it); an unsigned commit holds nothing.
Result<std::optional<Error>> claim_missing(StateReader& reader, const Policy& policy, std::int64_t now,
                                           const std::optional<std::string>& signer, const std::string& canon) {
  if (policy.require_claim_paths.empty() && policy.require_claim_families.empty()) return std::optional<Error>{};
  GITLOCKS_TRY(path, parse_repo_path(canon, policy.path_case()));
  if (!policy.requires_claim(path)) return std::optional<Error>{};
  if (signer && policy.is_bot(*signer)) return std::optional<Error>{};
  if (signer) {
    std::string key;
    for (const auto& c : path.components) {
      key += key.empty() ? c : "/" + c;
      GITLOCKS_TRY(rec, reader.valid_record(path_resource(key)));
      if (!rec) continue;
      for (const auto& l : rec->leases)
        if (l.holder == *signer && !l.intent() && l.live_at(now)) return std::optional<Error>{};
    }
  }
  Error e(Errc::not_holder,
          std::string("the policy requires a claim for changes under this path and ") +
              (signer ? "the signer (" + signer->substr(0, 12) + ") holds none live there" : "the commit is unsigned") +
              ": claim it first (git-locks claim), then sign the commit with the claiming key");
  return std::optional<Error>{std::move(e).because(reason::claim_required)};
}

}  // namespace

Result<CommitSigner> commit_signer_of(ObjectStore& store, const Oid& commit) {
  GITLOCKS_TRY(raw, store.read_commit_raw(commit));
  auto key = commit_signer(raw);
  if (!key.ok()) return CommitSigner{std::nullopt, std::string(key.error().reason())};
  if (!*key) return CommitSigner{std::nullopt, "unsigned"};
  return CommitSigner{to_hex(**key), "valid"};
}

Result<std::vector<CommitCheck>> check_commits(ObjectStore& store, const EnforcementView& view,
                                               const std::vector<Oid>& commits) {
  std::vector<CommitCheck> out(commits.size());
  std::vector<std::vector<std::string>> changed(commits.size());
  for (std::size_t i = 0; i < commits.size(); ++i) {
    out[i].commit = commits[i];
    GITLOCKS_TRY(signer, commit_signer_of(store, commits[i]));
    out[i].signer = std::move(signer);
    GITLOCKS_TRY(paths, store.changed_paths(commits[i]));
    out[i].paths = paths.size();
    changed[i] = std::move(paths);
  }
  if (!view.snap || !view.snap->commit) return out;  // no store: nothing is claimed
  // The rule depends on the signer, not on the commit: the paths of every
  // commit by one signer are asked together, once each.
  struct Use {
    std::size_t commit, path;
  };
  std::map<std::optional<std::string>, std::map<std::string, std::vector<Use>>> by_signer;
  for (std::size_t i = 0; i < commits.size(); ++i)
    for (std::size_t j = 0; j < changed[i].size(); ++j) by_signer[out[i].signer.actor][changed[i][j]].push_back({i, j});
  std::vector<std::vector<std::optional<Error>>> found(commits.size());
  for (std::size_t i = 0; i < commits.size(); ++i) found[i].resize(changed[i].size());
  for (const auto& [signer, uses] : by_signer) {
    std::vector<std::string> paths;
    paths.reserve(uses.size());
    for (const auto& [path, _] : uses) paths.push_back(path);
    GITLOCKS_TRY(refusals, path_refusals(store, view, signer, paths));
    std::size_t k = 0;
    for (const auto& [path, at] : uses) {
      if (const auto& e = refusals[k++])
        for (const Use& u : at) found[u.commit][u.path] = commit_refusal(commits[u.commit], path, signer, *e);
    }
  }
  for (std::size_t i = 0; i < commits.size(); ++i)
    for (std::size_t j = 0; j < changed[i].size(); ++j)
      if (found[i][j]) out[i].refused.push_back({changed[i][j], std::move(*found[i][j])});
  return out;
}

Result<std::vector<std::optional<Error>>> path_refusals(ObjectStore& store, const EnforcementView& view,
                                                        const std::optional<std::string>& signer,
                                                        const std::vector<std::string>& paths) {
  std::vector<std::optional<Error>> out(paths.size());
  if (!view.snap || !view.snap->commit) return out;
  StateReader reader(store, view.snap->state, view.snap->codec());
  const Policy& policy = view.snap->policy;
  std::map<std::string, std::vector<std::size_t>> uses;  // canonical form -> indexes in `paths`
  for (std::size_t i = 0; i < paths.size(); ++i) {
    auto canon = normalize_path_input(paths[i], view.snap->path_case());
    if (!canon.ok()) {
      Error e(Errc::bad_path, "a path that no claim can name ('" + paths[i] + "': " + canon.error().message +
                                  "), so it cannot be checked against claims: rename it");
      e.fields["path"] = paths[i];
      out[i] = std::move(e);
    } else {
      uses[*canon].push_back(i);
    }
  }
  std::vector<std::string> canon;
  canon.reserve(uses.size());
  for (const auto& [c, _] : uses) canon.push_back(c);
  std::vector<std::optional<Error>> conflicts;
  ConflictFinder finder(store, view, signer, reader, policy.min_ttl_ms);
  GITLOCKS_CHECK(finder.run(canon, conflicts));
  std::size_t k = 0;
  for (const auto& [c, at] : uses) {
    if (const auto& e = conflicts[k++]) {
      for (std::size_t i : at) out[i] = *e;
      continue;
    }
    GITLOCKS_TRY(missing, claim_missing(reader, policy, view.now, signer, c));
    if (missing)
      for (std::size_t i : at) out[i] = *missing;
  }
  return out;
}

Result<CommitCheck> check_commit(ObjectStore& store, const EnforcementView& view, const Oid& commit) {
  GITLOCKS_TRY(checks, check_commits(store, view, {commit}));
  return std::move(checks.front());
}

json commit_check_json(const CommitCheck& c) {
  json refused = json::array();
  for (const auto& r : c.refused) {
    const json fields = r.refusal.fields;  // text or a number, as the core typed each (an object when empty too)
    refused.push_back({{"path", r.path},
                       {"code", std::string(errc_name(r.refusal.code))},
                       {"reason", std::string(r.refusal.reason())},
                       {"message", r.refusal.message},
                       {"fields", fields}});
  }
  return {{"commit", c.commit},
          {"signer", c.signer.actor ? json(*c.signer.actor) : json(nullptr)},
          {"signature", c.signer.signature},
          {"paths", c.paths},
          {"ok", c.ok()},
          {"refused", std::move(refused)}};
}

std::int64_t check_instant(const Snapshot& snap, std::int64_t clock) {
  return std::max(clock, snap.last_time.value_or(0));
}

json check_report_json(const Snapshot& snap, std::int64_t now, const std::vector<CommitCheck>& checks) {
  json commits = json::array();
  std::size_t refused = 0;
  for (const auto& c : checks) {
    if (!c.ok()) ++refused;
    commits.push_back(commit_check_json(c));
  }
  return {{"op", "check"},
          {"store", snap.store_id},
          {"state", snap.commit ? json(*snap.commit) : json(nullptr)},
          {"now_ms", now},
          {"checked", checks.size()},
          {"refused", refused},
          {"commits", std::move(commits)}};
}

}  // namespace gitlocks
