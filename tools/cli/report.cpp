#include "report.h"

#include <cstdio>

namespace gitlocks::cli {

ErrorClass classify(Errc code) {
  switch (code) {
    case Errc::held_path:
    case Errc::full_semaphore:
    case Errc::family_policy:
    case Errc::stale_generation:
    case Errc::not_holder:
    case Errc::guard_window:
    case Errc::empty_interval:
    case Errc::limit_mismatch:
    case Errc::stale_retries_exhausted:
    case Errc::not_member:
    case Errc::wait_timeout:
    case Errc::already_held:
    case Errc::deadlock:
    // A lease `run` held was lost: the store refused it to us, as it
    // refuses an admission (docs/CLI.md "run").
    case Errc::lease_lost:
      return {ErrorKind::refused, kExitRefused};
    case Errc::usage:
    case Errc::bad_path:
    case Errc::bad_json:
    case Errc::non_canonical:
    case Errc::bad_expression:
    case Errc::unsupported_expression:
    case Errc::arithmetic_overflow:
      return {ErrorKind::usage, kExitUsage};
    case Errc::store_write:
      return {ErrorKind::store_write, kExitStore};
    case Errc::store_read:
    // A store in a format, profile or version this git-locks does not know
    // (seed 000): the store cannot be read, the caller's input is fine.
    case Errc::unknown_format:
    // Stored material that fails verification cannot be read reliably: the
    // CLI reports it as store-read (the code tells which), never as input.
    case Errc::bad_signature:
    case Errc::invalid:
    case Errc::invalid_history:
      return {ErrorKind::store_read, kExitStore};
  }
  return {ErrorKind::store_read, kExitStore};
}

std::string_view kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::refused:
      return "refused";
    case ErrorKind::usage:
      return "usage";
    case ErrorKind::store_read:
      return "store-read";
    case ErrorKind::store_write:
      return "store-write";
  }
  return "store-read";
}

json error_object(const std::string& op, const Error& e, std::optional<int> attempts) {
  ErrorClass c = classify(e.code);
  // SPEC §5: every error carries a stable reason: the core's sub-code, or
  // its code when one code has one cause.
  json o = {{"error", kind_name(c.kind)},
            {"code", errc_name(e.code)},
            {"reason", e.reason()},
            {"op", op},
            {"detail", e.message}};
  // Each field as the core typed it (result.hpp, Field): instants,
  // durations, counts, indexes and generations are numbers.
  for (const auto& [k, v] : e.fields) o[k] = v;
  if (attempts && *attempts > 0) o["attempts"] = *attempts;
  return o;
}

int print_error(const std::string& op, const Error& e, std::optional<int> attempts) {
  std::string line = json_line(error_object(op, e, attempts)) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  return classify(e.code).exit_status;
}

std::string json_line(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace gitlocks::cli
