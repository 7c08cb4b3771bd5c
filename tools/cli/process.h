// process.h — child processes of the CLI: captured (for git) or sharing our
// stdio (for `run`). Host-only: the core never starts a process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <future>
#include <optional>
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

  // For a child that streams lines (`watch`): its next line of stdout,
  // without the newline, blocking until it comes; nullopt once its output
  // ends. Its stdin is closed at the first call; its stderr is not read
  // (such a child writes there only as it exits).
  std::optional<std::string> read_line();

  pid_t pid() const { return pid_; }

 private:
  Process() = default;
  void close_fds();
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  int err_ = -1;
  std::string pending_;  // read_line: read past the last line returned
};

// Process::start on a thread of its own. posix_spawn returns only once the
// child has exec'd (about a millisecond for git): started this way, that
// wait overlaps the caller's own work. get() waits for the start.
std::future<Result<Process>> start_async(std::vector<std::string> argv, std::vector<std::string> env);

// The command `run` wraps. It shares this process's stdin, stdout and
// stderr (signal mask and dispositions reset to defaults) and runs in a
// process group of its own, so that a signal reaches whatever it started.
// When this process is the foreground of the terminal on its stdin, the
// command's group is the terminal's foreground while it runs: it reads the
// terminal and gets Ctrl-C and Ctrl-Z itself, and reap() (or the
// destructor) hands the terminal back.
class Job {
 public:
  // Errors: usage when the command cannot be started (not found, not
  // executable).
  static Result<Job> start(const std::vector<std::string>& argv, const std::vector<std::string>& env);

  Job(Job&& o) noexcept;
  Job& operator=(Job&&) = delete;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  // A command never reaped is killed (its whole group) and reaped.
  ~Job();

  // Sends `sig` to the command's process group. Safe from any thread until
  // reap(): the command is not reaped before, so its group id cannot be
  // reused.
  void signal(int sig) const;

  // Without blocking: the command's exit status (128 + N when signal N
  // killed it) once it has ended, nullopt while it runs; never reaps it.
  // Follows job control on the way: when the command in the foreground of
  // the terminal stops (Ctrl-Z), this process takes the terminal back and
  // stops its own group as the terminal would have; continued in the
  // foreground (`fg`) it hands the terminal back and continues the command.
  std::optional<int> ended();

  // Reaps the command (waiting for it if it still runs) and takes the
  // terminal back; its exit status.
  int reap();

  pid_t pid() const { return pid_; }

 private:
  Job() = default;
  void follow_stop(int sig);
  pid_t pid_ = -1;         // the command, leader of its process group
  bool terminal_ = false;  // its group was made the terminal's foreground
};

// Waits for a child (retrying on EINTR): its exit status, or 128 + N when
// it was killed by signal N.
int wait_exit_status(pid_t pid);

}  // namespace gitlocks::cli
