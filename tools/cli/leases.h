// leases.h — turning what a user names (LEASE-ID|PATH, a semaphore) into
// the core's ops, and a store view for "would this be admitted?" questions.
// Lookups only: every admission rule is the planner's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "gitlocks/canon.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/transition.hpp"

namespace gitlocks::cli {

// A lease as named on the command line or in a batch line.
struct LeaseRef {
  enum class Kind {
    id_or_path,  // a 24-hex lease id when one exists in the state, else a path
    id,
    path,
    sem,  // the actor's slot of a semaphore
  };
  Kind kind = Kind::id_or_path;
  std::string text;
  std::optional<std::int64_t> generation;  // fencing: refuse unless current
};

bool is_lease_id(const std::string& s);

// Resolves lease references against one snapshot.
class LeaseResolver {
 public:
  LeaseResolver(ObjectStore& store, const Snapshot& snap, std::string actor)
      : store_(store), snap_(snap), actor_(std::move(actor)) {}

  // The core op that extends (`extend`) or releases the named lease:
  //   {"op":"extend"|"release"|"sem-release","path"|"sem":...,"lease":ID,"generation"?:G}
  // The caller adds "expires_at" to an extend. When the actor holds no such
  // lease the op still goes to the planner whenever it can name the refusal
  // (another holder's lease, a stale generation); otherwise not_holder.
  Result<json> op_for(const LeaseRef& ref, bool extend);

  // An admin's force-release ops for LEASE-ID|PATH: the lease with that id,
  // or every lease recorded on exactly that path, whoever holds it.
  // Errors: not_holder when there is none; usage for a semaphore slot.
  Result<std::vector<json>> force_ops_for(const LeaseRef& ref, const std::string& reason);

 private:
  Result<const ops::Target*> find_id(const std::string& id);
  Result<std::optional<Record>> record(const std::string& resource);

  ObjectStore& store_;
  const Snapshot& snap_;
  std::string actor_;
  std::map<std::string, ops::Target> found_;               // lease id -> its target, from history
  std::optional<std::map<std::string, ops::Target>> ids_;  // the same for every lease, from a scan
  std::map<std::string, ops::Target> released_;            // force-released lease id -> its path
};

// The live intents of others (docs/FORMAT.md "Intent") overlapping
// `paths` (as typed) in `snap` at `now`: their entries (query.hpp
// intent_json) and one warning line each. A warning, never a refusal: a
// path that does not parse, or a state that cannot be read, gives none.
struct Intents {
  json list = json::array();
  std::vector<std::string> warnings;
};
Intents intents_near(ObjectStore& store, const Snapshot& snap, std::int64_t now, const std::vector<std::string>& paths,
                     const std::string& actor);

}  // namespace gitlocks::cli
