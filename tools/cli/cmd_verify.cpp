// Verification commands: verify (SPEC §7, replay of the whole history with
// fork detection) and export (a Git bundle of refs/locks/state for other
// hosts, docs/FORMAT.md "Bundles").
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "checkpoint.h"
#include "cli.h"
#include "fsio.h"
#include "gitlocks/hex.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/vault.hpp"
#include "progress.h"
#include "publish.h"
#include "report.h"
#include "witness.h"

namespace gitlocks::cli {
namespace {

namespace fs = std::filesystem;

Result<fs::path> git_dir(Context& ctx) {
  GITLOCKS_TRY(r, ctx.git().run({"rev-parse", "--absolute-git-dir"}));
  if (r.status != 0) return make_error(Errc::store_read, "git rev-parse --absolute-git-dir: " + r.err);
  std::string dir = r.out;
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  return fs::path(dir);
}

// $GIT_DIR/git-locks/verified-tip (for a remote store
// $GIT_DIR/git-locks/remotes/NAME/verified-tip): the last tip this clone
// verified as valid.
Result<fs::path> verified_tip_file(Context& ctx) {
  GITLOCKS_TRY(dir, git_dir(ctx));
  GITLOCKS_TRY(remote, ctx.remote());
  if (remote) return dir / "git-locks" / "remotes" / *remote / "verified-tip";
  return dir / "git-locks" / "verified-tip";
}

std::optional<Oid> read_verified_tip(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return Oid::from_hex(line);
}

// Written durably (fsio.h): a temporary file beside it, renamed over it.
Status write_verified_tip(const fs::path& file, const Oid& tip) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return make_error(Errc::store_write, "cannot create " + file.parent_path().string() + ": " + ec.message());
  if (auto failed = fsio::write_file(file.string(), tip + "\n"))
    return make_error(Errc::store_write, fsio::message(*failed, file.string()));
  return Ok{};
}

Status forget_verified_tip(const fs::path& file) {
  std::error_code ec;
  fs::remove(file, ec);
  if (ec) return make_error(Errc::store_write, "cannot remove " + file.string() + ": " + ec.message());
  return Ok{};
}

// Whether `remembered` is `tip` or one of its ancestors (`git merge-base
// --is-ancestor`); a commit that no longer exists is not.
Result<bool> descends_from(Context& ctx, ObjectStore& store, const Oid& remembered, const Oid& tip) {
  if (!store.read_commit(remembered).ok()) return false;
  // Across cuts (docs/FORMAT.md "The cut"): a chain that starts at a cut
  // continues the chain its prev ends, fetched from the remote's archive
  // when this clone does not have it.
  for (Oid at = tip;;) {
    if (remembered == at) return true;
    GITLOCKS_TRY(r, ctx.git().run({"merge-base", "--is-ancestor", remembered.hex(), at.hex()}));
    if (r.status == 0) return true;
    if (r.status != 1) return make_error(Errc::store_read, "git merge-base --is-ancestor: " + r.err);
    GITLOCKS_TRY(roots, ctx.git().run({"rev-list", "--first-parent", "--max-parents=0", at.hex()}));
    if (roots.status != 0) return make_error(Errc::store_read, "git rev-list: " + roots.err);
    std::string root_hex = roots.out;
    while (!root_hex.empty() && root_hex.back() == '\n') root_hex.pop_back();
    const auto root = Oid::from_hex(root_hex);
    const std::optional<Oid> prev = root ? cut_prev(store, *root) : std::nullopt;
    if (!prev) return false;
    if (!store.read_commit(*prev).ok()) {
      GITLOCKS_TRY(fetched, ctx.fetch_archive(prev));
      if (!fetched || !store.read_commit(*prev).ok()) return false;
    }
    at = *prev;
  }
}

// A bundle whose one ref is refs/locks/state at `tip` (a remote store's tip
// lives under another local name): made in a throw-away bare repository that
// borrows our objects through its alternates file.
Result<ProcessResult> bundle_of_remote_tip(Context& ctx, const Oid& tip, const std::string& path, bool archive) {
  GITLOCKS_TRY(dir, git_dir(ctx));
  std::error_code ec;
  const fs::path tmp = dir / "git-locks" / ("export." + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return make_error(Errc::store_write, "cannot create " + tmp.string() + ": " + ec.message());
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{tmp};
  const Git bare(tmp.string());
  GITLOCKS_TRY(init, bare.run({"init", "--bare", "-q", "."}));
  if (init.status != 0) return init;
  {
    std::ofstream alt(tmp / "objects" / "info" / "alternates", std::ios::trunc);
    alt << (dir / "objects").string() << "\n";
    if (!alt) return make_error(Errc::store_write, "cannot write the alternates of " + tmp.string());
  }
  GITLOCKS_TRY(set, bare.run({"update-ref", std::string(kStateRef), tip.hex()}));
  if (set.status != 0) return set;
  std::vector<std::string> args{"bundle", "create", "-q", path, std::string(kStateRef)};
  if (archive) {
    // The remote's archive refs, fetched now, under their own names.
    GITLOCKS_TRY(fetched, ctx.fetch_archive(std::nullopt));
    (void)fetched;
    GITLOCKS_TRY(remote, ctx.remote());
    const std::string prefix = "refs/locks/remotes/" + remote.value_or("") + "/archive/";
    GITLOCKS_TRY(list, ctx.git().run({"for-each-ref", "--format=%(objectname) %(refname)", prefix}));
    if (list.status != 0) return list;
    for (std::string_view line : split_fields(list.out, '\n')) {
      const std::size_t sp = line.find(' ');
      if (sp == std::string_view::npos) continue;
      const std::string ref = std::string(kArchivePrefix) + std::string(line.substr(sp + 1 + prefix.size()));
      GITLOCKS_TRY(kept, bare.run({"update-ref", ref, std::string(line.substr(0, sp))}));
      if (kept.status != 0) return kept;
      args.push_back(ref);
    }
  }
  return bare.run(args);
}

}  // namespace

Result<ProcessResult> bundle_of_store(Context& ctx, const Oid& tip, const std::string& path, bool archive) {
  GITLOCKS_TRY(remote, ctx.remote());
  if (remote) return bundle_of_remote_tip(ctx, tip, path, archive);
  std::vector<std::string> args{"bundle", "create", "-q", path, std::string(kStateRef)};
  if (archive) args.push_back("--glob=" + std::string(kArchivePrefix) + "*");
  return ctx.git().run(args);
}

namespace {

std::string short_id(const std::string& s) { return s.substr(0, 12); }

std::string human_verdict(const Verdict& v) {
  std::string line = v.ok ? "ok      " : "INVALID ";
  line += v.commit + " " + (v.command.empty() ? "?" : v.command);
  if (!v.actor.empty()) line += " by " + short_id(v.actor);
  if (v.time) line += " at " + std::to_string(*v.time);
  if (v.level == VerifyLevel::structural) line += " (structural)";
  if (!v.ok) line += ": " + v.reason + (v.detail.empty() ? "" : " — " + v.detail);
  return line + "\n";
}

constexpr const char* kUnexpectedStoreNote =
    "not the expected store: its owner or notary pins are not the ones given (--expect-owner, --expect-pins); "
    "check where it came from - resetting the ref cannot repair this";

// --expect-owner KEY and --expect-pins AUDIENCE:SERVICE_KEY (keys: 64 hex,
// either case; the audience is everything before the last ':').
Result<std::pair<std::optional<std::string>, std::optional<Pins>>> expected_pins_of(
    const std::optional<std::string>& owner, const std::optional<std::string>& pins) {
  auto key = [](std::string k, const std::string& what) -> Result<std::string> {
    for (auto& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!is_hex(k, 64)) return make_error(Errc::usage, what + ": expected a key of 64 hex digits, got '" + k + "'");
    return k;
  };
  std::pair<std::optional<std::string>, std::optional<Pins>> out;
  if (owner) {
    GITLOCKS_TRY(k, key(*owner, "--expect-owner"));
    out.first = k;
  }
  if (pins) {
    const auto colon = pins->rfind(':');
    if (colon == std::string::npos || colon == 0)
      return make_error(Errc::usage, "--expect-pins: expected AUDIENCE:SERVICE_KEY, got '" + *pins + "'");
    GITLOCKS_TRY(k, key(pins->substr(colon + 1), "--expect-pins"));
    out.second = Pins{pins->substr(0, colon), k};
  }
  return out;
}

}  // namespace

int cmd_verify(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->has("full") && a->value("from"))
    return ctx.fail(make_error(Errc::usage, "verify --full replays from the root: it takes no --from"));
  auto expected = expected_pins_of(a->value("expect-owner"), a->value("expect-pins"));
  if (!expected.ok()) return ctx.fail(expected.error());
  const bool pinned = expected->first || expected->second;
  if (pinned && a->value("from"))
    return ctx.fail(
        make_error(Errc::usage, "--expect-owner and --expect-pins replay from the root: they take no --from"));
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto ref = ctx.read_tip();
  if (!ref.ok()) return ctx.fail(ref.error());
  if (!*ref) return ctx.fail(make_error(Errc::store_read, no_store_message(ctx)));
  const Oid tip = **ref;
  // From the root: a remote store's history before its cuts too.
  if (a->has("full"))
    if (auto fetched = ctx.fetch_archive(std::nullopt); !fetched.ok()) return ctx.fail(fetched.error());

