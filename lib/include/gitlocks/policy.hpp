// gitlocks/policy.hpp — the store policy (format gitlocks-policy-v1).
//
//   {"format":"gitlocks-policy-v1","store":HEX64,"owner":HEX64,
//    "min_ttl_ms":1000,"max_ttl_ms":3600000,
//    "case_insensitive":true,                        (optional, default false)
//    "families":[{"name":"db","policy":"exclusive"|"shared",
//                 "members":["db/schema.sql","db/migrations/"]}],
//    "guard_time":{"audience":A,"service_key":HEX64,"disclosure":"GUARD_WINDOW",
//                  "profiles":["signed-private-guard-time-v1","time-add-guard-window-v1"],
//                  "scope":"ALL_COMMITS"},          (only once activated)
//    "require_claim":{"paths":["src/","db/schema.sql"],"families":["db"]},
//    "enforce":["refs/heads/main","refs/heads/release/*"],
//    "admins":[HEX64...],"bots":[HEX64...],          (each optional)
//    "checkpoint":{"every":N,"signers":[HEX64...],"cut":true}}
//                                                     (optional, public stores)
//
// The last four bind the work (SPEC §9, enforce.hpp) and change only by the
// owner-signed policy-set transition (plan_admin): `require_claim` makes a
// live claim of the commit's signer a permission to change the paths it
// names (a directory path covers everything below it; a family, its
// members); `enforce` lists the refs a server with the hook guards (Git
// ref patterns, `*` within one component; absent: the server's own
// `locks.enforce`, default refs/heads/*); `admins` may force-release
// another's lease (the owner always may); `bots` are signers that may land
// without a claim where `require_claim` asks for one (another holder's
// live claim stops them as it stops anyone).
//
// `checkpoint` (docs/FORMAT.md "Checkpoints by policy"): `signers` may
// publish checkpoints besides the owner (a checkpoint by another key is
// refused not-owner); `every` asks the owner and the signers to publish one
// after their own transition whenever N or more commits follow the newest
// checkpoint, as a cut when `cut` is true. Each member is optional.
//
// The TTL bounds become seed 002's guard expressions (ttl_guards); unknown
// fields and unknown formats are refused, never ignored. In a
// case-insensitive store the identity of a path is its case-folded NFC form
// (path.hpp): every path in a packet, and every family member, is written
// in that form.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/canon.hpp"
#include "gitlocks/expr.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {

inline constexpr std::string_view kPolicyFormat = "gitlocks-policy-v1";
inline constexpr std::int64_t kDefaultMinTtlMs = 1000;
inline constexpr std::int64_t kDefaultMaxTtlMs = 3600000;

struct Family {
  std::string name;
  bool exclusive = true;
  std::vector<RepoPath> members;

  bool operator==(const Family& o) const { return name == o.name && exclusive == o.exclusive && members == o.members; }
};

// The policy's `checkpoint` member; each member optional.
struct CheckpointRule {
  std::optional<std::int64_t> every;  // in [1, kMaxCheckpointEvery]
  std::vector<std::string> signers;   // 64 hex, sorted, unique
  bool signers_stated = false;
  std::optional<bool> cut;

  bool operator==(const CheckpointRule& o) const {
    return every == o.every && signers == o.signers && signers_stated == o.signers_stated && cut == o.cut;
  }
};
inline constexpr std::int64_t kMaxCheckpointEvery = 1000000000;

struct Policy {
  // PRIVATE stores (format gitlocks-policy-v3, vault.hpp): the current key
  // epoch, its members, and whether a keyring transition is pending.
  bool is_private = false;
  std::int64_t epoch = 0;
  std::vector<std::string> members;
  bool pending = false;
  std::vector<std::string> pending_members;  // the members of the pending epoch
  // The keyrings: epoch -> member key (64 hex) -> that epoch's key sealed
  // to the member (hex, vault.hpp). `keyring` holds every epoch the store
  // has had (the current one sealed to exactly `members`); `pending_keyring`
  // the pending epoch's, sealed to exactly `pending_members`.
  using Keyring = std::map<std::int64_t, std::map<std::string, std::string>>;
  Keyring keyring;
  Keyring pending_keyring;
  // Families of a PRIVATE store are sealed; open them with unseal_families.
  bool families_sealed = false;
  // Pins of the notary when guard time is on: every commit from the
  // activation on carries an attestation by this audience and key.
  std::optional<Pins> guard_time;
  std::string store;
  std::string owner;
  std::int64_t min_ttl_ms = kDefaultMinTtlMs;
  std::int64_t max_ttl_ms = kDefaultMaxTtlMs;
  std::vector<Family> families;
  // Paths compare case-insensitively (repositories checked out on
  // case-insensitive filesystems). Set at creation only.
  bool case_insensitive = false;
  // Claims bind the work (see above). Keys are 64 hex, sorted, unique.
  std::vector<RepoPath> require_claim_paths;
  std::vector<std::string> require_claim_families;
  std::optional<std::vector<std::string>> enforce;
  std::vector<std::string> admins;
  std::vector<std::string> bots;
  std::optional<CheckpointRule> checkpoint;

