// The planner's internals, shared by its translation units:
//   plan.cpp           the public entries (plan, propose_sweep, lease_id, the
//                      guard-window errors) and store creation
//   plan_read.cpp      an op's fields, read and checked once as a typed Op
//   plan_ops.cpp       the ops planner: Planner::run and write, the record
//                      cache, the derived data of path leases, extend,
//                      release, sweep
//   plan_acquire.cpp   claim and sem-acquire
//   plan_queue.cpp     the waiters' queue: ticket, ticket-renew,
//                      ticket-drop, and the queue a claim respects
//   plan_conflicts.cpp conflicts: checking or filling in what a body
//                      declares about them, and the refusals that name them
//   plan_admin.cpp     owner-signed policy changes: guard-time-enable,
//                      guard-time-set, policy-set and
//                      PRIVATE membership (member-add, member-remove, rekey)
//   plan_migrate.cpp   the offline layout migration, format 1 -> 2
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "gitlocks/model.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/state.hpp"

namespace gitlocks::detail {

// The outcome of a transition without guards (creation, policy changes,
// migration): the universal interval, no leases.
PlanOutcome time_free_outcome(const json& body, Action action, const Oid& root, std::size_t records);

// Owner-signed policy changes ({"admin":{"op":...}}), plan_admin.cpp.
Result<PlanOutcome> plan_admin(ObjectStore& store, StateReader& reader, const Policy& policy, const PlanContext& ctx,
                               const json& body);

// The layout migration ({"migrate":{...}}) of a store in format `version`,
// plan_migrate.cpp.
Result<PlanOutcome> plan_migrate(ObjectStore& store, StateReader& reader, int version, const json& policy_doc,
                                 const json& body);

// Paths into the body for guard expressions: ["ops", op, rest...].
json body_path(std::size_t op, std::initializer_list<json> rest);
// An optional string field of at most `max_bytes`.
Result<std::optional<std::string>> opt_string(const json& op, const char* key, std::size_t max_bytes);
// A semaphore's name: 1..kMaxSemNameBytes bytes, no control characters.
Status check_name(const std::string& name, const char* what);

// A live-or-dead lease (or marker) that stands in the way of an op. The op may
// only be admitted after it expired: T > expires_at.
struct Conflict {
  Conflict(std::int64_t e, Errc r, std::string w, std::string h = "", std::string n = "", std::string p = "",
           std::string b = "", std::string m = "", const Family* f = nullptr)
      : expires_at(e),
        reason(r),
        what(std::move(w)),
        holder(std::move(h)),
        name(std::move(n)),
        path(std::move(p)),
        below(std::move(b)),
        mode(std::move(m)),
        family(f) {}
  std::int64_t expires_at;
  Errc reason;
  std::string what;
  // Who stands in the way (the holder's key and name), for the error's
  // fields; `below` is the key of the path whose marker says the holder has
  // leases under it (the name and the lease are then looked up when the
  // refusal is reported), `family` the family held.
  std::string holder;
  std::string name;
  std::string path;
  std::string below;
  std::string mode;  // of the leases below
  const Family* family;
  // A waiter's ticket that the op queues behind (reason queued-behind): its
  // id and place.
  std::string ticket;
  std::int64_t ticket_seq = 0;
};

// The ops of a body as types (docs/FORMAT.md "Bodies"). Planner::read_op
// (plan_read.cpp) reads and checks an op's fields once, before the op looks
// at the state, and write_op writes a proposal's op back from its type: the
// handlers read and fill in typed fields only. A field checked later than
// the others (what a proposal may leave out, a sweep's entries) is read with
// the rest, and its fault is kept and reported where the planner has always
// reported it, so a body with several faults is refused for the same one as
// before.

// The resource an op names: "path" (with the parsed path) or "sem", and the
// value as the body spells it.
struct OpTarget {
  std::string res;
  std::optional<RepoPath> path;
  std::string text;
};
// A lease a new lease takes over once it expired, as a body declares it:
// {"lease","generation","expires_at"}.
struct Reclaim {
  std::string lease;
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
  bool operator==(const Reclaim& o) const {
    return lease == o.lease && generation == o.generation && expires_at == o.expires_at;
  }
};
// One declared reclaim: `keys` is the check that it is an object of those
// keys only, `value` is none when a field is missing or mistyped (such an
// entry matches no lease).
struct ReclaimEntry {
  Status keys = Ok{};
  std::optional<Reclaim> value;
};
// What the body of a new lease (claim, sem-acquire) declares about the
// leases in its way: the ones it reclaims and the instant after which it
// may be admitted. Checked when replaying, decided when proposing.
struct Declared {
  bool has_reclaims = false;
  bool reclaims_listed = false;  // a non-empty array
  std::vector<ReclaimEntry> reclaims;
  bool has_after = false;
  std::optional<std::int64_t> after;  // none when mistyped
};
// An older ticket a claim passes because its holder could not be admitted
// either way (docs/FORMAT.md "Tickets"): {"ticket","until"}, `until` the
// latest expiry of the leases in its way held by one it queued behind.
struct Pass {
  std::string ticket;
  std::int64_t until = 0;
  bool operator==(const Pass& o) const { return ticket == o.ticket && until == o.until; }
};
// "passes" of a claim, as declared: checked when replaying, decided when
// proposing. `shape` is the check of the list's form (reported where the
// queue is checked).
struct DeclaredPasses {
  bool has = false;
  Status shape = Ok{};
  std::vector<Pass> list;
};
// claim: {"op","path","mode","expires_at","note"?,"reclaims"?,"after"?,"passes"?}
struct ClaimOp {
  RepoPath path;
  std::string mode;  // "exclusive" | "shared" | "intent"
  bool exclusive = true;
  std::int64_t expires_at = 0;
  std::optional<std::string> note;
  Declared declared;
  DeclaredPasses passes;
};
// sem-acquire: {"op","sem","limit","expires_at","note"?,"reclaims"?,"after"?}
struct SemAcquireOp {
  std::string name;
  std::int64_t limit = 0;
  std::int64_t expires_at = 0;
  std::optional<std::string> note;
  Declared declared;
};
// extend: {"op","path"|"sem","lease","generation","prev_expires_at","expires_at"}
struct ExtendOp {
  OpTarget target;
  std::int64_t expires_at = 0;
  std::string lease;
  std::optional<std::int64_t> generation;  // filled in when proposing
  // Filled in when proposing and absent; a fault (absent when replaying)
  // is reported once the lease is found.
  bool has_prev_expires_at = false;
  Result<std::int64_t> prev_expires_at = std::int64_t{0};
};
// release, sem-release: {"op","path"|"sem","lease","generation"}
struct ReleaseOp {
  OpTarget target;
  bool sem = false;
  std::string lease;
  std::optional<std::int64_t> generation;  // filled in when proposing
};
// force-release: {"op","path","lease","generation","reason"}, by an admin.
struct ForceReleaseOp {
  OpTarget target;
  std::string reason;
  std::string lease;
  // Filled in when proposing and absent; a fault (absent when replaying)
  // is reported once the lease is found.
  bool has_generation = false;
  Result<std::int64_t> generation = std::int64_t{0};
};
// One entry of a sweep: {"path"|"sem","lease","generation","expires_at"}.
struct SweptLease {
  OpTarget target;
  std::string lease;
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
};
// sweep: {"op","leases":[...]}; an entry's fault is reported when the sweep
// reaches it.
struct SweepOp {
  std::vector<Result<SweptLease>> leases;
};
// handoff: {"op","path"|"sem","lease","generation","prev_expires_at","to",
// "to_name","expires_at","note"?,"reclaims"?,"after"?}: the actor's live
// lease ends and `to` holds the resource from the same transition, at the
// next generation (docs/FORMAT.md "Hand-off").
struct HandoffOp {
  OpTarget target;
  std::string lease;
  std::optional<std::int64_t> generation;  // filled in when proposing
  bool has_prev_expires_at = false;        // as for extend
  Result<std::int64_t> prev_expires_at = std::int64_t{0};
  std::string to;  // the receiver's key, 64 hex
  std::string to_name;
  std::int64_t expires_at = 0;
  std::optional<std::string> note;
  Declared declared;  // paths only: the expired leases in the receiver's way
};
// ticket: {"op","wants":[{"path","mode"}|{"sem"}],"expires_at","behind"}: a
// place in the store's queue (docs/FORMAT.md "Tickets").
struct TicketOp {
  std::vector<TicketWant> wants;
  std::vector<Wanted> parsed;  // the wants as the queue compares them
  std::int64_t expires_at = 0;
  bool has_behind = false;  // filled in when proposing
  Status behind_shape = Ok{};
  std::vector<std::string> behind;
};
// ticket-renew: {"op","ticket","prev_expires_at","expires_at"}
struct TicketRenewOp {
  std::string ticket;
  bool has_prev_expires_at = false;  // as for extend
  Result<std::int64_t> prev_expires_at = std::int64_t{0};
  std::int64_t expires_at = 0;
};
// ticket-drop: {"op","ticket","expires_at"?}: the actor's own ticket, or an
// expired one of anyone (then with its expiry, as a sweep declares it).
struct TicketDropOp {
  std::string ticket;
  bool has_expires_at = false;
  Result<std::int64_t> expires_at = std::int64_t{0};
};
using Op = std::variant<ClaimOp, SemAcquireOp, ExtendOp, ReleaseOp, ForceReleaseOp, SweepOp, HandoffOp, TicketOp,
                        TicketRenewOp, TicketDropOp>;

// Who a new lease is for: the actor (claim, sem-acquire) or the receiver of
// a hand-off.
struct Holder {
  const std::string& key;
  const std::string& name;
};

// Plans the ops of one transition body against the source state. Propose
// mode (`now` given) and replay mode run the same code.
class Planner {
 public:
  Planner(ObjectStore& store, StateReader& reader, const RecordCodec& codec, const Policy& policy,
          const PlanContext& ctx, std::optional<std::int64_t> now, int format)
      : store_(store), reader_(reader), codec_(codec), policy_(policy), ctx_(ctx), now_(now), format_(format) {}

