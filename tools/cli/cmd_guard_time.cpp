// guard-time enable|resume|history: the owner's activation of trusted
// admission time (SPEC §6, seed 002), with a recoverable operation.
//
// enable plans the owner-signed admin transition (the core checks owner,
// expected policy hash, pending keyring, ALREADY_ENABLED and different pins),
// verifies the whole source history, checks the notary's discovery against
// the pins, and persists the exact candidate — signed packet, admission
// request, source and result — under the caller's operation id
// ($GIT_DIR/git-locks/guard-time/ID.json, 0600, fsynced with its directory)
// BEFORE it is sent. The commit is written only after admission, so a lost
// answer is recovered by `resume ID`: it finds the packet on
// refs/locks/state (ACCEPTED), or re-sends the identical request at the
// unchanged source; a changed source fails explicitly (FAILED).
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
#include "gitlocks/attest.hpp"
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

Status fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return make_error(Errc::store_write, "cannot open " + path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return make_error(Errc::store_write, "fsync failed on " + path);
  return Ok{};
}

// Writes the record durably: temp file (0600), fsync, rename, fsync dir.
Status save_record(const std::string& dir, const json& rec) {
  const std::string id = rec["operation_id"].get<std::string>();
  const std::string path = dir + "/" + id + ".json", tmp = path + ".tmp";
  const std::string text = rec.dump() + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(Errc::store_write, "cannot write " + tmp);
  ::fchmod(fd, 0600);
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      ::close(fd);
      return make_error(Errc::store_write, "cannot write " + tmp);
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error(Errc::store_write, "cannot persist " + path);
  return fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

Result<std::optional<json>> load_record(const std::string& dir, const std::string& id) {
  const std::string path = dir + "/" + id + ".json";
  if (::access(path.c_str(), F_OK) != 0) return std::optional<json>{};
  GITLOCKS_TRY(text, read_input(path));
  json rec = json::parse(text, nullptr, false);
  if (rec.is_discarded() || !rec.is_object() || rec.value("format", "") != kOperationFormat ||
      !rec.contains("input") || !rec.contains("packet") || !rec["packet"].is_string() || !rec.contains("request") ||
      !rec["request"].is_string())
    return make_error(Errc::store_read, path + " is not a guard-time operation record");
  // The record's own id names the file it is saved to again: it must be the
  // id it was found under (and so a valid one), never a path of its own.
  if (!rec.contains("operation_id") || rec["operation_id"] != id)
    return make_error(Errc::store_read, path + " is not the record of operation " + id + " (it names " +
                                            rec.value("operation_id", json()).dump() + ")");
  return std::optional<json>{rec};
}

Pins pins_of(const json& rec) {
  return Pins{rec["input"]["audience"].get<std::string>(), rec["input"]["service_key"].get<std::string>()};
}

// The commit on refs/locks/state (from `tip` back to the source) that carries
// exactly the saved packet, if any.
Result<std::optional<Oid>> find_accepted(ObjectStore& store, const std::optional<Oid>& tip, const json& rec) {
  const std::string source = rec["source_commit"].get<std::string>();
  std::optional<Oid> at = tip;
  while (at && *at != source) {
    GITLOCKS_TRY(tc, read_transition_commit(store, *at));
    if (tc.packet_stored == rec["packet"].get<std::string>()) return std::optional<Oid>{*at};
    if (tc.parents.empty()) break;
    at = tc.parents[0];
  }
  return std::optional<Oid>{};
}

int report(Context& ctx, const json& rec, const std::string& human) {
  json out = {{"op", ctx.op}, {"operation_id", rec["operation_id"]}, {"status", rec["status"]},
              {"commit", rec.value("commit", json())}};
  if (rec.contains("admitted_at_ms")) out["admitted_at_ms"] = rec["admitted_at_ms"];
  return ctx.done(out, human);
}

// Sends (or re-sends) the saved request at its unchanged source and publishes.
int finish(Context& ctx, const std::string& dir, json rec) {
  auto fail_record = [&](const Error& e) {
    rec["status"] = "FAILED";
    rec["detail"] = e.message;
    rec["updated_at_ms"] = wall_ms();
    (void)save_record(dir, rec);
    return ctx.fail(e);
  };
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto tip = ctx.read_tip();
  if (!tip.ok()) return ctx.fail(tip.error());
  auto found = find_accepted(**store, *tip, rec);
  if (!found.ok()) return ctx.fail(found.error());
  if (*found) {
    rec["status"] = "ACCEPTED";
    rec["commit"] = **found;
    rec["updated_at_ms"] = wall_ms();
    if (auto st = save_record(dir, rec); !st.ok()) return ctx.fail(st.error());
    return report(ctx, rec, "ACCEPTED: guard time is enabled (operation " + rec["operation_id"].get<std::string>() +
                                ", refs/locks/state has " + found->value().substr(0, 12) + ")");
  }
  const std::string source = rec["source_commit"].get<std::string>();
  if (!*tip || **tip != source)
    return fail_record(make_error(Errc::stale_generation,
                                  "the source changed: operation " + rec["operation_id"].get<std::string>() +
                                      " was prepared at " + source + " but refs/locks/state is now " +
                                      tip->value_or("missing") + " and does not carry its packet; nothing was sent"));
  auto snap = verified_tip_snapshot(ctx, *tip);  // verified from the checkpoint (SPEC §7)
  if (!snap.ok()) return ctx.fail(snap.error());
  auto opened = open_packet(rec["packet"].get<std::string>());
  if (!opened.ok()) return ctx.fail(make_error(Errc::store_read, "saved packet: " + opened.error().message));
  const Pins pins = pins_of(rec);
  auto ep = notary_endpoint(ctx);
  if (!ep.ok()) return ctx.fail(ep.error());
  auto disc = check_discovery(*ep, pins);
  if (!disc.ok()) return ctx.fail(disc.error());
  auto att_stored = notary_admit(*ep, rec["request"].get<std::string>());
  if (!att_stored.ok()) return ctx.fail(att_stored.error());
  auto att = open_attestation(*att_stored);
  if (!att.ok()) return ctx.fail(make_error(Errc::store_write, "notary returned an unusable attestation: " + att.error().message));
  auto checked = check_attestation(*att, opened->packet, rec["packet"].get<std::string>(), pins, ep->allow_test_clock);
  if (!checked.ok()) return ctx.fail(make_error(Errc::store_write, "notary attestation rejected: " + checked.error().message));
  const std::int64_t t = (*att)["admitted_at_ms"].get<std::int64_t>();
  if (snap->last_time && t < *snap->last_time)
    return ctx.fail(make_error(Errc::store_write, "notary admitted at " + std::to_string(t) +
                                                      ", before the store's last admission " +
                                                      std::to_string(*snap->last_time)));
  crash_after("admit");
  auto commit = write_transition_commit(**store, source, rec["result_state"].get<std::string>(),
                                        rec["packet"].get<std::string>(), describe_transition(opened->packet),
                                        t / 1000, *att_stored);
  if (!commit.ok()) return ctx.fail(commit.error());
  rec["commit"] = *commit;
  rec["admitted_at_ms"] = t;
  rec["updated_at_ms"] = wall_ms();
  if (auto st = save_record(dir, rec); !st.ok()) return ctx.fail(st.error());
  for (int attempt = 1;; ++attempt) {
    auto cas = ctx.begin_cas();
    if (!cas.ok()) return ctx.fail(cas.error());
    CasResult r = cas->commit(kStateRef, *commit, source);
    ctx.attempts = attempt;
    if (r.status == CasStatus::ok) break;
    if (r.status == CasStatus::stale)
      return fail_record(make_error(Errc::stale_generation, "the source changed while operation " +
                                                                rec["operation_id"].get<std::string>() +
                                                                " was admitted; it was not published"));
    if (r.status == CasStatus::failed || attempt == kLockAttempts)
      return ctx.fail(make_error(Errc::store_write, "publication failed (operation stays PENDING; resume it): " +
                                                        r.detail));
    std::this_thread::sleep_for(std::chrono::milliseconds(kLockPauseMs));
  }
  crash_after("publish");
  rec["status"] = "ACCEPTED";
  rec["updated_at_ms"] = wall_ms();
  if (auto st = save_record(dir, rec); !st.ok()) return ctx.fail(st.error());
  return report(ctx, rec, "ACCEPTED: guard time is enabled with audience " + pins.audience + " (refs/locks/state -> " +
                              commit->substr(0, 12) + ", admitted at " + std::to_string(t) + ")");
}

// The whole history must verify before the owner changes the rules.
Status verify_source(Context& ctx, ObjectStore& store, const Oid& tip) {
  ReplayOptions opts;
  opts.allow_test_clock = ctx.allow_test_clock;
  std::optional<Verdict> bad;
  GITLOCKS_TRY(summary, replay_chain(store, tip, opts, [&](const Verdict& v) {
    if (!v.ok && !bad) bad = v;
  }));
  if (summary.invalid > 0 || bad)
    return make_error(Errc::invalid, "the source is not fully verified: commit " + (bad ? bad->commit : "?") + ": " +
                                         (bad ? bad->reason + " " + bad->detail : std::string()));
  return Ok{};
}

}  // namespace