  // What writing the policy back (policy_document) needs besides its rules,
  // so that a parsed policy writes the bytes it was read from: which
  // optional members the document states (an absent member and one stating
  // its default are different documents, with different hashes), and a
  // PRIVATE store's families as stored, sealed (kept when they are opened).
  struct Stated {
    bool case_insensitive = false;
    bool require_claim = false;
    bool require_claim_paths = false;
    bool require_claim_families = false;
    bool admins = false;
    bool bots = false;
  };
  Stated stated;
  std::optional<json> sealed_families;

  bool is_admin(const std::string& key) const;
  bool is_bot(const std::string& key) const;
  // The owner, or a key the policy's `checkpoint.signers` names.
  bool may_checkpoint(const std::string& key) const;
  // Whether a change of canonical path `path` needs the signer's claim.
  bool requires_claim(const RepoPath& path) const;

  PathCase path_case() const { return case_insensitive ? PathCase::insensitive : PathCase::sensitive; }
};

// Validates and reads a policy document. Errors: unknown_format, bad_json,
// bad_path (also a family member not in the store's canonical form), usage
// (0 < min_ttl <= max_ttl violated, duplicate family).
Result<Policy> parse_policy(const json& doc);

// The policy document of `p`: for a policy parse_policy gave, the document it
// was read from (canonical JSON, byte for byte); for an edited one, the
// document of the edit. The one writer of policy.json after creation.
json policy_document(const Policy& p);
// The families member of a public policy document (policy_document's).
json families_document(const std::vector<Family>& families);

// The families `path` belongs to: those with a member that overlaps it (a
// member directory covers everything below it; a path above a member holds
// it too). The planner's rule, also the waiting queue's and doctor's.
std::vector<const Family*> families_of(const Policy& policy, const RepoPath& path);

class Vault;
// Opens the sealed families of a PRIVATE policy (members only).
Status unseal_families(Policy& policy, const Vault& vault);

// The guard_time member written by activation.
json guard_time_doc(const Pins& pins);

// The fields policy-set may change; every other field of the policy stays
// as it is (store, owner, format and case are fixed at init, guard time and
// membership have their own transitions).
inline constexpr std::string_view kSettablePolicyFields[] = {"min_ttl_ms", "max_ttl_ms", "families", "require_claim",
                                                             "enforce",    "admins",     "bots",     "checkpoint"};
inline bool is_settable_policy_field(std::string_view field) {
  for (auto f : kSettablePolicyFields)
    if (f == field) return true;
  return false;
}

// The owner's admin transitions edit the typed policy and write it with
// policy_document (plan_admin.cpp); every field they do not change stays
// byte for byte as it was.
//
// The pending keyring transition of `p` completed: its epoch, members and
// key become current, and `families`, when the store has them, replace the
// sealed families.
Policy policy_rekeyed(Policy p, const std::optional<json>& families);
// The pending keyring of a membership request (`keyring`, the new epoch's
// key sealed to each member), read as a policy's pending keyring is.
Result<Policy::Keyring> parse_pending_keyring(const json& keyring);
// A PRIVATE policy's families opened under `from` and sealed again under
// `to` (epoch p.epoch + 1); nullopt when the policy declares none.
Result<std::optional<json>> resealed_families(const Policy& p, const EpochKey& from, const EpochKey& to);
// The first member of the policy document, other than the settable ones
// (kSettablePolicyFields), in which two parsed policies differ, if any, in
// the order of the document's keys. Typed: every member parse_policy reads
// is compared, stated or not (an absent case_insensitive and a stated false
// differ, as their documents do); parse_policy is one to one on the
// documents it accepts (policy_document writes each back), so two
// documents differ outside the settable members exactly when this names one.
std::optional<std::string> unsettable_difference(const Policy& a, const Policy& b);

// A policy document with defaults for a new store.
json default_policy(const std::string& store_id_hex, const std::string& owner_hex);

// seed 002's TTL window over body path `prefix + ["expires_at"]`, which
// holds `expires_at`: MIN_TTL <= expires_at - T <= MAX_TTL, as
// T + MIN_TTL <= expires_at and T + MAX_TTL >= expires_at.
std::vector<TimeGuard> ttl_time_guards(const Policy& p, const json& prefix, std::int64_t expires_at);
// The same as seed 002 documents (guard_documents of ttl_time_guards).
json ttl_guards(const Policy& p, const json& prefix);

}  // namespace gitlocks
