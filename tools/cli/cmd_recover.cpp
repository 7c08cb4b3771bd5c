// recover [--dry-run]: restores refs/locks/state to its last valid commit
// when the history at the tip does not verify (a forged or broken push on a
// host that runs no server hook, a rewrite below the trust checkpoint).
// Locally `git update-ref refs/locks/state LAST_VALID TIP`; for a remote
// store `git push --force-with-lease=refs/locks/state:TIP REMOTE
// LAST_VALID:refs/locks/state`: the ref moves only if it is still at the
// tip this command verified, and only back to a commit of the verified
// history, so nothing valid is ever dropped. Clients whose checkpoint is at
// or below LAST_VALID carry on from it with no step of their own.
#include <string>
#include <vector>

#include "checkpoint.h"
#include "cli.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {

int cmd_recover(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto remote = ctx.remote();
  if (!remote.ok()) return ctx.fail(remote.error());
  auto tip = ctx.read_tip();
  if (!tip.ok()) return ctx.fail(tip.error());
  if (!*tip) return ctx.fail(make_error(Errc::store_read, no_store_message(ctx)));
  auto snap = verified_tip_snapshot(ctx, *tip);
  if (snap.ok())
    return ctx.done({{"op", ctx.op}, {"recovered", false}, {"tip", **tip}},
                    "refs/locks/state verifies up to " + **tip + ": nothing to recover");
  const Error& e = snap.error();
  if (e.code != Errc::invalid_history) return ctx.fail(e);
  const auto field = [&](const char* k) {
    auto it = e.fields.find(k);
    return it == e.fields.end() ? std::string() : it->second.text();
  };
  const std::string last_valid = field("last_valid");
  const std::string first_invalid = field("commit");
  const std::string verdict = field("verdict");
  if (last_valid.empty())
    return ctx.fail(Error(Errc::store_read,
                          "the root commit " + first_invalid + " itself is invalid (" + verdict +
                              "): there is no valid state to restore; the owner starts a new store",
                          {{"commit", first_invalid}, {"verdict", verdict}}));
  json out = {{"op", ctx.op},       {"from", **tip},
              {"to", last_valid},   {"first_invalid", first_invalid},
              {"verdict", verdict}, {"remote", *remote ? json(**remote) : json(nullptr)}};
  const std::string what = "refs/locks/state" + (*remote ? " on " + **remote : std::string()) + " from " + **tip +
                           " back to " + last_valid + " (the first invalid commit " + first_invalid + ": " + verdict +
                           ")";
  if (a->has("dry-run")) {
    out["recovered"] = false;
    out["dry_run"] = true;
    return ctx.done(out, "would restore " + what);
  }
  std::vector<std::string> args;
  if (*remote)
    args = {"push", "--porcelain", "--force-with-lease=refs/locks/state:" + **tip, **remote,
            last_valid + ":refs/locks/state"};
  else args = {"update-ref", "refs/locks/state", last_valid, (**tip).hex()};
  auto r = ctx.git().run(args);
  if (!r.ok()) return ctx.fail(r.error());
  if (r->status != 0)
    return ctx.fail(Error(Errc::store_write,
                          "refs/locks/state was not restored (it moved since it was verified, or the " +
                              std::string(*remote ? "push" : "update") + " failed): git " + args.front() + ": " +
                              r->err + r->out + "; run `git-locks recover` again",
                          {{"from", (**tip).hex()}, {"to", last_valid}}));
  out["recovered"] = true;
  return ctx.done(out, "restored " + what);
}

}  // namespace gitlocks::cli
