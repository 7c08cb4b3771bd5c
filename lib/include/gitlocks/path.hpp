// gitlocks/path.hpp — repository paths as lock resources (SPEC §3).
//
// A path is relative and '/'-separated; a trailing '/' marks a directory
// claim. Components may not be empty, "." or ".."; no NUL, no control
// characters, no '\\', valid UTF-8, at most 4096 bytes and 255 bytes per
// component. Bad paths are rejected, never rewritten.
//
// Two claimed paths overlap when one's component list is a prefix of the
// other's (equal included). The trailing '/' documents intent; it does not
// narrow the claim: "a/b" also covers "a/b/c" should a/b become a directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/result.hpp"

namespace gitlocks {

inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxComponentBytes = 255;

struct RepoPath {
  std::vector<std::string> components;
  bool directory = false;

  // Resource identity: the components joined by '/', without trailing '/'.
  std::string key() const;
  // As the user wrote it (with the trailing '/' of a directory claim).
  std::string display() const;
};

// Validates a path. Errors: bad_path with the reason.
Result<RepoPath> parse_repo_path(std::string_view text);

// True when the two paths overlap (SPEC §3).
bool paths_overlap(const RepoPath& a, const RepoPath& b);

}  // namespace gitlocks
