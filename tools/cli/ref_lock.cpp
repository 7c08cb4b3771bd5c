#include "ref_lock.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <system_error>

namespace gitlocks::cli {
namespace {

namespace fs = std::filesystem;

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// Every process of /proc with a descriptor on the file (dev, ino): the same
// inode, not the same name, so a descriptor on the ref the lock was renamed
// to is not counted.
void scan_proc(dev_t dev, ino_t ino, RefLockObservation& seen) {
  std::error_code ec;
  if (!fs::is_directory("/proc/self/fd", ec)) {
    seen.scan = HolderScan::unavailable;
    return;
  }
  seen.scan = HolderScan::complete;
  for (fs::directory_iterator proc("/proc", ec), end; !ec && proc != end; proc.increment(ec)) {
    const std::string pid = proc->path().filename().string();
    if (!all_digits(pid)) continue;
    std::error_code fd_ec;
    fs::directory_iterator fds(proc->path() / "fd", fd_ec), fds_end;
    if (fd_ec) {
      // A process that ended meanwhile is gone, not unreadable.
      if (fd_ec.value() == EACCES || fd_ec.value() == EPERM) ++seen.unreadable;
      continue;
    }
    bool holds = false;
    for (; !fd_ec && fds != fds_end; fds.increment(fd_ec)) {
      struct stat st {};
      if (::stat(fds->path().c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino) holds = true;
    }
    if (!holds) continue;
    std::string command;
    std::ifstream comm(proc->path() / "comm");
    std::getline(comm, command);
    seen.holders.push_back({std::stoll(pid), command});
  }
  if (seen.unreadable > 0) seen.scan = HolderScan::partial;
}

}  // namespace

std::optional<RefLockObservation> observe_ref_lock(const fs::path& common_dir) {
  RefLockObservation seen;
  const fs::path lock = common_dir / "refs" / "locks" / "state.lock";
  struct stat st {};
  if (::lstat(lock.c_str(), &st) != 0) return std::nullopt;
  seen.path = lock.string();
  // The file's time is the filesystem's: compared with the system clock,
  // never with GIT_LOCKS_NOW_MS (the leases' clock).
  const auto mtime = std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  seen.age_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - mtime).count();
  scan_proc(st.st_dev, st.st_ino, seen);
  return seen;
}

}  // namespace gitlocks::cli
