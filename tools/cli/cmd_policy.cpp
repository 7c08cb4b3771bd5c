// The store's policy (docs/CLI.md "policy"): `policy show` prints it with
// its hash; `policy set FILE --expected-policy-hash H` publishes the owner's
// signed policy-set transition (docs/FORMAT.md "Changing the policy"), which
// the core plans and every verifier replays: only the owner, only at the
// expected hash, only the settable fields.
//
// FILE is a JSON object (or "-" for stdin) of the fields to change: each one
// given replaces the current value, `null` removes an optional one
// (require_claim, enforce, admins, bots, checkpoint; families: none), a field left out
// keeps its value. Fixed fields (store, owner, case_insensitive, ...) may
// appear only with their current value, so the output of
// `policy show --json | jq .policy` edited in place is a valid FILE.
//
// `checkpoint` publishes the owner's signed checkpoint of the state at the
// tip (docs/FORMAT.md "Checkpoints"): an admin transition that changes
// nothing and names the commit it follows. With --cut it has no Git parent
// and starts a new chain (docs/FORMAT.md "The cut"): a fetch of
// refs/locks/state transfers only what follows it.
#include <algorithm>

#include "cli.h"
#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "publish.h"
#include "vault_host.h"
#include "witness.h"

namespace gitlocks::cli {
namespace {

// The current policy with FILE's fields applied. Errors: usage.
Result<json> apply_changes(const json& current, const json& changes, const std::string& file) {
  if (!changes.is_object()) return make_error(Errc::usage, file + ": a policy change is a JSON object");
  json next = current;
  for (const auto& [k, v] : changes.items()) {
    if (!is_settable_policy_field(k) && !current.contains(k)) {  // unknown: the core names it
      next[k] = v;
      continue;
    }
    if (!is_settable_policy_field(k)) {
      if (current[k] != v)
        return make_error(Errc::usage, file + ": '" + k +
                                           "' cannot change (policy set changes min_ttl_ms, max_ttl_ms, families, "
                                           "require_claim, enforce, admins, bots and checkpoint)");
      continue;
    }
    if (v.is_null()) {
      if (k == "min_ttl_ms" || k == "max_ttl_ms")
        return make_error(Errc::usage, file + ": '" + k + "' cannot be removed");
      if (k == "families") next[k] = json::array();
      else next.erase(k);
    } else {
      next[k] = v;
    }
  }
  return next;
}

}  // namespace

int cmd_policy_show(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  if (auto s = require_store(ctx, *snap); !s.ok()) return ctx.fail(s.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  if (auto keys = require_keys(ctx, *snap); !keys.ok()) return ctx.fail(keys.error());
  StateReader reader(**store, snap->state, snap->codec());
  auto policy = readable_policy(reader, *snap);
  if (!policy.ok()) return ctx.fail(policy.error());
  json out = {{"op", ctx.op},
              {"store", snap->store_id},
              {"commit", *snap->commit},
              {"policy_hash", snap->policy_hash},
              {"policy", *policy}};
  return ctx.done(out, "policy of store " + snap->store_id.substr(0, 12) + " (policy hash " + snap->policy_hash +
                           "):\n" + policy->dump(2) + "\n");
}

int cmd_policy_set(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 1)
    return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  auto expected = a->value("expected-policy-hash");  // required (commands.cpp)
  const std::string file = a->positionals[0];
  auto text = read_input(file);
  if (!text.ok()) return ctx.fail(text.error());
  auto changes = canon_parse(*text, CanonMode::lenient);
  if (!changes.ok()) return ctx.fail(changes.error().prefixed(file + ": "));
  json next;
  std::string previous;
  auto p = publish(ctx, "policy set", [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    GITLOCKS_TRY(store, ctx.store());
    StateReader reader(*store, snap.state);
    GITLOCKS_TRY(current, reader.policy());
    GITLOCKS_TRY(applied, apply_changes(current, *changes, file));
    next = applied;
    previous = snap.policy_hash;
    return std::optional<json>{ops::admin_policy_set(applied, *expected)};
  });
  if (!p.ok()) return ctx.fail(p.error());
  const Candidate& c = *p->candidate;
  auto bytes = canon_dump(next);
  if (!bytes.ok()) return ctx.fail(bytes.error());
  const std::string hash = sha256_hex(*bytes);
  json out = {{"op", ctx.op},
              {"commit", c.commit},
              {"previous_policy_hash", previous},
              {"policy_hash", hash},
              {"policy", next}};
  if (p->checkpoint) out["checkpoint"] = *p->checkpoint;  // the new policy's checkpoint.every asked for one
  if (!p->witnesses.is_null()) out["witnesses"] = p->witnesses;
  return ctx.done(
      out, "policy changed (policy hash " + hash + "; refs/locks/state -> " + c.commit.hex().substr(0, 12) + ")");
}

int cmd_checkpoint(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  std::optional<std::int64_t> every;
  if (auto e = a->value("every")) {
    auto n = parse_count(*e, "--every");
    if (!n.ok()) return ctx.fail(n.error());
    if (*n < 1) return ctx.fail(make_error(Errc::usage, "--every must be at least 1"));
    every = *n;
  }
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  Oid prev;
  std::int64_t since = 0;
  PublishHooks hooks;
  hooks.cut = a->has("cut");
  auto p = publish(
      ctx, "checkpoint",
      [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
        GITLOCKS_CHECK(require_store(ctx, snap));
        prev = *snap.commit;
        if (every) {
          GITLOCKS_TRY(n, commits_since_checkpoint(**store, prev, *every));
          since = n;
          if (since < *every) return std::optional<json>();  // recent enough: nothing to do
        }
        return std::optional<json>{ops::admin_checkpoint(prev.hex(), snap.policy_hash)};
      },
      hooks);
  if (!p.ok()) return ctx.fail(p.error());
  if (!p->candidate)
    return ctx.done({{"op", ctx.op}, {"commit", nullptr}, {"prev", prev}, {"since", since}, {"every", *every}},
                    "no checkpoint: the newest is " + std::to_string(since) + " commit(s) back, fewer than --every " +
                        std::to_string(*every) + " (refs/locks/state stays at " + prev.hex().substr(0, 12) + ")");
  const Candidate& c = *p->candidate;
  json out = {{"op", ctx.op}, {"commit", c.commit}, {"prev", prev}, {"cut", hooks.cut}};
  if (hooks.cut) out["archive"] = archive_ref(prev);
  // The witnesses this clone requires cosign it at once (docs/WITNESS.md).
  if (json w = cosign_if_required(ctx, p->source.store_id, c.commit); !w.is_null()) out["witnesses"] = w;
  return ctx.done(out, "checkpoint " + c.commit.hex().substr(0, 12) + " of the state at " + prev.hex().substr(0, 12) +
                           (hooks.cut ? ", starting a new chain (the history before it: " + archive_ref(prev) + ")"
                                      : std::string()) +
                           " (refs/locks/state -> " + c.commit.hex().substr(0, 12) + ")");
}

}  // namespace gitlocks::cli
