#include "enforcement.h"

#include <algorithm>

#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "leases.h"
#include "report.h"
#include "vault_host.h"

namespace gitlocks::cli {

bool enforceable_ref(const std::string& ref) {
  return ref.rfind("refs/", 0) == 0 && ref.rfind("refs/locks/", 0) != 0 && ref.rfind("refs/remotes/", 0) != 0;
}

Result<std::vector<std::string>> enforced_ref_patterns(Context& ctx, const Snapshot& snap) {
  // the store's own choice first: policy `enforce`
  if (snap.commit && snap.policy.enforce) return *snap.policy.enforce;
  auto r = ctx.git().run({"config", "--get-all", "locks.enforce"});
  std::vector<std::string> out;
  if (r.ok() && r->status == 0)
    for (std::string_view p : split_fields(r->out, '\n'))
      if (!p.empty()) out.emplace_back(p);
  if (out.empty()) out.emplace_back("refs/heads/*");
  // "none" turns enforcement off (a PRIVATE store's server without a key).
  if (std::find(out.begin(), out.end(), "none") != out.end()) out.clear();
  return out;
}

bool ref_matches(const std::string& ref, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (p.size() >= 2 && p.compare(p.size() - 2, 2, "/*") == 0) {
      const std::string prefix = p.substr(0, p.size() - 1);
      if (ref.size() > prefix.size() && ref.compare(0, prefix.size(), prefix) == 0) return true;
    } else if (ref == p) {
      return true;
    }
  }
  return false;
}

Result<std::vector<Oid>> rev_list(Context& ctx, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"rev-list", "--reverse", "--topo-order"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.emplace_back("--");
  GITLOCKS_TRY(r, ctx.git().run(argv));
  if (r.status != 0) {
    std::string why = r.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return make_error(Errc::usage, "git rev-list cannot list the commits: " + why);
  }
  std::vector<Oid> out;
  for (std::string_view line : split_fields(r.out, '\n')) {
    if (line.empty()) continue;
    auto id = Oid::from_hex(line);
    if (!id) return make_error(Errc::store_read, "git rev-list gave '" + std::string(line) + "', not a commit id");
    out.push_back(*id);
  }
  return out;
}

Result<std::vector<Oid>> commits_brought_in(Context& ctx, const std::string& old_oid, const std::string& new_oid,
                                            const std::vector<std::string>& exclude) {
  std::vector<std::string> args = {new_oid};
  if (old_oid != kZeroOid) args.push_back("^" + old_oid);
  args.emplace_back("--not");
  if (old_oid == kZeroOid) args.emplace_back("--all");
  args.insert(args.end(), exclude.begin(), exclude.end());
  return rev_list(ctx, args);
}

Result<std::int64_t> check_time(const Snapshot& snap) {
  GITLOCKS_TRY(now, now_ms());
  return check_instant(snap, now);
}

Result<std::vector<CommitCheck>> check_commits(Context& ctx, const Snapshot& snap, const std::vector<Oid>& commits,
                                               std::int64_t now) {
  std::vector<CommitCheck> out;
  if (commits.empty()) return out;
  GITLOCKS_TRY(store, ctx.store());
  EnforcementView view;
  view.snap = &snap;
  view.now = now;
  GITLOCKS_CHECK(require_keys(ctx, snap));
  return gitlocks::check_commits(*store, view, commits);
}

int report_refusals(Context& ctx, const std::vector<CommitCheck>& checks, const std::string& context,
                    const Snapshot& snap, std::int64_t now) {
  int status = kExitOk;
  auto store = ctx.store();
  for (const auto& c : checks)
    for (const auto& r : c.refused) {
      Error e = r.refusal.prefixed(context);
      // Others' intents on the path (docs/FORMAT.md "Intent"): a note, as in a refused claim.
      if (store.ok())
        for (const auto& w : intents_near(**store, snap, now, {r.path}, c.signer.actor.value_or("")).warnings)
          e.message += "; note: " + w;
      status = print_error(ctx.op, e, std::nullopt);
    }
  return status == kExitOk ? kExitOk : kExitRefused;
}

}  // namespace gitlocks::cli
