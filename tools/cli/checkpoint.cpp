#include "checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "fsio.h"
#include "gitlocks/replay.hpp"
#include "gitlocks/store.hpp"
#include "report.h"
#include "witness.h"

namespace gitlocks::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCheckpointFormat = "git-locks-trust-v1";

}  // namespace

Result<fs::path> git_common_dir(Context& ctx) {
  static std::map<std::string, fs::path> known;
  const std::string at = ctx.repo_dir.value_or(".");
  if (auto it = known.find(at); it != known.end()) return it->second;
  GITLOCKS_TRY(dir, repository_common_dir(at));
  return known.emplace(at, fs::path(dir)).first->second;
}

namespace {

Result<fs::path> checkpoint_file(Context& ctx) {
  GITLOCKS_TRY(dir, git_common_dir(ctx));
  GITLOCKS_TRY(remote, ctx.remote());
  fs::path base = dir / "git-locks" / "trust";
  if (remote) return base / "remotes" / (*remote + ".json");
  return base / "local.json";
}

std::optional<TrustState> load_checkpoint(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = canon_parse(ss.str(), CanonMode::strict);
  if (!doc.ok() || !doc->is_object() || doc->size() != 2 || doc->value("format", json()) != kCheckpointFormat ||
      !doc->contains("trust"))
    return std::nullopt;
  return parse_trust_state((*doc)["trust"]);
}

// Temporary file beside it (one per writer: writers of one clone race),
// renamed over it (fsio.h, Sync::none). Not fsynced: the checkpoint only saves work. After a
// crash it may be the previous one, empty or torn, and a checkpoint that is
// missing, malformed or names a commit that is not here is ignored (the
// history is replayed from the root), so durability would buy nothing but
// a disk flush on every publication (~0.9 ms of a 10 ms claim here).
Status save_checkpoint(const fs::path& file, const TrustState& t) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return make_error(Errc::store_write, "cannot create " + file.parent_path().string() + ": " + ec.message());
  auto text = canon_dump(json{{"format", kCheckpointFormat}, {"trust", trust_state_json(t)}});
  if (!text.ok()) return text.error();
  if (auto failed = fsio::write_file(file.string(), *text, {0644, fsio::Sync::none}))
    return make_error(Errc::store_write, fsio::message(*failed, file.string()));
  return Ok{};
}

}  // namespace

std::string recovery_command(Context& ctx, const std::string& last_valid, const Oid& tip) {
  auto remote = ctx.remote();
  if (remote.ok() && *remote) {
    const std::string& r = **remote;
    if (last_valid.empty())
      return "git push --force-with-lease=refs/locks/state:" + tip + " " + r + " :refs/locks/state";
    return "git push --force-with-lease=refs/locks/state:" + tip + " " + r + " " + last_valid + ":refs/locks/state";
  }
  if (last_valid.empty()) return "git update-ref -d refs/locks/state " + tip;
  return "git update-ref refs/locks/state " + last_valid + " " + tip;
}

Result<VerifierKeys> identity_keys(Context& ctx, ObjectStore& store, const Oid& tip, bool required) {
  return verifier_keys(store, tip, [&]() -> Result<const KeyPair*> {
    auto me = ctx.identity();
    if (me.ok()) return &(*me)->key;
    if (required) return me.error();
    return static_cast<const KeyPair*>(nullptr);
  });
}

namespace {

// One verification of the history ending at `tip` from `anchor` (or the root).
Result<Trusted> verify_tip(Context& ctx, ObjectStore& store, const std::optional<Oid>& tip,
                           const std::optional<TrustState>& anchor, const Witnessed& witnessed) {
  TrustOptions options;
  options.anchor = anchor;
  options.cosigned = witnessed.cosigned;
  options.cosign_quorum = witnessed.quorum;
  options.allow_test_clock = ctx.allow_test_clock;
  // A clone that trusts nothing yet starts at the newest checkpoint of the
  // owner (`git config locks.owner` when pinned; else the one the history
  // names, trusted on first use as its root would be).
  GITLOCKS_TRY(owner, ctx.pinned_owner());
  options.expected_owner = owner;
  options.start_at_checkpoint = true;
  GITLOCKS_TRY(signers, ctx.pinned_checkpoint_signers());
  options.checkpoint_signers = std::move(signers);
  // A PRIVATE store's commits are re-executed in full with the member's keys
  // (as `verify` does); without them, structurally. The snapshot carries
  // them, with the codec of the tip's epoch, for the command to read and
  // write the records (a public store asks for no key).
  VerifierKeys keys;
  if (tip) {
    GITLOCKS_TRY(k, identity_keys(ctx, store, *tip, false));
    keys = std::move(k);
    options.vault = keys.vault();
    options.verifier = keys.verifier;
  }
  return verified_snapshot(store, tip, options);
}

bool is_rewrite(const Result<Trusted>& r) {
  if (r.ok() || r.error().code != Errc::invalid_history) return false;
  auto it = r.error().fields.find("verdict");
  return it != r.error().fields.end() && it->second.text() == "rewrite";
}

}  // namespace

