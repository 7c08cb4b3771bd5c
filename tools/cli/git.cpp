#include "git.h"

#include <cstdlib>

namespace gitlocks::cli {
namespace {

constexpr const char* kZeroOid = "0000000000000000000000000000000000000000";

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

}  // namespace

CasResult classify_update_ref(std::string_view ref, const ProcessResult& r) {
  if (r.status == 0 && r.out.find("commit: ok") != std::string::npos) return {CasStatus::ok, {}};
  CasResult out{CasStatus::failed, describe_failure(r)};
  if (r.status != 128) return out;  // died by a signal, or a wrapper's own status: not git's verdict
  // The exact messages of git 2.39 (refs/files-backend.c, lock_raw_ref and
  // the transaction code), verified by experiment under LC_ALL=C:
  //   fatal: prepare: cannot lock ref 'R': is at NEW but expected OLD
  //   fatal: prepare: cannot lock ref 'R': reference already exists
  //   fatal: prepare: cannot lock ref 'R': unable to resolve reference 'R'
  //        (OLD given but the ref is gone: also an expected-root mismatch;
  //         a corrupt ref adds ": reference broken" and is not stale)
  //   fatal: prepare: cannot lock ref 'R': Unable to create 'GITDIR/R.lock': File exists.
  // Everything else is a store-write failure at once, e.g.
  //   ... Unable to create 'GITDIR/R.lock': Permission denied
  //   fatal: ref updates aborted by hook
  //   fatal: prepare: cannot update ref 'R': trying to write ref 'R' with nonexistent object X
  const std::string head = "fatal: prepare: cannot lock ref '" + std::string(ref) + "': ";
  std::string_view line = last_fatal_line(r.err);
  if (line.substr(0, head.size()) != head) return out;
  std::string_view why = line.substr(head.size());
  auto starts = [&](std::string_view prefix) { return why.substr(0, prefix.size()) == prefix; };
  if (starts("is at ") && why.find(" but expected ") != std::string_view::npos) {
    out.status = CasStatus::stale;
  } else if (why == "reference already exists") {
    out.status = CasStatus::stale;
  } else if (why == "unable to resolve reference '" + std::string(ref) + "'") {
    out.status = CasStatus::stale;
  } else if (starts("Unable to create '")) {
    const std::string lock_tail = "/" + std::string(ref) + ".lock': File exists.";
    if (why.size() >= lock_tail.size() && why.substr(why.size() - lock_tail.size()) == lock_tail)
      out.status = CasStatus::locked;
  }
  return out;
}

CasResult PendingCas::commit(std::string_view ref, const Oid& new_oid, const std::optional<Oid>& old_oid) {
  if (!process_.ok()) return {CasStatus::failed, process_.error().message};
  std::string input = "start\nupdate " + std::string(ref) + " " + new_oid + " " + old_oid.value_or(kZeroOid) +
                      "\nprepare\ncommit\n";
  return classify_update_ref(ref, process_->finish(input));
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

Result<ProcessResult> Git::run(const std::vector<std::string>& args, std::string_view input) const {
  auto argv = base_argv();
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = Process::start(argv, {"LC_ALL=C"});
  if (!p.ok()) return make_error(Errc::store_read, p.error().message);
  return p->finish(input);
}

PendingCas Git::begin_cas() const {
  auto argv = base_argv();
  // Zero timeouts: repository settings must not add hidden retry loops; the
  // bounded lock retry is ours (seed 000).
  for (const char* a : {"-c", "core.filesRefLockTimeout=0", "-c", "core.packedRefsTimeout=0", "update-ref", "--stdin"})
    argv.emplace_back(a);
  return PendingCas(Process::start(argv, {"LC_ALL=C"}));
}

Git::PendingConfig Git::begin_config(const std::string& key) const {
  auto argv = base_argv();
  for (const char* a : {"config", "--get"}) argv.emplace_back(a);
  argv.push_back(key);
  return PendingConfig(Process::start(argv, {"LC_ALL=C"}));
}

std::string Git::PendingConfig::value() {
  if (value_) return *value_;
  std::string v;
  if (process_.ok()) {
    ProcessResult r = process_->finish({});
    if (r.status == 0) v = r.out;
  }
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  value_ = v;
  return v;
}

}  // namespace gitlocks::cli
