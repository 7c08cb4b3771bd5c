// publish.h — one transition from snapshot to ref (SPEC §5, seed 000):
// verified snapshot (checkpoint.h) -> prepare_candidate (core: plan, signed
// packet, admission request) -> the notary's admission under guard time ->
// complete_candidate (core: the attestation checked against the verified
// pins, commit objects) -> compare-and-swap of refs/locks/state through
// `git update-ref --stdin` (or `git push` for a remote store). Every writer
// goes through it, `guard-time enable|resume` too (with hooks).
//
//   expected-root mismatch / creation lost   fresh snapshot and plan; at most
//                                            200 replans, then
//                                            stale-retries-exhausted (exit 1)
//   refs/locks/state.lock exists             the same candidate again: at most
//                                            6 attempts, 5 pauses of 20 ms,
//                                            then store-write (exit 2); the
//                                            lock file is never touched
//   anything else                            store-write at once
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "backoff.h"
#include "cli.h"
#include "gitlocks/transition.hpp"
#include "vault_host.h"

namespace gitlocks::cli {

inline constexpr int kMaxReplans = 200;
inline constexpr int kLockAttempts = 6;
inline constexpr int kLockPauseMs = 20;

// Builds the body to publish against a fresh snapshot at host time `now`;
// nullopt when there is nothing to do. Called again after every replan.
using BodyFn = std::function<Result<std::optional<json>>(const Snapshot& snap, std::int64_t now)>;

// What a writer with a durable operation (guard-time enable|resume) adds to
// the pipeline; every writer else passes none.
struct PublishHooks {
  // The candidate is prepared (packet signed; under guard time its admission
  // request made and the notary's discovery checked against its pins) and
  // nothing of it has been sent or written. An error ends the publication.
  // Called again after every replan.
  std::function<Status(const Snapshot& snap, const Prepared& prepared)> prepared;
  // The notary answered and the commit object is written; the
  // compare-and-swap comes next. An error ends the publication.
  std::function<Status(const Candidate& candidate)> written;
  // Resume: publish this signed packet of an earlier run (reopen_prepared)
  // instead of planning a body; refs/locks/state must still be at
  // `source_commit`, and a moved ref is stale_generation at once (never a
  // replan: the packet is bound to its source).
  std::optional<std::string> packet;
  std::optional<Oid> source_commit;
  // A cut (`checkpoint --cut`, docs/FORMAT.md "The cut"): the body is a
  // checkpoint of the tip, committed with no Git parent, and the same
  // compare-and-swap creates refs/locks/archive/TIP at the tip it follows.
  bool cut = false;
  // The policy's automatic checkpoint (its `checkpoint.every`, docs/FORMAT.md
  // "Checkpoints by policy") is not considered after this publication.
  bool no_auto_checkpoint = false;
};

struct Published {
  Snapshot source;                     // the snapshot the body was built on
  std::optional<Candidate> candidate;  // nullopt: nothing was published
  // After the candidate, the checkpoint the policy asked this writer for
  // (checkpoint.every: the owner's or a named signer's), if one was
  // published; or why it was not (the candidate stands either way).
  std::optional<Oid> checkpoint;
  std::optional<Error> checkpoint_error;
  // The witnesses' answers for that checkpoint (witness.h
  // cosign_if_required; null when this clone requires none).
  json witnesses;
};

// How many commits follow the newest checkpoint on the chain ending at
// `tip` (a verified snapshot's: every commit on it verified), counting at
// most `limit`: a commit whose action is `checkpoint` stops the count, a
// cut's included; `found` (when given) is set to that checkpoint, nullopt
// when none was reached. Errors: store_read.
Result<std::int64_t> commits_since_checkpoint(ObjectStore& store, const Oid& tip, std::int64_t limit,
                                              std::optional<Oid>* found = nullptr);

// Publishes one transition as `command`; records the number of update-ref
// runs in ctx.attempts. Never reports success unless the ref moved.
Result<Published> publish(Context& ctx, const std::string& command, const BodyFn& make_body,
                          const PublishHooks& hooks = {});

// {"created_at":now,"name":display name,"ops":ops}
json transition_body(Context& ctx, std::int64_t now, json ops);

// Every op path of `body` as the store compares it: a user's path (an NFD
// name from macOS, a case variant in a case-insensitive store) becomes its
// canonical form (normalize_path_input), so one file is one resource.
// publish() applies it to every body it plans. Errors: bad_path.
Status canonical_op_paths(json& body, const Snapshot& snap);

// Error for commands that need an existing store.
Status require_store(Context& ctx, const Snapshot& snap);
// "no lock store in this repository ..." (or "... on remote NAME ...").
std::string no_store_message(Context& ctx);

// Appends to `ops` a ticket-drop of each ticket of the store's queue lapsed
// at `now` (docs/FORMAT.md "Tickets"), while `ops` holds fewer than `max`:
// what `sweep` and a waiter's new ticket drop. Errors: the record's read.
Status append_lapsed_ticket_drops(Context& ctx, const Snapshot& snap, std::int64_t now, std::size_t max, json& ops);

// The current snapshot, verified from the clone's checkpoint (checkpoint.h):
// what every command whose answer is relied on acts on.
Result<Snapshot> current_snapshot(Context& ctx);

// Prints the success of a publication: one JSON object with --json
//   {"op","commit","action","admitted_at_ms","attempts","leases":[...],"ops":[...]}
// (and "checkpoint": the policy's automatic checkpoint after it, with
// "witnesses" when this clone requires some, or "checkpoint_error") else
// one human line per op. `extra` adds members to the JSON (a waiter's
// "waited_ms").
// `warnings`: lines the human output adds ("warning: ..."), e.g. the
// intents of others a claim overlaps.
int report_published(Context& ctx, const Published& p, const json& extra = json::object(),
                     const std::vector<std::string>& warnings = {});

}  // namespace gitlocks::cli