  // Plans every op of `body` (completing it when proposing) into `out`.
  Status run(json& body, PlanOutcome& out);

  // Writes dirty records and returns the successor state tree.
  Result<Oid> write(std::size_t& records_written);

 private:
  // --- the record cache (plan_ops.cpp)
  // The cached record of a resource, read and validated once; nullptr if it
  // does not exist.
  Result<const Record*> get(const std::string& res);
  // The record to edit (`fresh` when it does not exist yet); written by
  // write().
  Result<Record*> get_for_write(const std::string& res, const Record& fresh);

  // --- derived data of path leases (plan_ops.cpp)
  // The derived data of a lease on path `p`: `marker` edits the intention
  // markers of every ancestor, `family` the holder entry of every exclusive
  // family the path belongs to.
  template <class MarkerFn, class FamilyFn>
  Status update_derived(const RepoPath& p, PathMode mode, MarkerFn marker, FamilyFn family);
  // A lease is being removed from path `p`.
  Status forget_path_lease(const RepoPath& p, const Lease& lease);
  // The actor's new lease on path `p`.
  Status remember_path_lease(const RepoPath& p, PathMode mode, std::int64_t until, const std::string& holder);
  // The actor's lease on path `p` was renewed until `until`.
  Status remember_path_lease_renewal(const RepoPath& p, PathMode mode, std::int64_t until);

