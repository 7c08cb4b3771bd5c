// gitlocks/path.hpp — repository paths as lock resources (SPEC §3).
//
// A path is relative and '/'-separated; a trailing '/' marks a directory
// claim. Components may not be empty, "." or ".."; no NUL, no control
// characters, no '\\', valid UTF-8, at most 4096 bytes and 255 bytes per
// component. Bad paths are rejected, never rewritten.
//
// Identity across platforms: a path in a packet is in Unicode NFC, with no
// run of more than 30 combining marks (Unicode's stream-safe limit), and in
// a case-insensitive store (policy "case_insensitive") also case-folded, so
// one file is one resource whichever filesystem spelled it. Hosts turn what
// a user typed into that form with normalize_path_input; the planner and
// replay refuse anything else (bad_path), so a forged NFD or case twin of a
// held path is an invalid packet, never a second lease.
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
inline constexpr std::size_t kMaxCombiningRun = 30;

// How a store compares paths (Policy::case_insensitive).
enum class PathCase { sensitive, insensitive };

struct RepoPath {
  std::vector<std::string> components;
  bool directory = false;

  // Resource identity: the components joined by '/', without trailing '/'.
  std::string key() const;
  // As the user wrote it (with the trailing '/' of a directory claim).
  std::string display() const;

  bool operator==(const RepoPath& o) const { return directory == o.directory && components == o.components; }
};

// Validates a path in the store's canonical form (NFC; folded when
// `path_case` is insensitive). Errors: bad_path with the reason; a path that
// is only not canonical is refused with a message naming its canonical form.
Result<RepoPath> parse_repo_path(std::string_view text, PathCase path_case = PathCase::sensitive);

// What a host does with a path a user typed or a filesystem listed: its
// canonical form for the store (NFC, then folded when case-insensitive),
// validated as parse_repo_path. Nothing else is rewritten ("./a" stays
// refused). Errors: bad_path.
Result<std::string> normalize_path_input(std::string_view text, PathCase path_case = PathCase::sensitive);

// True when the two paths overlap (SPEC §3).
bool paths_overlap(const RepoPath& a, const RepoPath& b);

// The keys of the proper ancestors of a path, nearest the root first:
// "a/b/c" -> "a", "a/b" (none for a top-level path). The records whose
// intention markers count a lease on the path, and whose leases cover it:
// the planner's, doctor's and status's one rule. (The exclusion checker,
// timeline.cpp, keeps its own on purpose: it checks the planner.)
std::vector<std::string> proper_ancestors(const RepoPath& p);

}  // namespace gitlocks
