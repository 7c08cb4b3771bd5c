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
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/canon.hpp"

namespace gitlocks {

enum class RecordKind { path, sem, family, queue };

// Path and semaphore records hold leases; family records hold derived data,
// the queue record ("queue:tickets") the waiters' tickets.
inline bool holds_leases(RecordKind k) { return k == RecordKind::path || k == RecordKind::sem; }

// "path", "sem", "family", "queue": the record's "kind" and its key's prefix.
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

// A path lease's mode (docs/FORMAT.md "Lease"): exclusive and shared leases
// lock; an intent only announces planned work ("Intent"): it never conflicts
// with anything and nothing conflicts with it.
enum class PathMode { exclusive, shared, intent };
// "exclusive", "shared", "intent"; nullopt for anything else.
std::optional<PathMode> parse_path_mode(std::string_view name);
const char* path_mode_name(PathMode m);

// One lease of a path or semaphore record.
struct Lease {
  std::string id;
  std::string holder;  // the actor's key, 64 hex
  std::string name;    // the holder's display name
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
  std::int64_t created_at = 0;
  std::string mode;  // path leases: "exclusive" | "shared" | "intent"; semaphores: ""
  std::string path;  // path leases: the claimed path as written ("src/" for a directory)
  std::optional<std::string> note;

  bool live_at(std::int64_t now) const { return live_until(expires_at, now); }
  bool exclusive() const { return mode == "exclusive"; }
  bool intent() const { return mode == "intent"; }
  // The path lease's mode (a validated one: exclusive unless shared or intent).
  PathMode path_mode() const {
    return mode == "shared" ? PathMode::shared : mode == "intent" ? PathMode::intent : PathMode::exclusive;
  }

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

// A holder's intention marker on a directory (its path record's "below",
// docs/FORMAT.md): how many of the holder's live exclusive, shared and
// intent leases lie strictly below it, and the latest expiry of each.
// Expiries only grow while the holder has leases there (a safe
// over-approximation); the marker goes with its last lease.
struct Marker {
  std::int64_t exclusive = 0;
  std::int64_t exclusive_until = 0;
  std::int64_t shared = 0;
  std::int64_t shared_until = 0;
  std::int64_t intent = 0;  // announcements only: they lock nothing
  std::int64_t intent_until = 0;

  std::int64_t count(bool excl) const { return excl ? exclusive : shared; }
  std::int64_t until(bool excl) const { return excl ? exclusive_until : shared_until; }
  std::int64_t& count_of(PathMode m) {
    return m == PathMode::exclusive ? exclusive : m == PathMode::shared ? shared : intent;
  }
  std::int64_t& until_of(PathMode m) {
    return m == PathMode::exclusive ? exclusive_until : m == PathMode::shared ? shared_until : intent_until;
  }
  std::int64_t count_of(PathMode m) const {
    return m == PathMode::exclusive ? exclusive : m == PathMode::shared ? shared : intent;
  }
  std::int64_t until_of(PathMode m) const {
    return m == PathMode::exclusive ? exclusive_until : m == PathMode::shared ? shared_until : intent_until;
  }
  bool empty() const { return exclusive == 0 && shared == 0 && intent == 0; }
  bool operator==(const Marker& o) const {
    return exclusive == o.exclusive && exclusive_until == o.exclusive_until && shared == o.shared &&
           shared_until == o.shared_until && intent == o.intent && intent_until == o.intent_until;
  }

  static Marker of(const json& marker);
  // {"s", "su", "x", "xu"}, and {"i", "iu"} only while intents lie below (a
  // store without intents keeps its bytes).
  json to_json() const;
};

// holder -> marker, of a validated record (none unless it is a path record
// with markers).
std::map<std::string, Marker> markers_of(const json& record);
// One holder's marker on the record (all zero when it has none).
Marker marker_of(const json& record, const std::string& holder);

// A holder's entry in an exclusive family's record ("holders"): how many of
// its leases are on members of the family, and the latest expiry.
struct FamilyHolder {
  std::int64_t leases = 0;
  std::int64_t until = 0;

