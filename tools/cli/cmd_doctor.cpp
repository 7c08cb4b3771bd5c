// doctor [--json]: diagnoses the reservation data of the tip of
// refs/locks/state (gitlocks/doctor.hpp), comparing generations with the
// tip's parent, and reports a refs/locks/state.lock of a local store with
// the processes of this machine that have it open (ref_lock.h). It reads
// only: it repairs nothing, removes no lock, cannot see a publisher on
// another machine, and cannot know whether the store is writable.
//
// Exit 0: no error or warning findings (info findings, such as leases
// already expired by the local clock, are reported but healthy); 1: problems
// found; 2: the store cannot be read.
#include <memory>

#include "checkpoint.h"
#include "cli.h"
#include "gitlocks/doctor.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "publish.h"
#include "ref_lock.h"
#include "report.h"

namespace gitlocks::cli {

namespace {
constexpr const char* kScope =
    "doctor diagnoses the reservation data and reports a refs/locks/state.lock with the processes of this "
    "machine that have it open; it repairs nothing, removes no lock, cannot see a publisher on another machine "
    "and cannot tell whether the store is writable";
}

int cmd_doctor(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
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
  // A PRIVATE store's records are opened with a member's keys (as `verify`
  // does); any other key leaves them sealed: doctor then counts them only.
  // The key is loaded only for a PRIVATE store (loading may create one).
  auto keys = identity_keys(ctx, **store, **tip, true);
  if (!keys.ok()) return ctx.fail(keys.error());
  std::unique_ptr<RecordCodec> codec;
  if (const Vault* vault = keys->vault()) {
    auto doc = StateReader(**store, commit->state).policy();
    auto policy = doc.ok() ? parse_policy(*doc) : Result<Policy>(doc.error());
    auto opened = policy.ok() ? state_codec(*policy, vault) : Result<std::unique_ptr<RecordCodec>>(policy.error());
    if (opened.ok()) codec = std::move(opened).value();
  }
  auto findings = diagnose(**store, commit->state, *now, parent_state, codec.get());
  if (!findings.ok()) return ctx.fail(findings.error());
  for (const auto& u : commit->unexpected)
    findings->push_back({"error", "unexpected-entry", u, "entry outside the transition commit layout"});
  // A remote store's lock is the remote's: only a local one is looked at.
  auto remote = ctx.remote();
  if (!remote.ok()) return ctx.fail(remote.error());
  if (!*remote) {
    auto common = git_common_dir(ctx);
    if (!common.ok()) return ctx.fail(common.error());
    if (auto lock = observe_ref_lock(*common)) findings->push_back(ref_lock_finding(*lock));
  }
  std::size_t errors = 0, warnings = 0;
  json list = json::array();
  std::string human;
  for (const auto& f : *findings) {
    if (f.severity == "error") ++errors;
    if (f.severity == "warning") ++warnings;
    list.push_back(finding_json(f));
    human += f.severity + " " + f.code + " " + f.location + ": " + f.detail + "\n";
  }
  const bool healthy = errors == 0 && warnings == 0;
  json out = {{"op", "doctor"},     {"commit", **tip},  {"state", commit->state}, {"now_ms", *now},
              {"healthy", healthy}, {"errors", errors}, {"warnings", warnings},   {"parent_checked", parent_checked},
              {"findings", list},   {"repairs", false}, {"scope", kScope}};
  const std::size_t problems = errors + warnings;
  human += healthy ? "healthy: no problems in the reservation data"
                   : std::to_string(problems) + " problem" + (problems == 1 ? "" : "s") + " found";
  human += " (refs/locks/state -> " + (**tip).hex().substr(0, 12) + ")\n";
  human += std::string("note: ") + kScope + "\n";
  ctx.done(out, human);
  return healthy ? kExitOk : kExitRefused;
}

}  // namespace gitlocks::cli
