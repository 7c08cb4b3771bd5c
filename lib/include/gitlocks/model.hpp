// gitlocks/model.hpp — the state's model as types (docs/FORMAT.md
// "Records"): a Resource and its record key, the record kinds, a Lease.
//
// Records are validated once, when they are read (records::validate inside
// StateReader and the timeline checker); these types are made from a
// validated record, so they never check again and never fail. Code that
// asks questions of leases (liveness, listing, fencing, the timeline,
// doctor) reads these fields instead of looking up JSON by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/canon.hpp"

namespace gitlocks {

enum class RecordKind { path, sem, family };

// Path and semaphore records hold leases; family records hold derived data.
inline bool holds_leases(RecordKind k) { return k != RecordKind::family; }

// "path", "sem", "family": the record's "kind" and its key's prefix.
std::string_view record_kind_name(RecordKind k);
std::optional<RecordKind> parse_record_kind(std::string_view name);

// What a record is about: a path (by its normalised key, no trailing '/'),
// a semaphore or a family, by name. Its key ("path:src/a.c", "sem:ci")
// names the record in the state.
struct Resource {
  RecordKind kind = RecordKind::path;
  std::string name;

  std::string key() const;
  // nullopt for a key without a known kind prefix.
  static std::optional<Resource> parse(std::string_view key);
  // The resource a validated record is about.
  static Resource of(const json& record);
  bool operator==(const Resource& o) const { return kind == o.kind && name == o.name; }
};

// The one liveness rule: a lease expiring at `expires_at` is live at `now`
// while now <= expires_at. The planner treats it as in the way until
// T > expires_at (reclaim and sweep need strictly after expiry).
inline bool live_until(std::int64_t expires_at, std::int64_t now) { return now <= expires_at; }

// One lease of a path or semaphore record.
struct Lease {
  std::string id;
  std::string holder;  // the actor's key, 64 hex
  std::string name;    // the holder's display name
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
  std::int64_t created_at = 0;
  std::string mode;  // path leases: "exclusive" | "shared"; semaphores: ""
  std::string path;  // path leases: the claimed path as written ("src/" for a directory)
  std::optional<std::string> note;

  bool live_at(std::int64_t now) const { return live_until(expires_at, now); }
  bool exclusive() const { return mode == "exclusive"; }

  // From a lease object of a validated record.
  static Lease of(const json& lease);
  // The lease object a record stores (docs/FORMAT.md): "mode" and "path"
  // for path leases only, "note" when there is one.
  json to_json() const;
  // "alice (d661df7c94a6)": the display name (or "holder") and the first 12
  // hex digits of the key, as every refusal names a holder.
  std::string label() const;
};

// The leases of a validated path or semaphore record, in stored order
// (none for a family record).
std::vector<Lease> leases_of(const json& record);

}  // namespace gitlocks