int cmd_guard_time_enable(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {{"audience", true},
                            {"service-key", true},
                            {"disclosure", true},
                            {"expected-policy-hash", true},
                            {"operation-id", true}});
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "guard-time enable takes no arguments"));
  json input = json::object();
  for (const char* f : {"audience", "service-key", "disclosure", "expected-policy-hash", "operation-id"}) {
    auto v = a->value(f);
    if (!v) return ctx.fail(make_error(Errc::usage, std::string("guard-time enable needs --") + f));
    std::string key = f;
    std::replace(key.begin(), key.end(), '-', '_');
    if (key != "operation_id") input[key] = *v;
  }
  const std::string id = *a->value("operation-id");
  if (auto st = check_operation_id(id); !st.ok()) return ctx.fail(st.error());
  if (input["disclosure"] != kDisclosureGuardWindow)
    return ctx.fail(make_error(Errc::usage, "guard time discloses each transition's admission interval to the "
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
    if ((**existing)["status"] != "PENDING") return report(ctx, **existing, std::string("operation ") + id + ": " +
                                                                             (**existing)["status"].get<std::string>());
    return finish(ctx, *dir, **existing);
  }
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto tip = ctx.read_tip();
  if (!tip.ok()) return ctx.fail(tip.error());
  auto snap = verified_tip_snapshot(ctx, *tip);  // verified from the checkpoint (SPEC §7)
  if (!snap.ok()) return ctx.fail(snap.error());
  if (auto st = require_store(ctx, *snap); !st.ok()) return ctx.fail(st.error());
  const Pins pins{input["audience"].get<std::string>(), input["service_key"].get<std::string>()};
  const std::string instance = random_hex(kInstanceBytes);
  const json body = {{"admin",
                      {{"op", "guard-time-enable"},
                       {"audience", pins.audience},
                       {"service_key", pins.service_key},
                       {"disclosure", input["disclosure"]},
                       {"expected_policy_hash", input["expected_policy_hash"]}}}};
  // The core refuses a non-owner, a stale policy hash, a pending keyring and
  // different pins; the same pins at the current policy are ALREADY_ENABLED.
  auto outcome = plan(**store, snap->state, PlanContext{(*me)->actor, instance, nullptr}, body);
  if (!outcome.ok()) {
    if (outcome.error().message.rfind("ALREADY_ENABLED", 0) == 0)
      return ctx.done({{"op", ctx.op}, {"operation_id", id}, {"status", "ALREADY_ENABLED"}, {"commit", **tip}},
                      "ALREADY_ENABLED: guard time is already enabled with these pins; nothing written");
    return ctx.fail(outcome.error());
  }
  if (auto st = verify_source(ctx, **store, **tip); !st.ok()) return ctx.fail(st.error());
  auto ep = notary_endpoint(ctx);
  if (!ep.ok()) return ctx.fail(ep.error());
  auto disc = check_discovery(*ep, pins);
  if (!disc.ok()) return ctx.fail(disc.error());
  PacketHeader h;
  h.store = snap->store_id;
  h.actor = (*me)->actor;
  h.command = "guard-time-enable";
  h.instance = instance;
  h.epoch = snap->epoch;
  h.policy_hash = snap->policy_hash;
  h.source = snap->state;
  const json packet = make_packet(h, *outcome, std::nullopt);
  auto stored = seal_packet(packet, (*me)->key);
  if (!stored.ok()) return ctx.fail(stored.error());
  auto request = make_admission_request(packet, *stored, (*me)->key);
  if (!request.ok()) return ctx.fail(request.error());
  const std::int64_t now = wall_ms();
  json rec = {{"format", kOperationFormat},     {"operation_id", id},          {"status", "PENDING"},
              {"created_at_ms", now},           {"updated_at_ms", now},        {"input", input},
              {"store", snap->store_id},        {"source_commit", **tip},      {"source_state", snap->state},
              {"result_state", outcome->result_state}, {"packet", *stored},   {"request", *request},
              {"commit", nullptr}};
  if (auto st = save_record(*dir, rec); !st.ok()) return ctx.fail(st.error());
  return finish(ctx, *dir, rec);
}

