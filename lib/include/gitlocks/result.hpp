// gitlocks/result.hpp — expected outcomes as values.
//
// Every fallible core call returns Result<T>: either a value or an Error with
// a named code and a message. Refusals (admission said no) and errors (input
// or storage is bad) are both codes here; the CLI maps codes to exit status
// in exactly one place (tools/cli/exit_codes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace gitlocks {

enum class Errc {
  // Admission refusals (exit 1).
  held_path,
  full_semaphore,
  family_policy,
  stale_generation,
  not_holder,
  guard_window,
  empty_interval,
  limit_mismatch,
  stale_retries_exhausted,
  not_member,    // a PRIVATE store and a key that is not one of its members
  wait_timeout,  // a blocking acquisition (--wait) gave up: its timeout passed
  already_held,  // the actor already holds the resource: extend it instead
  lease_lost,    // a lease a host held and renewed (`run`) is gone: renewal refused, or expired
  deadlock,      // a ticket would close a cycle in the queue's wait-for graph: waiting cannot end
  // Malformed or unsupported input (exit 64).
  usage,
  bad_path,
  bad_json,
  non_canonical,
  bad_expression,
  unsupported_expression,
  arithmetic_overflow,
  unknown_format,
  // Storage (exit 2).
  store_read,
  store_write,
  // The history up to the tip does not verify (a forged or rewritten
  // commit): nothing may act on it. Reported as store-read (exit 2).
  invalid_history,
  // Verification of signed material failed.
  bad_signature,
  invalid,
};

// Stable kebab-case name used in JSON errors and test vectors.
std::string_view errc_name(Errc c);

// Stable sub-codes (the `reason` of a JSON error) where one code has several
// causes a caller may want to tell apart. Without one, the reason is the
// code's name. docs/CLI.md lists them; never branch on an error's message.
namespace reason {
inline constexpr std::string_view policy_changed = "policy-changed";  // stale_generation: the policy hash moved
inline constexpr std::string_view source_changed = "source-changed";  // stale_generation: a saved packet's source moved
inline constexpr std::string_view reclaim_mismatch = "reclaim-mismatch";  // stale_generation: declared reclaims differ
inline constexpr std::string_view expiry_changed = "expiry-changed";      // stale_generation: prev_expires_at differs
inline constexpr std::string_view sweep_mismatch = "sweep-mismatch";  // stale_generation: swept lease not as declared
inline constexpr std::string_view superseded = "superseded";    // stale_generation: the lease's generation was replaced
inline constexpr std::string_view not_expired = "not-expired";  // held_path: a swept lease has not expired
// held_path: an older live ticket of another holder waits for the resource (fields ticket, ticket_seq)
inline constexpr std::string_view queued_behind = "queued-behind";
// stale_generation: the tickets a claim declares it passes ("passes") differ from the state's
inline constexpr std::string_view passes_mismatch = "passes-mismatch";
// stale_generation: a ticket's declared "behind" differs from the holders of the leases in its way
inline constexpr std::string_view behind_mismatch = "behind-mismatch";
// not_holder: no ticket of the actor with this id (renewed, dropped)
inline constexpr std::string_view no_ticket = "no-ticket";
inline constexpr std::string_view already_enabled = "already-enabled";    // usage: guard time already has these pins
inline constexpr std::string_view operation_failed = "operation-failed";  // stale_generation: a FAILED admin operation
inline constexpr std::string_view not_owner = "not-owner";  // not_holder: an admin transition by another than the owner
inline constexpr std::string_view not_admin = "not-admin";  // not_holder: a force-release by one the policy names not
// not_holder: the actor's lease was taken away by an admin's force-release (fields released_by, release_reason);
// lease_lost: the same, found by a renewal.
inline constexpr std::string_view force_released = "force-released";
// lease_lost: a renewal was refused for another cause than force-released (fields refusal_code, refusal_reason).
inline constexpr std::string_view renewal_refused = "renewal-refused";
// lease_lost: the lease expired while its renewals failed (fields expires_at_ms, checked_at_ms).
inline constexpr std::string_view expired = "expired";
// not_holder: under the policy's require_claim, a change by a signer who holds no live claim of the path.
inline constexpr std::string_view claim_required = "claim-required";
// bad_signature of an SSH signature (sshsig.hpp): armor, base64 or blob structure, version.
inline constexpr std::string_view signature_malformed = "signature-malformed";
// bad_signature: a key type other than ssh-ed25519, a hash other than sha256/sha512, not SSH.
inline constexpr std::string_view signature_algorithm = "signature-algorithm";
inline constexpr std::string_view signature_namespace = "signature-namespace";  // bad_signature: another namespace
inline constexpr std::string_view signature_mismatch = "signature-mismatch";    // bad_signature: does not verify
// store_read: fewer of the witnesses a clone requires answered than its
// quorum (git config locks.witnessQuorum; docs/FORMAT.md "Witnesses").
inline constexpr std::string_view witness_quorum = "witness-quorum";
}  // namespace reason

