// guard-time enable|resume|history: the owner's activation of trusted
// admission time (SPEC §6, seed 002), with a recoverable operation; and
// guard-time migrate|disable: the owner's change of notary or switch-off
// (guard-time-set), plain publications whose expected policy hash makes a
// rerun safe.
//
// Both go through the pipeline of every writer (publish.h: verified
// snapshot, core planning, the notary, compare-and-swap), with hooks that
// make the operation durable. enable plans the owner-signed admin transition
// (the core checks owner, expected policy hash, pending keyring,
// ALREADY_ENABLED and different pins), verifies the whole source history in
// full (from the root; a PRIVATE store with the owner's keys), checks the
// notary's discovery against the pins, and persists the exact candidate —
// signed packet, admission request, source and result — under the caller's
// operation id
// ($GIT_DIR/git-locks/guard-time/ID.json, 0600, fsynced with its directory)
// BEFORE it is sent. The commit is written only after admission, so a lost
// answer is recovered by `resume ID`: it finds the packet in the verified
// history of refs/locks/state (ACCEPTED), or re-sends the identical request
// at the unchanged source; a changed source fails explicitly (FAILED, exit 1,
// for resume and for enable with that id alike).
//
// Test seam: GIT_LOCKS_TEST_CRASH_AFTER=admit|publish exits abruptly (status
// 137) after the notary answered, or after the ref moved, before the result
// is recorded.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "checkpoint.h"
#include "cli.h"
#include "fsio.h"
#include "gitlocks/attest.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/transition.hpp"
#include "notary_client.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

constexpr std::string_view kOperationFormat = "gitlocks-guard-time-operation-v1";
constexpr const char* kPendingNote =
    "a local PENDING operation is not remote acceptance: run `git-locks guard-time resume ID` to verify or finish it";

std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void crash_after(std::string_view point) {
  const char* at = std::getenv("GIT_LOCKS_TEST_CRASH_AFTER");
  if (at && point == at) std::_Exit(137);
}

Status check_operation_id(const std::string& id) {
  const bool ok = !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
  if (!ok) return make_error(Errc::usage, "an operation id is 1..128 characters of [A-Za-z0-9_-]");
  return Ok{};
}

Result<std::string> operations_dir(Context& ctx, bool create) {
  GITLOCKS_TRY(r, ctx.git().run({"rev-parse", "--absolute-git-dir"}));
  if (r.status != 0) return make_error(Errc::store_read, "not a git repository: " + r.err);
  std::string dir = r.out.substr(0, r.out.find('\n')) + "/git-locks";
  if (create) ::mkdir(dir.c_str(), 0700);
  dir += "/guard-time";
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error(Errc::store_write, "cannot create " + dir);
  return dir;
}

// Writes the record durably (fsio.h): temp file (0600), fsync, rename, fsync dir.
Status save_record(const std::string& dir, const json& rec) {
  const std::string id = rec["operation_id"].get<std::string>();
  const std::string path = dir + "/" + id + ".json";
  if (auto failed = fsio::write_file(path, rec.dump() + "\n", {0600}))
    return make_error(Errc::store_write, fsio::message(*failed, path));
  return Ok{};
}

Result<std::optional<json>> load_record(const std::string& dir, const std::string& id) {
  const std::string path = dir + "/" + id + ".json";
  if (::access(path.c_str(), F_OK) != 0) return std::optional<json>{};
  GITLOCKS_TRY(text, read_input(path));
  json rec = json::parse(text, nullptr, false);
  // Every member a reader of the record uses, with its type: a damaged or
  // hand-edited file is refused here, never read as something it is not.
  auto is = [&](const char* k, bool (json::*type)() const noexcept) {
    auto it = rec.find(k);
    return it != rec.end() && ((*it).*type)();
  };
  auto absent_or = [&](const char* k, bool (json::*type)() const noexcept) {
    auto it = rec.find(k);
    return it == rec.end() || it->is_null() || ((*it).*type)();
  };
  const bool well_formed =
      !rec.is_discarded() && rec.is_object() && member_is(rec, "format", kOperationFormat) &&
      (member_is(rec, "status", "PENDING") || member_is(rec, "status", "ACCEPTED") ||
       member_is(rec, "status", "FAILED")) &&
      is("created_at_ms", &json::is_number_integer) && is("updated_at_ms", &json::is_number_integer) &&
      is("input", &json::is_object) && rec["input"].contains("audience") && rec["input"]["audience"].is_string() &&
      rec["input"].contains("service_key") && rec["input"]["service_key"].is_string() &&
      is("packet", &json::is_string) && is("request", &json::is_string) && is("source_state", &json::is_string) &&
      is("result_state", &json::is_string) && is("source_commit", &json::is_string) &&
      Oid::from_hex(rec["source_commit"].get<std::string>()) && absent_or("commit", &json::is_string) &&
      (!rec.contains("commit") || rec["commit"].is_null() || Oid::from_hex(rec["commit"].get<std::string>())) &&
      absent_or("admitted_at_ms", &json::is_number_integer) && absent_or("detail", &json::is_string) &&
      absent_or("remote", &json::is_string) && absent_or("store", &json::is_string);
  if (!well_formed) return make_error(Errc::store_read, path + " is not a guard-time operation record");
  // The record's own id names the file it is saved to again: it must be the
  // id it was found under (and so a valid one), never a path of its own.
  if (!rec.contains("operation_id") || rec["operation_id"] != id)
    return make_error(Errc::store_read, path + " is not the record of operation " + id + " (it names " +
                                            (rec.contains("operation_id") ? rec["operation_id"] : json()).dump() + ")");
  return std::optional<json>{rec};
}

