// gitlocks/ops.hpp — typed builders of the ops a transition body carries
// (docs/FORMAT.md "Bodies"): hosts build ops here instead of writing JSON
// literals, so an op's fields are named once. The planner checks every op
// it is given (these builders do not validate: a bad path or TTL is the
// planner's refusal, as for a hand-written body).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"

namespace gitlocks::ops {

enum class Mode { exclusive, shared, intent };
inline const char* mode_name(Mode m) {
  return m == Mode::shared ? "shared" : m == Mode::intent ? "intent" : "exclusive";
}

// {"op":"claim","path":P,"mode":M,"expires_at":E,"note"?:N}
inline json claim(const std::string& path, Mode mode, std::int64_t expires_at,
                  const std::optional<std::string>& note = std::nullopt) {
  json op = {{"op", "claim"}, {"path", path}, {"mode", mode_name(mode)}, {"expires_at", expires_at}};
  if (note) op["note"] = *note;
  return op;
}

// The same with the mode as a user typed it ("exclusive" | "shared" |
// "intent"; the planner refuses anything else).
inline json claim(const std::string& path, const std::string& mode, std::int64_t expires_at,
                  const std::optional<std::string>& note = std::nullopt) {
  json op = claim(path, Mode::exclusive, expires_at, note);
  op["mode"] = mode;
  return op;
}

// {"op":"sem-acquire","sem":NAME,"limit":L,"expires_at":E,"note"?:N}
inline json sem_acquire(const std::string& name, std::int64_t limit, std::int64_t expires_at,
                        const std::optional<std::string>& note = std::nullopt) {
  json op = {{"op", "sem-acquire"}, {"sem", name}, {"limit", limit}, {"expires_at", expires_at}};
  if (note) op["note"] = *note;
  return op;
}

// The store's queue (docs/FORMAT.md "Tickets"). A ticket's wants:
// {"path":P,"mode":"exclusive"|"shared"} or {"sem":NAME}.
inline json want_path(const std::string& path, Mode mode) { return {{"path", path}, {"mode", mode_name(mode)}}; }
inline json want_sem(const std::string& name) { return {{"sem", name}}; }
// {"op":"ticket","wants":[...],"expires_at":E}; the planner fills in "behind".
inline json ticket(const json& wants, std::int64_t expires_at) {
  return {{"op", "ticket"}, {"wants", wants}, {"expires_at", expires_at}};
}
// {"op":"ticket-renew","ticket":ID,"expires_at":E}; the planner fills in
// "prev_expires_at".
inline json ticket_renew(const std::string& ticket, std::int64_t expires_at) {
  return {{"op", "ticket-renew"}, {"ticket", ticket}, {"expires_at", expires_at}};
}
// {"op":"ticket-drop","ticket":ID}: the actor's own ticket, or (the planner
// fills in "expires_at") another's that lapsed.
inline json ticket_drop(const std::string& ticket) { return {{"op", "ticket-drop"}, {"ticket", ticket}}; }

// A lease named by its resource: {"path":P} or {"sem":NAME}.
struct Target {
  bool sem = false;
  std::string name;
  static Target path(std::string p) { return {false, std::move(p)}; }
  static Target semaphore(std::string n) { return {true, std::move(n)}; }
};

// {"op":"extend","path"|"sem":…,"lease":ID,"generation"?:G}; the host adds
// "expires_at" (extend_to) once it knows the admission time.
inline json extend(const Target& t, const std::string& lease, std::optional<std::int64_t> generation = std::nullopt) {
  json op = {{"op", "extend"}, {t.sem ? "sem" : "path", t.name}, {"lease", lease}};
  if (generation) op["generation"] = *generation;
  return op;
}
inline json extend_to(json op, std::int64_t expires_at) {
  op["expires_at"] = expires_at;
  return op;
}

// {"op":"release"|"sem-release","path"|"sem":…,"lease":ID,"generation"?:G}
inline json release(const Target& t, const std::string& lease, std::optional<std::int64_t> generation = std::nullopt) {
  json op = {{"op", t.sem ? "sem-release" : "release"}, {t.sem ? "sem" : "path", t.name}, {"lease", lease}};
  if (generation) op["generation"] = *generation;
  return op;
}

// An admin's release of any holder's path lease, with the reason recorded
// (docs/FORMAT.md); the planner fills the generation when absent.
inline json force_release(const std::string& path, const std::string& lease, const std::string& reason) {
  return {{"op", "force-release"}, {"path", path}, {"lease", lease}, {"reason", reason}};
}

// A hand-off of the actor's live lease to the key `to` (docs/FORMAT.md
// "Hand-off"): {"op":"handoff","path"|"sem":…,"lease":ID,"to":KEY,
// "to_name":NAME,"expires_at":E,"note"?:N}; the planner fills in the
// generation and the expiry being handed on, and for a path what the
// receiver reclaims.
inline json handoff(const Target& t, const std::string& lease, const std::string& to, const std::string& to_name,
                    std::int64_t expires_at, const std::optional<std::string>& note = std::nullopt) {
  json op = {{"op", "handoff"},    {t.sem ? "sem" : "path", t.name}, {"lease", lease}, {"to", to},
             {"to_name", to_name}, {"expires_at", expires_at}};
  if (note) op["note"] = *note;
  return op;
}

// One expired lease a sweep removes, as the state records it.
struct Swept {
  Target target;
  std::string lease;
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
};
// {"op":"sweep","leases":[{"path"|"sem":…,"lease","generation","expires_at"},...]}
inline json sweep(const std::vector<Swept>& leases) {
  json list = json::array();
  for (const auto& s : leases)
    list.push_back({{s.target.sem ? "sem" : "path", s.target.name},
                    {"lease", s.lease},
                    {"generation", s.generation},
                    {"expires_at", s.expires_at}});
  return {{"op", "sweep"}, {"leases", std::move(list)}};
}

// Admin bodies (owner only): {"admin":{...,"expected_policy_hash":H}}.
inline json admin_rekey(const std::string& expected_policy_hash) {
  return {{"admin", {{"op", "rekey"}, {"expected_policy_hash", expected_policy_hash}}}};
}
// `keyring`: the next epoch's key sealed to each remaining member.
inline json admin_member(bool add, const std::string& member, const std::string& expected_policy_hash,
                         const json& keyring) {
  return {{"admin",
           {{"op", add ? "member-add" : "member-remove"},
            {"member", member},
            {"expected_policy_hash", expected_policy_hash},
            {"keyring", keyring}}}};
}
// Guard time on (seed 002): the notary's audience and key, and the owner's
// consent to what it discloses ("GUARD_WINDOW").
inline json admin_guard_time_enable(const json& audience, const json& service_key, const json& disclosure,
                                    const json& expected_policy_hash) {
  return {{"admin",
           {{"op", "guard-time-enable"},
            {"audience", audience},
            {"service_key", service_key},
            {"disclosure", disclosure},
            {"expected_policy_hash", expected_policy_hash}}}};
}
// Another notary (seed 002's explicit migration): its pins and the owner's
// consent, or guard time off with `guard_time` null (guard_time_pins() or
// nullptr). The transition is attested by the notary it installs; turned
// off, it carries the owner's clock reading.
inline json admin_guard_time_set(const json& guard_time, const json& expected_policy_hash) {
  return {{"admin",
           {{"op", "guard-time-set"}, {"expected_policy_hash", expected_policy_hash}, {"guard_time", guard_time}}}};
}
// The `guard_time` member of guard-time-set that names a notary.
inline json guard_time_pins(const json& audience, const json& service_key, const json& disclosure) {
  return {{"audience", audience}, {"service_key", service_key}, {"disclosure", disclosure}};
}

// The owner's policy change: `policy` is the whole new policy document, in
// which only the settable fields (policy.hpp kSettablePolicyFields) differ.
inline json admin_policy_set(const json& policy, const std::string& expected_policy_hash) {
  return {{"admin", {{"op", "policy-set"}, {"expected_policy_hash", expected_policy_hash}, {"policy", policy}}}};
}

// The owner's checkpoint of the state at commit `prev` (the tip it is
// published on): nothing changes; every verifier checks `prev` is the
// commit's parent (docs/FORMAT.md "Checkpoints").
inline json admin_checkpoint(const std::string& prev, const std::string& expected_policy_hash) {
  return {{"admin", {{"op", "checkpoint"}, {"expected_policy_hash", expected_policy_hash}, {"prev", prev}}}};
}

}  // namespace gitlocks::ops