  static FamilyHolder of(const json& entry);
  json to_json() const;  // {"n", "until"}
};

// holder -> entry, of a validated family record (none for other kinds).
std::map<std::string, FamilyHolder> family_holders_of(const json& record);

// A path record's last force-release ("released", docs/FORMAT.md): the
// lease as it was, the admin's key and display name, the reason.
struct Released {
  Lease lease;
  std::string by;
  std::string by_name;
  std::string reason;
};

// The last force-release of a validated path record, if it has one.
std::optional<Released> released_of(const json& record);

// One resource a ticket waits for (docs/FORMAT.md "Tickets"): a path as a
// claim writes it ("src/" for a directory) with its mode, exclusive or
// shared, or a semaphore by name.
struct TicketWant {
  std::string path;  // "" for a semaphore
  std::string mode;  // paths: "exclusive" | "shared"
  std::string sem;   // semaphores

  bool shared() const { return mode == "shared"; }
  static TicketWant of(const json& want);
  json to_json() const;  // {"path","mode"} | {"sem"}
  bool operator==(const TicketWant& o) const { return path == o.path && mode == o.mode && sem == o.sem; }
};

// A waiter's place in the store's one queue (docs/FORMAT.md "Tickets"):
// taken by a signed `ticket` op, renewed while its holder waits, dropped
// when it is admitted or gives up, swept once expired. `behind` names the
// holders of the leases that stood in its way when it was taken: while one
// of them still holds a live lease in its way, the ticket could not be
// admitted either way and lets others pass.
struct Ticket {
  std::string id;
  std::string holder;
  std::string name;
  std::int64_t seq = 0;  // its place: the queue's order
  std::int64_t expires_at = 0;
  std::int64_t created_at = 0;
  std::vector<TicketWant> wants;
  std::vector<std::string> behind;  // holders' keys, sorted, unique

  bool live_at(std::int64_t now) const { return live_until(expires_at, now); }
  static Ticket of(const json& ticket);
  json to_json() const;
  // "bob (d661df7c94a6), ticket #3": as a refusal names it.
  std::string label() const;
};

// A record of the state as a type (docs/FORMAT.md "Records"). The planner
// reads and edits records through it; it is made from a validated record
// (Record::of never checks and never fails) and written back with
// to_json(), which gives the validated document key for key: a record
// re-encodes to the bytes it was read from.
struct Record {
  Resource resource;
  std::int64_t generation = 0;                  // path, sem: the last generation issued
  std::int64_t limit = 0;                       // sem
  std::vector<Lease> leases;                    // path, sem: by generation
  std::map<std::string, Marker> below;          // path: holder -> intention marker
  std::optional<Released> released;             // path: the last force-release
  std::map<std::string, FamilyHolder> holders;  // family: holder -> entry
  std::vector<Ticket> tickets;                  // queue: by seq ("seq" is its generation)

  // Empty records, as a first lease (or a first marker) creates them.
  static Record path(std::string key);
  static Record sem(std::string name, std::int64_t limit);
  static Record family(std::string name);
  static Record queue();
  // From a validated record.
  static Record of(const json& record);
  // The document the state stores: a path record always has "below" and
  // its leases "mode" and "path"; "released" and a lease's "note" only when
  // there is one.
  json to_json() const;
  // A record that carries nothing (no generation, no leases, no markers or
  // family holders) is removed from the tree, so equal states have equal
  // trees.
  bool carries_nothing() const;
  // The lease with id `id`, or nullptr.
  Lease* lease(const std::string& id);
  const Lease* lease(const std::string& id) const;
  // The ticket with id `id`, or nullptr.
  Ticket* ticket(const std::string& id);
};

// The queue record's key: "queue:tickets".
inline constexpr const char* kQueueResource = "queue:tickets";

}  // namespace gitlocks