Pins pins_of(const json& rec) {
  return Pins{rec["input"]["audience"].get<std::string>(), rec["input"]["service_key"].get<std::string>()};
}

// The commit of the verified history (from `tip` back to the operation's
// source) that carries exactly the saved packet, if any.
Result<std::optional<Oid>> find_accepted(ObjectStore& store, const std::optional<Oid>& tip, const json& rec) {
  const auto source = Oid::from_hex(rec["source_commit"].get<std::string>());
  std::optional<Oid> at = tip;
  while (at && at != source) {
    GITLOCKS_TRY(tc, read_transition_commit(store, *at));
    if (tc.packet_stored == rec["packet"].get<std::string>()) return std::optional<Oid>{*at};
    GITLOCKS_TRY(c, store.read_commit(*at));
    at = chain_parent(store, *at, c);  // across a cut too
  }
  return std::optional<Oid>{};
}

int report(Context& ctx, const json& rec, const std::string& human) {
  json out = {{"op", ctx.op},
              {"operation_id", rec["operation_id"]},
              {"status", rec["status"]},
              {"commit", rec.value("commit", json())}};
  if (rec.contains("admitted_at_ms")) out["admitted_at_ms"] = rec["admitted_at_ms"];
  return ctx.done(out, human);
}

// A FAILED operation is final: enable and resume both refuse it (exit 1).
int refuse_failed(Context& ctx, const json& rec) {
  return ctx.fail(make_error(Errc::stale_generation, "operation " + rec["operation_id"].get<std::string>() +
                                                         " FAILED: " + rec.value("detail", std::string("unknown")) +
                                                         "; start a new operation with another id")
                      .because(reason::operation_failed));
}

// The whole history must verify in full before the owner changes the rules:
// from the root (not from a checkpoint), and on a PRIVATE store with the
// owner's keys, so that no commit is accepted on its structure alone.
Status verify_source(Context& ctx, ObjectStore& store, const Oid& tip, const KeyPair& owner) {
  ReplayOptions opts;
  opts.allow_test_clock = ctx.allow_test_clock;
  const VerifierKeys keys = verifier_keys(store, tip, &owner);
  opts.vault = keys.vault();
  std::optional<Verdict> bad, partial;
  GITLOCKS_TRY(summary, replay_chain(store, tip, opts, [&](const Verdict& v) {
                 if (!v.ok && !bad) bad = v;
                 if (v.ok && v.level != VerifyLevel::full && !partial) partial = v;
               }));
  if (summary.invalid > 0 || bad)
    return make_error(Errc::invalid, "the source is not fully verified: commit " + (bad ? bad->commit.hex() : "?") +
                                         ": " + (bad ? bad->reason + " " + bad->detail : std::string()));
  if (partial)
    return make_error(Errc::invalid, "the source is not fully verified: commit " + partial->commit +
                                         " could only be checked structurally (the owner's key opens no epoch key "
                                         "of it)");
  return Ok{};
}