int cmd_guard_time_resume(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {});
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 1) return ctx.fail(make_error(Errc::usage, "usage: guard-time resume ID"));
  const std::string id = a->positionals[0];
  if (auto st = check_operation_id(id); !st.ok()) return ctx.fail(st.error());
  auto dir = operations_dir(ctx, false);
  if (!dir.ok()) return ctx.fail(dir.error());
  auto rec = load_record(*dir, id);
  if (!rec.ok()) return ctx.fail(rec.error());
  if (!*rec) return ctx.fail(make_error(Errc::usage, "no local guard-time operation " + id + " (see guard-time history)"));
  if ((**rec)["status"] == "FAILED")
    return ctx.fail(make_error(Errc::stale_generation, "operation " + id + " FAILED: " +
                                                           (**rec).value("detail", std::string("unknown"))));
  // ACCEPTED is re-verified against the ref as well: local inventory is not proof.
  return finish(ctx, *dir, **rec);
}

int cmd_guard_time_history(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {});
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "guard-time history takes no arguments"));
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
      rows.push_back({{"operation_id", r["operation_id"]}, {"status", r["status"]},
                      {"created_at_ms", r["created_at_ms"]}, {"updated_at_ms", r["updated_at_ms"]},
                      {"commit", r.value("commit", json())}, {"audience", r["input"]["audience"]}});
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
