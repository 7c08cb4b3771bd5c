// hook install [--warn] [--force] [--no-sign]: this clone's side of "claims
// bind the work" (SPEC §9, docs/CLI.md "Enforcing claims"):
// - commits are signed with the actor's key through Git's own SSH signing
//   (gpg.format=ssh, with this binary as gpg.ssh.program), so the rule knows
//   who made them (unless --no-sign);
// - a reference-transaction hook refuses to move an enforced branch to
//   commits that change a path under another holder's live exclusive claim
//   (gitlocks/enforce.hpp). Git runs it for every ref update, and
//   `--no-verify` does not skip it: agents in worktrees of one clone get the
//   guarantee without a server;
// - pre-commit and pre-push hooks call back into `git-locks hook check` for
//   early feedback: "would a shared claim of this path by me be refused?"
//   asked of the planner on a dry-run store view.
//
// hook install --server: a pre-receive hook for the repository that serves
// a shared store (SPEC §8). Every push to refs/locks/state must replay as
// legal, correctly signed (and, where guard time is in force, attested)
// transitions on top of the current tip, verified by the same replay as
// `git-locks verify`; every push to an enforced ref must satisfy the same
// rule as the reference-transaction hook, judged on the verified store
// (this push's refs/locks/state when it moves it too). Anything else is
// rejected before any ref moves.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "checkpoint.h"
#include "cli.h"
#include "enforcement.h"
#include "fsio.h"
#include "gitlocks/path.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/sshsig.hpp"
#include "gitlocks/state.hpp"
#include "hooks.h"
#include "leases.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {

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

