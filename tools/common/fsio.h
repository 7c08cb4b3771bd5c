// fsio.h — the one way the CLI and the notary write a file that must be
// whole (issue 32): a temporary file beside it, the data, fsync, rename (or
// link, for a file that must never be replaced), fsync of the directory —
// git's lockfile discipline without the lock. A reader, or the machine after
// a crash, sees the old file or the new one, never a torn one.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace gitlocks::fsio {

enum class Sync {
  durable,  // fsync the file before the rename and the directory after it
  none,     // atomic, not durable: for files that only save work (the checkpoint)
};

enum class Replace {
  yes,    // rename(2) over whatever is there
  never,  // link(2) into place: an existing file stays; the error is EEXIST
};

struct WriteOptions {
  mode_t mode = 0644;  // exactly this mode (fchmod: the umask does not narrow it)
  Sync sync = Sync::durable;
  Replace replace = Replace::yes;
};

// What failed: errno and the step ("create", "write", "fsync", "rename",
// "link", "fsync the directory of").
struct WriteError {
  int err = 0;
  std::string step;
};

// Writes `data` to `path` as above. On failure nothing is left behind but
// what was there before (the temporary file is removed).
std::optional<WriteError> write_file(const std::string& path, std::string_view data, const WriteOptions& options = {});

// The same for `name` (no '/') in the open directory `dir_fd`: for a holder
// of a directory (the notary's state) that must not follow a renamed path.
std::optional<WriteError> write_file_at(int dir_fd, const std::string& name, std::string_view data,
                                        const WriteOptions& options = {});

// "cannot STEP PATH: strerror".
std::string message(const WriteError& e, const std::string& path);

// strerror(errno) with the operation and path: "open x: Permission denied".
std::string errno_message(std::string_view what, const std::string& path);

}  // namespace gitlocks::fsio