  // --- conflicts and refusals (plan_conflicts.cpp)
  Error conflict_error(const Conflict& c, const std::string& suffix = "");
  Error refusal(Errc code, const std::string& text, std::int64_t at, const std::string& holder,
                const std::string& name) const;
  void name_from_lease(Conflict& c);
  Status resolve(Declared& d, const std::vector<Conflict>& conflicts, const std::vector<Reclaim>& must_reclaim);

  // --- reading ops (plan_read.cpp)
  // The typed op of kind `kind`, or its refusal; nullopt for a kind the
  // planner does not know.
  std::optional<Result<Op>> read_op(const std::string& kind, const json& op);
  // The op as a proposal completes it (plan_read.cpp).
  static json write_op(const Op& op);
  Result<ClaimOp> read_claim(const json& op);
  Result<SemAcquireOp> read_sem_acquire(const json& op);
  Result<ExtendOp> read_extend(const json& op);
  Result<ReleaseOp> read_release(const json& op, bool sem);
  Result<ForceReleaseOp> read_force_release(const json& op);
  Result<SweepOp> read_sweep(const json& op);
  Result<SweptLease> read_swept(const json& entry);
  Result<HandoffOp> read_handoff(const json& op);
  static Declared read_declared(const json& op);
  Result<std::int64_t> expiry(const json& op);
  Status new_lease_terms(const json& op, std::int64_t& expires_at, std::optional<std::string>& note);
  Result<OpTarget> target_of(const json& op, bool sem_only);
  // A lease's id and, unless a proposal may leave it out, its generation.
  Status lease_ref(const json& op, std::string& lease, std::optional<std::int64_t>& generation);

