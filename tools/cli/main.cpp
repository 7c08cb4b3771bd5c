// git-locks — leases on paths and counted resources, stored in refs/locks/state.
// The command table; every command is a short function in cmd_*.cpp.
#include <signal.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "cli.h"
#include "gitlocks/crypto.hpp"
#include "gitlocks/limits.hpp"
#include "report.h"
#include "timings.h"

namespace gitlocks::cli {
namespace {

struct Command {
  std::string_view name;  // one word, or two for a sub-command ("sem acquire")
  int (*handler)(Context&, const Argv&);
  std::string_view usage;
  std::string_view summary;
};

constexpr Command kCommands[] = {
    {"init", cmd_init, "init [--private] [--policy FILE] [--case-insensitive]",
     "create the lock store (an existing store is left alone); --private: end-to-end encrypted (docs/PRIVATE.md)"},
    {"claim", cmd_claim, "claim [--mode exclusive|shared] [--ttl DUR] [--note TEXT] [--wait[=DUR]] PATH...",
     "claim paths, all or none; an expired lease of another holder is reclaimed; --wait: block until admitted "
     "(waiters queue in arrival order; after DUR exit 1 wait-timeout)"},
    {"extend", cmd_extend, "extend [--ttl DUR] [--generation G] (LEASE-ID|PATH)...",
     "renew your leases to expire TTL from now (before they expire)"},
    {"release", cmd_release,
     "release [--generation G] (LEASE-ID|PATH)... | release --force --reason TEXT (LEASE-ID|PATH)... | release "
     "--landed BRANCH",
     "release your leases; --force: an admin releases others' path leases, with a reason everyone sees; --landed: "
     "an admin releases every lease whose holder's signed work on its path is all on BRANCH"},
    {"sweep", cmd_sweep, "sweep", "remove every expired lease"},
    {"sem acquire", cmd_sem_acquire, "sem acquire NAME --limit N [--ttl DUR] [--note TEXT]",
     "take a slot of a counted semaphore (every holder must agree on N)"},
    {"sem release", cmd_sem_release, "sem release NAME [--generation G]", "give your slot back"},
    {"batch", cmd_batch, "batch [--ttl DUR] [FILE|-]",
     "publish JSON Lines of claim/extend/release/sem-acquire/sem-release ops as one transition"},
    {"run", cmd_run,
     "run [--claim PATH]... [--shared PATH]... [--sem NAME:LIMIT]... [--ttl DUR] [--note TEXT] [--wait[=DUR]] "
     "[--on-lost terminate|keep] [--grace DUR] -- CMD [ARG...]",
     "hold leases while CMD runs (renewed every TTL/3), then release; exits with CMD's status; --wait: wait for "
     "admission first; a lost lease (renewal refused, force-released, expired) stops CMD's process group "
     "(SIGTERM, SIGKILL after --grace, default 10s; --on-lost keep: it runs on) and exits 1, lease-lost"},
    {"status", cmd_status, "status [--all] [PATH...]", "live leases (with --all also expired ones)"},
    {"fence", cmd_fence, "fence RESOURCE GENERATION",
     "exit 0 when GENERATION is a live generation of RESOURCE (PATH, path:PATH or sem:NAME), else 1"},
    {"wait", cmd_wait, "wait [--timeout DUR] [--claim [--mode M] [--ttl DUR] [--note TEXT]] PATH...",
     "block until the paths are claimable (and with --claim, claim them)"},
    {"log", cmd_log, "log [--limit N]", "the history of refs/locks/state, newest first"},
    {"whoami", cmd_whoami, "whoami",
     "your actor key, display name and key file, and the key in OpenSSH form (for gpg.ssh.allowedSignersFile)"},
    {"verify", cmd_verify,
     "verify [--full | --from COMMIT] [--expect-owner KEY] [--expect-pins AUDIENCE:KEY] [--accept-rewrite] [--quiet] "
     "[--allow-test-clock]",
     "replay refs/locks/state and check every commit since the clone's trust checkpoint (--full: from the root; "
     "--expect-owner/--expect-pins: from the root, the root invalid as owner-mismatch unless the store's owner is "
     "KEY, the tip as pins-mismatch unless those notary pins are in force; "
     "exit 0 all valid, 1 any invalid or rewritten, 2 unreadable)"},
    {"export", cmd_export, "export --bundle FILE", "write a Git bundle of refs/locks/state for other hosts to verify"},
    {"doctor", cmd_doctor, "doctor",
     "diagnose the reservation data and a leftover refs/locks/state.lock (exit 0 healthy, 1 problems, 2 "
     "unreadable); repairs nothing"},
    {"migrate", cmd_migrate, "migrate", "rewrite a format-1 store as the current format (one ordinary transition)"},
    {"notary keygen", cmd_notary, "notary keygen --out FILE", "write a new notary service key (mode 0600)"},
    {"notary serve", cmd_notary,
     "notary serve --key FILE --state DIR --listen HOST:PORT --audience NAME [--test-clock]",
     "run a trusted-time notary (docs/NOTARY.md)"},
    {"guard-time enable", cmd_guard_time_enable,
     "guard-time enable --audience A --service-key KEY --disclosure GUARD_WINDOW --expected-policy-hash H "
     "--operation-id ID",
     "owner: require a notary's attestation on every transition from now on"},
    {"guard-time resume", cmd_guard_time_resume, "guard-time resume ID",
     "finish an enable whose answer was lost: verify acceptance or re-send the identical packet"},
    {"guard-time history", cmd_guard_time_history, "guard-time history",
     "local guard-time operations and their status"},
    {"guard-time migrate", cmd_guard_time_migrate,
     "guard-time migrate --audience A --service-key KEY --disclosure GUARD_WINDOW --expected-policy-hash H",
     "owner: move the store to another notary (--notary or locks.notary), which admits this change itself"},
    {"guard-time disable", cmd_guard_time_disable, "guard-time disable --expected-policy-hash H",
     "owner: turn guard time off (no notary needed); transitions carry the writer's clock again"},
    {"member add", cmd_member_add, "member add KEY",
     "owner of a PRIVATE store: add a member (new epoch key sealed to every member; two commits)"},
    {"member remove", cmd_member_remove, "member remove KEY",
     "owner of a PRIVATE store: remove a member; nothing published afterwards is readable to it"},
    {"member rekey", cmd_member_rekey, "member rekey", "owner: finish an interrupted member add/remove"},
    {"member list", cmd_member_list, "member list", "the members and key epoch of a PRIVATE store"},
    {"policy show", cmd_policy_show, "policy show",
     "the store's policy (TTL bounds, families, require_claim, enforced refs, admins, bots) and its policy hash"},
    {"policy set", cmd_policy_set, "policy set FILE --expected-policy-hash H",
     "owner: change the policy by a signed transition; FILE (JSON, - for stdin) gives the fields to change "
     "(min_ttl_ms, max_ttl_ms, families, require_claim, enforce, admins, bots; null removes one)"},
    {"hook install", cmd_hook_install, "hook install [--warn] [--force] [--no-sign] | hook install --server [--force]",
     "set up this clone: sign commits with your actor key (Git's SSH signing; --no-sign leaves signing alone), "
     "a reference-transaction hook that refuses to move an enforced branch (the policy's enforce, else git config "
     "locks.enforce, default "
     "refs/heads/*) to commits changing others' exclusively claimed paths (--no-verify does not skip it), and "
     "pre-commit and pre-push hooks for early feedback; --server: a pre-receive hook (for the repository serving a "
     "shared store) rejecting every push to refs/locks/state that does not replay as valid transitions and every "
     "push to an enforced ref that changes a path under another holder's claim"},
    {"hook check", cmd_hook_check, "hook check pre-commit|pre-push|pre-receive|reference-transaction [--warn]",
     "what the installed hooks run"},
    {"check", cmd_check, "check RANGE...",
     "the claims rule over the commits of RANGE (e.g. origin/main..HEAD), as the server hook applies it: exit 0 all "
     "clear, 1 a commit changes a path under another holder's claim, 2 the store cannot be read"},
    {"mcp", cmd_mcp, "mcp",
     "serve the Model Context Protocol on stdin/stdout (one server per agent, acting with --key); every tool call "
     "runs the matching command (docs/CLI.md \"MCP server\")"},
    {"web", cmd_web, "web [--port P] [--site DIR]",
     "serve the verification page and a live bundle of refs/locks/state on 127.0.0.1 (prints the URL as JSON)"},
    {"recover", cmd_recover, "recover [--dry-run]",
     "when refs/locks/state does not verify, restore it to its last valid commit (locally, or on the remote with a "
     "lease on the invalid tip): exit 0 restored or nothing to do, 2 no valid state or the ref moved"},
    {"capabilities", cmd_capabilities, "capabilities",
     "the capabilities of this build, one name per line (--json: the report the npm module's capabilities() "
     "returns)"},
    {"completion bash", cmd_completion_bash, "completion bash",
     "print the bash completion script for git-locks and `git locks`, generated from this command table"},
};

// The help text spells out the default TTL (and help2man copies it into the
// man page): it must follow the constant.
static_assert(kDefaultTtlMs == 10 * 60 * 1000, "kHelpTail says 'Default TTL 10m'");
constexpr std::string_view kHelpTail = R"(
Global flags (anywhere before --):
  --repo DIR     the repository (default: the one around the working directory)
  --json         on success print one JSON object on stdout (log: JSON Lines)
  --key FILE     the actor key file (default: $GIT_LOCKS_KEY, else
                 $XDG_CONFIG_HOME/git-locks/actor.key or ~/.config/git-locks/actor.key;
                 created with mode 0600 on first use; refused if group/world accessible)
  --notary URL   the notary of a guard-time store (default: git config locks.notary)
  --remote NAME  use the store on remote NAME (default: git config locks.remote;
                 "" for this repository's): every read fetches its refs/locks/state,
                 every transition is `git push --atomic --force-with-lease`;
                 each fetch or push is stopped after git config locks.timeout
                 (default 30s; 1ms to 24h): then store-read / store-write
  --allow-test-clock  accept a notary running its test clock (tests only)
  --help, --version

Git's SSH signing program (gpg.format=ssh, gpg.ssh.program=git-locks):
  -Y sign -n NAMESPACE -f KEYFILE FILE...
                 write FILE.sig signed with the actor key $GIT_LOCKS_KEY, else
                 KEYFILE (never created here); any other -Y operation runs
                 OpenSSH's ssh-keygen; exit 255 on failure, as ssh-keygen

Durations: 500ms, 30s, 10m, 2h, or plain milliseconds. Default TTL 10m (run: 60s).
A LEASE-ID is 24 hex digits; any other argument there is a repository path.
docs/CLI.md describes every command, schema and the publication protocol.

Exit status:
  0   success
  1   refused: held-path, full-semaphore, family-policy, stale-generation,
      not-holder, guard-window, empty-interval, limit-mismatch,
      stale-retries-exhausted, wait-timeout, not-member, already-held;
      lease-lost (run: a lease was lost while the command ran)
  2   store-read / store-write (also: stored data failing verification)
  64  usage: bad flag, bad path, malformed input
  run exits with the command's own status once admitted, unless a lease was lost.

Errors: one JSON object per line on stderr,
  {"error":"refused"|"usage"|"store-read"|"store-write",
   "code":CODE,"reason":CODE or a finer sub-code (docs/CLI.md),"op":COMMAND,
   "detail":TEXT, structured fields (holder, expires_at_ms, op_index, ...),
   "attempts":N (update-ref or push runs, when publication was attempted)}

Environment:
  GIT_LOCKS_KEY     key file (after --key)
  GIT_LOCKS_NOW_MS  fixed clock in ms since the epoch (tests)
  GIT_LOCKS_GIT     git executable to run (test seam; default "git")
  GIT_LOCKS_TIMINGS append where the command's time went to this file, one JSON line (benchmarks)
  GIT_LOCKS_PROPOSAL_MS  proposal clock of a guard-time store (test seam; never an attested T)
  GIT_LOCKS_TEST_CRASH_AFTER  admit|publish: guard-time enable/resume exits abruptly there (test seam)

)";

// The layout is GNU's (a summary indented 22 under its usage), which
// help2man turns into the man page (tools/cli/CMakeLists.txt).
void print_help() {
  std::string out = "Usage: git-locks [--repo DIR] [--remote NAME] [--json] [--key FILE] COMMAND [ARGS]\n";
  out += GITLOCKS_DESCRIPTION ".\n\nCommands:\n";
  for (const auto& c : kCommands) {
    out += "  " + std::string(c.usage) + "\n                      " + std::string(c.summary) + "\n";
  }
  out += kHelpTail;
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

std::vector<CommandUsage> command_table() {
  std::vector<CommandUsage> rows;
  for (const auto& c : kCommands) rows.push_back({c.name, c.usage});
  return rows;
}

namespace {

const Command* find_command(const Argv& args, std::size_t at, std::size_t& words) {
  for (const auto& c : kCommands) {
    const std::string_view name = c.name;
    auto space = name.find(' ');
    if (space == std::string_view::npos) {
      if (args[at] == name) {
        words = 1;
        return &c;
      }
    } else if (at + 1 < args.size() && args[at] == name.substr(0, space) && args[at + 1] == name.substr(space + 1)) {
      words = 2;
      return &c;
    }
  }
  return nullptr;
}

int main_impl(int argc, char** argv) {
  // Git's signing program is called as ssh-keygen is, not as a command.
  if (argc > 1 && std::string_view(argv[1]) == "-Y") return cmd_ssh_keygen(Argv(argv + 1, argv + argc));
  timings::start();
  ::signal(SIGPIPE, SIG_IGN);  // a closed pipe to git is an error we report, not a crash
  if (!crypto_init()) {
    std::fputs(
        "{\"error\":\"store-read\",\"code\":\"store-read\",\"op\":\"git-locks\",\"detail\":\"libsodium failed to "
        "initialise\"}\n",
        stderr);
    return kExitStore;
  }
  Argv args(argv + 1, argv + argc);
  Context ctx;
  ctx.op = "git-locks";
  // Leading global flags.
  std::size_t at = 0;
  for (; at < args.size(); ++at) {
    const std::string& a = args[at];
    if (a == "--help" || a == "-h" || a == "help") {
      print_help();
      return kExitOk;
    }
    if (a == "--version") {
      std::printf("git-locks %s\n", GITLOCKS_VERSION);
      return kExitOk;
    }
    if (a == "--json") {
      ctx.json_output = true;
    } else if (a == "--repo" || a == "--key") {
      if (at + 1 >= args.size()) return ctx.fail(make_error(Errc::usage, "flag '" + a + "' needs a value"));
      (a == "--repo" ? ctx.repo_dir : ctx.key_flag) = args[++at];
    } else if (a == "--allow-test-clock") {
      ctx.allow_test_clock = true;
    } else if (a == "--notary" || a == "--remote") {
      if (at + 1 >= args.size()) return ctx.fail(make_error(Errc::usage, "flag '" + a + "' needs a value"));
      (a == "--notary" ? ctx.notary_flag : ctx.remote_flag) = args[++at];
    } else if (a.rfind("--repo=", 0) == 0) {
      ctx.repo_dir = a.substr(7);
    } else if (a.rfind("--key=", 0) == 0) {
      ctx.key_flag = a.substr(6);
    } else if (a.size() > 1 && a[0] == '-') {
      return ctx.fail(make_error(Errc::usage, "unknown flag '" + a + "' (see git-locks --help)"));
    } else {
      break;
    }
  }
  if (at >= args.size()) return ctx.fail(make_error(Errc::usage, "no command given (see git-locks --help)"));
  std::size_t words = 0;
  const Command* cmd = find_command(args, at, words);
  if (!cmd) return ctx.fail(make_error(Errc::usage, "unknown command '" + args[at] + "' (see git-locks --help)"));
  ctx.op = std::string(cmd->name);
  Argv rest(args.begin() + static_cast<long>(at + words), args.end());
  for (const auto& r : rest) {
    if (r == "--") break;
    if (r == "--help" || r == "-h") {
      std::printf("usage: git-locks %s\n  %s\n", std::string(cmd->usage).c_str(), std::string(cmd->summary).c_str());
      return kExitOk;
    }
  }
  const int status = cmd->handler(ctx, rest);
  timings::finish(ctx.op);
  return status;
}

}  // namespace
}  // namespace gitlocks::cli

int main(int argc, char** argv) { return gitlocks::cli::main_impl(argc, argv); }
