// git.h — the CLI's one adapter to the `git` program. Every git invocation
// of tools/ goes through here: the compare-and-swap of refs/locks/state
// (SPEC §5, seed 000), config reads, diffs for the hooks.
//
// Test seam: $GIT_LOCKS_GIT names the git executable (default "git"). Tests
// point it at a wrapper script that logs the exact update-ref input and can
// inject failures; see tests/cli/git_wrapper.sh.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/result.hpp"
#include "gitlocks/store.hpp"
#include "process.h"

namespace gitlocks::cli {

// How one `git update-ref --stdin` transaction ended.
enum class CasStatus {
  ok,      // the ref now points at the new commit
  stale,   // expected-root mismatch, or creation lost to an existing ref: replan
  locked,  // <ref>.lock exists: retry the same candidate
  failed,  // anything else (permissions, invalid update, hook, unknown): store-write
};

struct CasResult {
  CasStatus status = CasStatus::failed;
  std::string detail;  // git's stderr (and exit status) when it failed
};

// Classifies the outcome of an update-ref transaction on `ref` from git's
// exit status, stdout and stderr (git must run with LC_ALL=C).
CasResult classify_update_ref(std::string_view ref, const ProcessResult& r);

// An update-ref process started ahead of time, so that git's start-up
// overlaps the planning of the candidate. Dropping it without commit() kills
// the idle process before it has read anything.
class PendingCas {
 public:
  explicit PendingCas(Result<Process> p) : process_(std::move(p)) {}
  // Feeds start/update/prepare/commit and classifies the result.
  CasResult commit(std::string_view ref, const Oid& new_oid, const std::optional<Oid>& old_oid);

 private:
  Result<Process> process_;
};

class Git {
 public:
  // `repo_dir`: run git as `git -C DIR`; otherwise in the working directory.
  explicit Git(std::optional<std::string> repo_dir = std::nullopt) : repo_dir_(std::move(repo_dir)) {}

  // $GIT_LOCKS_GIT or "git".
  static std::string executable();

  // Runs `git [-C DIR] ARGS...` with LC_ALL=C and captures its output.
  // Errors: store_read when git cannot be started.
  Result<ProcessResult> run(const std::vector<std::string>& args, std::string_view input = {}) const;

  // Starts `git -c core.filesRefLockTimeout=0 -c core.packedRefsTimeout=0
  // update-ref --stdin` with LC_ALL=C; feed it with PendingCas::commit.
  PendingCas begin_cas() const;

  // One compare-and-swap of `ref` from `old_oid` (nullopt: the ref must not
  // exist) to `new_oid`, as one update-ref transaction.
  CasResult compare_and_swap(std::string_view ref, const Oid& new_oid, const std::optional<Oid>& old_oid) const {
    return begin_cas().commit(ref, new_oid, old_oid);
  }

  // A started `git config --get KEY` (user.name is read this way); value()
  // waits for it. An unset key reads as "".
  class PendingConfig {
   public:
    explicit PendingConfig(Result<Process> p) : process_(std::move(p)) {}
    std::string value();

   private:
    Result<Process> process_;
    std::optional<std::string> value_;
  };
  PendingConfig begin_config(const std::string& key) const;

 private:
  std::vector<std::string> base_argv() const;
  std::optional<std::string> repo_dir_;
};

}  // namespace gitlocks::cli
