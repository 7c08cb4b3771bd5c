// wait PATH... [--timeout DUR] [--claim]: wait (waiting.h) until the paths
// are claimable (the planner's answer on a dry-run view of the store); with
// --claim, claim them as soon as that succeeds.
#include "cli.h"
#include "gitlocks/limits.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/plan.hpp"
#include "leases.h"
#include "publish.h"
#include "waiting.h"

namespace gitlocks::cli {

int cmd_wait(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "name at least one PATH to wait for"));
  std::optional<std::int64_t> timeout;
  if (auto t = a->value("timeout")) {
    auto v = parse_duration(*t);
    if (!v.ok()) return ctx.fail(v.error());
    timeout = *v;
  }
  std::int64_t ttl = kDefaultTtlMs;
  if (auto t = a->value("ttl")) {
    auto v = parse_duration(*t);
    if (!v.ok()) return ctx.fail(v.error());
    ttl = *v;
  }
  const std::string mode = a->value("mode").value_or("exclusive");
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());

  auto body_at = [&](std::int64_t now) {
    json ops = json::array();
    for (const auto& path : a->positionals) {
      json op = ops::claim(path, mode, now + ttl);
      if (auto note = a->value("note")) op["note"] = *note;
      ops.push_back(op);
    }
    return transition_body(ctx, now, ops);
  };

  // Only a waiter that will claim queues (waiting.h): one that only looks
  // never holds anybody back.
  WaitOptions w{timeout, {}, paths_label(a->positionals), true};
  if (a->has("claim")) w.wanted = wanted_paths(a->positionals, mode == "shared");
  std::optional<Published> published;
  auto outcome = wait_until_admitted(ctx, w, [&](const std::optional<std::string>& ticket) -> std::optional<Error> {
    if (a->has("claim")) {
      auto p = publish(ctx, "claim", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
        GITLOCKS_CHECK(require_store(ctx, snap));
        json body = body_at(now);
        // Admitted, the waiter leaves the queue in the same transition.
        if (ticket) body["ops"].push_back(ops::ticket_drop(*ticket));
        return std::optional<json>{body};
      });
      if (!p.ok()) return p.error();
      published = std::move(*p);
      return std::nullopt;
    }
    auto snap = current_snapshot(ctx);
    if (!snap.ok()) return snap.error();
    if (auto st = require_store(ctx, *snap); !st.ok()) return st.error();
    auto now = now_ms();
    if (!now.ok()) return now.error();
    if (auto keys = require_keys(ctx, *snap); !keys.ok()) return keys.error();
    json body = body_at(*now);
    if (auto st = canonical_op_paths(body, *snap); !st.ok()) return st.error();
    HashOnlyScope dry_run(**store);
    auto plan_result =
        plan(**store, snap->state, {(*me)->actor, random_hex(kInstanceBytes), snap->vault()}, body, *now);
    if (!plan_result.ok()) return plan_result.error();
    return std::nullopt;
  });
  if (outcome.timed_out) {
    // Documented since `wait` came: the last refusal's own code, "timed
    // out" in the detail; the fields say how long and how often.
    ctx.attempts.reset();
    Error e = outcome.last_refusal.value_or(Error(Errc::held_path, "no attempt made"));
    e.message = "timed out after " + format_duration(outcome.waited_ms) + " (" + std::to_string(outcome.attempts) +
                " polls): " + e.message;
    e.fields["waited_ms"] = outcome.waited_ms;
    e.fields["polls"] = outcome.attempts;
    return ctx.fail(e);
  }
  if (outcome.error) return ctx.fail(*outcome.error);
  if (published) return report_published(ctx, *published, {{"waited_ms", outcome.waited_ms}});
  return ctx.done({{"op", "wait"},
                   {"paths", a->positionals},
                   {"claimable", true},
                   {"polls", outcome.attempts},
                   {"waited_ms", outcome.waited_ms}},
                  "claimable now: " + paths_label(a->positionals));
}

}  // namespace gitlocks::cli
