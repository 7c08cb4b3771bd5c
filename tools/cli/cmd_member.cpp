// PRIVATE store membership (docs/PRIVATE.md): member add|remove|rekey|list.
//
// add/remove publish two owner-signed transitions: the pending keyring
// transition (a fresh random epoch key sealed to each member of the new
// list), then the rekey that re-seals every record under it and activates
// the epoch. `member rekey` publishes only the second (an interrupted add or
// remove). GIT_LOCKS_TEST_STOP_AFTER_PENDING=1 stops after the first commit
// (tests simulate the interruption with it).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cli.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "publish.h"
#include "vault_host.h"

namespace gitlocks::cli {
namespace {

// The policy of a PRIVATE store's snapshot, parsed once. Errors: usage.
Result<Policy> private_policy(Context& ctx, const Snapshot& snap) {
  GITLOCKS_CHECK(require_store(ctx, snap));
  if (!snap.is_private())
    return make_error(Errc::usage, "this lock store is not PRIVATE (membership needs `git-locks init --private`)");
  return snap.policy;
}

Result<Published> publish_rekey(Context& ctx) {
  return publish(ctx, "member", [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
    GITLOCKS_TRY(policy, private_policy(ctx, snap));
    if (!policy.pending) return make_error(Errc::usage, "no keyring transition is pending");
    return std::optional<json>{ops::admin_rekey(snap.policy_hash)};
  });
}

json membership(const Candidate& c) { return json{{"commit", c.commit}, {"action", action_name(c.outcome.action)}}; }

int change(Context& ctx, const Argv& argv, bool add) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 1)
    return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  const std::string member = a->positionals[0];
  if (!public_key_from_hex(member).ok())
    return ctx.fail(make_error(Errc::usage, "KEY must be an actor key: 64 lowercase hex digits (`git-locks whoami`)"));
  const EpochKey next_key = random_epoch_key();
  std::vector<std::string> following;  // the members after the change
  std::int64_t next_epoch = 0;
  auto pending = publish(ctx, "member", [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
    GITLOCKS_TRY(policy, private_policy(ctx, snap));
    if (policy.pending)
      return make_error(Errc::usage, "a keyring transition is already pending: run `git-locks member rekey` first");
    GITLOCKS_TRY(members, gitlocks::next_members(policy.members, member, add, policy.owner));
    following = std::move(members);
    next_epoch = snap.epoch() + 1;
    GITLOCKS_TRY(ring, seal_keyring(next_key, next_epoch, following));
    return std::optional<json>{ops::admin_member(add, member, snap.policy_hash, ring)};
  });
  if (!pending.ok()) return ctx.fail(pending.error());
  json out = {{"op", ctx.op},
              {"member", member},
              {"epoch", next_epoch},
              {"members", following},
              {"commits", json::array({membership(*pending->candidate)})}};
  const std::string what = std::string(add ? "added " : "removed ") + member.substr(0, 12);
  const char* stop = std::getenv("GIT_LOCKS_TEST_STOP_AFTER_PENDING");
  if (stop && std::strcmp(stop, "1") == 0) {
    out["pending"] = true;
    return ctx.done(out, what + ": keyring transition to epoch " + std::to_string(next_epoch) +
                             " pending (stopped for a test; finish with `git-locks member rekey`)");
  }
  auto rekeyed = publish_rekey(ctx);
  if (!rekeyed.ok()) return ctx.fail(rekeyed.error());
  out["pending"] = false;
  out["commits"].push_back(membership(*rekeyed->candidate));
  return ctx.done(out, what + ": epoch " + std::to_string(next_epoch) + " is active, sealed to " +
                           std::to_string(following.size()) + " member" + (following.size() == 1 ? "" : "s") +
                           " (refs/locks/state -> " + rekeyed->candidate->commit.hex().substr(0, 12) + ")");
}

}  // namespace

int cmd_member_add(Context& ctx, const Argv& argv) { return change(ctx, argv, true); }

int cmd_member_remove(Context& ctx, const Argv& argv) { return change(ctx, argv, false); }

int cmd_member_rekey(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto p = publish_rekey(ctx);
  if (!p.ok()) return ctx.fail(p.error());
  const Snapshot& s = p->source;
  return ctx.done({{"op", ctx.op}, {"epoch", s.epoch() + 1}, {"commits", json::array({membership(*p->candidate)})}},
                  "epoch " + std::to_string(s.epoch() + 1) + " is active (refs/locks/state -> " +
                      p->candidate->commit.hex().substr(0, 12) + ")");
}

int cmd_member_list(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  auto policy = private_policy(ctx, *snap);
  if (!policy.ok()) return ctx.fail(policy.error());
  std::string me;
  if (auto id = ctx.identity(); id.ok()) me = (*id)->actor;
  const std::vector<std::string>& members = policy->members;
  json out = {{"op", ctx.op},           {"store", snap->store_id},
              {"owner", policy->owner}, {"epoch", snap->epoch()},
              {"members", members},     {"pending", policy->pending ? json(policy->pending_members) : json(nullptr)}};
  std::string human = "epoch " + std::to_string(snap->epoch()) + ", " + std::to_string(members.size()) + " member" +
                      (members.size() == 1 ? "" : "s") + ":\n";
  for (const std::string& k : members)
    human += "  " + k + (k == policy->owner ? "  owner" : "") + (k == me ? "  (you)" : "") + "\n";
  if (policy->pending)
    human += "a transition to epoch " + std::to_string(snap->epoch() + 1) +
             " is pending: run `git-locks member rekey` (owner)\n";
  return ctx.done(out, human);
}

}  // namespace gitlocks::cli