  ReplayOptions options;
  options.allow_test_clock = ctx.allow_test_clock;  // global flag, before or after the command
  options.expected_owner = expected->first;
  // `git config locks.owner` pins the owner as --expect-owner does, without
  // asking for a replay from the root.
  auto config_owner = ctx.pinned_owner();
  if (!config_owner.ok()) return ctx.fail(config_owner.error());
  if (!options.expected_owner) options.expected_owner = *config_owner;
  auto signers = ctx.pinned_checkpoint_signers();
  if (!signers.ok()) return ctx.fail(signers.error());
  options.checkpoint_signers = *signers;
  // The witnesses this clone requires (docs/FORMAT.md "Witnesses"): a tip
  // whose chain lacks a checkpoint one of them cosigned is a split view.
  {
    std::optional<Oid> at = tip;
    auto witnessed = witnesses_on_chain(ctx, **store, at);
    if (!witnessed.ok()) return ctx.fail(witnessed.error());
    options.cosigned = witnessed->cosigned;
    options.cosign_quorum = witnessed->quorum;
  }
  // A store whose owner is not the pinned one is judged from the root, where
  // its verdict is owner-mismatch (as with --expect-owner): no trusted
  // commit of it is continued from. Its owner never changes, so the tip's
  // policy names it.
  bool other_owner = false;
  if (*config_owner && !expected->first) {
    const std::optional<Policy> pol = recorded_policy(**store, tip);
    other_owner = !pol || pol->owner != **config_owner;
  }
  const bool from_root = pinned || other_owner;
  options.expected_pins = expected->second;
  if (auto from = a->value("from")) {
    auto r = ctx.git().run({"rev-parse", "--verify", "--quiet", *from + "^{commit}"});
    if (!r.ok()) return ctx.fail(r.error());
    std::string id = r->out;
    while (!id.empty() && id.back() == '\n') id.pop_back();
    const auto from_id = r->status == 0 ? Oid::from_hex(id) : std::nullopt;
    if (!from_id) return ctx.fail(make_error(Errc::usage, "--from: no such commit '" + *from + "'"));
    options.from = from_id;
  }
  // A PRIVATE store is verified in full with a member's keys; any other key
  // verifies it structurally. A broken key file is an error, not "no key".
  // The key is loaded only for a PRIVATE store (loading may create one).
  auto keys = identity_keys(ctx, **store, tip, true);
  if (!keys.ok()) return ctx.fail(keys.error());
  const std::string& verifier = keys->verifier;  // whose keys verified it (the checkpoint's "verifier")
  const bool is_private = keys->member.is_private;
  const std::optional<Vault>& vault = keys->member.vault;
  options.vault = keys->vault();

