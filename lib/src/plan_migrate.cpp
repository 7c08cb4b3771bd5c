// The offline layout migration of a store, format 1 -> 2.
#include "plan_internal.h"

namespace gitlocks::detail {

// Offline migration of the layout, format 1 -> 2:
//   {"migrate":{"from":"gitlocks-state-v1","to":"gitlocks-state-v2"}}
// Every record is carried over unchanged; only their locations change.
Result<PlanOutcome> plan_migrate(ObjectStore& store, StateReader& reader, int version, const json& policy_doc,
                                 const json& body) {
  GITLOCKS_CHECK(check_keys(body, {"migrate"}, "migrate body"));
  const json& m = body["migrate"];
  GITLOCKS_CHECK(check_keys(m, {"from", "to"}, "migrate op"));
  if (!m.contains("from") || m["from"] != kStateFormatV1 || !m.contains("to") || m["to"] != kStateFormat)
    return make_error(Errc::unknown_format, "this git-locks migrates only " + std::string(kStateFormatV1) + " to " +
                                                std::string(kStateFormat));
  if (version != 1) return make_error(Errc::usage, "the store is already in " + std::string(kStateFormat));
  std::vector<json> records;
  Status bad = Ok{};
  GITLOCKS_CHECK(reader.for_each_record([&](const json& rec) {
    if (!rec.is_object() || !rec.contains("kind") || !rec["kind"].is_string() || !rec.contains("name") ||
        !rec["name"].is_string()) {
      bad = make_error(Errc::store_read, "a format-1 record has no kind/name");
      return false;
    }
    records.push_back(rec);
    return true;
  }));
  GITLOCKS_CHECK(bad);
  GITLOCKS_TRY(root, write_state(store, policy_doc, records, 2));
  return time_free_outcome(body, Action::migrate, root, records.size());
}

}  // namespace gitlocks::detail
