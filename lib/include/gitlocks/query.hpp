// gitlocks/query.hpp — answers read from verified history, for every host.
//
// Every question a host asks of a store is answered here, once: the rows
// and the whole document of `status` (status_document), whether a
// generation is live (fence), the admission time of a commit
// (admission_time), which refusals are conflicts that time clears
// (clears_with_time, is_path_conflict), the timeline of leases with how
// each one ended (lease_timeline), and the summary of a replay with its
// note (replay_summary_json). Whether a lease is live is model.hpp's
// live_until. The CLI, the WASM module and the page call these; none
// derives a rule of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/result.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/transition.hpp"

namespace gitlocks {

// The admission time T of a transition commit whose packet is `packet`: the
// notary's admitted_at_ms when the commit carries an attestation (guard
// time), else the packet's claimed_at_ms; nullopt when neither is readable.
std::optional<std::int64_t> admission_time(const TransitionCommit& tc, const json& packet);

// The rows of `status` (docs/CLI.md): the leases of the state `reader`
// reads, sorted by resource then generation, each
//   {"kind","resource","lease","holder","name","generation","expires_at",
//    "expires_in_ms","created_at","live","mine","path","mode"|"sem","limit",
//    "note"?}
// expired ones only with `include_expired`; with `filters`, only the path
// leases overlapping one of them (no semaphores). `me` marks "mine".
//
// With filters the answer comes from the index, not from a scan: the record
// of each filter and of each of its ancestors (where the leases overlapping
// it from above live), and the records below a filter only when that
// filter's intention markers (`below`) say some holder has leases there —
// then, and only then, every record is read.
Result<json> list_leases(StateReader& reader, std::int64_t now, const std::vector<RepoPath>& filters,
                         bool include_expired, const std::string& me);

// A lease a listing shows, typed: its record's resource (and a semaphore's
// limit), the lease, and for the lease an admin force-released last
// (include_expired only) who did it and why.
struct ListedLease {
  Resource resource;
  std::int64_t limit = 0;
  Lease lease;
  std::optional<Released> released;
};
// What list_leases(reader, now, filters, include_expired, me) shows, typed,
// in the same order, read the same way: what the planner's and the server
// hook's refusals read to name the lease in the way.
Result<std::vector<ListedLease>> listed_leases(StateReader& reader, std::int64_t now,
                                               const std::vector<RepoPath>& filters, bool include_expired);

// The live intents (docs/FORMAT.md "Intent") of holders other than `actor`
// that overlap any of `paths` at `now` (on a path, an ancestor or below it),
// as listed_leases reads them: what a claim's result, its refusal and the
// hooks warn about. Empty `paths`: none.
Result<std::vector<ListedLease>> others_intents(StateReader& reader, std::int64_t now,
                                                const std::vector<RepoPath>& paths, const std::string& actor);
// {"expires_at","holder","holder_name","lease","path"} of an intent.
json intent_json(const Lease& intent);
// "bob (1a2b3c4d5e6f) intends to change src/parser/ until 2026-12-01T11:16:33Z, in 9m59s".
std::string intent_warning(const Lease& intent, std::int64_t now);

// The rows of list_leases(reader, now, {}, include_expired, me), in the same
// order, handed to `row` one at a time (it returns false to stop), after
// `begin` was told how many there are: memory holds each record's resource
// name between two passes over the records, never the rows.
Status for_each_lease(StateReader& reader, std::int64_t now, bool include_expired, const std::string& me,
                      const std::function<void(std::size_t rows)>& begin,
                      const std::function<bool(const json& row)>& row);

// How many transitions lease_resource_in_history() reads back from the tip
// before it gives up (the caller then scans the state).
inline constexpr std::size_t kLeaseLookupDepth = 1000;

// The resource ("path:KEY" or "sem:NAME") of lease `id`, read from the
// packets of verified history: walking back from `tip`, the newest
// transition that names the id — the claim or sem-acquire that issued it
// (ids are lease_id(instance, op index, resource)), or an extend or release
// that names it. A lease never changes resource, so the caller looks at that
// one record of the state to learn whether the lease is still there.
// nullopt when none of the newest `depth` transitions names it, or when
// their bodies are sealed (PRIVATE): then only a scan of the state answers.
// Cost: O(transitions since the lease was last issued or renewed), bounded
// by `depth`; independent of the number of live leases.
Result<std::optional<std::string>> lease_resource_in_history(ObjectStore& store, const Oid& tip, const std::string& id,
                                                             std::size_t depth = kLeaseLookupDepth);

// The records a transition changed: `before` holds the records of
// `old_state` that differ from, or are missing in, `new_state`; `after` the
// records of `new_state` that differ or are new, each list in location
// order. A diff of the two state trees that descends only where their ids
// differ, so it costs O(the commit's changes), not O(its state): what a
// timeline of leases needs per commit (a lease is in `after` and not in
// `before`: issued; in both with another expires_at: renewed; in `before`
// only: ended). An empty `old_state` is the root's parent (no records).
// States of different formats or codecs (a migration, a rekey) list every
// record of both. The codecs read each state's records (nullptr: in the
// clear). Errors: store_read, invalid (a record misplaced or malformed),
// unknown_format.
struct RecordChanges {
  std::vector<json> before, after;
};
Result<RecordChanges> record_changes(ObjectStore& store, const Oid& old_state, const Oid& new_state,
                                     const RecordCodec* old_codec = nullptr, const RecordCodec* new_codec = nullptr);

// Refusals that time can clear: another holder's lease or a full
// semaphore expires, a lost race is run again. What `--wait` waits out.
bool clears_with_time(Errc c);

// Refusals that mean "someone else holds an overlapping path" (a held path
// or a family): what the pre-commit hook reports as a violation.
bool is_path_conflict(Errc c);

// What a waiter wants (the CLI's waiting queue): a path in the store's
// canonical form (normalize_path_input, then parse_repo_path) with its
// mode, or a semaphore by name.
struct Wanted {
  std::optional<RepoPath> path;
  bool shared = false;
  std::string sem;  // when there is no path
};

// Whether two wants can stand in each other's way under `policy`, by the
// planner's rules (plan_acquire.cpp): paths that overlap unless both are
// shared (held-path), paths of one exclusive family in any mode
// (family-policy), the same semaphore (full-semaphore). A path never
// conflicts with a semaphore.
bool wants_conflict(const Policy& policy, const Wanted& a, const Wanted& b);

// How a lease that a host holds and renews (`run`) was lost: the
// lease_lost error it reports, with fields `lease` and `resource`
// ("path:KEY" or "sem:NAME"). By a renewal the planner refused at `now`
// with `refusal` (a refusal, not a store error) when the lease was to
// expire at `expires_at`: reason force-released when an admin released it
// (its fields released_by, released_by_name, release_reason); expired, as
// lease_lost_by_expiry, when it had expired by then (the renewal came too
// late, whatever the refusal); else renewal-refused, with the refusal's
// code and reason as refusal_code and refusal_reason and its other fields.
Error lease_lost_by_refusal(const std::string& lease, const std::string& resource, std::int64_t expires_at,
                            std::int64_t now, const Error& refusal);

// The lease expired (not live_until(expires_at, now)) before a renewal
// could be published: lease_lost, reason expired, fields expires_at_ms,
// checked_at_ms.
Error lease_lost_by_expiry(const std::string& lease, const std::string& resource, std::int64_t expires_at,
                           std::int64_t now);

// Paths as a user typed them (status PATH..., wait PATH...), in the form
// the store compares: NFC, folded in a case-insensitive store. Errors:
// bad_path.
Result<std::vector<RepoPath>> path_filters(const std::vector<std::string>& typed, PathCase path_case);

// A resource as a user names it to `fence`: "sem:NAME", "path:PATH" or a
// bare PATH, as the record key the state files it under ("sem:NAME",
// "path:KEY"). Errors: bad_path.
Result<std::string> resource_of(const std::string& typed, PathCase path_case);

// The policy of the verified snapshot `snap` (read through `reader`, a
// reader of its state) as a host shows it: a PRIVATE store's sealed
// families opened with the member's key of its epoch (Snapshot::vault()).
// Errors: store_read (families that do not open), not_member (no key of
// the epoch).
Result<json> readable_policy(StateReader& reader, const Snapshot& snap);

// What `git-locks status --json` prints for the verified snapshot `snap`
// (docs/CLI.md): {"store","commit","now_ms","policy":{"min_ttl_ms",
// "max_ttl_ms","families","owner"},"policy_hash","guard_time":{"enabled",
// "audience"?,"service_key"?},"leases":[ROW...]} with the rows of
// list_leases. `snap.commit` must be set; a PRIVATE store's families are
// opened with the snapshot's member keys. status_head is the same document
// with no rows (a host that streams them).
struct StatusQuery {
  std::int64_t now = 0;
  std::vector<RepoPath> paths;  // path_filters(); empty: every lease
  bool include_expired = false;
  std::string me;  // the actor whose rows are "mine"
};
Result<json> status_head(StateReader& reader, const Snapshot& snap, std::int64_t now);
Result<json> status_document(StateReader& reader, const Snapshot& snap, const StatusQuery& q);

// Whether `generation` of `resource` (resource_of) is live at `now`: the
// answer of `git-locks fence`, {"resource","generation","live":true,
// "lease","holder","name","expires_at"}. A downstream system checks it
// before an external effect. Errors: stale_generation when no live lease
// of that generation exists (fields "resource", "generation",
// "current_generation"), store_read.
Result<json> fence(StateReader& reader, const std::string& resource, std::int64_t generation, std::int64_t now);
// The same on the record of `resource` (nullopt: none, as in a store that
// does not exist yet).
Result<json> fence_record(const std::optional<Record>& record, const std::string& resource, std::int64_t generation,
                          std::int64_t now);

// {"commits","invalid","structural","tip","first_invalid","private",
//  "member","checkpoints","note"?} for a replay: "note" (kStructuralNote) exactly when
// some commit was verified structurally only, or a PRIVATE store was
// verified without a member's keys (needs_structural_note).
bool needs_structural_note(const ReplaySummary& s, const MemberVault& mv);
// That summary; "checkpoints" is {"valid","invalid"}, the checkpoints among
// the replayed commits.
json replay_summary_json(const ReplaySummary& s, const MemberVault& mv);

// One commit of a verified history as a host reads it (the npm module's
// Store.readState and readChanges): the verified snapshot at the commit —
// its state, policy, pins in force, last T and the member keys that open
// its records — after verifying the history that ends there
// (verified_snapshot, with verifier_keys at the commit: the rule of
// `status` at a commit), and with `with_parent` its first parent's, from
// the same verification. `anchors`: trust states of earlier views of the
// same store (CommitView::trust, parent_trust), newest last; one naming the
// commit (or its parent) is used as it is, else the replay continues from
// the newest when the commit descends from it, else starts at the root. Errors: those of
// verified_snapshot (invalid_history when the history to the commit does
// not verify, unknown_format, store_read); not_member when the key given
// opens no key of the commit's (or its parent's) epoch.
struct CommitViewOptions {
  const KeyPair* member = nullptr;
  bool allow_test_clock = false;
  bool with_parent = false;
  std::vector<TrustState> anchors;
};
struct CommitView {
  Snapshot at;
  std::optional<Snapshot> parent;  // with_parent, and the commit is not the root
  TrustState trust;                // at.commit's
  std::optional<TrustState> parent_trust;
  std::size_t replayed = 0;  // commits re-executed for this view (0: the anchor was the commit)
};
Result<CommitView> commit_view(ObjectStore& store, const Oid& commit, const CommitViewOptions& options);

// The records a view's commit changed against its first parent's state (the
// root: against no records), as record_changes, with the codecs of the two
// snapshots. The view must have been made with_parent.
Result<RecordChanges> commit_changes(ObjectStore& store, const CommitView& view);

// The timeline of leases over a replayed history: for every verdict (in
// order from the root) a transition, and for every lease issued its life:
// when it began and how it ended — "release", "expired" (gone after its
// expiry) or "reclaim" (another lease took the resource in the same
// commit, not a sweep); none while open. A commit whose records cannot be
// read (a PRIVATE state without the key of its epoch) has its state_error
// set; the next readable one is compared with the leases last seen, whole.
// Each commit's state, policy and codec are the replay's own
// (ReplayedCommit): its records open with the verifier's keys
// (ReplayOptions::vault, verifier_keys of the tip), the one rule of every
// host, so what the timeline shows was verified as far as `verify` with the
// same key verifies it.
// Typed and compact: a host streams it out as text (lease_timeline_text)
// instead of holding a JSON tree of the whole history.
struct TimelineTransition {
  std::size_t index = 0;
  Oid commit;
  std::optional<std::int64_t> time;  // T, or the last known one
  std::string command, actor, reason, detail;
  VerifyLevel level = VerifyLevel::full;
  bool ok = true;
  std::vector<std::string> resources;      // touched, sorted
  std::vector<std::int64_t> generations;   // touched, sorted
  std::vector<std::string> reclaims;       // resources whose lease another took here
  std::optional<std::string> state_error;  // the error code of reading its records
};
struct TimelineLease {
  std::string id, resource, kind, mode, holder, name;  // resource: a path, or "sem:NAME"; mode "slot" for semaphores
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;  // the last expiry seen (renewals move it)
  std::optional<std::int64_t> start, end;
  std::optional<std::string> end_kind;  // "release", "expired", "reclaim", "force-release", "handoff"
  // end_kind "force-release": the admin's key and name, and the reason.
  std::optional<std::string> released_by, released_by_name, release_reason;
  // end_kind "handoff": the key and name of the holder it was handed to.
  std::optional<std::string> handed_to, handed_to_name;
  std::size_t start_commit = 0;
  std::optional<std::size_t> end_commit;
};
// A waiter's ticket in the store's queue (docs/FORMAT.md "Tickets"): from
// the commit that took it to the one that dropped it. end_kind "admitted"
// (dropped by its holder in a commit that issued the holder a lease),
// "gave-up" (dropped by its holder otherwise), "lapsed" (dropped by another
// after its expiry); none while it stands.
struct TimelineTicket {
  std::string id, holder, name;
  std::int64_t seq = 0;
  std::int64_t expires_at = 0;  // the last expiry seen (renewals move it)
  json wants;                   // [{"path","mode"}|{"sem"}]
  std::optional<std::int64_t> start, end;
  std::optional<std::string> end_kind;
  std::size_t start_commit = 0;
  std::optional<std::size_t> end_commit;
};
struct LeaseTimeline {
  std::vector<TimelineTransition> transitions;
  std::vector<TimelineLease> leases;
  std::vector<TimelineTicket> tickets;
  json policy;                           // the last readable policy, as stored (null: none)
  std::optional<std::int64_t> end_time;  // the last known T
};
// The timeline built one commit at a time, in order from the root, from
// the facts replay_commits hands out: add() returns each transition,
// finish() the leases, policy and end time (no transitions: the caller has
// them). Memory: the leases, not the history.
class LeaseTimelineBuilder {
 public:
  explicit LeaseTimelineBuilder(ObjectStore& store);
  ~LeaseTimelineBuilder();
  LeaseTimelineBuilder(const LeaseTimelineBuilder&) = delete;
  LeaseTimelineBuilder& operator=(const LeaseTimelineBuilder&) = delete;
  TimelineTransition add(const ReplayedCommit& commit);
  LeaseTimeline finish() &&;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The whole timeline of the history ending at `tip`, replayed with
// `options` (progress and the verifier's vault included) in one pass.
// Errors: those of replay_commits.
Result<LeaseTimeline> lease_timeline(ObjectStore& store, const Oid& tip, const ReplayOptions& options);

// {"index","commit","time","command","actor","ok","level","reason","detail",
//  "resources","generations","reclaims","state_error"} and
// {"id","resource","kind","mode","generation","holder","name","start","end",
//  "end_kind","expires_at","start_commit","end_commit"?,"released_by"?,
//  "released_by_name"?,"release_reason"?,"handed_to"?,"handed_to_name"?}
//  (null for an absent time, end or end_kind; the released_* fields for a
//  force-released lease only, the handed_* fields for a handed-off one).
json timeline_transition_json(const TimelineTransition& t);
json timeline_lease_json(const TimelineLease& l);
// {"id","holder","name","seq","wants","expires_at","start","end","end_kind",
//  "start_commit","end_commit"?} (null for an absent time, end or end_kind).
json timeline_ticket_json(const TimelineTicket& t);

// The canonical JSON text of {"end_time","leases","policy","transitions"}
// and the `extra` members given as canonical text (a host adds "summary"
// and "verdicts"), keys in canonical order, written entry by entry: what
// Store.timeline() returns and gitlocks-native-replay --timeline prints.
Result<std::string> lease_timeline_text(const LeaseTimeline& t,
                                        const std::vector<std::pair<std::string, std::string>>& extra = {});

}  // namespace gitlocks
