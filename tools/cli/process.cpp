#include "process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

extern char** environ;

namespace gitlocks::cli {
namespace {

// The current environment with NAME=VALUE overrides applied.
std::vector<std::string> merged_environment(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    if (vars.emplace(name, entry).second) order.push_back(name);
  }
  for (const auto& o : overrides) {
    std::string name = o.substr(0, o.find('='));
    if (vars.find(name) == vars.end()) order.push_back(name);
    vars[name] = o;
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& n : order) out.push_back(vars[n]);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Children start with default signal handling and an empty mask, whatever
// this process ignores or blocks (SIGPIPE, the signals `run` forwards).
struct SpawnAttr {
  posix_spawnattr_t attr;
  SpawnAttr() {
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigset_t defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnAttr() { posix_spawnattr_destroy(&attr); }
  SpawnAttr(const SpawnAttr&) = delete;
  SpawnAttr& operator=(const SpawnAttr&) = delete;
};

int decode_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// `root` and its descendants, parents first, read from /proc (Linux; only
// `root` elsewhere). git starts helpers for some transports
// (git-remote-http, ssh, upload-pack for file://) that would otherwise
// outlive it, blocked on the same unanswering server.
std::vector<pid_t> process_tree(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* proc = ::opendir("/proc")) {
    while (dirent* d = ::readdir(proc)) {
      char* end = nullptr;
      long pid = std::strtol(d->d_name, &end, 10);
      if (!end || *end || pid <= 0) continue;
      std::ifstream f(std::string("/proc/") + d->d_name + "/stat");
      std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      // pid (comm) state ppid ...: comm may hold spaces and parentheses.
      auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 1));
      std::string state;
      long ppid = 0;
      if (rest >> state >> ppid) children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
    }
    ::closedir(proc);
  }
  std::vector<pid_t> tree{root};
  for (std::size_t i = 0; i < tree.size() && tree.size() < 4096; ++i) {
    auto [lo, hi] = children.equal_range(tree[i]);
    for (auto it = lo; it != hi; ++it) tree.push_back(it->second);
  }
  return tree;
}

// Stops a child that ran out of time, and what it started: SIGTERM first so
// that git can remove its lock files, SIGKILL for whatever is left after the
// grace period. The child itself is reaped by the caller.
void stop_tree(pid_t root) {
  const auto tree = process_tree(root);
  for (pid_t p : tree) ::kill(p, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until) {
    // Exited? (WNOWAIT: left for the caller to reap, so its pid stays ours.)
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(root), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == root) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Whatever ignored SIGTERM, children first, found again from the child
  // (still unreaped, so its pid is ours) so that no pid reused meanwhile is
  // signalled. An exited, unreaped child ignores the signal.
  const auto left = process_tree(root);
  for (std::size_t i = left.size(); i-- > 0;) ::kill(left[i], SIGKILL);
}

}  // namespace

Result<Process> Process::start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int in[2];
  int out[2];
  int err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return make_error(Errc::store_write, std::string("pipe: ") + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return make_error(Errc::store_write, std::string("pipe: ") + std::strerror(errno));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    return make_error(Errc::store_write, std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  SpawnAttr attr;
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = merged_environment(env);
  auto cargs = c_strings(args);
  auto cenv = c_strings(envs);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargs[0], &fa, &attr.attr, cargs.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    return make_error(Errc::store_write, "cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  Process p;
  p.pid_ = pid;
  p.in_ = in[1];
  p.out_ = out[0];
  p.err_ = err[0];
  return p;
}

Process::Process(Process&& o) noexcept
    : pid_(o.pid_), in_(o.in_), out_(o.out_), err_(o.err_), pending_(std::move(o.pending_)) {
  o.pid_ = -1;
  o.in_ = o.out_ = o.err_ = -1;
}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    abandon();
    pid_ = o.pid_;
    in_ = o.in_;
    out_ = o.out_;
    err_ = o.err_;
    pending_ = std::move(o.pending_);
    o.pid_ = -1;
    o.in_ = o.out_ = o.err_ = -1;
  }
  return *this;
}

Process::~Process() { abandon(); }

void Process::close_fds() {
  close_fd(in_);
  close_fd(out_);
  close_fd(err_);
}

void Process::abandon() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    close_fds();
    wait_exit_status(pid_);
    pid_ = -1;
  }
  close_fds();
}

std::optional<std::string> Process::read_line() {
  close_fd(in_);
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (out_ < 0) break;
    char buf[4096];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close_fd(out_);
      break;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
  }
  if (pending_.empty()) return std::nullopt;
  std::string last = std::move(pending_);
  pending_.clear();
  return last;
}

