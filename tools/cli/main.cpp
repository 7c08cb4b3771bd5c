// git-locks — leases on paths and counted resources, stored in refs/locks/state.
// The command table; every command is a short function in cmd_*.cpp.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cli.h"
#include "gitlocks/crypto.hpp"
#include "gitlocks/limits.hpp"
#include "report.h"
#include "timings.h"

namespace gitlocks::cli {
namespace {

// Each declared command's handler (commands.cpp declares the commands and
// their flags; a declared command without a handler here is refused as an
// internal error, and tests/cli/test_misc.py runs every one).
struct Handler {
  std::string_view name;
  int (*run)(Context&, const Argv&);
};

constexpr Handler kHandlers[] = {
    {"init", cmd_init},
    {"claim", cmd_claim},
    {"extend", cmd_extend},
    {"release", cmd_release},
    {"handoff", cmd_handoff},
    {"sweep", cmd_sweep},
    {"sem acquire", cmd_sem_acquire},
    {"sem release", cmd_sem_release},
    {"batch", cmd_batch},
    {"run", cmd_run},
    {"status", cmd_status},
    {"fence", cmd_fence},
    {"wait", cmd_wait},
    {"watch", cmd_watch},
    {"log", cmd_log},
    {"whoami", cmd_whoami},
    {"verify", cmd_verify},
    {"export", cmd_export},
    {"doctor", cmd_doctor},
    {"migrate", cmd_migrate},
    {"checkpoint", cmd_checkpoint},
    {"notary keygen", cmd_notary},
    {"notary serve", cmd_notary},
    {"witness keygen", cmd_witness_keygen},
    {"witness serve", cmd_witness_serve},
    {"witness cosign", cmd_witness_cosign},
    {"guard-time enable", cmd_guard_time_enable},
    {"guard-time resume", cmd_guard_time_resume},
    {"guard-time history", cmd_guard_time_history},
    {"guard-time migrate", cmd_guard_time_migrate},
    {"guard-time disable", cmd_guard_time_disable},
    {"member add", cmd_member_add},
    {"member remove", cmd_member_remove},
    {"member rekey", cmd_member_rekey},
    {"member list", cmd_member_list},
    {"policy show", cmd_policy_show},
    {"policy set", cmd_policy_set},
    {"hook install", cmd_hook_install},
    {"hook check", cmd_hook_check},
    {"hook agent", cmd_hook_agent},
    {"check", cmd_check},
    {"mcp", cmd_mcp},
    {"web", cmd_web},
    {"recover", cmd_recover},
    {"capabilities", cmd_capabilities},
    {"completion bash", cmd_completion_bash},
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
  hook agent exits 2 for every refusal or failure after its command line:
  the agent host blocks the edit.

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
  GIT_LOCKS_TEST_THROW  COMMAND: that command's handler throws at its start (test seam: exit 2, store-read)

)";

// The layout is GNU's (a summary indented 22 under its usage), which
// help2man turns into the man page (tools/cli/CMakeLists.txt).
void print_help() {
  std::string out = "Usage: git-locks [--repo DIR] [--remote NAME] [--json] [--key FILE] COMMAND [ARGS]\n";
  out += GITLOCKS_DESCRIPTION ".\n\nCommands:\n";
  for (const auto& c : commands())
    out += "  " + usage_of(c) + "\n                      " + std::string(c.summary) + "\n";
  out += "\n`git-locks COMMAND --help` describes each flag of COMMAND.\n";
  out += kHelpTail;
  std::fwrite(out.data(), 1, out.size(), stdout);
}

// The command at args[at] (one word or two), its word count in `words`.
const CommandDecl* find_command_at(const Argv& args, std::size_t at, std::size_t& words) {
  for (const auto& c : commands()) {
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
  const CommandDecl* cmd = find_command_at(args, at, words);
  if (!cmd) return ctx.fail(make_error(Errc::usage, "unknown command '" + args[at] + "' (see git-locks --help)"));
  ctx.op = std::string(cmd->name);
  ctx.command = cmd;
  Argv rest(args.begin() + static_cast<long>(at + words), args.end());
  for (const auto& r : rest) {
    if (r == "--") break;
    if (r == "--help" || r == "-h") {
      const std::string help = help_of(*cmd);
      std::fwrite(help.data(), 1, help.size(), stdout);
      return kExitOk;
    }
  }
  const Handler* handler = nullptr;
  for (const auto& h : kHandlers)
    if (h.name == cmd->name) handler = &h;
  if (!handler)
    return ctx.fail(make_error(Errc::store_read, "internal error: command '" + ctx.op + "' has no handler"));
  // A command never ends in std::terminate: an exception that escapes its
  // handler (a bug: the core reports errors as Results) is reported as the
  // failure it is, in the error format, after the handler's destructors
  // ran (temporary files, held queue entries). The ref moves by
  // compare-and-swap only, so nothing half-published is left.
  int status = kExitStore;
  try {
    if (const char* seam = std::getenv("GIT_LOCKS_TEST_THROW"); seam && ctx.op == seam)
      throw std::runtime_error("GIT_LOCKS_TEST_THROW asked '" + ctx.op + "' to throw");
    status = handler->run(ctx, rest);
  } catch (const std::exception& e) {
    return ctx.fail(make_error(Errc::store_read, std::string("internal error: ") + e.what()));
  } catch (...) {
    return ctx.fail(make_error(Errc::store_read, "internal error: an unknown exception"));
  }
  timings::finish(ctx.op);
  return status;
}

}  // namespace
}  // namespace gitlocks::cli

int main(int argc, char** argv) { return gitlocks::cli::main_impl(argc, argv); }
