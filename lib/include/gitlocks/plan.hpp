// gitlocks/plan.hpp — the planner: a pure function
//   (source state, policy, context, body) -> successor state | named refusal.
//
// It never reads a clock. Time enters only through guard expressions over T
// (the admission time); the planner derives their exact interval and the
// host (or the notary) checks T against it. In *propose* mode the host also
// passes its clock reading `now`: the planner then classifies conflicts with
// leases that are still live at `now` as refusals and fills in what the body
// must declare (reclaimed leases, the `after` bound, the generation and
// expiry being renewed). In *replay* mode (no `now`) the body is taken as
// recorded and every declaration is checked against the state. Both modes
// run the same code, so replay reproduces a proposal bit for bit.
//
// Body (canonical JSON object):
//   {"created_at":MS,"name":DISPLAY-NAME,"ops":[OP,...]}    transitions
//   {"init":POLICY}                                        store creation
// Ops (docs/FORMAT.md has every field):
//   {"op":"claim","path":P,"mode":"exclusive"|"shared","expires_at":MS,
//    "note":S?,"reclaims":[{"lease":ID,"generation":G,"expires_at":MS}]?,"after":MS?}
//   {"op":"extend","path":P|"sem":N,"lease":ID,"generation":G,"prev_expires_at":MS,"expires_at":MS}
//   {"op":"release","path":P|"sem":N,"lease":ID,"generation":G}
//   {"op":"sweep","leases":[{"path":P|"sem":N,"lease":ID,"generation":G,"expires_at":MS}]}
//   {"op":"sem-acquire","sem":N,"limit":L,"expires_at":MS,"note":S?,"reclaims":[...]?,"after":MS?}
//   {"op":"handoff","path":P|"sem":N,"lease":ID,"generation":G,"prev_expires_at":MS,"to":KEY,
//    "to_name":NAME,"expires_at":MS,"note":S?,"reclaims":[...]?,"after":MS?}
//   {"op":"ticket","wants":[{"path":P,"mode":M}|{"sem":N}],"expires_at":MS,"behind":[KEY...]}
//   {"op":"ticket-renew","ticket":ID,"prev_expires_at":MS,"expires_at":MS}
//   {"op":"ticket-drop","ticket":ID,"expires_at":MS?}
// and a claim's "passes":[{"ticket":ID,"until":MS}]? (docs/FORMAT.md "Tickets").
// Owner-signed admin bodies {"admin":{"op":...}}: guard-time-enable,
// guard-time-set (other notary pins, or guard time off), policy-set, and for
// PRIVATE stores member-add, member-remove (both leave a pending keyring
// transition) and rekey (re-seals every record under the pending epoch); and
// checkpoint (the state unchanged, vouched for at the commit it names as
// `prev`: checkpoint_of).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/expr.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

class Vault;

struct PlanContext {
  std::string actor;     // hex public key of the signer
  std::string instance;  // operation id: makes lease ids unique
  // A member's epoch keys: required to plan on a PRIVATE store.
  const Vault* vault = nullptr;
  // Admission only (the claims rule of enforce.hpp asks this): each claim
  // op is checked against the source state exactly as when planning — its
  // refusal is the same — but its effects are not applied (a later op sees
  // the source state, not the earlier ops' leases), nothing is written and
  // no guard interval is derived: the outcome has only `body` and
  // `action`. Ops other than claim are refused (usage).
  bool check_only = false;
};

// A lease a transition creates or renews, as hosts report it.
struct IssuedLease {
  std::string resource;  // its record key: "path:src/a.c", "sem:ci"
  std::string lease;     // its id
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
};
// {"expires_at", "generation", "lease", "resource"}: how hosts print it.
void to_json(json& j, const IssuedLease& l);

// What the planner made of a body (docs/FORMAT.md, the packet's `action`):
// `init` for creation, the admin op, `migrate`; for ops, `batch` when there
// are several, else the op's own kind, except that a claim declaring
// `after` is `reclaim`. The packet spells it action_name().
enum class Action {
  init,
  claim,
  reclaim,
  extend,
  release,
  sweep,
  sem_acquire,
  sem_release,
  force_release,
  batch,
  guard_time_enable,
  guard_time_set,
  policy_set,
  member_add,
  member_remove,
  rekey,
  migrate,
  checkpoint,
  handoff,
  ticket,
  ticket_renew,
  ticket_drop,
};
const char* action_name(Action a);

struct PlanOutcome {
  json body;                        // the complete body (as proposed or as given)
  Action action = Action::init;     // the packet's action (action_name)
  Oid result_state;                 // successor state tree id
  std::vector<TimeGuard> guards;    // every guard of the transition (guard_documents: as seed 002 writes them)
  Interval interval;                // exact admission interval of T
  std::size_t records_written = 0;  // record blobs in the successor
  std::vector<IssuedLease> leases;  // leases created or renewed, in the order of their ops
  // The store policy's TTL bounds (for explaining a T outside `interval`).
  std::int64_t min_ttl_ms = 0;
  std::int64_t max_ttl_ms = 0;
};

// Why admission at `t` is refused when `t` is outside `o.interval`, in the
// policy's words when a lease's TTL (expires_at - t) is out of its bounds:
// guard_window "ttl 2h exceeds this store's max_ttl 1h" with fields ttl_ms
// and max_ttl_ms (or "... is below this store's min_ttl 1s", min_ttl_ms);
// otherwise "admission time ... is outside the guard interval [lo, hi]".
Error guard_window_error(const PlanOutcome& o, std::int64_t t);

// The same TTL check made at proposal time `now` (before a notary gives T):
// the error for the first lease whose expires_at - now is out of bounds.
std::optional<Error> ttl_bound_error(const PlanOutcome& o, std::int64_t now);

// The store a creation body makes ({"init":POLICY}, the root transition's):
// its policy, parsed once, and the sha256 of the policy's canonical text,
// the policy hash the root's packet binds. nullopt: not a creation body.
// Errors: those of parse_policy (and canon_dump) for a policy that does not
// parse. The one reader of a creation body beside the planner's plan_init:
// the writer's packet header and replay's check of the root.
struct Creation {
  Policy policy;
  std::string policy_hash;
};
Result<std::optional<Creation>> creation_of(const json& body);

// The commit a checkpoint body vouches for ({"admin":{"op":"checkpoint",
// "prev":C,...}}): the commit it follows, whose state it leaves as it is
// (docs/FORMAT.md "Checkpoints"). The planner checks the body; replay
// checks `prev` against the commit's parent, which the planner cannot see.
// nullopt: not a checkpoint body (or one whose prev is not a commit id, which
// the planner refuses).
std::optional<Oid> checkpoint_of(const json& body);

// source_state: the parent's state tree id, or the null id to create a store (body
// {"init":POLICY}). Objects of the successor are written to `store`.
Result<PlanOutcome> plan(ObjectStore& store, const Oid& source_state, const PlanContext& ctx, const json& body,
                         std::optional<std::int64_t> now = std::nullopt);

// The sweep op that removes every lease expired at `now` (nullopt when none).
Result<std::optional<json>> propose_sweep(ObjectStore& store, const Oid& source_state, std::int64_t now,
                                          const Vault* vault = nullptr);

// Deterministic lease id (24 hex digits).
std::string lease_id(const std::string& instance, std::size_t op_index, const std::string& resource);

}  // namespace gitlocks
