// Every command of git-locks and its flags, declared once (commands.h).
#include "commands.h"

namespace gitlocks::cli {
namespace {

using V = Val;

// Flags several commands share, spelled once.
constexpr FlagDecl kTtl{"ttl", V::duration, "DUR", "the lease's time to live (default 10m)"};
constexpr FlagDecl kNote{"note", V::text, "TEXT", "a note everyone sees on the lease (at most 1024 bytes of UTF-8)"};
constexpr FlagDecl kMode{"mode", V::choice, "exclusive|shared", "exclusive (the default) or shared"};
constexpr FlagDecl kWait{
    "wait", V::duration, "DUR",
    "block until admitted, holding a ticket in the store's queue (admitted in ticket order, every clone); "
    "after DUR refused with wait-timeout",
    true};
constexpr FlagDecl kGeneration{"generation", V::count, "G",
                               "the generation you hold: refused with stale-generation unless it is current"};
constexpr FlagDecl kPolicyHash{
    "expected-policy-hash",
    V::text,
    "H",
    "the policy_hash `git-locks policy show` prints: the change applies only to the policy you looked at",
    false,
    true};
constexpr FlagDecl kAudience{"audience", V::text, "A", "the notary's audience (a pin)", false, true};
constexpr FlagDecl kServiceKey{"service-key", V::text, "KEY", "the notary's service key, 64 hex (a pin)", false, true};
constexpr FlagDecl kDisclosure{"disclosure",   V::choice,
                               "GUARD_WINDOW", "what the notary learns of each transition (only GUARD_WINDOW)",
                               false,          true};
constexpr FlagDecl kForce{
    "force", V::none, "",
    "replace a hook that git-locks did not write (with --agent: settings that cannot be merged, kept as FILE.bak)"};

}  // namespace

const std::vector<CommandDecl>& commands() {
  static const std::vector<CommandDecl> all = {
      {"init",
       {{"private", V::none, "", "end-to-end encrypted: records sealed to members (docs/PRIVATE.md)"},
        {"policy", V::file, "FILE", "the initial policy (JSON)"},
        {"case-insensitive", V::none, "", "paths that differ only in case are one path"}},
       "",
       V::none,
       "create the lock store (an existing store is left alone); --private: end-to-end encrypted (docs/PRIVATE.md)"},
      {"claim",
       {{"mode", V::choice, "exclusive|shared|intent",
         "exclusive (the default), shared, or intent: announce planned work, refusing nobody and refused by nobody"},
        kTtl,
        kNote,
        kWait},
       "PATH...",
       V::file,
       "claim paths, all or none; an expired lease of another holder is reclaimed; --wait: block until admitted "
       "(with a ticket in the store's queue: waiters of every clone are admitted in ticket order; after DUR exit 1 "
       "wait-timeout; exit 1 deadlock when the wait could never end)"},
      {"extend",
       {kTtl, kGeneration},
       "(LEASE-ID|PATH)...",
       V::file,
       "renew your leases to expire TTL from now (before they expire)"},
      {"release",
       {kGeneration,
        {"force", V::none, "", "an admin releases others' path leases (needs --reason)"},
        {"reason", V::text, "TEXT", "why, for the holder and the log (with --force)"},
        {"landed", V::text, "BRANCH",
         "instead of leases (no other flag): an admin releases every lease whose work is all on BRANCH"}},
       "(LEASE-ID|PATH)...",
       V::file,
       "release your leases; --force --reason TEXT: an admin releases others' path leases, with a reason everyone "
       "sees; --landed BRANCH (no leases named): an admin releases every lease whose holder's signed work on its "
       "path is all on BRANCH"},
      {"handoff",
       {{"to", V::text, "KEY", "the receiver's public key (64 hex: what `git-locks whoami` prints)", false, true},
        {"to-name", V::text, "NAME", "the receiver's display name in the lease (default: its key's first 12 digits)"},
        kTtl,
        kNote,
        kGeneration},
       "(LEASE-ID|PATH)...",
       V::file,
       "hand your live leases to another key in one transition: it holds them at the next generation, as if it had "
       "claimed them, with no moment in which a third writer could take them"},
      {"sweep", {}, "", V::none, "remove every expired lease and drop the queue's lapsed tickets"},
      {"sem acquire",
       {{"limit", V::count, "N", "the semaphore's slots; every holder must agree", false, true, false, 1}, kTtl, kNote},
       "NAME",
       V::none,
       "take a slot of a counted semaphore (every holder must agree on N)"},
      {"sem release", {kGeneration}, "NAME", V::none, "give your slot back"},
      {"batch",
       {kTtl},
       "[FILE|-]",
       V::file,
       "publish JSON Lines of claim/extend/release/sem-acquire/sem-release ops as one transition"},
      {"run",
       {{"claim", V::file, "PATH", "claim PATH exclusively", false, false, true},
        {"shared", V::file, "PATH", "claim PATH shared", false, false, true},
        {"sem", V::text, "NAME:LIMIT", "take a slot of semaphore NAME of LIMIT slots", false, false, true},
        {"ttl", V::duration, "DUR", "the leases' time to live, renewed every TTL/3 (default 60s)"},
        kNote,
        kWait,
        {"on-lost", V::choice, "terminate|keep", "what happens to CMD when a lease is lost (default terminate)"},
        {"grace", V::duration, "DUR", "SIGKILL this long after SIGTERM (default 10s)"}},
       "-- CMD [ARG...]",
       V::none,
       "hold leases while CMD runs (renewed every TTL/3), then release; exits with CMD's status; --wait: wait for "
       "admission first; a lost lease (renewal refused, force-released, expired) stops CMD's process group "
       "(SIGTERM, SIGKILL after --grace, default 10s; --on-lost keep: it runs on) and exits 1, lease-lost",
       true},
      {"status",
       {{"all", V::none, "", "expired leases too"}},
       "[PATH...]",
       V::file,
       "live leases (with --all also expired ones) and the queue of waiters' tickets"},
      {"fence",
       {},
       "RESOURCE GENERATION",
       V::none,
       "exit 0 when GENERATION is a live generation of RESOURCE (PATH, path:PATH or sem:NAME), else 1"},
      {"wait",
       {{"timeout", V::duration, "DUR", "give up after DUR, refused with the last refusal's code"},
        {"claim", V::none, "", "claim the paths once they are claimable"},
        kMode,
        kTtl,
        kNote},
       "PATH...",
       V::file,
       "block until the paths are claimable (and with --claim, claim them; --mode, --ttl and --note go with "
       "--claim)"},
      {"watch",
       {{"interval", V::duration, "DUR",
         "how often the tip is read (default 50ms for a local store, 2s for a remote one, fetched each time)"},
        {"max-events", V::count, "N", "exit 0 after N events (default: run until SIGINT or SIGTERM)", false, false,
         false, 1}},
       "[PATH|sem:NAME]...",
       V::file,
       "stream one line per change of the store (claimed, renewed, released, expired, force-released, handed-off, "
       "lost) as the ref moves, only those of PATHs (overlapping) or semaphores when given; writes nothing"},
      {"log",
       {{"limit", V::count, "N", "at most N commits", false, false, false, 1}},
       "",
       V::none,
       "the history of refs/locks/state, newest first"},
      {"whoami",
       {},
       "",
       V::none,
       "your actor key, display name and key file, and the key in OpenSSH form (for gpg.ssh.allowedSignersFile)"},
      {"verify",
       {{"full", V::none, "", "from the root, not from the trust checkpoint"},
        {"from", V::text, "COMMIT",
         "trust COMMIT's state and check the commits after it (not with --full, --expect-owner or --expect-pins)",
         false, false, false, 1},
        {"expect-owner", V::text, "KEY", "from the root; the root is invalid (owner-mismatch) unless KEY owns it"},
        {"expect-pins", V::text, "AUDIENCE:KEY",
         "from the root; the tip is invalid (pins-mismatch) unless these notary pins are in force"},
        {"accept-rewrite", V::none, "", "accept a tip that does not descend from the checkpoint"},
        {"quiet", V::none, "", "print only the summary"}},
       "",
       V::none,
       "replay refs/locks/state and check every commit since the clone's trust checkpoint (--full: from the root; "
       "--expect-owner/--expect-pins: from the root, the root invalid as owner-mismatch unless the store's owner is "
       "KEY, the tip as pins-mismatch unless those notary pins are in force; "
       "exit 0 all valid, 1 any invalid or rewritten, 2 unreadable)"},
      {"export",
       {{"bundle", V::file, "FILE", "where to write the bundle (- for stdout)", false, true},
        {"archive", V::none, "",
         "also the history before the store's cuts (refs/locks/archive/*), for a verification from the root"}},
       "",
       V::none,
       "write a Git bundle of refs/locks/state for other hosts to verify"},
      {"doctor",
       {},
       "",
       V::none,
       "diagnose the reservation data and a leftover refs/locks/state.lock (exit 0 healthy, 1 problems, 2 "
       "unreadable); repairs nothing"},
      {"migrate", {}, "", V::none, "rewrite a format-1 store as the current format (one ordinary transition)"},
      {"checkpoint",
       {{"cut", V::none, "",
         "start a new chain at the checkpoint (no Git parent): a fetch of refs/locks/state then transfers only what "
         "follows it; the history before it stays on refs/locks/archive/TIP"},
        {"every", V::count, "N",
         "only when N or more commits follow the newest checkpoint (else nothing is published: for a scheduled job)",
         false, false, false, 1}},
       "",
       V::none,
       "owner or a checkpoint signer the policy names: publish a signed checkpoint of the state at the tip (nothing "
       "changes; every verifier checks that it follows the commit it names)"},
      {"notary keygen",
       {{"out", V::file, "FILE", "the key file to write", false, true}},
       "",
       V::none,
       "write a new notary service key (mode 0600)",
       false,
       true},
      {"notary serve",
       {{"key", V::file, "FILE", "the service key (notary keygen)", false, true},
        {"state", V::dir, "DIR", "where the notary keeps its clock and replay state", false, true},
        {"listen", V::text, "HOST:PORT", "the address to serve on", false, true},
        {"audience", V::text, "NAME", "the audience its attestations name", false, true},
        {"test-clock", V::none, "", "a settable clock for tests (its attestations say so)"},
        {"allow-remote", V::none, "", "listen on an address other than loopback"},
        {"max-request-bytes", V::count, "N", "the largest request body accepted (default 65536)", false, false, false,
         1024}},
       "",
       V::none,
       "run a trusted-time notary (docs/NOTARY.md)",
       false,
       true},
      {"witness keygen",
       {{"out", V::file, "FILE", "the key file to write", false, true}},
       "",
       V::none,
       "write a new witness key (mode 0600)"},
      {"witness serve",
       {{"witness-key", V::file, "FILE", "the witness key (witness keygen; the global --key FILE names it too)"},
        {"state", V::dir, "DIR", "where the witness keeps what it verified and cosigned", false, true},
        {"listen", V::text, "HOST:PORT", "the address to serve on", false, true},
        {"allow-remote", V::none, "", "listen on an address other than loopback"},
        {"owner", V::text, "KEY", "serve only the stores of this owner (repeatable; default: any, first use trusted)",
         false, false, true},
        {"max-request-bytes", V::count, "N", "the largest bundle accepted (default 268435456)", false, false, false,
         1024}},
       "",
       V::none,
       "run a witness: verify checkpoints and cosign those that extend the last one (docs/WITNESS.md)"},
      {"witness cosign",
       {},
       "",
       V::none,
       "ask the witnesses of git config locks.witnesses to cosign the newest checkpoint"},
      {"guard-time enable",
       {kAudience,
        kServiceKey,
        kDisclosure,
        kPolicyHash,
        {"operation-id", V::text, "ID", "names this operation, for guard-time resume", false, true}},
       "",
       V::none,
       "owner: require a notary's attestation on every transition from now on"},
      {"guard-time resume",
       {},
       "ID",
       V::none,
       "finish an enable whose answer was lost: verify acceptance or re-send the identical packet"},
      {"guard-time history", {}, "", V::none, "local guard-time operations and their status"},
      {"guard-time migrate",
       {kAudience, kServiceKey, kDisclosure, kPolicyHash},
       "",
       V::none,
       "owner: move the store to another notary (--notary or locks.notary), which admits this change itself"},
      {"guard-time disable",
       {kPolicyHash},
       "",
       V::none,
       "owner: turn guard time off (no notary needed); transitions carry the writer's clock again"},
      {"member add",
       {},
       "KEY",
       V::none,
       "owner of a PRIVATE store: add a member (new epoch key sealed to every member; two commits)"},
      {"member remove",
       {},
       "KEY",
       V::none,
       "owner of a PRIVATE store: remove a member; nothing published afterwards is readable to it"},
      {"member rekey", {}, "", V::none, "owner: finish an interrupted member add/remove"},
      {"member list", {}, "", V::none, "the members and key epoch of a PRIVATE store"},
      {"policy show",
       {},
       "",
       V::none,
       "the store's policy (TTL bounds, families, require_claim, enforced refs, admins, bots) and its policy hash"},
      {"policy set",
       {kPolicyHash},
       "FILE",
       V::file,
       "owner: change the policy by a signed transition; FILE (JSON, - for stdin) gives the fields to change "
       "(min_ttl_ms, max_ttl_ms, families, require_claim, enforce, admins, bots; null removes one)"},
      {"hook install",
       {{"warn", V::none, "", "the hooks warn instead of refusing"},
        kForce,
        {"no-sign", V::none, "", "leave commit signing alone"},
        {"server", V::none, "", "install the pre-receive hook of the repository serving the store"},
        {"agent", V::choice, "claude-code",
         "instead: the agent host's pre-edit hook (.claude/settings.json, merged): an edit claims the file "
         "(docs/CLI.md \"Claim on first edit\")"},
        {"ttl", V::duration, "DUR", "with --agent: the TTL the hook claims and extends for (default 10m)"}},
       "",
       V::none,
       "set up this clone: sign commits with your actor key (Git's SSH signing; --no-sign leaves signing alone), "
       "a reference-transaction hook that refuses to move an enforced branch (the policy's enforce, else git config "
       "locks.enforce, default "
       "refs/heads/*) to commits changing others' exclusively claimed paths (--no-verify does not skip it), and "
       "pre-commit and pre-push hooks for early feedback (--warn: they warn only); --server (not with --warn or "
       "--no-sign): a pre-receive hook (for the repository serving a "
       "shared store) rejecting every push to refs/locks/state that does not replay as valid transitions and every "
       "push to an enforced ref that changes a path under another holder's claim; --agent claude-code (alone, or "
       "with --force, --ttl): instead the agent host's pre-edit hook, merged into the work tree's "
       ".claude/settings.json, so that an agent's edit claims the file first (--force: replace settings that "
       "cannot be merged, keeping them as settings.json.bak)"},
      {"hook check",
       {{"warn", V::none, "", "report, but exit 0"}},
       "pre-commit|pre-push|pre-receive|reference-transaction",
       V::choice,
       "what the installed hooks run"},
      {"hook agent",
       {{"agent", V::choice, "claude-code", "the agent host whose request is on stdin", false, true},
        {"ttl", V::duration, "DUR", "claim or extend for DUR from now (default 10m)"}},
       "",
       V::none,
       "what an installed agent pre-edit hook runs: reads the host's request (JSON) on stdin and claims the file "
       "about to be edited (exclusive), or extends your lease on it; exit 0 lets the edit go, exit 2 blocks it "
       "with the reason on stderr (held by another: the holder named; any failure: fail closed)"},
      {"check",
       {},
       "RANGE...",
       V::none,
       "the claims rule over the commits of RANGE (e.g. origin/main..HEAD), as the server hook applies it: exit 0 all "
       "clear, 1 a commit changes a path under another holder's claim, 2 the store cannot be read"},
      {"mcp",
       {},
       "",
       V::none,
       "serve the Model Context Protocol on stdin/stdout (one server per agent, acting with --key); every tool call "
       "runs the matching command (docs/CLI.md \"MCP server\")"},
      {"web",
       {{"port", V::count, "P", "the port (default: any free one)"},
        {"site", V::dir, "DIR", "serve the page from DIR (default: the installed one)"}},
       "",
       V::none,
       "serve the verification page and a live bundle of refs/locks/state on 127.0.0.1 (prints the URL as JSON)"},
      {"recover",
       {{"dry-run", V::none, "", "say what would be restored, change nothing"}},
       "",
       V::none,
       "when refs/locks/state does not verify, restore it to its last valid commit (locally, or on the remote with a "
       "lease on the invalid tip): exit 0 restored or nothing to do, 2 no valid state or the ref moved"},
      {"capabilities",
       {},
       "",
       V::none,
       "the capabilities of this build, one name per line (--json: the report the npm module's capabilities() "
       "returns)"},
      {"completion bash",
       {},
       "",
       V::none,
       "print the bash completion script for git-locks and `git locks`, generated from this command table"},
  };
  return all;
}

const CommandDecl* find_command(std::string_view name) {
  for (const auto& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

namespace {

// "--ttl DUR", "--wait[=DUR]", "--all": a flag as the usage line and the
// command's help spell it.
std::string synopsis_of(const FlagDecl& f) {
  std::string out = "--" + std::string(f.name);
  if (f.val != Val::none)
    out += f.optional_value ? "[=" + std::string(f.placeholder) + "]" : " " + std::string(f.placeholder);
  return out;
}

}  // namespace

std::string usage_of(const CommandDecl& c) {
  std::string out(c.name);
  for (const auto& f : c.flags) {
    const std::string one = synopsis_of(f);
    out += " " + (f.required ? one : "[" + one + "]") + (f.repeatable ? "..." : "");
  }
  if (!c.operands.empty()) out += " " + std::string(c.operands);
  return out;
}

std::string help_of(const CommandDecl& c) {
  std::string out = "usage: git-locks " + usage_of(c) + "\n  " + std::string(c.summary) + "\n";
  if (!c.flags.empty()) out += "\n";
  for (const auto& f : c.flags) {
    std::string left = "  " + synopsis_of(f);
    if (left.size() < 24) left.resize(24, ' ');
    else left += "\n" + std::string(24, ' ');
    out += left + std::string(f.help) + (f.required ? " (required)" : "") + "\n";
  }
  if (!c.own_parser) {
    out += "\nGlobal flags (git-locks --help):";
    for (const auto& g : global_flags())
      out += std::string(&g == &global_flags().front() ? " --" : ", --") + std::string(g.name);
    out += "\n";
  }
  return out;
}

std::vector<FlagSpec> flag_specs(const CommandDecl& c) {
  std::vector<FlagSpec> out;
  for (const auto& f : c.flags) out.push_back({f.name, f.val != Val::none && !f.optional_value, f.optional_value});
  return out;
}

Status check_parsed(const CommandDecl& c, const Parsed& parsed) {
  if (c.operands.empty() && !parsed.positionals.empty())
    return make_error(Errc::usage, std::string(c.name) + " takes no arguments");
  for (const auto& f : c.flags)
    if (f.required && !parsed.has(std::string(f.name)))
      return make_error(Errc::usage, std::string(c.name) + " needs --" + std::string(f.name) + " " +
                                         std::string(f.placeholder) + ": " + std::string(f.help));
  return Ok{};
}

std::vector<std::string> choices_of(std::string_view placeholder) {
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const std::size_t bar = placeholder.find('|', at);
    out.emplace_back(placeholder.substr(at, bar == std::string_view::npos ? bar : bar - at));
    if (bar == std::string_view::npos) return out;
    at = bar + 1;
  }
}

const std::vector<FlagSpec>& global_flags() {
  static const std::vector<FlagSpec> flags = {{"repo", true},   {"key", true},    {"json", false},
                                              {"notary", true}, {"remote", true}, {"allow-test-clock", false}};
  return flags;
}

}  // namespace gitlocks::cli