  // Fork detection against the tip this clone last verified.
  auto memo = verified_tip_file(ctx);
  if (!memo.ok()) return ctx.fail(memo.error());
  std::optional<Oid> remembered = read_verified_tip(*memo);
  std::optional<Oid> forgotten;
  std::optional<Oid> fork_from;
  if (a->has("accept-rewrite")) {
    forgotten = remembered;
    if (auto st = forget_checkpoint(ctx); !st.ok()) return ctx.fail(st.error());
    if (remembered) {
      auto st = forget_verified_tip(*memo);
      if (!st.ok()) return ctx.fail(st.error());
    }
    remembered.reset();
  } else if (remembered) {
    auto d = descends_from(ctx, **store, *remembered, tip);
    if (!d.ok()) return ctx.fail(d.error());
    if (!*d) fork_from = remembered;
  }
  // The trust checkpoint every command of this clone keeps (docs/FORMAT.md):
  // a tip below it is a rewrite, as for every other command; by default the
  // replay continues from it (`--full`: from the root), when it is usable
  // by this verifier (usable_anchor: it agrees with its commit, and it is
  // full or our own).
  const bool user_from = options.from.has_value();
  std::optional<TrustState> anchor;
  if (!a->has("accept-rewrite"))
    if (auto checkpoint = load_trust_checkpoint(ctx); checkpoint && (*store)->read_commit(checkpoint->commit).ok()) {
      auto d = descends_from(ctx, **store, checkpoint->commit, tip);
      if (!d.ok()) return ctx.fail(d.error());
      if (!*d) {
        if (!fork_from) fork_from = checkpoint->commit;
      } else if (!user_from && !a->has("full") && !from_root) {
        anchor = usable_anchor(**store, *checkpoint, verifier);
        if (anchor) options.from = anchor->commit;
      }
    }
  // Nothing trusted yet (a fresh clone): start at the newest checkpoint in the
  // history, as every command does (trust.hpp checkpoint_anchor); `--full`
  // replays from the root and checks every checkpoint on the way.
  std::optional<TrustState> start;
  if (!anchor && !fork_from && !user_from && !a->has("full") && !from_root && !a->has("accept-rewrite")) {
    auto found = checkpoint_anchor(**store, tip, options, verifier);
    if (!found.ok()) return ctx.fail(found.error());
    start = *found;
    if (start) {
      anchor = start;
      options.from = start->commit;
    }
  }

