// hook install [--warn] [--force]: pre-commit and pre-push hooks that call
// back into `git-locks hook check`, which refuses (or, with --warn, only
// reports) a commit or push changing a path under another holder's live
// exclusive claim. "Would a shared claim of this path by me be refused?" is
// exactly that question, so the planner answers it on a dry-run store view.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "cli.h"
#include "gitlocks/plan.hpp"
#include "gitlocks/state.hpp"
#include "leases.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

constexpr std::string_view kHookMarker = "# git-locks hook";
constexpr std::size_t kChunk = 10000;  // the planner's op limit per transition
constexpr const char* kZeroOid = "0000000000000000000000000000000000000000";

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string self_path() {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "git-locks";
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

Result<std::vector<std::string>> split_z(const Result<ProcessResult>& r, const std::string& what) {
  if (!r.ok()) return r.error();
  if (r->status != 0) return make_error(Errc::store_read, what + " failed: " + r->err);
  std::vector<std::string> out;
  std::string cur;
  for (char c : r->out) {
    if (c == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Paths a push would change, from pre-push's stdin
// ("<local ref> <local oid> <remote ref> <remote oid>" per line).
Result<std::set<std::string>> pushed_paths(const Git& git) {
  std::set<std::string> paths;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string local_ref, local, remote_ref, remote;
    if (!(in >> local_ref >> local >> remote_ref >> remote)) continue;
    if (local == kZeroOid) continue;  // a deletion changes no path
    Result<std::vector<std::string>> changed = std::vector<std::string>{};
    if (remote != kZeroOid) {
      changed = split_z(git.run({"diff", "--name-only", "-z", "--no-renames", remote, local}), "git diff");
    }
    if (remote == kZeroOid || !changed.ok()) {
      // A new branch, or a remote tip we do not have: every commit not yet
      // on a remote-tracking branch.
      changed = split_z(git.run({"log", "--format=", "--name-only", "-z", "--no-renames", local, "--not", "--remotes"}),
                        "git log");
    }
    if (!changed.ok()) return changed.error();
    paths.insert(changed->begin(), changed->end());
  }
  return paths;
}

}  // namespace

int cmd_hook_install(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {{"warn", false}, {"force", false}});
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "hook install takes no arguments"));
  auto r = ctx.git().run({"rev-parse", "--path-format=absolute", "--git-path", "hooks"});
  if (!r.ok()) return ctx.fail(r.error());
  if (r->status != 0) return ctx.fail(make_error(Errc::store_read, "git rev-parse --git-path hooks failed: " + r->err));
  std::string dir = r->out.substr(0, r->out.find('\n'));
  ::mkdir(dir.c_str(), 0755);
  const std::string exe = self_path();
  json installed = json::array();
  for (const char* hook : {"pre-commit", "pre-push"}) {
    const std::string file = dir + "/" + hook;
    std::ifstream existing(file);
    if (existing) {
      std::stringstream ss;
      ss << existing.rdbuf();
      if (ss.str().find(kHookMarker) == std::string::npos && !a->has("force"))
        return ctx.fail(make_error(Errc::usage, file + " exists and is not a git-locks hook (use --force to replace it)"));
    }
    std::string script = "#!/bin/sh\n" + std::string(kHookMarker) +
                         ": refuses changes to paths under another holder's live exclusive claim.\n"
                         "# Installed by `git-locks hook install`; run it again to update.\n"
                         "exec " + shell_quote(exe) + " hook check " + hook + (a->has("warn") ? " --warn" : "") +
                         " \"$@\"\n";
    const std::string tmp = file + ".git-locks-tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << script;
      if (!out) return ctx.fail(make_error(Errc::store_write, "cannot write " + tmp));
    }
    if (::chmod(tmp.c_str(), 0755) != 0 || ::rename(tmp.c_str(), file.c_str()) != 0) {
      ::unlink(tmp.c_str());
      return ctx.fail(make_error(Errc::store_write, "cannot install " + file));
    }
    installed.push_back(file);
  }
  return ctx.done({{"op", "hook install"}, {"hooks", installed}, {"warn", a->has("warn")}},
                  "installed " + installed[0].get<std::string>() + " and " + installed[1].get<std::string>() +
                      (a->has("warn") ? " (warn only)" : ""));
}