namespace {

constexpr std::string_view kHookMarker = "# git-locks hook";

Result<std::vector<std::string>> split_z(const Result<ProcessResult>& r, const std::string& what) {
  if (!r.ok()) return r.error();
  if (r->status != 0) return make_error(Errc::store_read, what + " failed: " + r->err);
  std::vector<std::string> out;
  for (std::string_view path : split_fields(r->out, '\0'))
    if (!path.empty()) out.emplace_back(path);
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

// Writes `script` to `file` durably, by rename (fsio.h); refuses to replace a hook that is
// not ours unless `force`.
Status install_hook(const std::string& file, const std::string& script, bool force) {
  std::ifstream existing(file);
  if (existing) {
    std::stringstream ss;
    ss << existing.rdbuf();
    if (ss.str().find(kHookMarker) == std::string::npos && !force)
      return make_error(Errc::usage, file + " exists and is not a git-locks hook (use --force to replace it)");
  }
  if (auto failed = fsio::write_file(file, script, {0755}))
    return make_error(Errc::store_write, "cannot install " + file + ": " + fsio::message(*failed, file));
  return Ok{};
}

// Object directories of a push under inspection: git runs pre-receive with
// the pushed objects in a quarantine (GIT_OBJECT_DIRECTORY) and the
// repository's own objects as alternates.
std::vector<std::string> quarantine_object_dirs() {
  std::vector<std::string> dirs;
  if (const char* q = std::getenv("GIT_OBJECT_DIRECTORY"); q && *q) dirs.emplace_back(q);
  if (const char* alt = std::getenv("GIT_ALTERNATE_OBJECT_DIRECTORIES"); alt && *alt) {
    for (std::string_view dir : split_fields(alt, ':'))
      if (!dir.empty()) dirs.emplace_back(dir);
  }
  return dirs;
}

// One "<old> <new> <ref>" line of pre-receive's or reference-transaction's
// stdin.
struct RefUpdate {
  std::string old_oid, new_oid, ref;
};
std::vector<RefUpdate> read_ref_updates() {
  std::vector<RefUpdate> out;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    RefUpdate u;
    if (in >> u.old_oid >> u.new_oid >> u.ref) out.push_back(std::move(u));
  }
  return out;
}

// The updates a claims check may concern: moving (not deleting) a ref a
// policy or the configuration can enforce. Which of them are enforced
// depends on the store (enforced_updates), which is read only when one is
// left (a push of refs/locks/state alone, every claim's, reads nothing).
std::vector<RefUpdate> candidate_updates(std::vector<RefUpdate> updates) {
  updates.erase(std::remove_if(updates.begin(), updates.end(),
                               [](const RefUpdate& u) { return u.new_oid == kZeroOid || !enforceable_ref(u.ref); }),
                updates.end());
  return updates;
}

// Of the candidates, those to enforced refs under the verified store `snap`.
Result<std::vector<RefUpdate>> enforced_updates(Context& ctx, const Snapshot& snap, std::vector<RefUpdate> updates) {
  GITLOCKS_TRY(enforced, enforced_ref_patterns(ctx, snap));
  updates.erase(
      std::remove_if(updates.begin(), updates.end(), [&](const RefUpdate& u) { return !ref_matches(u.ref, enforced); }),
      updates.end());
  return updates;
}

// The server side: reads "<old> <new> <ref>" lines, verifies every update
// of refs/locks/state, then checks the work pushed to enforced refs.
// Returns the hook's exit status (0 accepts the push).
int check_pre_receive(Context& ctx, bool allow_test_clock) {
  std::vector<RefUpdate> updates, work, archives;
  for (auto& u : read_ref_updates())
    (u.ref == kStateRef                                             ? updates
     : u.ref.compare(0, kArchivePrefix.size(), kArchivePrefix) == 0 ? archives
                                                                    : work)
        .push_back(std::move(u));
  work = candidate_updates(std::move(work));
  if (updates.empty() && work.empty() && archives.empty()) return 0;
  auto refuse = [&](const std::string& why) {
    return print_error(
        ctx.op, make_error(Errc::invalid, "push rejected by the server's git-locks hook: refs/locks/state: " + why),
        std::nullopt);
  };
  // The history before a cut (docs/FORMAT.md "The cut") is kept on
  // refs/locks/archive/PREV at PREV: created once, with the cut, and never
  // moved or deleted, so every verifier can still replay from the root.
  std::set<std::string> archived;
  for (const auto& u : archives) {
    const auto new_id = Oid::from_hex(u.new_oid);
    if (u.old_oid != kZeroOid || !new_id || u.ref != archive_ref(*new_id))
      return print_error(ctx.op,
                         make_error(Errc::invalid, "push rejected by the server's git-locks hook: " + u.ref +
                                                       ": an archive ref is created once, at the commit it names, "
                                                       "and never moved or deleted"),
                         std::nullopt);
    archived.insert(u.ref);
  }
  ctx.extra_object_dirs = quarantine_object_dirs();
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  std::optional<Oid> last_new;
  std::set<std::string> cuts;  // the archive refs of this push's cuts
  for (const auto& u : updates) {
    if (u.new_oid == kZeroOid) return refuse("deleting the lock store is refused by the server's git-locks hook");
    const auto new_id = Oid::from_hex(u.new_oid);
    const auto old_id = Oid::from_hex(u.old_oid);
    if (!new_id || !old_id) return refuse("'" + u.old_oid + " " + u.new_oid + "' are not SHA-1 object ids");
    last_new = new_id;
    ReplayOptions options;
    options.allow_test_clock = allow_test_clock;
    if (u.old_oid != kZeroOid) options.from = old_id;
    std::optional<Verdict> bad;
    auto summary = replay_chain(**store, *new_id, options, [&](const Verdict& v) {
      if (!v.ok && !bad) bad = v;
    });
    if (!summary.ok()) {
      // A cut whose history is not here: the push did not bring the
      // archive it needs (its objects come with refs/locks/archive/PREV).
      if (auto missing = summary.error().fields.find("archived"); missing != summary.error().fields.end())
        return refuse(u.new_oid + " starts a chain at a cut after " + missing->second.text() +
                      ", whose history is not on the server: push " + std::string(kArchivePrefix) +
                      missing->second.text() + " at " + missing->second.text() + " in the same push");
      if (summary.error().code == Errc::invalid && options.from)
        return refuse(u.new_oid + " does not descend from the current tip " + u.old_oid + " (history rewrite refused)");
      return refuse("cannot replay " + u.new_oid + ": " + summary.error().message);
    }
    if (bad)
      return refuse("commit " + bad->commit + " (" + (bad->command.empty() ? "?" : bad->command) +
                    ") is not a valid transition: " + bad->reason + (bad->detail.empty() ? "" : ": " + bad->detail));
    // Every cut among the new commits (a checkpoint with no parent, joined
    // to the chain it continues, the old tip for the first): the chain it
    // follows must stay reachable, on its archive ref. (A store pushed to a
    // new server may start at a cut whose history is nowhere here: nothing
    // to keep.)
    for (Oid at = *new_id; !options.from || at != *options.from;) {
      auto c = (*store)->read_commit(at);
      if (!c.ok()) break;
      const std::optional<Oid> prev = c->parents.empty() ? cut_prev(**store, at) : std::nullopt;
      if (prev && (*store)->read_commit(*prev).ok()) {
        const std::string ref = archive_ref(*prev);
        cuts.insert(ref);
        auto kept = (*store)->read_ref(ref);
        if (!archived.count(ref) && (!kept.ok() || !*kept || **kept != *prev))
          return refuse(at.hex() + " starts a new chain after " + prev->hex() + " (a cut) without keeping it: push " +
                        ref + " at " + prev->hex() + " in the same push");
      }
      auto below = chain_parent(**store, at, *c);
      if (!below) break;
      at = *below;
    }
  }
  for (const std::string& ref : archived)
    if (!cuts.count(ref))
      return print_error(ctx.op,
                         make_error(Errc::invalid, "push rejected by the server's git-locks hook: " + ref +
                                                       ": an archive ref is created only with the cut that starts "
                                                       "a new chain after the commit it names"),
                         std::nullopt);
  if (work.empty()) return 0;
  // The work is judged on the verified store: this push's refs/locks/state
  // when it moves it (verified just above), else the current one.
  auto snap = last_new ? verified_snapshot_unrecorded(ctx, *last_new) : current_snapshot(ctx);
  const std::string context = "push rejected by the server's git-locks hook: ";
  if (!snap.ok()) return print_error(ctx.op, snap.error().prefixed(context), std::nullopt);
  if (!snap->commit) return 0;  // no store: nothing is claimed
  auto enforced = enforced_updates(ctx, *snap, std::move(work));
  if (!enforced.ok()) return print_error(ctx.op, enforced.error().prefixed(context), std::nullopt);
  if (enforced->empty()) return 0;
  auto now = check_time(*snap);
  if (!now.ok()) return ctx.fail(now.error());
  int status = 0;
  for (const auto& u : *enforced) {
    auto commits = commits_brought_in(ctx, u.old_oid, u.new_oid, {});
    if (!commits.ok()) return print_error(ctx.op, commits.error().prefixed(context + u.ref + ": "), std::nullopt);
    auto checks = check_commits(ctx, *snap, *commits, *now);
    if (!checks.ok()) return print_error(ctx.op, checks.error().prefixed(context + u.ref + ": "), std::nullopt);
    if (int st = report_refusals(ctx, *checks, context + u.ref + ": ", *snap, *now); st != 0) status = st;
  }
  return status;
}

// The local side: Git runs reference-transaction for every ref update with
// the state ("prepared", "committed", "aborted") as its argument and the
// updates on stdin; a non-zero exit in "prepared" aborts the transaction.
int check_reference_transaction(Context& ctx, const std::string& state) {
  if (state != "prepared") return 0;
  const std::vector<RefUpdate> candidates = candidate_updates(read_ref_updates());
  if (candidates.empty()) return 0;
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  if (!snap->commit) return 0;
  auto enforced = enforced_updates(ctx, *snap, candidates);
  if (!enforced.ok()) return ctx.fail(enforced.error());
  const std::vector<RefUpdate>& work = *enforced;
  if (work.empty()) return 0;
  auto now = check_time(*snap);
  if (!now.ok()) return ctx.fail(now.error());
  int status = 0;
  for (const auto& u : work) {
    // What came from a server (remote-tracking refs) was checked there.
    auto commits = commits_brought_in(ctx, u.old_oid, u.new_oid, {"--remotes"});
    if (!commits.ok()) return ctx.fail(commits.error());
    auto checks = check_commits(ctx, *snap, *commits, *now);
    if (!checks.ok()) return ctx.fail(checks.error());
    const std::string context = "git-locks: " + u.ref + " not moved: ";
    if (int st = report_refusals(ctx, *checks, context, *snap, *now); st != 0) status = st;
  }
  return status;
}

// "principal ssh-ed25519 AAAA..." in the clone's allowed-signers file
// (gpg.ssh.allowedSignersFile), so `git verify-commit` and `git log
// --show-signature` know the key. Appended once.
Result<std::string> add_allowed_signer(Context& ctx, const Identity& me) {
  GITLOCKS_TRY(common, git_common_dir(ctx));
  const std::string dir = (common / "git-locks").string();
  ::mkdir(dir.c_str(), 0755);
  const std::string file = dir + "/allowed_signers";
  const std::string entry = me.actor + " " + ssh_public_key_line(me.key.public_key);
  std::ifstream in(file);
  std::string existing;
  while (std::getline(in, existing))
    if (existing == entry) return file;
  std::ofstream out(file, std::ios::app);
  out << entry << "\n";
  if (!out) return make_error(Errc::store_write, "cannot write " + file);
  return file;
}

// Sets this clone (or, for a key chosen by --key or $GIT_LOCKS_KEY, this
// worktree) up to sign commits with the actor's key through Git's SSH
// signing, with this binary standing in for ssh-keygen -Y sign.
Result<json> setup_signing(Context& ctx, const std::string& exe) {
  GITLOCKS_TRY(me, ctx.identity());
  const char* env_key = std::getenv("GIT_LOCKS_KEY");
  const bool chosen = ctx.key_flag || (env_key && *env_key);
  GITLOCKS_TRY(signers, add_allowed_signer(ctx, *me));
  const Git git = ctx.git();
  std::vector<std::string> scope = {"--local"};
  if (chosen) {
    GITLOCKS_TRY(ext, git.run({"config", "--local", "extensions.worktreeConfig", "true"}));
    if (ext.status != 0)
      return make_error(Errc::store_write, "git config extensions.worktreeConfig failed: " + ext.err);
    scope = {"--worktree"};
  }
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"gpg.format", "ssh"},
      {"gpg.ssh.program", exe},
      {"user.signingKey", std::filesystem::absolute(me->key_file).string()},
      {"commit.gpgSign", "true"},
      {"gpg.ssh.allowedSignersFile", signers},
  };
  json set = json::object();
  for (const auto& [k, v] : settings) {
    std::vector<std::string> args = {"config"};
    args.insert(args.end(), scope.begin(), scope.end());
    args.push_back(k);
    args.push_back(v);
    GITLOCKS_TRY(r, git.run(args));
    if (r.status != 0) return make_error(Errc::store_write, "git config " + k + " failed: " + r.err);
    set[k] = v;
  }
  return json{{"scope", scope[0].substr(2)},
              {"settings", set},
              {"key", me->actor},
              {"ssh_key", ssh_public_key_line(me->key.public_key)}};
}

}  // namespace