  // A replay from the bottom of a chain that starts at a cut it cannot start
  // at (signed by a key this clone does not trust for that): the history
  // before the cut, on the remote's archive ref, is fetched first.
  if (!options.from && !a->has("full")) {
    auto needed = untrusted_cut_start(**store, tip, options.checkpoint_signers);
    if (!needed.ok()) return ctx.fail(needed.error());
    if (*needed)
      if (auto fetched = ctx.fetch_archive(**needed); !fetched.ok()) return ctx.fail(fetched.error());
  }

  // Git-style progress on a terminal's stderr (progress.h), never in the way
  // of the verdicts when stdout is the same terminal.
  Progress progress("Verifying commits", a->has("quiet"));
  const bool stdout_tty = ::isatty(STDOUT_FILENO) == 1;
  options.progress = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
  std::string out;
  auto flush = [&] {
    if (out.empty()) return;
    if (stdout_tty) progress.clear();
    std::fwrite(out.data(), 1, out.size(), stdout);
    if (stdout_tty) std::fflush(stdout);
    out.clear();
  };
  auto summary = replay_chain(**store, tip, options, [&](const Verdict& v) {
    if (ctx.json_output) {
      auto line = canon_dump(verdict_json(v));
      out += line.ok() ? *line : json_line(verdict_json(v));
      out += '\n';
    } else {
      out += human_verdict(v);
    }
    if (out.size() > (1u << 16) || (stdout_tty && progress.shown())) flush();
  });
  flush();
  progress.finish();
  if (!summary.ok()) {
    std::fflush(stdout);
    if (user_from && summary.error().code == Errc::invalid)
      return ctx.fail(make_error(Errc::usage, "--from: " + summary.error().message));
    return ctx.fail(summary.error());
  }

