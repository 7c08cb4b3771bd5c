// cli.h — the host context every command gets, and the command handlers.
//
// A command is a short function: parse flags, call the core (through
// publish() for transitions), print. Business rules live in the core.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "commands.h"
#include "git.h"
#include "gitlocks/canon.hpp"
#include "gitlocks/store.hpp"
#include "identity.h"

namespace gitlocks::cli {

using Argv = std::vector<std::string>;

class Context {
 public:
  std::string op;                              // the command, as named in error objects
  bool json_output = false;                    // --json
  std::optional<std::string> repo_dir;         // --repo
  std::optional<std::string> key_flag;         // --key
  std::optional<int> attempts;                 // update-ref (or push) runs of the last publication
  std::optional<std::string> notary_flag;      // --notary URL (else git config locks.notary)
  std::optional<std::string> remote_flag;      // --remote NAME (else git config locks.remote)
  bool allow_test_clock = false;               // --allow-test-clock: accept a notary's test clock (tests)
  std::vector<std::string> extra_object_dirs;  // also read objects from these (a push's quarantine)

  const CommandDecl* command = nullptr;  // the command being run (commands.h)

  // Parses the flags `command` declares (commands.cpp) and the global
  // flags, which every command accepts. Errors: usage.
  Result<Parsed> parse(const Argv& argv);

  Git git() const { return Git(repo_dir, network_timeout_ms_); }
  // The repository's object store (libgit2), opened once. Errors: store_read.
  Result<ObjectStore*> store();
  // The actor's identity, loaded once. Errors: usage.
  Result<const Identity*> identity();
  // Starts reading the configuration we use (user.name, locks.remote,
  // locks.notary: one `git config` run) so that it overlaps other work.
  void prefetch_config();
  // A configuration value ("" when unset).
  std::string config(const std::string& key);
  // The duration setting `name` (as documented, e.g. locks.notaryReadTimeout)
  // in milliseconds, `fallback` when unset. Errors: usage, unless it is a
  // duration from 1 ms to `max_ms`.
  Result<std::int64_t> duration_config(const std::string& name, std::int64_t fallback, std::int64_t max_ms);
  // The store owner's key pinned by `git config locks.owner` (nullopt when
  // unset). Errors: usage, unless it is 64 hex digits (read in lower case).
  Result<std::optional<std::string>> pinned_owner();
  // The keys besides the owner whose checkpoints a fresh start may trust
  // (`git config locks.checkpointSigners`: 64-hex keys separated by spaces
  // or commas; docs/FORMAT.md "Checkpoints by policy"). Errors: usage.
  Result<std::vector<std::string>> pinned_checkpoint_signers();
  // The items of a list setting (`key` in lower case), separated by spaces,
  // commas or tabs; none when unset.
  std::vector<std::string> config_list(const std::string& key);
  // The display name ("" when user.name is unset).
  std::string display_name() { return config("user.name"); }

  // Where the store lives: nullopt for this repository's refs/locks/state,
  // else the name of the remote whose refs/locks/state it is (--remote,
  // else git config locks.remote; "" or --remote "" means local). Errors:
  // usage (not a usable remote name, or a bad `locks.timeout`: the most
  // one fetch or push of the remote may take, default 30 s).
  Result<std::optional<std::string>> remote();
  // The local ref holding the store's tip: refs/locks/state, or for a
  // remote store refs/locks/remotes/NAME/state (its tip as last fetched).
  Result<std::string> state_ref();
  // The store's current tip; a remote store is fetched first, so every call
  // is a fresh snapshot. Errors: store_read, usage.
  Result<std::optional<Oid>> read_tip();
  // A remote store's history before its cuts (docs/FORMAT.md "The cut"):
  // fetches refs/locks/archive/PREV (every archive ref without `prev`) into
  // refs/locks/remotes/NAME/archive/. False for a local store (its archive
  // is here). Errors: store_read, usage.
  Result<bool> fetch_archive(const std::optional<Oid>& prev);
  // Starts one compare-and-swap of the store's refs/locks/state: a local
  // update-ref, or a push to the remote.
  Result<PendingCas> begin_cas();
  // After a push of `pushed` built on `from`: the clone's cache of the
  // remote tip (state_ref()) moves from `from` to `pushed`, so that the
  // next publication can plan without a fetch. If another command of this
  // clone moved the cache meanwhile, nothing changes (the next snapshot
  // settles it); failures are ignored: it is a cache.
  void remember_pushed(const Oid& pushed, const std::optional<Oid>& from);

  // Reports `e` on stderr (one JSON line) and returns its exit status.
  int fail(const Error& e);
  // Prints a success: `obj` as one JSON line with --json, else `human`.
  int done(const json& obj, const std::string& human);

