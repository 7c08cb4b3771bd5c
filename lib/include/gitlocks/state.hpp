// gitlocks/state.hpp — the state tree of a store (format 1) and read access.
//
// Layout of the state tree, format 2 (docs/FORMAT.md has the full description):
//   format.json                {"format":"gitlocks-state-v2"}
//   policy.json                the policy (canonical JSON)
//   records/AA/BB/<H>.json     one record per resource, H = sha256 hex of the
//                              resource key ("path:<p>", "sem:<n>",
//                              "family:<n>"), AA/BB its first 4 hex digits.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/canon.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

// The format this git-locks writes.
inline constexpr std::string_view kStateFormat = "gitlocks-state-v2";
// The first format: one shard level (records/AA/<H>.json). Still read, for
// replaying old history and for `git-locks migrate`; never written.
inline constexpr std::string_view kStateFormatV1 = "gitlocks-state-v1";
inline constexpr std::string_view kStateRef = "refs/locks/state";
// Where a cut keeps the chain it starts after (docs/FORMAT.md "The cut"):
// refs/locks/archive/PREV, at PREV, created once and never moved.
inline constexpr std::string_view kArchivePrefix = "refs/locks/archive/";
inline std::string archive_ref(const Oid& prev) { return std::string(kArchivePrefix) + prev.hex(); }

// Resource keys.
std::string path_resource(const std::string& path_key);
std::string sem_resource(const std::string& name);
std::string family_resource(const std::string& name);

// Location of a record inside the state tree: {"records", AA, BB, H.json}
// (format 1: {"records", AA, H.json}).
std::vector<std::string> record_location(const std::string& resource, int format = 2);

class Vault;

// How records are named and stored: in the clear (public stores), or sealed
// under an epoch key with keyed-hash names (PRIVATE stores, vault.hpp).
class RecordCodec {
 public:
  virtual ~RecordCodec() = default;
  virtual std::vector<std::string> location(const std::string& resource, int format) const = 0;
  virtual Result<std::string> encode(const std::vector<std::string>& location, const json& record) const = 0;
  virtual Result<json> decode(const std::vector<std::string>& location, std::string_view stored) const = 0;
};

const RecordCodec& plain_codec();
// Seals records under the vault's key of `epoch`; decodes only records
// sealed under that epoch at their own location in `store`. (For a state's
// records use state_codec; this is for the rekey, which opens two epochs.)
std::unique_ptr<RecordCodec> make_private_codec(const Vault& vault, const std::string& store, std::int64_t epoch);

struct Policy;
// The notary pins a transition is judged under: those of the policy in its
// result state. So guard time applies from its activation on, to the commit
// that installs the pins as well, and not to the commit that turns it off.
// The one rule of replay (check_time_source) and of every writer
// (prepare_candidate, reopen_prepared). Errors: those of reading and
// parsing the result's policy.json.
Result<std::optional<Pins>> result_pins(ObjectStore& store, const Oid& result_state);

// Which keys open a state's records — the one rule of the core and of every
// host (replay, the planner, sweeps, doctor, the timeline, the CLI's
// writers): a public state's records are read in the clear (nullptr); a
// PRIVATE state's only with the key of its policy's current epoch, from a
// member's vault `keys` (open_member_vault: the keyring of the history's
// tip, which carries every epoch key the member was given). Errors:
// not_member — no vault, or one holding no key of that epoch.
Result<std::unique_ptr<RecordCodec>> state_codec(const Policy& policy, const Vault* keys);

// Read access to one state tree. Trees are cached for the reader's lifetime.
class StateReader {
 public:
  StateReader(ObjectStore& store, Oid state_tree, const RecordCodec* codec = nullptr)
      : store_(store), root_(std::move(state_tree)), codec_(codec) {}

  // Records of a PRIVATE state can only be read with a private codec.
  void set_codec(const RecordCodec* codec) { codec_ = codec; }
  // True when policy.json is a PRIVATE (v3) policy.
  Result<bool> is_private();

  const Oid& root() const { return root_; }
  // The state's format version: 1 or 2. Anything else is refused
  // (unknown_format), never guessed.
  Result<int> format_version();
  // Checks that the state is in the current format; format 1 is refused with
  // a pointer to `git-locks migrate`.
  Status check_format();
  Result<json> policy();
  Result<std::string> policy_bytes();
  // The id of the policy.json blob (two states with the same id have the
  // same policy, byte for byte). Errors: store_read (none).
  Result<Oid> policy_id();
  // The record of a resource, or nullopt.
  Result<std::optional<json>> record(const std::string& resource);
  // Every record, in tree order. The callback may stop the walk by
  // returning false.
  Status for_each_record(const std::function<bool(const json& record)>& fn);
  // The same records checked and typed: each must be a record the planner
  // could have written under its own name (records::validate, the check
  // the planner makes before it plans on one) and, in a walk, be filed at
  // that name's location; otherwise the read fails (store-read,
  // "malformed record of <resource>: ..."). Hosts that act on records
  // (status, fence, the server hook, lease ids, sweeps) read these; the
  // readers that report malformed records themselves (doctor, the
  // exclusion checker, migrate, readState's documents) read documents.
  Result<std::optional<Record>> valid_record(const std::string& resource);
  Status for_each_valid_record(const std::function<bool(const Record& record)>& fn);
  // Blob id at a path inside the state tree, or nullopt.
  Result<std::optional<Oid>> lookup(const std::vector<std::string>& path);

 private:
  Result<const Tree*> tree(const Oid& id);
  Result<const RecordCodec*> codec();
  // Every record with the location it is filed at.
  Status walk_records(const std::function<bool(const std::vector<std::string>& location, const json& record)>& fn);
  ObjectStore& store_;
  int version_ = 0;   // 0 until format_version() has read it
  int private_ = -1;  // -1 until is_private() has read the policy
  Oid root_;
  const RecordCodec* codec_;
  std::map<Oid, SharedTree> trees_;
};

// Writes the state tree holding `policy` (a policy document) and `records`
// (record documents as stored, {"kind","name",...}, in any order): the
// inverse of reading policy.json and every record, so hosts that hold a state
// as JSON can plan on it. Errors: those of parse_policy; bad_json for a
// record that is malformed, empty (the planner never stores one) or given
// twice.
Result<Oid> write_state(ObjectStore& store, const json& policy, const std::vector<json>& records, int format = 2,
                        const RecordCodec* codec = nullptr);

}  // namespace gitlocks