  // --full promises the history from the store's creation: a chain that
  // starts at a cut whose earlier history is neither here nor on the
  // remote's archive is not that.
  if (a->has("full") && summary->cut_start) {
    const std::optional<Oid> prev = cut_prev(**store, *summary->cut_start);
    return ctx.fail(make_error(
        Errc::store_read,
        "verify --full: the history before the cut " + summary->cut_start->hex() + " (" +
            (prev ? archive_ref(*prev) : std::string("?")) +
            ") is neither in this clone nor on the store's remote, so it cannot be replayed from the root; the " +
            std::to_string(summary->commits) + " commit(s) from the cut on " +
            (summary->invalid == 0 ? "verified" : "did not all verify")));
  }
  const bool valid = summary->invalid == 0 && !fork_from;
  if (valid) {
    auto st = write_verified_tip(*memo, tip);
    if (!st.ok()) return ctx.fail(st.error());
    // The whole history verified (from the root, or from the checkpoint):
    // every writer of this clone may continue from here (docs/FORMAT.md).
    if (!user_from) {
      auto cp = record_verified(ctx, continued_trust(*summary, anchor, verifier));
      if (!cp.ok()) return ctx.fail(cp.error());
    }
  }
  // How the store's owner recovers: reset the ref to the last valid commit.
  // Not when the first invalid commit only fails an expectation
  // (--expect-owner/--expect-pins): the history is another store's, and no
  // reset makes it the expected one.
  std::optional<std::string> recovery;
  const std::string first_reason = summary->first_invalid_verdict ? summary->first_invalid_verdict->reason : "";
  const bool unexpected_store = first_reason == "owner-mismatch" || first_reason == "pins-mismatch";
  if (summary->first_invalid && !unexpected_store) {
    std::string last_valid;
    if (auto below = chain_predecessor(**store, *summary->first_invalid)) last_valid = below->hex();
    recovery = recovery_command(ctx, last_valid, tip);
  }
  json s = {{"tip", tip},
            {"commits", summary->commits},
            {"invalid", summary->invalid},
            {"structural", summary->structural},
            {"ok", valid},
            {"first_invalid", summary->first_invalid ? json(*summary->first_invalid) : json(nullptr)},
            {"from", user_from ? json(*options.from) : json(nullptr)},
            {"checkpoint", anchor && !start ? json(anchor->commit) : json(nullptr)},
            {"start", user_from ? "from"
                      : start   ? "checkpoint"
                      : anchor  ? "trust-checkpoint"
                                : "root"},
            {"start_commit", anchor      ? json(anchor->commit)
                             : user_from ? json(*options.from)
                                         : json(nullptr)},
            {"checkpoints", {{"valid", summary->checkpoints}, {"invalid", summary->invalid_checkpoints}}},
            {"cut_start", summary->cut_start ? json(*summary->cut_start) : json(nullptr)},
            {"recovery", recovery ? json(*recovery) : json(nullptr)}};
  std::string text;
  if (fork_from) {
    s["fork"] = {{"verified_tip", *fork_from}, {"tip", tip}};
    text += "fork: refs/locks/state is at " + tip + ", which does not descend from the last verified tip " +
            *fork_from + " (history rewritten); run `git-locks verify --accept-rewrite` to accept it\n";
  }
  if (a->has("accept-rewrite")) {
    s["accepted_rewrite"] = forgotten ? json(*forgotten) : json(nullptr);
    text += forgotten ? "accepted rewrite: forgot the last verified tip " + *forgotten + "\n"
                      : std::string("accepted rewrite: no verified tip was remembered\n");
  }
  if (needs_structural_note(*summary, keys->member)) {
    s["note"] = std::string(kStructuralNote);
    text += std::string(kStructuralNote) + " for " + std::to_string(summary->structural) + " commit(s)" +
            (is_private && !vault ? " (this key is not a member of the PRIVATE store)" : "") + "\n";
  }
  // Says which it did: from the checkpoint (new commits only) or from the root.
  const std::string what =
      start
          ? std::to_string(summary->commits) + " commit(s) since the owner's checkpoint at " +
                short_id(start->commit.hex()) + ", trusted as the start of this clone (`--full` replays from the root)"
      : anchor ? std::to_string(summary->commits) + " new commit(s) since the trust checkpoint at " +
                     short_id(anchor->commit.hex()) + " (`--full` replays from the root)"
               : std::to_string(summary->commits) + " commit(s)" + (user_from ? std::string() : " from the root");
  if (summary->checkpoints + summary->invalid_checkpoints > 0)
    text += std::to_string(summary->checkpoints) + " checkpoint(s) on the way matched the replayed history" +
            (summary->invalid_checkpoints ? ", " + std::to_string(summary->invalid_checkpoints) + " did not"
                                          : std::string()) +
            "\n";
  text += valid ? "verified " + what + " up to " + tip + ": all valid\n"
                : "verified " + what + " up to " + tip + ": " + std::to_string(summary->invalid) + " invalid" +
                      (summary->first_invalid ? ", first at " + *summary->first_invalid : std::string()) +
                      (fork_from ? std::string(", history rewritten") : std::string()) + "\n";
  if (recovery)
    text +=
        "to recover, the store's owner resets refs/locks/state to the last valid commit (after inspecting the "
        "verdicts above): " +
        *recovery + "\n";
  if (unexpected_store) {
    s["note"] = s.contains("note") ? s["note"].get<std::string>() + "; " + kUnexpectedStoreNote
                                   : std::string(kUnexpectedStoreNote);
    text += std::string(kUnexpectedStoreNote) + "\n";
  }
  if (ctx.json_output) {
    std::fflush(stdout);
    std::string line = json_line(s) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return valid ? kExitOk : kExitRefused;
}

int cmd_export(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto file = a->value("bundle");
  if (!file || file->empty()) return ctx.fail(make_error(Errc::usage, "export needs --bundle FILE"));
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto ref = ctx.read_tip();
  if (!ref.ok()) return ctx.fail(ref.error());
  if (!*ref) return ctx.fail(make_error(Errc::store_read, no_store_message(ctx)));
  std::error_code ec;
  const std::string path = fs::absolute(*file, ec).string();  // git runs with -C DIR
  if (ec) return ctx.fail(make_error(Errc::usage, "bad path " + *file));
  const bool archive = a->has("archive");
  auto made = bundle_of_store(ctx, **ref, path, archive);
  if (!made.ok()) return ctx.fail(made.error());
  if (made->status != 0)
    return ctx.fail(
        make_error(Errc::store_write, "git bundle create exited " + std::to_string(made->status) + ": " + made->err));
  return ctx.done({{"bundle", path}, {"ref", kStateRef}, {"tip", **ref}, {"archive", archive}},
                  "wrote " + path + " (" + std::string(kStateRef) + " at " + **ref +
                      (archive ? ", with the history before its cuts (refs/locks/archive/*)" : "") + ")");
}

}  // namespace gitlocks::cli
