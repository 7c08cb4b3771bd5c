// doctor [--json]: diagnoses the reservation data of the tip of
// refs/locks/state (gitlocks/doctor.hpp), comparing generations with the
// tip's parent. It reads only: it repairs nothing, and it cannot know whether
// a publisher is active or whether the store is writable.
//
// Exit 0: no error-level findings (info findings, such as leases already
// expired by the local clock, are reported but healthy); 1: problems found;
// 2: the store cannot be read.
#include "cli.h"
#include "gitlocks/doctor.hpp"
#include "gitlocks/packet.hpp"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {

namespace {
constexpr const char* kScope =
    "doctor diagnoses reservation data only and repairs nothing; it cannot tell whether a publisher is "
    "active (e.g. one holding refs/locks/state.lock) or whether the store is writable";
}

int cmd_doctor(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {});
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "doctor takes no arguments"));
  auto now = now_ms();
  if (!now.ok()) return ctx.fail(now.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto tip = ctx.read_tip();
  if (!tip.ok()) return ctx.fail(tip.error());
  if (!*tip) return ctx.fail(make_error(Errc::usage, "no lock store in this repository (refs/locks/state is missing)"));
  // The tip must at least be a transition commit; anything less is unreadable.
  auto commit = read_transition_commit(**store, **tip);
  if (!commit.ok()) return ctx.fail(make_error(Errc::store_read, "refs/locks/state: " + commit.error().message));
  std::optional<Oid> parent_state;
  bool parent_checked = false;
  if (!commit->parents.empty()) {
    auto parent = read_transition_commit(**store, commit->parents[0]);
    if (parent.ok()) {
      parent_state = parent->state;
      parent_checked = true;
    }
  }
  auto findings = diagnose(**store, commit->state, *now, parent_state);
  if (!findings.ok()) return ctx.fail(findings.error());
  std::size_t errors = 0;
  json list = json::array();
  std::string human;
  for (const auto& f : *findings) {
    if (f.severity == "error") ++errors;
    list.push_back(finding_json(f));
    human += f.severity + " " + f.code + " " + f.location + ": " + f.detail + "\n";
  }
  for (const auto& u : commit->unexpected) {
    ++errors;
    Finding f{"error", "unexpected-entry", u, "entry outside the transition commit layout"};
    list.push_back(finding_json(f));
    human += f.severity + " " + f.code + " " + f.location + ": " + f.detail + "\n";
  }
  const bool healthy = errors == 0;
  json out = {{"op", "doctor"},     {"commit", **tip},  {"state", commit->state},           {"now_ms", *now},
              {"healthy", healthy}, {"errors", errors}, {"parent_checked", parent_checked}, {"findings", list},
              {"repairs", false},   {"scope", kScope}};
  human += healthy ? "healthy: no problems in the reservation data"
                   : std::to_string(errors) + " problem" + (errors == 1 ? "" : "s") + " found";
  human += " (refs/locks/state -> " + (**tip).substr(0, 12) + ")\n";
  human += std::string("note: ") + kScope + "\n";
  ctx.done(out, human);
  return healthy ? kExitOk : kExitRefused;
}

}  // namespace gitlocks::cli