Result<Snapshot> verified_tip_snapshot(Context& ctx, const std::optional<Oid>& tip_read) {
  GITLOCKS_TRY(store, ctx.store());
  auto file = checkpoint_file(ctx);
  std::optional<TrustState> anchor = file.ok() ? load_checkpoint(*file) : std::nullopt;
  std::optional<Oid> tip = tip_read;
  // The witnesses this clone requires (docs/FORMAT.md "Witnesses"): what
  // they cosigned must be on the chain, and a fresh start may begin there.
  GITLOCKS_TRY(witnessed, witnesses_on_chain(ctx, *store, tip));
  auto trusted = verify_tip(ctx, *store, tip, anchor, witnessed);
  // The caller read the tip before the checkpoint was loaded: another writer
  // of this clone may have published and checkpointed in between, so a tip
  // that seems not to descend from the checkpoint may merely be stale. The
  // ref is read once more, now after the checkpoint (which only ever names a
  // commit that was on the ref before it was written): a tip that still does
  // not descend from it was rewritten or rolled back.
  if (is_rewrite(trusted) && anchor) {
    auto fresh = ctx.read_tip();
    if (!fresh.ok()) return fresh.error();
    if (*fresh != tip) {
      tip = *fresh;
      trusted = verify_tip(ctx, *store, tip, anchor, witnessed);
    }
  }
  // The tip's chain starts at a cut (docs/FORMAT.md "The cut") whose
  // earlier history this clone never fetched: the checkpoint is in that
  // history, on the remote's refs/locks/archive/PREV. Fetched, the replay
  // continues from the checkpoint across the cut.
  // So is a chain starting at a cut whose signer this clone does not trust
  // to start at (an invalid verdict naming `archived`): the history before
  // it, fetched, is replayed instead.
  if (!trusted.ok() && trusted.error().code == Errc::invalid_history && trusted.error().fields.count("archived") &&
      (anchor || !is_rewrite(trusted))) {
    const auto prev = Oid::from_hex(trusted.error().fields.at("archived").text());
    GITLOCKS_TRY(fetched, prev ? ctx.fetch_archive(prev) : Result<bool>(false));
    if (fetched) trusted = verify_tip(ctx, *store, tip, anchor, witnessed);
  }
  if (!trusted.ok()) {
    Error e = trusted.error();
    if (e.code == Errc::invalid_history && tip && e.fields["verdict"].text() == "owner-mismatch") {
      // Not this store's history gone wrong but another store than the one
      // pinned: no reset makes it that one.
      e.message += " (git config locks.owner pins the store's owner: this is another store)";
    } else if (e.code == Errc::invalid_history && tip) {
      const std::string recovery = recovery_command(ctx, e.fields["last_valid"].text(), *tip);
      e.fields["recovery"] = recovery;
      if (e.fields.count("archived"))
        e.message += " (its chain starts at a cut after " + e.fields["archived"].text() +
                     ", and that history is neither in this clone nor on the remote's " + std::string(kArchivePrefix) +
                     e.fields["archived"].text() + ")";
      e.message += e.fields["verdict"].text() == "rewrite"
                       ? ". If the rewrite is not the store owner's, the owner restores the verified tip: " + recovery +
                             " (after inspecting `git-locks verify`; `git-locks recover` does it)"
                       : ". The store's owner recovers: inspect `git-locks verify`, then " + recovery +
                             " (`git-locks recover` does it)";
    }
    return e;
  }
  // A replay that accepted a test clock never becomes a checkpoint: a later
  // command without --allow-test-clock would trust what it would refuse.
  if (trusted->trust && file.ok() && !ctx.allow_test_clock && !(anchor && *anchor == *trusted->trust))
    (void)save_checkpoint(*file, *trusted->trust);  // best effort: without it the next command replays
  return std::move(trusted->snapshot);
}

Result<Snapshot> verified_snapshot_unrecorded(Context& ctx, const Oid& tip) {
  GITLOCKS_TRY(store, ctx.store());
  auto file = checkpoint_file(ctx);
  std::optional<TrustState> anchor = file.ok() ? load_checkpoint(*file) : std::nullopt;
  std::optional<Oid> at = tip;
  GITLOCKS_TRY(witnessed, witnesses_on_chain(ctx, *store, at));
  GITLOCKS_TRY(trusted, verify_tip(ctx, *store, tip, anchor, witnessed));
  return std::move(trusted.snapshot);
}

void record_publication(Context& ctx, const Snapshot& base, const Candidate& c) {
  if (ctx.allow_test_clock) return;  // built on a history verified with a test clock accepted
  auto store = ctx.store();
  if (!store.ok()) return;
  auto t = trust_after(**store, base, c);
  auto file = checkpoint_file(ctx);
  if (t.ok() && file.ok()) (void)save_checkpoint(*file, *t);
}

std::optional<TrustState> load_trust_checkpoint(Context& ctx) {
  auto file = checkpoint_file(ctx);
  return file.ok() ? load_checkpoint(*file) : std::nullopt;
}

Status record_verified(Context& ctx, const TrustState& trust) {
  if (ctx.allow_test_clock) return Ok{};  // as in verified_tip_snapshot
  GITLOCKS_TRY(file, checkpoint_file(ctx));
  return save_checkpoint(file, trust);
}

Status forget_checkpoint(Context& ctx) {
  GITLOCKS_TRY(file, checkpoint_file(ctx));
  std::error_code ec;
  fs::remove(file, ec);
  if (ec) return make_error(Errc::store_write, "cannot remove " + file.string() + ": " + ec.message());
  return Ok{};
}

}  // namespace gitlocks::cli