int cmd_hook_install(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->has("agent")) return install_agent_hook(ctx, *a, self_path());
  if (a->has("ttl"))
    return ctx.fail(make_error(Errc::usage, "--ttl is the agent hook's TTL: it goes with --agent NAME"));
  const bool server = a->has("server");
  if (server && a->has("warn"))
    return ctx.fail(make_error(Errc::usage, "--warn is for the client hooks; the server hook always rejects"));
  if (server && a->has("no-sign"))
    return ctx.fail(make_error(Errc::usage, "--no-sign is for clones; the server signs nothing"));
  auto r = ctx.git().run({"rev-parse", "--path-format=absolute", "--git-path", "hooks"});
  if (!r.ok()) return ctx.fail(r.error());
  if (r->status != 0) return ctx.fail(make_error(Errc::store_read, "git rev-parse --git-path hooks failed: " + r->err));
  std::string dir = r->out.substr(0, r->out.find('\n'));
  ::mkdir(dir.c_str(), 0755);
  const std::string exe = self_path();
  json installed = json::array();
  auto write = [&](const std::string& hook, const std::string& what, const std::string& body) -> Status {
    const std::string file = dir + "/" + hook;
    const std::string script = "#!/bin/sh\n" + std::string(kHookMarker) + ": " + what +
                               "\n# Installed by `git-locks hook install`; run it again to update.\n" + body;
    GITLOCKS_CHECK(install_hook(file, script, a->has("force")));
    installed.push_back(file);
    return Ok{};
  };
  auto add = [&](const std::string& hook, const std::string& what, const std::string& flags) {
    return write(hook, what, "exec " + shell_quote(exe) + " hook check " + hook + flags + " \"$@\"\n");
  };
  if (server) {
    auto st = add("pre-receive",
                  "rejects any push to refs/locks/state that does not replay as legal, signed transitions, and any "
                  "push to an enforced ref (the policy's enforce, else git config locks.enforce, else refs/heads/*) "
                  "changing a path under "
                  "another holder's live exclusive claim.",
                  std::string(ctx.allow_test_clock ? " --allow-test-clock" : "") +
                      (ctx.key_flag ? " --key " + shell_quote(std::filesystem::absolute(*ctx.key_flag).string())
                                    : std::string()));
    if (!st.ok()) return ctx.fail(st.error());
    return ctx.done({{"op", "hook install"}, {"hooks", installed}, {"server", true}},
                    "installed " + installed[0].get<std::string>() +
                        ": pushes to refs/locks/state must replay as valid transitions, and pushes to enforced refs "
                        "may not change paths under another holder's claim");
  }
  for (const char* hook : {"pre-commit", "pre-push"}) {
    auto st = add(hook, "refuses changes to paths under another holder's live exclusive claim.",
                  a->has("warn") ? " --warn" : "");
    if (!st.ok()) return ctx.fail(st.error());
  }
  // Git runs reference-transaction for every ref update, our own
  // refs/locks/state publications too: the script hands git-locks only
  // transactions that prepare an update of a branch-like ref.
  if (!a->has("warn")) {
    auto st = write("reference-transaction",
                    "refuses to move an enforced ref (the policy's enforce, else git config locks.enforce, else "
                    "refs/heads/*) to commits "
                    "changing a path under another holder's live exclusive claim; --no-verify does not skip it.",
                    "[ \"$1\" = prepared ] || exit 0\n"
                    "input=$(cat)\n"
                    "relevant=\n"
                    "while read -r old new ref; do\n"
                    "  case \"$ref\" in refs/locks/*|refs/remotes/*) ;; refs/*) relevant=1 ;; esac\n"
                    "done <<EOF\n"
                    "$input\n"
                    "EOF\n"
                    "[ -n \"$relevant\" ] || exit 0\n"
                    "printf '%s\\n' \"$input\" | exec " +
                        shell_quote(exe) + " hook check reference-transaction prepared\n");
    if (!st.ok()) return ctx.fail(st.error());
  }
  json out = {{"op", "hook install"}, {"hooks", installed}, {"warn", a->has("warn")}};
  std::string human = "installed";
  for (const auto& f : installed) human += " " + f.get<std::string>();
  if (a->has("warn")) human += " (warn only)";
  if (!a->has("no-sign")) {
    auto signing = setup_signing(ctx, exe);
    if (!signing.ok()) return ctx.fail(signing.error());
    human += "\nsigning commits with " + (*signing)["settings"]["user.signingKey"].get<std::string>() + " (" +
             (*signing)["ssh_key"].get<std::string>() + "); set in the " + (*signing)["scope"].get<std::string>() +
             " configuration:";
    for (const auto& [k, v] : (*signing)["settings"].items()) human += "\n  " + k + "=" + v.get<std::string>();
    out["signing"] = std::move(*signing);
  } else {
    out["signing"] = nullptr;
  }
  return ctx.done(out, human);
}

