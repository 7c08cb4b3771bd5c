// wait PATH... [--timeout DUR] [--claim]: poll until the paths are claimable
// (the planner's answer on a dry-run view of the store), with exponential
// backoff and jitter; with --claim, claim them as soon as that succeeds.
#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "cli.h"
#include "gitlocks/plan.hpp"
#include "leases.h"
#include "publish.h"

namespace gitlocks::cli {
namespace {

constexpr std::int64_t kFirstPollMs = 50;
constexpr std::int64_t kMaxPollMs = 2000;

bool worth_waiting(Errc code) { return code == Errc::held_path || code == Errc::family_policy; }

}  // namespace

int cmd_wait(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {{"timeout", true}, {"claim", false}, {"mode", true}, {"ttl", true}, {"note", true}});
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "name at least one PATH to wait for"));
  std::optional<std::int64_t> timeout;
  if (auto t = a->value("timeout")) {
    auto v = parse_duration(*t);
    if (!v.ok()) return ctx.fail(v.error());
    timeout = *v;
  }
  std::int64_t ttl = 10 * 60 * 1000;
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
      json op = {{"op", "claim"}, {"path", path}, {"mode", mode}, {"expires_at", now + ttl}};
      if (auto note = a->value("note")) op["note"] = *note;
      ops.push_back(op);
    }
    return transition_body(ctx, now, ops);
  };

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::int64_t delay = kFirstPollMs;
  for (int polls = 1;; ++polls) {
    Error why{Errc::held_path, ""};
    if (a->has("claim")) {
      auto p = publish(ctx, "claim", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
        GITLOCKS_CHECK(require_store(ctx, snap));
        return std::optional<json>{body_at(now)};
      });
      if (p.ok()) return report_published(ctx, *p);
      if (!worth_waiting(p.error().code)) return ctx.fail(p.error());
      why = p.error();
    } else {
      auto snap = current_snapshot(ctx);
      if (!snap.ok()) return ctx.fail(snap.error());
      if (auto st = require_store(ctx, *snap); !st.ok()) return ctx.fail(st.error());
      auto now = now_ms();
      if (!now.ok()) return ctx.fail(now.error());
      auto vault = open_vault(ctx, **store, *snap);
      if (!vault.ok()) return ctx.fail(vault.error());
      HashOnlyScope dry_run(**store);
      auto plan_result = plan(**store, snap->state, {(*me)->actor, random_hex(kInstanceBytes), (*vault)->get()},
                              body_at(*now), *now);
      if (plan_result.ok())
        return ctx.done({{"op", "wait"}, {"paths", a->positionals}, {"claimable", true}, {"polls", polls}},
                        "claimable now: " + a->positionals[0] + (a->positionals.size() > 1 ? " ..." : ""));
      if (!worth_waiting(plan_result.error().code)) return ctx.fail(plan_result.error());
      why = plan_result.error();
    }
    const std::int64_t waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (timeout && waited >= *timeout) {
      ctx.attempts.reset();
      return ctx.fail(
          Error(why.code,
                "timed out after " + format_duration(waited) + " (" + std::to_string(polls) + " polls): " + why.message,
                why.fields));
    }
    // Full jitter on the upper half keeps many waiters from polling in step.
    std::int64_t pause = delay / 2 + static_cast<std::int64_t>(randombytes_uniform(static_cast<std::uint32_t>(delay / 2 + 1)));
    if (timeout) pause = std::min(pause, *timeout - waited);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause));
    delay = std::min(kMaxPollMs, delay * 2);
  }
}

}  // namespace gitlocks::cli
