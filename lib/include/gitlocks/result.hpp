// gitlocks/result.hpp — expected outcomes as values.
//
// Every fallible core call returns Result<T>: either a value or an Error with
// a named code and a message. Refusals (admission said no) and errors (input
// or storage is bad) are both codes here; the CLI maps codes to exit status
// in exactly one place (tools/cli/exit_codes).
#pragma once

#include <map>
#include <string>
#include <string_view>
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

struct Error {
  Error(Errc c, std::string m, std::map<std::string, std::string> f = {})
      : code(c), message(std::move(m)), fields(std::move(f)) {}
  Errc code;
  std::string message;
  // Structured fields a caller may branch on (never on the message), e.g.
  // for invalid_history: "commit" (the first invalid one), "verdict" (its
  // reason), "last_valid" (its parent, "" for the root).
  std::map<std::string, std::string> fields;
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
