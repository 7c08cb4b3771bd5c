#include "state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "fsio.h"
#include "gitlocks/canon.hpp"

namespace gitlocks::notary {
using fsio::errno_message;
namespace {

constexpr std::size_t kMaxStateFileBytes = 4096;

enum class ReadStatus { ok, missing, error };

// Reads a small file relative to dir_fd; `data` gets at most `limit` + 1 bytes.
ReadStatus read_small(int dir_fd, const char* name, std::size_t limit, std::string& data) {
  int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ENOENT ? ReadStatus::missing : ReadStatus::error;
  data.clear();
  char buf[1024];
  while (data.size() <= limit) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return ReadStatus::error;
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ReadStatus::ok;
}

bool parse_high_water(std::string text, std::int64_t& out) {
  if (text.empty() || text.size() > kMaxStateFileBytes || text.back() != '\n') return false;
  text.pop_back();
  auto doc = canon_parse(text, CanonMode::strict);
  if (!doc.ok() || !doc->is_object()) return false;
  if (!check_keys(*doc, {"format", "high_water_ms"}, "notary state").ok()) return false;
  auto format = get_string(*doc, "format");
  auto mark = get_int(*doc, "high_water_ms");
  if (!format.ok() || *format != kStateFormat || !mark.ok() || *mark < 0) return false;
  out = *mark;
  return true;
}

}  // namespace

std::unique_ptr<StateDir> StateDir::open(const std::string& dir, StartFailure& failure) {
  auto fail = [&](std::string code, std::string detail) {
    failure = {std::move(code), std::move(detail), kExitFailure};
    return nullptr;
  };
  if (dir.empty()) return fail("state-unwritable", "no state directory given");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail("state-unwritable", errno_message("cannot create state directory", dir));
  std::unique_ptr<StateDir> s(new StateDir(dir));
  s->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dir_fd_ < 0) return fail("state-unwritable", errno_message("cannot open state directory", dir));

  bool fresh = true;
  s->lock_fd_ = ::openat(s->dir_fd_, kLockFile, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (s->lock_fd_ < 0 && errno == EEXIST) {
    fresh = false;
    s->lock_fd_ = ::openat(s->dir_fd_, kLockFile, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  }
  if (s->lock_fd_ < 0) return fail("state-unwritable", errno_message("cannot open", dir + "/" + kLockFile));
  if (::flock(s->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return fail("state-locked", "another notary is serving from " + dir);
    return fail("state-unwritable", errno_message("cannot lock", dir + "/" + kLockFile));
  }

  const std::string hw_path = dir + "/" + kHighWaterFile;
  std::string text;
  switch (read_small(s->dir_fd_, kHighWaterFile, kMaxStateFileBytes, text)) {
    case ReadStatus::ok:
      if (!parse_high_water(text, s->high_water_))
        return fail("state-corrupt", hw_path +
                                         " is not a valid high-water mark; refusing to start rather than "
                                         "reset it (restore it, or see docs/NOTARY.md)");
      break;
    case ReadStatus::missing:
      if (!fresh)
        return fail("state-corrupt", hw_path + " is missing but " + dir +
                                         " was initialised; refusing to start "
                                         "rather than reset the high-water mark (see docs/NOTARY.md)");
      break;
    case ReadStatus::error:
      return fail("state-corrupt", errno_message("cannot read", hw_path));
  }
  std::string error;
  if (!s->write_high_water(s->high_water_, error)) return fail("state-unwritable", error);
  return s;
}

StateDir::~StateDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

bool StateDir::write_high_water(std::int64_t t, std::string& error) {
  auto text = canon_dump(json{{"format", kStateFormat}, {"high_water_ms", t}});
  if (!text.ok()) {
    error = "high-water mark out of range";
    return false;
  }
  if (auto failed = fsio::write_file_at(dir_fd_, kHighWaterFile, *text + "\n", {0600})) {
    error = fsio::message(*failed, dir_ + "/" + kHighWaterFile);
    return false;
  }
  return true;
}

bool StateDir::persist_high_water(std::int64_t t, std::string& error) {
  bool ok = write_high_water(t, error);
  if (t > high_water_) high_water_ = t;
  return ok;
}

bool StateDir::read_test_clock(std::int64_t& t, std::string& error) const {
  std::string text;
  switch (read_small(dir_fd_, kTestClockFile, 64, text)) {
    case ReadStatus::missing:
      error = "the test clock file " + dir_ + "/" + kTestClockFile + " does not exist";
      return false;
    case ReadStatus::error:
      error = errno_message("cannot read the test clock", dir_ + "/" + kTestClockFile);
      return false;
    case ReadStatus::ok:
      break;
  }
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::size_t b = 0, e = text.size();
  while (b < e && space(text[b])) ++b;
  while (e > b && space(text[e - 1])) --e;
  std::int64_t v = 0;
  bool ok = e > b && e - b <= 16;
  for (std::size_t i = b; ok && i < e; ++i) {
    if (text[i] < '0' || text[i] > '9') ok = false;
    else v = v * 10 + (text[i] - '0');
  }
  if (!ok || v > kMaxSafeInteger) {
    error = "the test clock file " + dir_ + "/" + kTestClockFile + " must hold milliseconds in [0, 2^53-1]";
    return false;
  }
  t = v;
  return true;
}

}  // namespace gitlocks::notary
