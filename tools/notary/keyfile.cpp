#include "keyfile.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>

#include "fsio.h"
#include "gitlocks/hex.hpp"

namespace gitlocks::notary {
using fsio::errno_message;
namespace {

constexpr std::size_t kKeyFileBytes = 2 * kSeedBytes + 1;  // hex + "\n"

// Wipes the seed whichever way the caller leaves.
struct Seed {
  std::array<std::uint8_t, kSeedBytes> bytes{};
  ~Seed() { sodium_memzero(bytes.data(), bytes.size()); }
};

}  // namespace

int notary_keygen(const std::string& out_path, std::string& error, std::string* service_key) {
  if (out_path.empty()) {
    error = "keygen needs an output file";
    return kExitUsage;
  }
  if (!crypto_init()) {
    error = "libsodium failed to initialise";
    return kExitFailure;
  }
  Seed seed;
  randombytes_buf(seed.bytes.data(), seed.bytes.size());
  std::string line = to_hex(seed.bytes) + "\n";

  // Never replaces a key: linked into place, so a crash leaves no torn key file.
  const auto failed = fsio::write_file(out_path, line, {0600, fsio::Sync::durable, fsio::Replace::never});
  sodium_memzero(line.data(), line.size());
  if (failed) {
    error = failed->err == EEXIST && failed->step == "link" ? "refusing to overwrite the existing file " + out_path
                                                            : fsio::message(*failed, out_path);
    return kExitFailure;
  }
  if (service_key) *service_key = to_hex(keypair_from_seed(seed.bytes).public_key);
  return kExitOk;
}

bool load_service_key(const std::string& path, KeyPair& out, StartFailure& failure) {
  auto fail = [&](std::string code, std::string detail) {
    failure = {std::move(code), std::move(detail), kExitFailure};
    return false;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return fail("key-missing", "no key file at " + path + " (make one with notary keygen)");
    return fail("key-unreadable", errno_message("cannot open key file", path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return fail("key-unreadable", errno_message("cannot stat key file", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("key-malformed", path + " is not a regular file");
  }
  if ((st.st_mode & 077) != 0 || st.st_uid != ::geteuid()) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    if (st.st_uid != ::geteuid())
      return fail("key-permissions",
                  "key file " + path + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user");
    return fail("key-permissions", "key file " + path + " has mode " + mode +
                                       "; it must not be accessible by group or others (chmod 600)");
  }
  // One byte more than a valid file, to notice trailing garbage.
  std::array<char, kKeyFileBytes + 1> buf{};
  std::size_t len = 0;
  while (len < buf.size()) {
    ssize_t n = ::read(fd, buf.data() + len, buf.size() - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      sodium_memzero(buf.data(), buf.size());
      return fail("key-unreadable", errno_message("cannot read key file", path));
    }
    if (n == 0) break;
    len += static_cast<std::size_t>(n);
  }
  ::close(fd);
  Seed seed;
  bool ok = len == kKeyFileBytes - 1 || (len == kKeyFileBytes && buf[kKeyFileBytes - 1] == '\n');
  ok = ok && hex_decode(std::string_view(buf.data(), 2 * kSeedBytes), seed.bytes.data(), kSeedBytes);
  sodium_memzero(buf.data(), buf.size());
  if (!ok)
    return fail("key-malformed", "key file " + path + " must hold exactly 64 lowercase hex digits and a newline");
  out = keypair_from_seed(seed.bytes);
  return true;
}

}  // namespace gitlocks::notary
