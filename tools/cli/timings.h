// timings.h — where a command's time goes, for the benchmarks (issue 18's
// breakdown of a claim). Off unless $GIT_LOCKS_TIMINGS names a file; then
// the command appends one JSON line to it when it ends:
//
//   {"op":"claim","total_ms":T,"phases":{"setup":A,"snapshot":B,...}}
//
// Phases are exclusive: time in a nested phase (object reads and writes
// inside planning) counts only there. total_ms runs from main() to the end
// of the command; process start-up and exit are outside it. A test seam
// like GIT_LOCKS_GIT: it changes no result. Scopes belong to the main
// thread (git children are started on threads of their own: their start
// shows as the wait for them, `git config` or `compare-and-swap`).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "gitlocks/store.hpp"

namespace gitlocks::cli::timings {

bool enabled();
// At main(): the start of total_ms.
void start();
// Appends the line for `op` (once; later calls do nothing).
void finish(const std::string& op);

// Times the enclosing block as `phase` (a string literal).
class Scope {
 public:
  explicit Scope(const char* phase);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* phase_;
  Scope* parent_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::duration nested_{};
  bool on_;
};

// `store` with its object reads and writes timed as "object reads" and
// "object writes" (the store itself when timings are off).
std::unique_ptr<ObjectStore> timed(std::unique_ptr<ObjectStore> store);

}  // namespace gitlocks::cli::timings
