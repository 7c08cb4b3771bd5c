#include "identity.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "args.h"
#include "fsio.h"
#include "gitlocks/canon.hpp"

namespace gitlocks::cli {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status make_dirs(const std::string& dir) {
  if (dir.empty() || dir == "/" || dir == ".") return Ok{};
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return Ok{};
  GITLOCKS_CHECK(make_dirs(dir_of(dir)));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error(Errc::usage, "cannot create " + dir + ": " + errno_text());
  return Ok{};
}

Result<Identity> parse_key(const std::string& path, const std::string& text) {
  // The core's parser, shared with the WASM module: the same key text means
  // the same key on every host.
  auto kp = parse_actor_key(text);
  if (!kp.ok()) return make_error(Errc::usage, "key file " + path + " is " + kp.error().message);
  Identity id;
  id.key = *kp;
  wipe(*kp);
  id.actor = to_hex(id.key.public_key);
  id.key_file = path;
  return id;
}

// Writes a new key next to `path` and links it into place (fsio.h): link()
// never replaces an existing file, so two first uses cannot clobber each
// other, and a crash leaves no torn key.
Status create_key(const std::string& path) {
  std::array<std::uint8_t, kSeedBytes> seed{};
  randombytes_buf(seed.data(), seed.size());
  std::string text = "{\"format\":\"" + std::string(kKeyFormat) + "\",\"seed\":\"" + to_hex(seed) + "\"}\n";
  sodium_memzero(seed.data(), seed.size());
  const auto failed = fsio::write_file(path, text, {0600, fsio::Sync::durable, fsio::Replace::never});
  sodium_memzero(text.data(), text.size());
  if (failed && !(failed->step == "link" && failed->err == EEXIST))
    return make_error(Errc::usage, fsio::message(*failed, "key file " + path));
  return Ok{};  // created, or another process created it first: load that one
}

}  // namespace

Result<std::string> key_file_path(const std::optional<std::string>& flag) {
  if (flag) {
    if (flag->empty()) return make_error(Errc::usage, "--key needs a file name");
    return *flag;
  }
  if (const char* k = std::getenv("GIT_LOCKS_KEY"); k && *k) return std::string(k);
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/git-locks/actor.key";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/git-locks/actor.key";
  return make_error(Errc::usage, "no key file: use --key FILE or set GIT_LOCKS_KEY, XDG_CONFIG_HOME or HOME");
}

Result<Identity> load_identity(const std::string& path, MissingKey missing) {
  for (int round = 0; round < 2; ++round) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT && missing == MissingKey::refuse)
        return make_error(Errc::usage, "key file " + path + " does not exist");
      if (errno != ENOENT || round > 0)
        return make_error(Errc::usage, "cannot open key file " + path + ": " + errno_text());
      GITLOCKS_CHECK(make_dirs(dir_of(path)));
      GITLOCKS_CHECK(create_key(path));
      continue;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return make_error(Errc::usage, "key file " + path + " is not a regular file");
    }
    if (st.st_mode & 077) {
      ::close(fd);
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return make_error(Errc::usage, "key file " + path + " has mode " + mode +
                                         ": it must not be accessible by group or others (chmod 600 " + path + ")");
    }
    std::string text(4096, '\0');
    ssize_t n = ::read(fd, text.data(), text.size());
    ::close(fd);
    if (n < 0) return make_error(Errc::usage, "cannot read key file " + path + ": " + errno_text());
    text.resize(static_cast<std::size_t>(n));
    auto id = parse_key(path, text);
    sodium_memzero(text.data(), text.size());
    return id;
  }
  return make_error(Errc::usage, "cannot create key file " + path);
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), raw.size());
  return to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

Result<std::int64_t> now_ms() {
  if (const char* o = std::getenv("GIT_LOCKS_NOW_MS"); o && *o) {
    auto v = parse_count(o, "GIT_LOCKS_NOW_MS");
    if (!v.ok()) return v.error();
    return *v;
  }
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace gitlocks::cli