// One structured field of an Error: text or a whole number. Its type is
// decided where the core sets it, once; every host renders it as that type
// (a JSON string or number: the CLI's error line, the npm module's
// GitLocksError.fields, the page). Instants, durations, counts, indexes and
// generations are numbers; names, ids, paths and codes are text.
class Field {
 public:
  Field() = default;
  Field(std::string text) : v_(std::move(text)) {}         // NOLINT(google-explicit-constructor)
  Field(const char* text) : v_(std::string(text)) {}       // NOLINT(google-explicit-constructor)
  Field(std::string_view text) : v_(std::string(text)) {}  // NOLINT(google-explicit-constructor)
  template <class N,
            std::enable_if_t<std::is_integral_v<N> && !std::is_same_v<N, bool> && !std::is_same_v<N, char>, int> = 0>
  Field(N n) : v_(static_cast<std::int64_t>(n)) {}  // NOLINT(google-explicit-constructor)

  bool is_number() const { return v_.index() == 1; }
  // The text of a text field ("" for a number: ask is_number first).
  const std::string& text() const {
    static const std::string none;
    return is_number() ? none : std::get<0>(v_);
  }
  // The value of a number field (0 for text).
  std::int64_t number() const { return is_number() ? std::get<1>(v_) : 0; }
  // Either, as text (for messages).
  std::string str() const { return is_number() ? std::to_string(std::get<1>(v_)) : std::get<0>(v_); }

  friend bool operator==(const Field& a, const Field& b) { return a.v_ == b.v_; }
  friend bool operator!=(const Field& a, const Field& b) { return !(a == b); }

 private:
  std::variant<std::string, std::int64_t> v_;
};

using Fields = std::map<std::string, Field>;

struct Error {
  Error(Errc c, std::string m, Fields f = {}) : code(c), message(std::move(m)), fields(std::move(f)) {}
  Errc code;
  std::string message;
  // Structured fields a caller may branch on (never on the message), e.g.
  // for invalid_history: "commit" (the first invalid one), "verdict" (its
  // reason), "last_valid" (its parent, "" for the root); for a refusal of
  // one op of several: "op_index" and "op_kind"; for a conflict: "holder",
  // "holder_name", "expires_at_ms".
  Fields fields;
  // The stable sub-code (namespace reason); empty: the code's name.
  std::string sub;

  std::string_view reason() const { return sub.empty() ? errc_name(code) : std::string_view(sub); }
  bool has_reason(std::string_view r) const { return reason() == r; }
  // Sets the sub-code: make_error(Errc::stale_generation, "...").because(reason::policy_changed).
  Error because(std::string_view r) && {
    sub = std::string(r);
    return std::move(*this);
  }
  // The same error (code, reason, fields) with `context` before its message.
  Error prefixed(const std::string& context) const {
    Error e = *this;
    e.message = context + e.message;
    return e;
  }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  // By value: a temporary Result must not hand out a reference into itself.
  T value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(Errc c, std::string message) { return Error{c, std::move(message)}; }

}  // namespace gitlocks

// Propagate an error from a Result-returning expression.
#define GITLOCKS_TRY(var, expr)                          \
  auto var##_result_ = (expr);                           \
  if (!var##_result_.ok()) return var##_result_.error(); \
  auto& var = var##_result_.value()

#define GITLOCKS_CHECK(expr)                                     \
  do {                                                           \
    auto gitlocks_status_ = (expr);                              \
    if (!gitlocks_status_.ok()) return gitlocks_status_.error(); \
  } while (0)
