#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

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

Process::Process(Process&& o) noexcept : pid_(o.pid_), in_(o.in_), out_(o.out_), err_(o.err_) {
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

ProcessResult Process::finish(std::string_view input, const std::function<void()>& before_reap) {
  ProcessResult r;
  if (pid_ <= 0) return r;
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
    if (::poll(fds, static_cast<nfds_t>(n), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
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
  close_fds();
  if (before_reap) before_reap();
  r.status = wait_exit_status(pid_);
  pid_ = -1;
  return r;
}

Result<pid_t> spawn_inherit(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  SpawnAttr attr;
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = merged_environment(env);
  auto cargs = c_strings(args);
  auto cenv = c_strings(envs);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargs[0], nullptr, &attr.attr, cargs.data(), cenv.data());
  if (rc != 0) return make_error(Errc::usage, "cannot run " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

int wait_exit_status(pid_t pid) {
  int raw = 0;
  while (::waitpid(pid, &raw, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return decode_status(raw);
}

bool try_wait_exit_status(pid_t pid, int& status) {
  int raw = 0;
  pid_t r = ::waitpid(pid, &raw, WNOHANG);
  if (r != pid) return false;
  status = decode_status(raw);
  return true;
}

}  // namespace gitlocks::cli
