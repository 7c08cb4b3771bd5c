// gitlocks/query.hpp — answers read from one verified state, for every host
// (the CLI's status today; the start of one query module for all of them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/result.hpp"
#include "gitlocks/state.hpp"

namespace gitlocks {

// True while a lease is live at `now`: the planner treats a lease as in the
// way until T > expires_at (reclaim and sweep need strictly after expiry).
bool lease_live(const json& lease, std::int64_t now);

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

}  // namespace gitlocks
