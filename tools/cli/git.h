// git.h — the CLI's one adapter to the `git` program. Every git invocation
// of tools/ goes through here: the compare-and-swap of refs/locks/state
// (SPEC §5, seed 000) — locally through `git update-ref --stdin`, on a
// remote through `git push --atomic --force-with-lease` (SPEC §8) — the
// fetch of a remote's refs/locks/state, config reads, diffs for the hooks.
//
// Test seam: $GIT_LOCKS_GIT names the git executable (default "git"). Tests
// point it at a wrapper script that logs the exact update-ref input and can
// inject failures; see tests/cli/git_wrapper.sh.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/result.hpp"
#include "gitlocks/store.hpp"
#include "process.h"

namespace gitlocks::cli {

// Git's id for "no object" (a ref that does not exist, in update-ref and
// hook input).
inline constexpr const char* kZeroOid = "0000000000000000000000000000000000000000";

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

// The fields of `text` separated by `sep` (lines of git's output, -z
// entries, a PATH-like list); a trailing separator ends the last field, so
// it adds no empty one.
std::vector<std::string_view> split_fields(std::string_view text, char sep);

// Classifies the outcome of an update-ref transaction on `ref` from git's
// exit status, stdout and stderr (git must run with LC_ALL=C).
CasResult classify_update_ref(std::string_view ref, const ProcessResult& r);

// Classifies the outcome of `git push --atomic --porcelain
// --force-with-lease=REF:OLD REMOTE NEW:REF` (LC_ALL=C) the same way:
// a stale lease (client side) or the server's expected-root mismatch is
// stale, the server's REF.lock is locked, anything else (hook, permission,
// network, server error, no atomic push) is failed.
CasResult classify_push(std::string_view ref, const ProcessResult& r);

// An update-ref process started ahead of time, so that git's start-up
// overlaps the planning of the candidate. Dropping it without commit() kills
// the idle process before it has read anything.
//
// On a remote store nothing can start early (the push names the new
// commit): commit() runs the push.
class PendingCas {
 public:
  explicit PendingCas(std::future<Result<Process>> p) : starting_(std::move(p)) {}
  // A push of refs/locks/state to `remote` with `git_argv` (`git [-C DIR]`),
  // stopped after `timeout_ms` (then failed: store-write).
  PendingCas(std::vector<std::string> git_argv, std::string remote, std::int64_t timeout_ms)
      : git_argv_(std::move(git_argv)), remote_(std::move(remote)), timeout_ms_(timeout_ms) {}
  // Feeds start/update/prepare/commit (or pushes) and classifies the result.
  // `archive`: in the same transaction, create the ref ARCHIVE at that
  // commit (it must not exist yet): a cut keeps the chain it starts after
  // on refs/locks/archive/PREV.
  struct Archive {
    std::string ref;
    Oid commit;
  };
  CasResult commit(std::string_view ref, const Oid& new_oid, const std::optional<Oid>& old_oid,
                   const std::optional<Archive>& archive = std::nullopt);

 private:
  std::optional<std::future<Result<Process>>> starting_;  // local: the update-ref being started
  std::optional<Result<Process>> process_;                // local: the started update-ref
  std::vector<std::string> git_argv_;                     // remote: `git [-C DIR]`
  std::string remote_;
  std::int64_t timeout_ms_ = 0;
};

// How long one git fetch or push of a remote store may take
// (`git config locks.timeout`), and the bounds of that setting.
constexpr std::int64_t kNetworkTimeoutMs = 30'000;
constexpr std::int64_t kNetworkTimeoutMaxMs = 24LL * 3600 * 1000;

class Git {
 public:
  // `repo_dir`: run git as `git -C DIR`; otherwise in the working directory.
  // `network_timeout_ms`: the most one fetch or push of a remote may take.
  explicit Git(std::optional<std::string> repo_dir = std::nullopt, std::int64_t network_timeout_ms = kNetworkTimeoutMs)
      : repo_dir_(std::move(repo_dir)), network_timeout_ms_(network_timeout_ms) {}

  // $GIT_LOCKS_GIT or "git".
  static std::string executable();

  // Runs `git [-C DIR] ARGS...` with LC_ALL=C and captures its output.
  // Errors: store_read when git cannot be started.
  // `timeout_ms` > 0 stops git after that long (the result says timed_out).
  Result<ProcessResult> run(const std::vector<std::string>& args, std::string_view input = {},
                            std::int64_t timeout_ms = 0) const;

  // Starts `git -c core.filesRefLockTimeout=0 -c core.packedRefsTimeout=0
  // update-ref --stdin` with LC_ALL=C; feed it with PendingCas::commit.
  PendingCas begin_cas() const;
  // The same for the refs/locks/state of `remote` (a configured remote's
  // name): `git push --atomic --porcelain --no-verify
  // --force-with-lease=refs/locks/state:OLD REMOTE NEW:refs/locks/state`.
  PendingCas begin_push(const std::string& remote) const;

  // Fetches `remote`'s refs/locks/state into the local ref `tracking`
  // (forced); false when the remote has no such ref (`tracking` is then
  // deleted). Errors: store_read, with git's diagnostics, also when the
  // fetch takes longer than the network timeout.
  Result<bool> fetch_state(const std::string& remote, const std::string& tracking) const;
  // Fetches `remote`'s archive refs matching `pattern` (refs/locks/archive/
  // PREV, or refs/locks/archive/* for all) into `tracking_prefix`, forced:
  // the history before a cut (docs/FORMAT.md "The cut"). A pattern the
  // remote has no ref for fetches nothing. Errors: store_read.
  Status fetch_archive(const std::string& remote, const std::string& pattern, const std::string& tracking_prefix) const;

  // A started `git config -z --get-regexp PATTERN`; values() waits for it:
  // key (lower case, as git prints it) -> its last value.
  class PendingConfigs {
   public:
    explicit PendingConfigs(std::future<Result<Process>> p) : starting_(std::move(p)) {}
    const std::map<std::string, std::string>& values();

   private:
    std::future<Result<Process>> starting_;
    std::optional<std::map<std::string, std::string>> values_;
  };
  PendingConfigs begin_configs(const std::string& pattern) const;

 private:
  std::vector<std::string> base_argv() const;
  std::optional<std::string> repo_dir_;
  std::int64_t network_timeout_ms_;
};

}  // namespace gitlocks::cli
