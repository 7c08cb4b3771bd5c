// report.h — exit status and error output: the one place that maps the
// core's error codes to what a caller of git-locks sees (SPEC §5).
//
// Error object (one per line on stderr; docs/CLI.md):
//   {"error":KIND,"code":CODE,"reason":REFUSAL,"op":COMMAND,"detail":TEXT,"attempts":N}
//   KIND     "refused" (exit 1) | "usage" (exit 64) | "store-read" | "store-write" (exit 2)
//   CODE     the core's error code name (errc_name), always present
//   reason   refusals only: the refusal name (same as code)
//   attempts only when publication was attempted: update-ref (or push) runs made
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gitlocks/canon.hpp"
#include "gitlocks/result.hpp"

namespace gitlocks::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;
inline constexpr int kExitStore = 2;
inline constexpr int kExitUsage = 64;

enum class ErrorKind { refused, usage, store_read, store_write };

struct ErrorClass {
  ErrorKind kind;
  int exit_status;
};

ErrorClass classify(Errc code);
std::string_view kind_name(ErrorKind kind);

// The error object for `e` raised by command `op`.
json error_object(const std::string& op, const Error& e, std::optional<int> attempts);

// Prints the error object as one line on stderr; returns the exit status.
int print_error(const std::string& op, const Error& e, std::optional<int> attempts);

// One line of JSON: invalid UTF-8 (Git's stderr may hold some) is replaced,
// never thrown on.
std::string json_line(const json& v);

}  // namespace gitlocks::cli
