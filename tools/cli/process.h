// process.h — child processes of the CLI: captured (for git) or sharing our
// stdio (for `run`). Host-only: the core never starts a process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/result.hpp"

namespace gitlocks::cli {

struct ProcessResult {
  int status = -1;  // exit status; 128 + N when killed by signal N
  std::string out;
  std::string err;
  bool timed_out = false;  // finish()'s timeout ran out and the child was stopped
};

// A started child with piped stdin, stdout and stderr. Starting early and
// finishing later lets a caller overlap the child's start-up with its own
// work. The destructor kills and reaps a child that was never finished.
class Process {
 public:
  // argv[0] is looked up in PATH. `env` holds NAME=VALUE overrides on top of
  // this process's environment. Errors: store_write when it cannot start.
  static Result<Process> start(const std::vector<std::string>& argv, const std::vector<std::string>& env);

  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  // Writes `input`, closes stdin, collects both outputs until the child
  // exits, and reaps it. `before_reap`, when given, runs once both outputs
  // are closed and before the child is reaped: until then its pid cannot
  // be reused, so another thread may still signal it safely.
  //
  // `timeout_ms` > 0 bounds the whole exchange: when it runs out, the child
  // and every process it started are sent SIGTERM (so git removes its own
  // lock files), SIGKILL after a grace period, the child is reaped, and the
  // result has timed_out set with whatever output had arrived.
  ProcessResult finish(std::string_view input, const std::function<void()>& before_reap = {},
                       std::int64_t timeout_ms = 0);

  // Kills a child that was given nothing to do (it has read no input, so it
  // has touched nothing) and reaps it.
  void abandon();

  pid_t pid() const { return pid_; }

 private:
  Process() = default;
  void close_fds();
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  int err_ = -1;
};

// Process::start on a thread of its own. posix_spawn returns only once the
// child has exec'd (about a millisecond for git): started this way, that
// wait overlaps the caller's own work. get() waits for the start.
std::future<Result<Process>> start_async(std::vector<std::string> argv, std::vector<std::string> env);

// Starts a command that shares this process's stdin, stdout and stderr
// (signal mask and dispositions reset to defaults). Errors: usage when the
// command cannot be started (not found, not executable).
Result<pid_t> spawn_inherit(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// Waits for a child (retrying on EINTR): its exit status, or 128 + N when
// it was killed by signal N.
int wait_exit_status(pid_t pid);

// Non-blocking variant: false while the child runs, else true with `status`.
bool try_wait_exit_status(pid_t pid, int& status);

}  // namespace gitlocks::cli
