// The exclusion invariant, checked independently of the planner: a model of
// the leases in force, fed with the record changes of every commit (a diff
// of the recorded state trees) and the commit's admission time T.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gitlocks/model.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks::detail {

// A parsed record shared with the store's cache (never modified).
using SharedDoc = std::shared_ptr<const json>;

struct Violation {
  std::string reason;  // exclusion-violated, semaphore-over-limit, generation-reused, record-misplaced, ...
  std::string detail;
};

class Timeline {
 public:
  // Loads every lease of a state (used when verification starts at a
  // trusted commit, after a migration or rekey, or after commits that could
  // only be verified structurally). `codec` reads the state's records
  // (nullptr: in the clear).
  Status load(ObjectStore& store, const Oid& state, const RecordCodec* codec = nullptr);

  // Starts at a trusted state without reading its leases (verification
  // resumed from a checkpoint, the server hook): each admission is then
  // checked against the records of its own state — its path's, its
  // ancestors', and the intention markers that stand for the leases below
  // it — so a commit costs O(its changes x path depth), not O(live leases).
  // The markers are an index the planner keeps; apply() checks it at every
  // commit in both modes (counts follow the lease changes exactly, expiry
  // bounds cover every live lease), so by induction from the trusted state
  // it can be relied on.
  void start_lazy();
  bool lazy() const { return lazy_; }

  // Applies the transition old_state -> new_state admitted at time t. The
  // codecs read each state's records (nullptr: in the clear). Returns the
  // violations found (the model is updated anyway).
  Result<std::vector<Violation>> apply(ObjectStore& store, const Oid& old_state, const Oid& new_state, std::int64_t t,
                                       const Policy& policy, const RecordCodec* old_codec = nullptr,
                                       const RecordCodec* new_codec = nullptr);

 private:
  struct Live {
    std::string id;
    std::string holder;
    bool exclusive = true;
    std::int64_t expires_at = 0;
  };
  void conflicts_for(const std::string& key, const std::string& holder, bool exclusive, std::int64_t t,
                     std::vector<std::string>& out) const;
  // The lazy mode's conflicts: from the state `reader` reads (the commit's
  // result), never from the model.
  Status conflicts_in_state(StateReader& reader, const std::string& key, const std::string& holder, bool exclusive,
                            std::int64_t t, std::vector<std::string>& out) const;
  // apply()'s steps (timeline.cpp has the steps that need no model).
  struct Admission;
  struct Effects;
  Status reload_moved(ObjectStore& store, const Oid& old_state, const Oid& new_state, const RecordCodec* old_codec,
                      const RecordCodec* new_codec, std::vector<Violation>& violations);
  void follow_change(const SharedDoc& before_doc, const SharedDoc& after_doc, std::int64_t t, Effects& fx,
                     std::vector<Violation>& violations);
  void follow_leases(const std::string& kind, const std::string& resource, const std::string& name,
                     const std::map<std::string, Lease>& old_leases, const std::map<std::string, Lease>& new_leases,
                     std::int64_t t, std::vector<Violation>& violations);
  static Status check_markers(StateReader& after_reader, const Effects& fx, std::vector<Violation>& violations);
  Status check_admissions(StateReader& after_reader, std::vector<Admission>& admitted, std::int64_t t,
                          const Policy& policy, std::vector<Violation>& violations);
  static void check_semaphores(const std::vector<SharedDoc>& semaphores, std::int64_t t,
                               std::vector<Violation>& violations);
  bool lazy_ = false;
  std::map<std::string, std::vector<Live>> paths_;      // path key -> leases on it
  std::map<std::string, std::int64_t> max_generation_;  // resource -> highest generation seen
  // Records the previous apply() read as "after", by location + blob id: the
  // next commit reads them again as "before" (bounded by one commit's changes).
  std::map<std::string, SharedDoc> recent_;
};

}  // namespace gitlocks::detail
