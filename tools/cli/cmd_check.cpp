// check [--json] RANGE...: the enforcement rule (gitlocks/enforce.hpp) over
// the commits `git rev-list RANGE...` lists, for hosted forges where no
// server hook runs (a required CI check on the pull request).
#include "cli.h"
#include "enforcement.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {

int cmd_check(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.empty())
    return ctx.fail(
        make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command) + " (e.g. origin/main..HEAD)"));
  for (const auto& r : a->positionals)
    if (r.empty() || r[0] == '-')
      return ctx.fail(make_error(Errc::usage, "check takes revisions and ranges, not git options: " + r));
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  if (!snap->commit)
    return ctx.fail(make_error(Errc::store_read, no_store_message(ctx) + " (in CI, fetch it first: git fetch origin "
                                                                         "refs/locks/state:refs/locks/state)"));
  auto commits = rev_list(ctx, a->positionals);
  if (!commits.ok()) return ctx.fail(commits.error());
  auto now = check_time(*snap);
  if (!now.ok()) return ctx.fail(now.error());
  auto checks = check_commits(ctx, *snap, *commits, *now);
  if (!checks.ok()) return ctx.fail(checks.error());
  const json doc = check_report_json(*snap, *now, *checks);
  const int status = doc["refused"].get<std::size_t>() == 0 ? kExitOk : kExitRefused;
  if (ctx.json_output) {
    ctx.done(doc, "");
    return status;
  }
  std::string human;
  for (const auto& c : *checks)
    for (const auto& r : c.refused) human += "refused: " + r.refusal.message + "\n";
  human += std::to_string(checks->size()) + " commit" + (checks->size() == 1 ? "" : "s") + " checked, " +
           std::to_string(doc["refused"].get<std::size_t>()) + " refused";
  ctx.done(doc, human);
  return status;
}

}  // namespace gitlocks::cli
