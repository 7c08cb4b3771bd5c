// gitlocks/doctor.hpp — diagnosis of reservation data in a state tree.
//
// Doctor reads; it repairs nothing. It does not know (and does not claim to
// know) whether the store is writable. A refs/locks/state.lock it reports
// (ref_lock_finding) with what the host could see of its holder; whether
// the writer has stopped, so that the file may be removed, is the
// operator's to establish.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

class RecordCodec;  // gitlocks/state.hpp

struct Finding {
  std::string severity;  // "error" (the data is wrong), "warning" (something to act on that doctor
                         // cannot prove wrong) or "info" (worth knowing)
  std::string code;      // stable: unknown-format, malformed-record, non-canonical, name-hash-mismatch,
                         // wrong-shard, unexpected-entry, generation-regression, marker-mismatch,
                         // family-mismatch, bad-policy, expired-lease, ref-lock
  std::string location;  // path inside the state tree (ref-lock: the lock's path inside the git dir)
  std::string detail;
  json fields = json::object();  // structured fields of this code, added to the finding's object
};

// {"severity","code","location","detail"} plus the finding's fields.
json finding_json(const Finding& f);

// --- refs/locks/state.lock -------------------------------------------------
// Git's files backend creates refs/locks/state.lock while a writer publishes
// and renames it over the ref; a writer that dies in between leaves it, and
// every later writer then gives up (seed 000). The core touches no file or
// process: the host observes the lock and this turns what it saw into a
// finding, so every host words and grades it alike.

// A local process with the lock file open.
struct LockHolder {
  std::int64_t pid = 0;
  std::string command;  // its command name (Linux: /proc/PID/comm)
};

// How much of this machine the host could look at for holders.
enum class HolderScan {
  complete,     // every process's open files
  partial,      // some processes' open files could not be read (another user's, without privilege)
  unavailable,  // no way to list open files on this platform
};

struct RefLockObservation {
  std::string location = "refs/locks/state.lock";  // inside the common git dir
  std::string path;                                // where it is on this machine
  std::int64_t age_ms = 0;                         // the host's clock minus the file's mtime
  std::vector<LockHolder> holders;                 // local processes that have it open
  HolderScan scan = HolderScan::unavailable;
  std::int64_t unreadable = 0;  // processes whose open files could not be read (scan partial)
};

// A lock this old blocks writers far longer than any publication holds it
// (a publisher holds it for one `git update-ref`; writers give up on it
// after 6 attempts and 100 ms of pauses): "warning" from this age, "info"
// below it (likely a publication in progress).
inline constexpr std::int64_t kRefLockStaleMs = 5'000;

// The `ref-lock` finding: fields "path", "age_s" (whole seconds, never
// negative), "held_by" ([{"pid","command"}], empty when none was found),
// "holder_scan" ("complete", "partial", "unavailable") and, when partial,
// "unreadable_processes". The detail says what the scan cannot see.
Finding ref_lock_finding(const RefLockObservation& seen);

// Diagnoses `state`. `parent_state` (the previous commit's state), when
// given, lets doctor see generations that went backwards. `now` is the local
// clock, used only to report expired leases. A PRIVATE store's sealed
// records are opened with `codec` (a member's, make_private_codec for the
// state's epoch); without one they are only counted (info sealed-records).
// Errors: store_read when the tree itself cannot be read.
Result<std::vector<Finding>> diagnose(ObjectStore& store, const Oid& state, std::int64_t now,
                                      const std::optional<Oid>& parent_state = std::nullopt,
                                      const RecordCodec* codec = nullptr);

}  // namespace gitlocks