int cmd_hook_check(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty() && a->positionals[0] == "pre-receive") {
    if (a->has("warn")) return ctx.fail(make_error(Errc::usage, "the pre-receive check has no --warn"));
    return check_pre_receive(ctx, ctx.allow_test_clock);
  }
  if (!a->positionals.empty() && a->positionals[0] == "reference-transaction") {
    if (a->has("warn") || a->positionals.size() != 2)
      return ctx.fail(make_error(Errc::usage, "usage: hook check reference-transaction STATE"));
    return check_reference_transaction(ctx, a->positionals[1]);
  }
  // Git passes pre-push its remote name and URL after the hook name.
  if (a->positionals.empty() || (a->positionals[0] != "pre-commit" && a->positionals[0] != "pre-push"))
    return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
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
  auto now = check_time(*snap);
  if (!now.ok()) return ctx.fail(now.error());
  if (auto keys = require_keys(ctx, *snap); !keys.ok()) return ctx.fail(keys.error());
  // The core's rule, asked as this writer: the commit or push will carry
  // its signature.
  EnforcementView view;
  view.snap = &*snap;
  view.now = *now;
  const std::vector<std::string> all(paths.begin(), paths.end());
  auto refusals = path_refusals(**store, view, (*me)->actor, all);
  if (!refusals.ok()) return ctx.fail(refusals.error());
  std::vector<Error> found;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (const auto& e = (*refusals)[i]) found.push_back(e->prefixed(all[i] + ": "));
  const std::string what = push ? "push" : "commit";
  // Others' intents on these paths (docs/FORMAT.md "Intent"): warnings, never refusals.
  for (const auto& w : intents_near(**store, *snap, *now, all, (*me)->actor).warnings)
    std::fprintf(stderr, "git-locks: warning: this %s overlaps an intent: %s\n", what.c_str(), w.c_str());
  if (found.empty()) return 0;
  if (a->has("warn")) {
    for (const auto& e : found)
      std::fprintf(stderr, "git-locks: warning: this %s changes %s\n", what.c_str(), e.message.c_str());
    return 0;
  }
  int status = 0;
  for (const auto& e : found)
    status = print_error(ctx.op, e.prefixed("this " + what + " changes a path under another holder's claim: "),
                         std::nullopt);
  return status;
}

}  // namespace gitlocks::cli