// Publishes the operation `rec` through the pipeline of every writer
// (publish.h) and keeps its record: the commit and T once the notary
// answered (before the compare-and-swap), FAILED when the source changed,
// ACCEPTED once the ref moved. Returns the error, if any.
std::optional<Error> run_operation(Context& ctx, const std::string& dir, json& rec, const BodyFn& make_body,
                                   PublishHooks hooks) {
  hooks.written = [&](const Candidate& c) -> Status {
    crash_after("admit");
    rec["commit"] = c.commit;
    rec["admitted_at_ms"] = c.admitted_at_ms;
    rec["updated_at_ms"] = wall_ms();
    return save_record(dir, rec);
  };
  auto published = publish(ctx, "guard-time-enable", make_body, hooks);
  if (!published.ok()) {
    // The source or the policy moved under the saved operation: it can never
    // be published any more.
    const Error& e = published.error();
    if ((e.has_reason(reason::source_changed) || e.has_reason(reason::policy_changed)) && rec.is_object() &&
        !rec.empty()) {
      rec["status"] = "FAILED";
      rec["detail"] = published.error().message;
      rec["updated_at_ms"] = wall_ms();
      (void)save_record(dir, rec);
    }
    return published.error();
  }
  crash_after("publish");
  rec["status"] = "ACCEPTED";
  rec["updated_at_ms"] = wall_ms();
  if (auto st = save_record(dir, rec); !st.ok()) return st.error();
  return std::nullopt;
}

// An operation that failed after its record was saved as PENDING (the
// notary did not answer, the push failed): the error says so and names the
// command that finishes it (seed 002: activation may end PENDING; recovery is
// `resume`).
Error pending_hint(Error e, const json& rec) {
  if (!rec.is_object() || rec.value("status", std::string()) != "PENDING") return e;
  const std::string id = rec["operation_id"].get<std::string>();
  const std::string remote = rec.contains("remote") && rec["remote"].is_string()
                                 ? " --remote " + rec["remote"].get<std::string>()
                                 : std::string();
  const std::string resume = "git-locks" + remote + " guard-time resume " + id;
  e.message += "; operation " + id + " is saved as PENDING (nothing is enabled yet): `" + resume +
               "` verifies whether it landed and finishes it";
  e.fields["operation_id"] = id;
  e.fields["status"] = "PENDING";
  e.fields["resume"] = resume;
  return e;
}

int report_accepted(Context& ctx, const json& rec) {
  return report(ctx, rec,
                "ACCEPTED: guard time is enabled with audience " + pins_of(rec).audience + " (refs/locks/state -> " +
                    rec["commit"].get<std::string>().substr(0, 12) + ", admitted at " +
                    std::to_string(rec["admitted_at_ms"].get<std::int64_t>()) + ")");
}

// Publishes the operation's saved packet again at its unchanged source
// through the shared pipeline (publish.h), after looking for it in the
// verified history: ACCEPTED only when the verified history carries it.
int resume_operation(Context& ctx, const std::string& dir, json rec) {
  const std::string id = rec["operation_id"].get<std::string>();
  // The record belongs to one store: the one it was prepared for, local or
  // on a remote. Elsewhere it is refused and left as it is (never FAILED).
  auto remote = ctx.remote();
  if (!remote.ok()) return ctx.fail(remote.error());
  if (rec.contains("remote")) {
    const json have = *remote ? json(**remote) : json(nullptr);
    if (rec["remote"] != have)
      return ctx.fail(make_error(
          Errc::usage,
          "operation " + id + " was prepared for " +
              (rec["remote"].is_string()
                   ? "the store on remote '" + rec["remote"].get<std::string>() + "': run `git-locks --remote " +
                         rec["remote"].get<std::string>() + " guard-time resume " + id + "`"
                   : std::string("this clone's local store: run it without --remote "
                                 "(and without git config locks.remote)")) +
              "; the operation is unchanged"));
  }
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto tip = ctx.read_tip();
  if (!tip.ok()) return ctx.fail(tip.error());
  auto snap = verified_tip_snapshot(ctx, *tip);  // from the checkpoint (SPEC §7): the history to the tip verifies
  if (!snap.ok()) return ctx.fail(snap.error());
  if (rec.contains("store") && snap->commit && rec["store"] != snap->store_id)
    return ctx.fail(make_error(Errc::usage, "operation " + id + " belongs to store " +
                                                rec["store"].get<std::string>().substr(0, 12) + ", not to this one (" +
                                                snap->store_id.substr(0, 12) + "); the operation is unchanged"));
  auto found = find_accepted(**store, snap->commit, rec);  // the verified tip (it may be newer than *tip)
  if (!found.ok()) return ctx.fail(found.error());
  if (*found) {
    rec["status"] = "ACCEPTED";
    rec["commit"] = **found;
    rec["updated_at_ms"] = wall_ms();
    if (auto st = save_record(dir, rec); !st.ok()) return ctx.fail(st.error());
    return report(ctx, rec,
                  "ACCEPTED: guard time is enabled (operation " + id + ", refs/locks/state has " +
                      found->value().hex().substr(0, 12) + ")");
  }
  // Not in the verified history (PENDING, or an ACCEPTED whose commit the
  // ref no longer carries): the identical packet again, at its source only.
  PublishHooks hooks;
  hooks.packet = rec["packet"].get<std::string>();
  hooks.source_commit = Oid::from_hex(rec["source_commit"].get<std::string>());
  if (auto e = run_operation(ctx, dir, rec, nullptr, hooks)) return ctx.fail(pending_hint(*e, rec));
  return report_accepted(ctx, rec);
}

}  // namespace