  // --- the ops (claim, sem-acquire: plan_acquire.cpp; the rest: plan_ops.cpp)
  Lease new_lease(std::size_t i, const std::string& res, std::int64_t generation, std::int64_t expires_at,
                  const std::optional<std::string>& note, const Holder& holder) const;
  void issue(Record& rec, const std::string& res, const Lease& lease);
  Holder actor() const { return {ctx_.actor, name_}; }
  // A new path lease for `holder` (claim, hand-off): what stands in the way,
  // resolved as `declared` says, then the lease and its guards.
  // `passes` is the claim's (a claim respects the queue); none for a
  // hand-off, which passes it (the giver chose the receiver).
  Status admit_path(const RepoPath& p, const std::string& mode, std::int64_t expires_at,
                    const std::optional<std::string>& note, Declared& declared, std::size_t i, const Holder& holder,
                    DeclaredPasses* passes = nullptr);
  // What stands in the way of a new path lease of `who` in mode `pm`
  // (ancestors' leases, the path's own, markers below, exclusive
  // families), live or expired. `must_reclaim`/`reclaimed` receive the
  // leases on the path itself, `superseded` the holder's own intent a lock
  // replaces.
  Status path_conflicts(const RepoPath& p, PathMode pm, const std::string& who, std::vector<Conflict>& conflicts,
                        std::vector<Reclaim>* must_reclaim = nullptr, std::vector<std::string>* reclaimed = nullptr,
                        std::optional<std::string>* superseded = nullptr);

  // --- the queue (plan_queue.cpp)
  // The queue record, or nullptr when the store has none.
  Result<const Record*> queue();
  // The holders whose leases stand in the way of `wants` for `who`
  // (a ticket's "behind"), sorted and unique.
  Result<std::vector<std::string>> blockers(const std::vector<Wanted>& wants, const std::string& who);
  // The wants of a stored ticket as the queue compares them.
  std::vector<Wanted> wants_of(const Ticket& t) const;
  // The older tickets of other holders that a claim of `w` by `who` meets:
  // each adds a queued-behind conflict, or a pass (checked or decided).
  Status queue_for_claim(const Wanted& w, const std::string& who, DeclaredPasses& passes,
                         std::vector<Conflict>& conflicts, std::size_t i);
  // The live tickets of other holders a sem-acquire waits behind: how many
  // (`ahead`, the first in `first`); the expired ones are conflicts.
  Status queue_for_sem(const std::string& name, std::int64_t after_or_now, bool proposing,
                       std::vector<Conflict>& conflicts, std::int64_t& ahead, const Ticket*& first);
  // The refusal when a ticket of `who` for `wants` would close a cycle in
  // the queue's wait-for graph.
  Status deadlock_check(const std::vector<Wanted>& wants, const std::string& who);
  Result<TicketOp> read_ticket(const json& op);
  Result<TicketRenewOp> read_ticket_renew(const json& op);
  Result<TicketDropOp> read_ticket_drop(const json& op);
  Status ticket(TicketOp& t, std::size_t i);
  Status ticket_renew(TicketRenewOp& t, std::size_t i);
  Status ticket_drop(TicketDropOp& t, std::size_t i);
  Status claim(ClaimOp& c, std::size_t i);
  Status handoff(HandoffOp& h, std::size_t i);
  Status sem_acquire(SemAcquireOp& s, std::size_t i);
  Result<Lease> own_lease(const std::string& res, const std::string& id, std::optional<std::int64_t>& generation,
                          const std::string& verb);
  Status extend(ExtendOp& x, std::size_t i);
  Status remove_lease(const std::string& res, const std::optional<RepoPath>& p, const std::string& id);
  Status release(ReleaseOp& r);
  Status sweep(const SweepOp& s, std::size_t i);
  Status force_release(ForceReleaseOp& f);

  ObjectStore& store_;
  StateReader& reader_;
  const RecordCodec& codec_;
  const Policy& policy_;
  const PlanContext& ctx_;
  std::optional<std::int64_t> now_;
  int format_;  // layout of the source state, kept by its successor
  std::int64_t created_at_ = 0;
  std::string name_;
  std::map<std::string, std::optional<Record>> cache_;
  std::set<std::string> dirty_;
  std::vector<TimeGuard> guards_;
  std::vector<IssuedLease> leases_;
};

}  // namespace gitlocks::detail