 private:
  std::unique_ptr<ObjectStore> store_;
  std::optional<Identity> identity_;
  std::optional<Git::PendingConfigs> config_;
  std::optional<std::optional<std::string>> remote_;
  std::int64_t network_timeout_ms_ = kNetworkTimeoutMs;
};

// The contents of a file, or of stdin for "-". Errors: usage.
Result<std::string> read_input(const std::string& name);

// `git bundle create` of the store (PATH, or "-" for stdout): the ref
// refs/locks/state at `tip` (the store's tip as just read); with `archive`,
// also every refs/locks/archive/PREV (docs/FORMAT.md "The cut": the history
// before the store's cuts, fetched first from a remote store's server).
// Errors: store_read when git cannot run; git's own failure is in the result.
Result<ProcessResult> bundle_of_store(Context& ctx, const Oid& tip, const std::string& path, bool archive = false);

// `name` when it can name a remote in refs/locks/remotes/NAME/state
// (letters, digits, - _ . /, no "..", "//", "/.", ".lock"). Errors: usage.
Result<std::string> check_remote_name(const std::string& name);

// Command handlers (tools/cli/cmd_*.cpp); main.cpp holds the table.
int cmd_init(Context& ctx, const Argv& argv);
int cmd_claim(Context& ctx, const Argv& argv);
int cmd_extend(Context& ctx, const Argv& argv);
int cmd_release(Context& ctx, const Argv& argv);
int cmd_handoff(Context& ctx, const Argv& argv);
int cmd_watch(Context& ctx, const Argv& argv);
int cmd_sweep(Context& ctx, const Argv& argv);
int cmd_sem_acquire(Context& ctx, const Argv& argv);
int cmd_sem_release(Context& ctx, const Argv& argv);
int cmd_batch(Context& ctx, const Argv& argv);
int cmd_run(Context& ctx, const Argv& argv);
int cmd_status(Context& ctx, const Argv& argv);
int cmd_fence(Context& ctx, const Argv& argv);
int cmd_wait(Context& ctx, const Argv& argv);
int cmd_log(Context& ctx, const Argv& argv);
int cmd_whoami(Context& ctx, const Argv& argv);
int cmd_verify(Context& ctx, const Argv& argv);
int cmd_export(Context& ctx, const Argv& argv);
int cmd_member_add(Context& ctx, const Argv& argv);
int cmd_member_remove(Context& ctx, const Argv& argv);
int cmd_member_rekey(Context& ctx, const Argv& argv);
int cmd_member_list(Context& ctx, const Argv& argv);
int cmd_hook_install(Context& ctx, const Argv& argv);
int cmd_hook_check(Context& ctx, const Argv& argv);
int cmd_hook_agent(Context& ctx, const Argv& argv);
int cmd_check(Context& ctx, const Argv& argv);
int cmd_policy_show(Context& ctx, const Argv& argv);
int cmd_policy_set(Context& ctx, const Argv& argv);
int cmd_checkpoint(Context& ctx, const Argv& argv);
int cmd_web(Context& ctx, const Argv& argv);
int cmd_mcp(Context& ctx, const Argv& argv);
int cmd_notary(Context& ctx, const Argv& argv);
int cmd_witness_keygen(Context& ctx, const Argv& argv);
int cmd_witness_serve(Context& ctx, const Argv& argv);
int cmd_witness_cosign(Context& ctx, const Argv& argv);
int cmd_guard_time_enable(Context& ctx, const Argv& argv);
int cmd_guard_time_resume(Context& ctx, const Argv& argv);
int cmd_guard_time_history(Context& ctx, const Argv& argv);
int cmd_guard_time_migrate(Context& ctx, const Argv& argv);
int cmd_guard_time_disable(Context& ctx, const Argv& argv);
int cmd_doctor(Context& ctx, const Argv& argv);
int cmd_migrate(Context& ctx, const Argv& argv);
int cmd_completion_bash(Context& ctx, const Argv& argv);
int cmd_capabilities(Context& ctx, const Argv& argv);
int cmd_recover(Context& ctx, const Argv& argv);

// git-locks as Git's gpg.ssh.program (cmd_sshsign.cpp): `args` are the
// arguments after the program name and begin with "-Y". `-Y sign` signs
// with the actor key ($GIT_LOCKS_KEY, else -f KEYFILE); any other operation
// runs OpenSSH's ssh-keygen with the same arguments. Exit 0, or 255 with a
// line on stderr, as ssh-keygen.
int cmd_ssh_keygen(const Argv& args);

}  // namespace gitlocks::cli