int cmd_guard_time_enable(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  json input = json::object();
  for (const char* f : {"audience", "service-key", "disclosure", "expected-policy-hash", "operation-id"}) {
    auto v = a->value(f);  // every one is required (commands.cpp)
    std::string key = f;
    std::replace(key.begin(), key.end(), '-', '_');
    if (key != "operation_id") input[key] = *v;
  }
  const std::string id = *a->value("operation-id");
  if (auto st = check_operation_id(id); !st.ok()) return ctx.fail(st.error());
  if (input["disclosure"] != kDisclosureGuardWindow)
    return ctx.fail(make_error(Errc::usage,
                               "guard time discloses each transition's admission interval to the "
                               "notary: consent explicitly with --disclosure GUARD_WINDOW"));
  auto dir = operations_dir(ctx, true);
  if (!dir.ok()) return ctx.fail(dir.error());
  auto existing = load_record(*dir, id);
  if (!existing.ok()) return ctx.fail(existing.error());
  if (*existing) {
    if ((**existing)["input"] != input)
      return ctx.fail(make_error(Errc::usage, "operation " + id + " was prepared with other input (" +
                                                  (**existing)["input"].dump() +
                                                  "); a changed input needs a new operation id"));
    if ((**existing)["status"] == "FAILED") return refuse_failed(ctx, **existing);
    return resume_operation(ctx, *dir, **existing);  // PENDING is finished, ACCEPTED re-checked on the ref
  }
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  const json body = ops::admin_guard_time_enable(input["audience"], input["service_key"], input["disclosure"],
                                                 input["expected_policy_hash"]);
  std::optional<Oid> verified;  // the source verify_source has checked in full
  auto make_body = [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    if (verified != snap.commit) {
      GITLOCKS_CHECK(verify_source(ctx, **store, *snap.commit, (*me)->key));
      verified = snap.commit;
    }
    return std::optional<json>{body};
  };
  // The exact candidate is saved before it is sent (and again after each
  // replan: only the newest one can ever be published), with the store it
  // is for (its id, and the remote or null for the local store).
  auto remote = ctx.remote();
  if (!remote.ok()) return ctx.fail(remote.error());
  const json remote_name = *remote ? json(**remote) : json(nullptr);
  json rec;
  PublishHooks hooks;
  hooks.prepared = [&](const Snapshot& snap, const Prepared& p) -> Status {
    if (!p.request_stored) return make_error(Errc::usage, "guard-time enable prepared no admission request");
    const std::int64_t now = wall_ms();
    rec = {{"format", kOperationFormat}, {"operation_id", id},
           {"status", "PENDING"},        {"created_at_ms", rec.is_object() ? rec.value("created_at_ms", now) : now},
           {"updated_at_ms", now},       {"input", input},
           {"store", snap.store_id},     {"source_commit", *snap.commit},
           {"source_state", snap.state}, {"result_state", p.outcome.result_state},
           {"packet", p.packet_stored},  {"request", *p.request_stored},
           {"commit", nullptr},          {"remote", remote_name}};
    return save_record(*dir, rec);
  };
  if (auto e = run_operation(ctx, *dir, rec, make_body, hooks)) {
    // The core's answer to the same pins at the current policy: nothing to do.
    if (e->has_reason(reason::already_enabled)) {
      auto tip = ctx.read_tip();
      return ctx.done({{"op", ctx.op},
                       {"operation_id", id},
                       {"status", "ALREADY_ENABLED"},
                       {"commit", tip.ok() && *tip ? json(**tip) : json()}},
                      "ALREADY_ENABLED: guard time is already enabled with these pins; nothing written");
    }
    return ctx.fail(pending_hint(*e, rec));
  }
  return report_accepted(ctx, rec);
}

