// durable.h — file writes that survive a crash: fsync the data, then the
// directory entry (git's lockfile discipline, without the lock).
#pragma once

#include <string>
#include <string_view>

namespace gitlocks::notary {

// The directory part of a path ("." when there is none).
std::string parent_dir(const std::string& path);

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool write_all(int fd, std::string_view data);

// fsync of a directory, so that a rename or create in it is durable.
bool fsync_dir(const std::string& dir);

// strerror(errno) with the operation and path: "open x: Permission denied".
std::string errno_message(std::string_view what, const std::string& path);

}  // namespace gitlocks::notary
