#include "fsio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace gitlocks::fsio {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The directory part of a path ("." when there is none).
std::string parent_dir(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// All of `data`, retrying short writes and EINTR.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

WriteError failed(const char* step) { return WriteError{errno, step}; }

// ".NAME.PID.N.tmp" with N unique in this process; created O_EXCL, so a
// leftover of a crashed writer is never reused, only skipped.
int create_temp(int dir_fd, const std::string& name, std::string& temp, mode_t mode) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = "." + name + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + ".tmp";
    int fd = ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

std::optional<WriteError> write_file_at(int dir_fd, const std::string& name, std::string_view data,
                                        const WriteOptions& options) {
  std::string temp;
  Fd file{create_temp(dir_fd, name, temp, options.mode)};
  if (file.fd < 0) return failed("create");
  auto fail = [&](const char* step) {
    WriteError e = failed(step);
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return e;
  };
  if (::fchmod(file.fd, options.mode) != 0 || !write_all(file.fd, data)) return fail("write");
  if (options.sync == Sync::durable && ::fsync(file.fd) != 0) return fail("fsync");
  const int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0) return fail("write");
  if (options.replace == Replace::yes) {
    if (::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0) return fail("rename");
  } else {
    if (::linkat(dir_fd, temp.c_str(), dir_fd, name.c_str(), 0) != 0) return fail("link");
    ::unlinkat(dir_fd, temp.c_str(), 0);
  }
  if (options.sync == Sync::durable && ::fsync(dir_fd) != 0) return failed("fsync the directory of");
  return std::nullopt;
}

std::optional<WriteError> write_file(const std::string& path, std::string_view data, const WriteOptions& options) {
  const auto slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    errno = EISDIR;
    return failed("create");
  }
  Fd dir{::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd < 0) return failed("open the directory of");
  return write_file_at(dir.fd, name, data, options);
}

std::string message(const WriteError& e, const std::string& path) {
  return "cannot " + e.step + " " + path + ": " + std::strerror(e.err);
}

std::string errno_message(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

}  // namespace gitlocks::fsio