int cmd_hook_check(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {{"warn", false}});
  if (!a.ok()) return ctx.fail(a.error());
  // Git passes pre-push its remote name and URL after the hook name.
  if (a->positionals.empty() || (a->positionals[0] != "pre-commit" && a->positionals[0] != "pre-push"))
    return ctx.fail(make_error(Errc::usage, "usage: hook check pre-commit|pre-push [--warn]"));
  const bool push = a->positionals[0] == "pre-push";
  const Git git = ctx.git();
  std::set<std::string> paths;
  if (push) {
    auto p = pushed_paths(git);
    if (!p.ok()) return ctx.fail(p.error());
    paths = std::move(*p);
  } else {
    auto changed = split_z(git.run({"diff", "--cached", "--name-only", "-z", "--no-renames"}), "git diff --cached");
    if (!changed.ok()) return ctx.fail(changed.error());
    paths.insert(changed->begin(), changed->end());
  }
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  if (!snap->commit || paths.empty()) return 0;  // no store, or nothing changed
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto now = now_ms();
  if (!now.ok()) return ctx.fail(now.error());
  auto vault = open_vault(ctx, **store, *snap);
  if (!vault.ok()) return ctx.fail(vault.error());
  StateReader reader(**store, snap->state, (*vault)->codec.get());
  auto policy = reader.policy();
  if (!policy.ok()) return ctx.fail(policy.error());
  const std::int64_t probe_ttl = (*policy)["min_ttl_ms"].get<std::int64_t>();

  auto probe = [&](const std::vector<std::string>& which) {
    json ops = json::array();
    for (const auto& p : which)
      ops.push_back({{"op", "claim"}, {"path", p}, {"mode", "shared"}, {"expires_at", *now + probe_ttl}});
    HashOnlyScope dry_run(**store);
    return plan(**store, snap->state, {(*me)->actor, random_hex(kInstanceBytes), (*vault)->get()}, transition_body(ctx, *now, ops), *now);
  };
  auto violation = [](Errc c) { return c == Errc::held_path || c == Errc::family_policy; };
  std::vector<std::string> all(paths.begin(), paths.end());
  std::vector<Error> found;
  for (std::size_t i = 0; i < all.size(); i += kChunk) {
    std::vector<std::string> chunk(all.begin() + static_cast<long>(i),
                                   all.begin() + static_cast<long>(std::min(all.size(), i + kChunk)));
    auto whole = probe(chunk);
    if (whole.ok() || !(violation(whole.error().code) || classify(whole.error().code).kind == ErrorKind::usage)) {
      if (!whole.ok() && classify(whole.error().code).kind == ErrorKind::store_read) return ctx.fail(whole.error());
      continue;
    }
    for (const auto& p : chunk) {  // slow path: name every offending path
      auto one = probe({p});
      if (!one.ok() && violation(one.error().code))
        found.push_back(make_error(one.error().code, p + ": " + one.error().message));
    }
  }
  if (found.empty()) return 0;
  const std::string what = push ? "push" : "commit";
  if (a->has("warn")) {
    for (const auto& e : found)
      std::fprintf(stderr, "git-locks: warning: this %s changes %s\n", what.c_str(), e.message.c_str());
    return 0;
  }
  int status = 0;
  for (const auto& e : found)
    status = print_error(ctx.op,
                         make_error(e.code, "this " + what + " changes a path under another holder's claim (git " + what +
                                                " --no-verify bypasses this hook): " + e.message),
                         std::nullopt);
  return status;
}

}  // namespace gitlocks::cli