namespace {

// The owner's guard-time-set through the pipeline of every writer: the core
// plans it (owner, expected policy hash, guard time on, other pins, no
// pending keyring, consent) and gives its time source, the result's: the
// new notary (--notary or locks.notary, its discovery checked against the
// new pins) for a migration, the local clock for a switch-off. No operation
// record: after a lost answer the same command again either publishes it
// or, if it landed, is refused as policy-changed (status shows the pins).
int publish_guard_time_set(Context& ctx, const std::string& command, const json& guard_time,
                           const std::string& expected, const std::string& status) {
  const json body = ops::admin_guard_time_set(guard_time, expected);
  auto p = publish(ctx, command, [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    return std::optional<json>{body};
  });
  if (!p.ok()) return ctx.fail(p.error());
  const Candidate& c = *p->candidate;
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto bytes = StateReader(**store, c.outcome.result_state).policy_bytes();
  if (!bytes.ok()) return ctx.fail(bytes.error());
  const std::string hash = sha256_hex(*bytes);
  const std::string where = " (refs/locks/state -> " + c.commit.hex().substr(0, 12) + ", admitted at " +
                            std::to_string(c.admitted_at_ms) + ", policy hash " + hash + ")";
  return ctx.done(
      {{"op", ctx.op},
       {"status", status},
       {"commit", c.commit},
       {"admitted_at_ms", c.admitted_at_ms},
       {"policy_hash", hash},
       {"guard_time", guard_time.is_null()
                          ? json(nullptr)
                          : json{{"audience", guard_time["audience"]}, {"service_key", guard_time["service_key"]}}}},
      guard_time.is_null() ? "DISABLED: guard time is off; transitions carry the writer's clock from now on" + where
                           : "MIGRATED: guard time is admitted by notary " + guard_time["audience"].get<std::string>() +
                                 " from this commit on" + where);
}

}  // namespace

int cmd_guard_time_migrate(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (*a->value("disclosure") != kDisclosureGuardWindow)
    return ctx.fail(make_error(Errc::usage,
                               "guard time discloses each transition's admission interval to the "
                               "notary: consent explicitly with --disclosure GUARD_WINDOW"));
  return publish_guard_time_set(
      ctx, "guard-time-migrate",
      ops::guard_time_pins(*a->value("audience"), *a->value("service-key"), *a->value("disclosure")),
      *a->value("expected-policy-hash"), "MIGRATED");
}

int cmd_guard_time_disable(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  return publish_guard_time_set(ctx, "guard-time-disable", nullptr, *a->value("expected-policy-hash"), "DISABLED");
}

int cmd_guard_time_resume(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 1)
    return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  const std::string id = a->positionals[0];
  if (auto st = check_operation_id(id); !st.ok()) return ctx.fail(st.error());
  auto dir = operations_dir(ctx, false);
  if (!dir.ok()) return ctx.fail(dir.error());
  auto rec = load_record(*dir, id);
  if (!rec.ok()) return ctx.fail(rec.error());
  if (!*rec)
    return ctx.fail(make_error(Errc::usage, "no local guard-time operation " + id + " (see guard-time history)"));
  if ((**rec)["status"] == "FAILED") return refuse_failed(ctx, **rec);
  // ACCEPTED is re-verified against the ref as well: local inventory is not proof.
  return resume_operation(ctx, *dir, **rec);
}

int cmd_guard_time_history(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto dir = operations_dir(ctx, false);
  if (!dir.ok()) return ctx.fail(dir.error());
  std::vector<json> rows;
  if (DIR* d = ::opendir(dir->c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
      auto rec = load_record(*dir, name.substr(0, name.size() - 5));
      if (!rec.ok() || !*rec) continue;
      const json& r = **rec;
      rows.push_back({{"operation_id", r["operation_id"]},
                      {"status", r["status"]},
                      {"created_at_ms", r["created_at_ms"]},
                      {"updated_at_ms", r["updated_at_ms"]},
                      {"commit", r.value("commit", json())},
                      {"audience", r["input"]["audience"]}});
    }
    ::closedir(d);
  }
  std::sort(rows.begin(), rows.end(), [](const json& x, const json& y) {
    return x["created_at_ms"].get<std::int64_t>() < y["created_at_ms"].get<std::int64_t>();
  });
  std::string human;
  for (const auto& r : rows)
    human += r["operation_id"].get<std::string>() + "  " + r["status"].get<std::string>() + "  created " +
             std::to_string(r["created_at_ms"].get<std::int64_t>()) + "  updated " +
             std::to_string(r["updated_at_ms"].get<std::int64_t>()) + "\n";
  if (rows.empty()) human = "no local guard-time operations\n";
  human += std::string("note: ") + kPendingNote + "\n";
  return ctx.done({{"op", ctx.op}, {"operations", rows}, {"note", kPendingNote}}, human);
}

}  // namespace gitlocks::cli
