#include "git.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "gitlocks/state.hpp"
#include "timings.h"

namespace gitlocks::cli {
namespace {

// Fetches of one clone racing for its cache ref (Git::fetch_state).
constexpr int kFetchAttempts = 10;

// The last line git died with ("fatal: ..."). Anything a hook printed comes
// before it, so a hook cannot make its own words look like git's verdict.
std::string_view last_fatal_line(std::string_view err) {
  std::size_t pos = std::string_view::npos;
  for (std::size_t at = 0; (at = err.find("fatal: ", at)) != std::string_view::npos; ++at)
    if (at == 0 || err[at - 1] == '\n') pos = at;
  if (pos == std::string_view::npos) return {};
  std::string_view line = err.substr(pos);
  return line.substr(0, line.find('\n'));
}

std::string describe_failure(const ProcessResult& r) {
  std::string d = r.err;
  while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
  if (d.empty()) d = "git update-ref printed nothing on stderr";
  return d + " (git exit status " + std::to_string(r.status) + ")";
}

// Why git could not lock `ref`, as git 2.39 words it after "cannot lock ref
// 'REF': " (refs/files-backend.c, lock_raw_ref and the transaction code),
// verified by experiment under LC_ALL=C:
//   is at NEW but expected OLD
//   reference already exists
//   unable to resolve reference 'R'  (OLD given but the ref is gone: also an
//        expected-root mismatch; a corrupt ref adds ": reference broken" and
//        is not stale)
//   Unable to create 'GITDIR/R.lock': File exists.
// Anything else (e.g. "... .lock': Permission denied") is a failure.
CasStatus classify_lock_reason(std::string_view ref, std::string_view why) {
  auto starts = [&](std::string_view prefix) { return why.substr(0, prefix.size()) == prefix; };
  if (starts("is at ") && why.find(" but expected ") != std::string_view::npos) return CasStatus::stale;
  if (why == "reference already exists") return CasStatus::stale;
  if (why == "unable to resolve reference '" + std::string(ref) + "'") return CasStatus::stale;
  if (starts("Unable to create '")) {
    const std::string lock_tail = "/" + std::string(ref) + ".lock': File exists.";
    if (why.size() >= lock_tail.size() && why.substr(why.size() - lock_tail.size()) == lock_tail)
      return CasStatus::locked;
  }
  return CasStatus::failed;
}

// 30000 -> "30s", 1500 -> "1500ms": how the timeout reads in a message.
std::string format_ms(std::int64_t ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

std::string trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

std::vector<std::string_view> split_fields(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find(sep, at);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

CasResult classify_update_ref(std::string_view ref, const ProcessResult& r) {
  if (r.status == 0 && r.out.find("commit: ok") != std::string::npos) return {CasStatus::ok, {}};
  CasResult out{CasStatus::failed, describe_failure(r)};
  if (r.status != 128) return out;  // died by a signal, or a wrapper's own status: not git's verdict
  // Everything but the reasons above is a store-write failure at once, e.g.
  //   fatal: ref updates aborted by hook
  //   fatal: prepare: cannot update ref 'R': trying to write ref 'R' with nonexistent object X
  const std::string head = "fatal: prepare: cannot lock ref '" + std::string(ref) + "': ";
  std::string_view line = last_fatal_line(r.err);
  if (line.substr(0, head.size()) != head) return out;
  out.status = classify_lock_reason(ref, line.substr(head.size()));
  return out;
}

CasResult classify_push(std::string_view ref, const ProcessResult& r) {
  // Porcelain status lines on stdout: "<flag>\t<src>:<dst>\t<summary>".
  const std::string_view out = r.out;
  std::optional<std::string_view> line;
  const std::string dst = ":" + std::string(ref) + "\t";
  for (std::string_view l : split_fields(out, '\n'))
    if (l.size() > 2 && l[1] == '\t' && l.find(dst) != std::string_view::npos) line = l;
  std::string detail = trim_right(r.err);
  if (line) detail = std::string(line->substr(2)) + (detail.empty() ? "" : "\n" + detail);
  if (detail.empty()) detail = "git push printed nothing";
  detail += " (git exit status " + std::to_string(r.status) + ")";
  if (!line) return {CasStatus::failed, detail};  // no verdict on the ref: network, server, protocol
  const char flag = (*line)[0];
  if (flag == ' ' || flag == '+' || flag == '*' || flag == '=') return {CasStatus::ok, {}};
  std::string_view summary = line->substr(line->rfind('\t') + 1);
  if (summary == "[rejected] (stale info)") return {CasStatus::stale, detail};  // the lease, checked client side
  // The server's own compare-and-swap failed after the lease check passed.
  // Only these summaries carry its reason; a hook's rejection ("pre-receive
  // hook declined") is final whatever the hook printed.
  if (summary != "[remote rejected] (atomic transaction failed)" &&
      summary != "[remote rejected] (failed to update ref)")
    return {CasStatus::failed, detail};
  const std::string head = "remote: error: cannot lock ref '" + std::string(ref) + "': ";
  for (std::string_view l : split_fields(r.err, '\n')) {
    if (l.substr(0, head.size()) == head) {
      const std::string why = trim_right(l.substr(head.size()));  // the side band pads lines with spaces
      return {classify_lock_reason(ref, why), detail};
    }
  }
  return {CasStatus::failed, detail};
}

CasResult PendingCas::commit(std::string_view ref, const Oid& new_oid, const std::optional<Oid>& old_oid,
                             const std::optional<Archive>& archive) {
  if (starting_) {
    process_.emplace(starting_->get());
    starting_.reset();
  }
  if (!process_) {
    std::vector<std::string> argv = git_argv_;
    for (const char* a : {"push", "--atomic", "--porcelain", "--no-verify"}) argv.emplace_back(a);
    argv.push_back("--force-with-lease=" + std::string(ref) + ":" + (old_oid ? old_oid->hex() : std::string()));
    if (archive) argv.push_back("--force-with-lease=" + archive->ref + ":");
    argv.push_back(remote_);
    argv.push_back(new_oid + ":" + std::string(ref));
    if (archive) argv.push_back(archive->commit + ":" + archive->ref);
    auto p = Process::start(argv, {"LC_ALL=C"});
    if (!p.ok()) return {CasStatus::failed, p.error().message};
    ProcessResult r = p->finish({}, {}, timeout_ms_);
    if (r.timed_out)
      return {CasStatus::failed, "git push " + remote_ + " did not finish within " + format_ms(timeout_ms_) +
                                     " (git config locks.timeout); stopped" +
                                     (r.err.empty() ? "" : ": " + trim_right(r.err))};
    return classify_push(ref, r);
  }
  if (!process_->ok()) return {CasStatus::failed, process_->error().message};
  std::string input =
      "start\nupdate " + std::string(ref) + " " + new_oid + " " + (old_oid ? old_oid->hex() : kZeroOid) + "\n" +
      (archive ? "create " + archive->ref + " " + archive->commit + "\n" : std::string()) + "prepare\ncommit\n";
  return classify_update_ref(ref, (*process_)->finish(input));
}

std::string Git::executable() {
  const char* g = std::getenv("GIT_LOCKS_GIT");
  return g && *g ? std::string(g) : std::string("git");
}

std::vector<std::string> Git::base_argv() const {
  std::vector<std::string> argv{executable()};
  if (repo_dir_) {
    argv.push_back("-C");
    argv.push_back(*repo_dir_);
  }
  return argv;
}

Result<ProcessResult> Git::run(const std::vector<std::string>& args, std::string_view input,
                               std::int64_t timeout_ms) const {
  auto argv = base_argv();
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = Process::start(argv, {"LC_ALL=C"});
  if (!p.ok()) return make_error(Errc::store_read, p.error().message);
  return p->finish(input, {}, timeout_ms);
}

PendingCas Git::begin_cas() const {
  auto argv = base_argv();
  // Zero timeouts: repository settings must not add hidden retry loops; the
  // bounded lock retry is ours (seed 000).
  for (const char* a : {"-c", "core.filesRefLockTimeout=0", "-c", "core.packedRefsTimeout=0", "update-ref", "--stdin"})
    argv.emplace_back(a);
  return PendingCas(start_async(std::move(argv), {"LC_ALL=C"}));
}

PendingCas Git::begin_push(const std::string& remote) const {
  return PendingCas(base_argv(), remote, network_timeout_ms_);
}

Result<bool> Git::fetch_state(const std::string& remote, const std::string& tracking) const {
  // The tracking ref is this clone's cache, not the authority: a short lock
  // wait there only serialises concurrent fetches of the same clone.
  std::vector<std::string> args{"-c",
                                "core.filesRefLockTimeout=1000",
                                "fetch",
                                "--quiet",
                                "--no-tags",
                                "--no-write-fetch-head",
                                "--no-auto-gc",
                                "--no-recurse-submodules",
                                "--no-show-forced-updates",
                                remote,
                                "+" + std::string(kStateRef) + ":" + tracking};
  // Concurrent commands of one clone fetch into the same cache ref; git
  // refuses an update whose old value moved under it ("cannot lock ref
  // 'TRACKING': is at X but expected Y"). The objects are in by then and the
  // other fetch was just as fresh, so fetching again settles it.
  const std::string contended = "cannot lock ref '" + tracking + "'";
  ProcessResult r;
  for (int attempt = 1;; ++attempt) {
    GITLOCKS_TRY(once, run(args, {}, network_timeout_ms_));
    r = std::move(once);
    if (r.timed_out)
      return make_error(Errc::store_read, "git fetch " + remote + " " + std::string(kStateRef) +
                                              " did not finish within " + format_ms(network_timeout_ms_) +
                                              " (git config locks.timeout); stopped" +
                                              (r.err.empty() ? "" : ": " + trim_right(r.err)));
    if (r.status == 0) return true;
    if (attempt == kFetchAttempts || r.err.find(contended) == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt));
  }
  const std::string missing = "fatal: couldn't find remote ref " + std::string(kStateRef);
  if (r.status == 128 && last_fatal_line(r.err) == missing) {
    GITLOCKS_TRY(d, run({"update-ref", "-d", tracking}));
    if (d.status != 0) return make_error(Errc::store_read, "git update-ref -d " + tracking + ": " + trim_right(d.err));
    return false;
  }
  return make_error(Errc::store_read,
                    "git fetch " + remote + " " + std::string(kStateRef) + " failed: " + describe_failure(r));
}

Status Git::fetch_archive(const std::string& remote, const std::string& pattern,
                          const std::string& tracking_prefix) const {
  const std::string dst = tracking_prefix + pattern.substr(kArchivePrefix.size());
  GITLOCKS_TRY(r, run({"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                       "--no-recurse-submodules", remote, "+" + pattern + ":" + dst},
                      {}, network_timeout_ms_));
  if (r.timed_out)
    return make_error(Errc::store_read, "git fetch " + remote + " " + pattern + " did not finish within " +
                                            format_ms(network_timeout_ms_) + " (git config locks.timeout); stopped");
  const std::string missing = "fatal: couldn't find remote ref " + pattern;
  if (r.status == 0 || (r.status == 128 && last_fatal_line(r.err) == missing)) return Ok{};
  return make_error(Errc::store_read, "git fetch " + remote + " " + pattern + " failed: " + describe_failure(r));
}

Git::PendingConfigs Git::begin_configs(const std::string& pattern) const {
  auto argv = base_argv();
  for (const char* a : {"config", "-z", "--get-regexp"}) argv.emplace_back(a);
  argv.push_back(pattern);
  return PendingConfigs(start_async(std::move(argv), {"LC_ALL=C"}));
}

const std::map<std::string, std::string>& Git::PendingConfigs::values() {
  if (values_) return *values_;
  values_.emplace();
  timings::Scope t("git config");
  Result<Process> process = starting_.get();
  if (!process.ok()) return *values_;
  ProcessResult r = process->finish({});
  if (r.status != 0) return *values_;  // 1: none set
  // -z: "KEY\nVALUE\0" per entry ("KEY\0" for a valueless boolean).
  for (std::string_view entry : split_fields(r.out, '\0')) {
    std::size_t nl = entry.find('\n');
    (*values_)[std::string(entry.substr(0, nl))] =
        nl == std::string_view::npos ? "" : std::string(entry.substr(nl + 1));
  }
  return *values_;
}

}  // namespace gitlocks::cli