ProcessResult Process::finish(std::string_view input, const std::function<void()>& before_reap,
                              std::int64_t timeout_ms) {
  ProcessResult r;
  if (pid_ <= 0) return r;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 0);
  std::size_t written = 0;
  if (input.empty()) close_fd(in_);
  else fcntl(in_, F_SETFL, fcntl(in_, F_GETFL) | O_NONBLOCK);
  // Feed stdin and drain both outputs together so that no pipe can fill up
  // and block the child.
  while (in_ >= 0 || out_ >= 0 || err_ >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in_ >= 0) fds[n++] = {in_, POLLOUT, 0};
    if (out_ >= 0) fds[n++] = {out_, POLLIN, 0};
    if (err_ >= 0) fds[n++] = {err_, POLLIN, 0};
    int wait_ms = -1;
    if (timeout_ms > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        r.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<std::int64_t>(left + 1, 60'000));
    }
    int ready = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) continue;  // the deadline is checked above
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      int fd = fds[i].fd;
      if (fd == in_) {
        ssize_t w = ::write(in_, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) close_fd(in_);  // EPIPE: the child stopped reading
        else if (written == input.size()) close_fd(in_);
        continue;
      }
      char buf[8192];
      ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) {
        (fd == out_ ? r.out : r.err).append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (fd == out_) close_fd(out_);
        else close_fd(err_);
      }
    }
  }
  if (r.timed_out) {
    // Its outputs may stay open in processes it started: stop them all,
    // and do not wait for end of file.
    close_fds();
    stop_tree(pid_);
  }
  close_fds();
  if (before_reap) before_reap();
  r.status = wait_exit_status(pid_);
  pid_ = -1;
  return r;
}

std::future<Result<Process>> start_async(std::vector<std::string> argv, std::vector<std::string> env) {
  return std::async(std::launch::async,
                    [argv = std::move(argv), env = std::move(env)]() { return Process::start(argv, env); });
}

namespace {

// Makes `group` the foreground process group of the terminal on stdin.
// SIGTTOU is blocked meanwhile: a background process may take the terminal
// back then (POSIX tcsetpgrp).
void give_terminal(pid_t group) {
  sigset_t ttou;
  sigset_t old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &old);
  ::tcsetpgrp(STDIN_FILENO, group);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

Result<Job> Job::start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  SpawnAttr attr;
  short flags = 0;
  posix_spawnattr_getflags(&attr.attr, &flags);
  posix_spawnattr_setflags(&attr.attr, static_cast<short>(flags | POSIX_SPAWN_SETPGROUP));
  posix_spawnattr_setpgroup(&attr.attr, 0);  // a group of its own, led by the command
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = merged_environment(env);
  auto cargs = c_strings(args);
  auto cenv = c_strings(envs);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargs[0], nullptr, &attr.attr, cargs.data(), cenv.data());
  if (rc != 0) return make_error(Errc::usage, "cannot run " + argv[0] + ": " + std::strerror(rc));
  Job job;
  job.pid_ = pid;
  // In the foreground of a terminal, so is the command. Should it touch the
  // terminal before this, it stops (SIGTTIN) and ended() continues it.
  job.terminal_ = ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  if (job.terminal_) give_terminal(pid);
  return job;
}

Job::Job(Job&& o) noexcept : pid_(o.pid_), terminal_(o.terminal_) {
  o.pid_ = -1;
  o.terminal_ = false;
}

Job::~Job() {
  if (pid_ > 0) {
    signal(SIGKILL);
    reap();
  }
}

void Job::signal(int sig) const {
  if (pid_ > 0) ::kill(-pid_, sig);
}

void Job::follow_stop(int sig) {
  // Not in the terminal's foreground: whoever stopped it continues it.
  if (!terminal_) return;
  // It touched the terminal before give_terminal() in start().
  if ((sig == SIGTTIN || sig == SIGTTOU) && ::tcgetpgrp(STDIN_FILENO) == pid_) {
    signal(SIGCONT);
    return;
  }
  give_terminal(::getpgrp());
  ::kill(0, SIGTSTP);  // returns once the shell continues us (fg or bg)
  if (::tcgetpgrp(STDIN_FILENO) == ::getpgrp()) give_terminal(pid_);
  signal(SIGCONT);
}

std::optional<int> Job::ended() {
  if (pid_ <= 0) return std::nullopt;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WNOHANG) == 0 && info.si_pid == pid_)
    follow_stop(info.si_status);
  info = {};
  // WNOWAIT: left for reap(), so that the group id stays ours meanwhile.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid_)
    return std::nullopt;
  return info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
}

int Job::reap() {
  int status = wait_exit_status(pid_);
  pid_ = -1;
  if (terminal_) give_terminal(::getpgrp());
  terminal_ = false;
  return status;
}

int wait_exit_status(pid_t pid) {
  int raw = 0;
  while (::waitpid(pid, &raw, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return decode_status(raw);
}

}  // namespace gitlocks::cli
