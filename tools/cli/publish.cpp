#include "publish.h"

#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "checkpoint.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "notary_client.h"
#include "timings.h"
#include "vault_host.h"
#include "witness.h"

namespace gitlocks::cli {

static Result<Published> publish_one(Context& ctx, const std::string& command, const BodyFn& make_body,
                                     const PublishHooks& hooks);

json transition_body(Context& ctx, std::int64_t now, json ops) {
  return json{{"created_at", now}, {"name", ctx.display_name()}, {"ops", std::move(ops)}};
}

std::string no_store_message(Context& ctx) {
  auto remote = ctx.remote();
  if (remote.ok() && *remote)
    return "no lock store on remote " + **remote + " (its refs/locks/state is missing): run `git-locks init`";
  return "no lock store in this repository (refs/locks/state is missing): run `git-locks init`";
}

Status canonical_op_paths(json& body, const Snapshot& snap) {
  if (!body.is_object() || !body.contains("ops") || !body["ops"].is_array()) return Ok{};
  json& ops = body["ops"];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    json& op = ops[i];
    // A ticket's wants name paths too (docs/FORMAT.md "Tickets").
    if (op.is_object() && op.contains("wants") && op["wants"].is_array())
      for (json& w : op["wants"]) {
        if (!w.is_object() || !w.contains("path") || !w["path"].is_string()) continue;
        if (auto t = normalize_path_input(w["path"].get<std::string>(), snap.path_case()); t.ok()) w["path"] = *t;
      }
    if (!op.is_object() || !op.contains("path") || !op["path"].is_string()) continue;
    auto text = normalize_path_input(op["path"].get<std::string>(), snap.path_case());
    if (!text.ok()) {
      // Named as the planner names a failing op (batch maps it to its line).
      Error e = text.error();
      if (ops.size() > 1) {
        e.message = "op " + std::to_string(i) + " (" + string_member(op, "op") + "): " + e.message;
        e.fields["op_index"] = i;
        e.fields["op_kind"] = string_member(op, "op");
      }
      return e;
    }
    op["path"] = *text;
  }
  return Ok{};
}

Status require_store(Context& ctx, const Snapshot& snap) {
  if (!snap.commit) return make_error(Errc::usage, no_store_message(ctx));
  return Ok{};
}

Status append_lapsed_ticket_drops(Context& ctx, const Snapshot& snap, std::int64_t now, std::size_t max, json& ops) {
  GITLOCKS_CHECK(require_keys(ctx, snap));
  GITLOCKS_TRY(store, ctx.store());
  StateReader reader(*store, snap.state, snap.codec());
  GITLOCKS_TRY(queue, reader.valid_record(kQueueResource));
  if (queue)
    for (const Ticket& t : queue->tickets)
      if (!t.live_at(now) && ops.size() < max) ops.push_back(ops::ticket_drop(t.id));
  return Ok{};
}

Result<Snapshot> current_snapshot(Context& ctx) {
  GITLOCKS_TRY(tip, ctx.read_tip());
  return verified_tip_snapshot(ctx, tip);
}

Result<std::int64_t> commits_since_checkpoint(ObjectStore& store, const Oid& tip, std::int64_t limit,
                                              std::optional<Oid>* found) {
  std::int64_t since = 0;
  if (found) found->reset();
  for (std::optional<Oid> at = tip; at && since < limit; ++since) {
    GITLOCKS_TRY(tc, read_transition_commit(store, *at));
    auto opened = open_packet(tc.packet_stored);
    if (opened.ok() && opened->fields.action == "checkpoint") {
      if (found) *found = at;
      break;
    }
    GITLOCKS_TRY(c, store.read_commit(*at));
    at = chain_parent(store, *at, c);
  }
  return since;
}

namespace {

// The checkpoint the policy asks of this writer after its publication `c`
// (docs/FORMAT.md "Checkpoints by policy"): under the policy `c` leaves in
// force, when it sets checkpoint.every, this writer may checkpoint (the
// owner or a named signer) and `every` or more commits follow the newest
// checkpoint, one more publication: a checkpoint of the new tip (a cut
// when checkpoint.cut). Decided again on its own fresh snapshot, so two
// writers never checkpoint the same stretch twice.
void auto_checkpoint(Context& ctx, Published& out) {
  const Candidate& c = *out.candidate;
  if (c.outcome.action == Action::checkpoint) return;
  auto store = ctx.store();
  auto me = ctx.identity();
  if (!store.ok() || !me.ok()) return;
  StateReader reader(**store, c.outcome.result_state);
  auto doc = reader.policy();
  if (!doc.ok()) return;
  auto pol = parse_policy(*doc);
  if (!pol.ok() || !pol->checkpoint || !pol->checkpoint->every || !pol->may_checkpoint((*me)->actor)) return;
  const std::int64_t every = *pol->checkpoint->every;
  auto since = commits_since_checkpoint(**store, c.commit, every);
  if (!since.ok() || *since < every) return;
  PublishHooks hooks;
  hooks.cut = pol->checkpoint->cut.value_or(false);
  hooks.no_auto_checkpoint = true;
  const std::optional<int> attempts = ctx.attempts;  // the command's own count is what it reports
  auto p = publish(
      ctx, "checkpoint",
      [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
        if (!snap.commit || !snap.policy.may_checkpoint((*me)->actor)) return std::optional<json>();
        GITLOCKS_TRY(n, commits_since_checkpoint(**store, *snap.commit, every));
        if (n < every) return std::optional<json>();  // another writer did
        return std::optional<json>{ops::admin_checkpoint(snap.commit->hex(), snap.policy_hash)};
      },
      hooks);
  ctx.attempts = attempts;
  if (!p.ok()) out.checkpoint_error = p.error();
  else if (p->candidate) {
    out.checkpoint = p->candidate->commit;
    out.witnesses = cosign_if_required(ctx, p->source.store_id, p->candidate->commit);
  }
}

}  // namespace

Result<Published> publish(Context& ctx, const std::string& command, const BodyFn& make_body,
                          const PublishHooks& hooks) {
  GITLOCKS_TRY(published, publish_one(ctx, command, make_body, hooks));
  if (published.candidate && !hooks.no_auto_checkpoint && !hooks.packet) auto_checkpoint(ctx, published);
  return published;
}

Result<Published> publish_one(Context& ctx, const std::string& command, const BodyFn& make_body,
                              const PublishHooks& hooks) {
  // Start git first: the start-up of `git config` and of the first
  // update-ref overlaps libgit2's initialisation and our planning. A command
  // that ends without publishing drops the update-ref process before it has
  // read a single command.
  std::optional<timings::Scope> setup_time(std::in_place, "setup");
  ctx.prefetch_config();
  // Local is the common case: start its update-ref before we know; a remote
  // store drops it unused.
  std::optional<PendingCas> cas;
  if (!ctx.remote_flag || ctx.remote_flag->empty()) cas.emplace(ctx.git().begin_cas());
  ctx.attempts = 0;
  GITLOCKS_TRY(store, ctx.store());
  GITLOCKS_TRY(me, ctx.identity());
  GITLOCKS_TRY(remote, ctx.remote());
  if (remote) cas.reset();
  const std::string instance = random_hex(kInstanceBytes);
  auto next_cas = [&]() -> Status {
    GITLOCKS_TRY(c, ctx.begin_cas());
    cas.emplace(std::move(c));
    return Ok{};
  };
  // The notary, once per command: discovery is checked against the pins of
  // the first candidate that needs them (and again only if they change).
  std::optional<NotaryEndpoint> notary;
  std::optional<Pins> discovered;
  auto need_notary = [&]() -> Status {
    if (notary) return Ok{};
    GITLOCKS_TRY(ep, notary_endpoint(ctx));
    notary = std::move(ep);
    return Ok{};
  };
  const auto stale_resume = [&](const std::string& what) {
    return make_error(Errc::stale_generation,
                      "the source changed: " + what + "; the saved packet is bound to its source and was not published")
        .because(reason::source_changed);
  };
  // libsodium's generator: writers that lost the same race must not draw
  // the same pauses.
  const auto uniform = [](std::uint64_t n) -> std::uint64_t {
    return randombytes_uniform(static_cast<std::uint32_t>(std::min<std::uint64_t>(n, UINT32_MAX)));
  };
  // Snapshot (from `tip`), plan, admission, candidate: one round up to the
  // compare-and-swap. No candidate when there is nothing to do. A round on
  // the cached remote tip gives up (an error) where it would have side
  // effects beyond the clone: a guard-time store asks its notary.
  struct Built {
    Snapshot snap;
    std::optional<Candidate> cand;
  };
  auto build = [&](const std::optional<Oid>& tip, bool cached) -> Result<Built> {
    std::optional<timings::Scope> snapshot_time(std::in_place, "snapshot");
    // Only a tip whose history verifies is built on (SPEC §7).
    GITLOCKS_TRY(snap, verified_tip_snapshot(ctx, tip));
    snapshot_time.reset();
    if (cached && snap.guard_time()) return make_error(Errc::store_read, "guard time: plan on a fresh snapshot");
    if (hooks.source_commit && snap.commit != hooks.source_commit)
      return stale_resume("refs/locks/state is at " + (snap.commit ? snap.commit->hex() : std::string("(missing)")) +
                          ", not at " + *hooks.source_commit);
    GITLOCKS_CHECK(require_keys(ctx, snap));  // PRIVATE stores: the member's epoch keys
    std::optional<Prepared> prepared;
    if (hooks.packet) {
      GITLOCKS_TRY(p, reopen_prepared(*store, snap, me->key, *hooks.packet));
      prepared = std::move(p);
    } else {
      // With guard time, T is the notary's alone: the local clock only proposes.
      GITLOCKS_TRY(now, snap.guard_time() ? proposal_now_ms() : now_ms());
      GITLOCKS_TRY(body, make_body(snap, now));
      if (!body) return Built{std::move(snap), std::nullopt};
      GITLOCKS_CHECK(canonical_op_paths(*body, snap));
      // A store under guard time needs its notary before anything is planned;
      // for an admin body the core decides (guard-time disable needs none).
      if (snap.guard_time() && !body->contains("admin")) GITLOCKS_CHECK(need_notary());
      timings::Scope plan_time("plan and sign");
      GITLOCKS_TRY(p, prepare_candidate(*store, snap, me->key, command, instance, *body, now));
      prepared = std::move(p);
    }
    if (prepared->pins) {
      GITLOCKS_CHECK(need_notary());
      if (!(discovered == prepared->pins)) {
        GITLOCKS_TRY(d, check_discovery(*notary, *prepared->pins));
        (void)d;
        discovered = prepared->pins;
      }
    }
    if (hooks.prepared) GITLOCKS_CHECK(hooks.prepared(snap, *prepared));
    std::optional<std::string> attestation;
    if (prepared->pins) {
      GITLOCKS_TRY(att, notary_admit(*notary, *prepared->request_stored));
      attestation = std::move(att);
    }
    timings::Scope commit_time("commit");
    GITLOCKS_TRY(cand, complete_candidate(*store, snap, std::move(*prepared), attestation, ctx.allow_test_clock,
                                          hooks.cut ? CommitOn::cut : CommitOn::tip));
    return Built{std::move(snap), std::move(cand)};
  };
  // A remote store's first round is planned on the clone's cached copy of
  // the remote tip (refs/locks/remotes/NAME/state, kept current by our own
  // pushes) instead of a fetch: the push's lease checks that tip on the
  // server, so a stale cache costs one rejected push and a fresh round
  // (counted in the 200), never a wrong publication. Anything but a
  // candidate on the cached tip — a refusal, nothing to do, an error — is
  // decided again on a fresh fetch before it is reported (issue 18).
  bool use_cache = remote && !hooks.packet && !hooks.source_commit && !hooks.prepared && !hooks.written;
  bool last_round_cached = false;
  std::int64_t round_ms = 0;
  std::int64_t slept_ms = 0;  // all backoff pauses so far
  setup_time.reset();
  for (int replans = 0; replans <= kMaxReplans; ++replans) {
    if (replans > 0 && !last_round_cached) {
      // Another writer won the last round: back off before the fresh
      // snapshot, so that contending writers spread out instead of
      // colliding again (issue 18). A cached tip that was merely old is
      // not a collision: its fresh round starts at once.
      const std::int64_t pause = backoff_ms(replans, round_ms, slept_ms, uniform);
      slept_ms += pause;
      std::this_thread::sleep_for(std::chrono::milliseconds(pause));
    }
    const auto round_started = std::chrono::steady_clock::now();
    if (replans > 0 || !cas) GITLOCKS_CHECK(next_cas());
    std::optional<Result<Built>> built;
    last_round_cached = false;
    if (use_cache) {
      use_cache = false;
      GITLOCKS_TRY(ref, ctx.state_ref());
      auto cached = store->read_ref(ref);
      if (cached.ok() && *cached) {
        built.emplace(build(*cached, true));
        if (built->ok() && (*built)->cand) last_round_cached = true;
        else built.reset();  // decided again on a fresh snapshot
      }
    }
    if (!built) {
      std::optional<timings::Scope> fetch_time(std::in_place, "snapshot");
      GITLOCKS_TRY(tip, ctx.read_tip());
      fetch_time.reset();
      built.emplace(build(tip, false));
    }
    GITLOCKS_TRY(b, std::move(*built));
    if (!b.cand) return Published{std::move(b.snap), std::nullopt, std::nullopt, std::nullopt, nullptr};
    Snapshot& snap = b.snap;
    Candidate& cand = *b.cand;
    if (hooks.written) GITLOCKS_CHECK(hooks.written(cand));
    bool replan = false;
    for (int lock_attempt = 1; !replan; ++lock_attempt) {
      std::optional<timings::Scope> cas_time(std::in_place, "compare-and-swap");
      std::optional<PendingCas::Archive> archive;
      if (hooks.cut) archive = PendingCas::Archive{archive_ref(*snap.commit), *snap.commit};
      CasResult r = cas->commit(kStateRef, cand.commit, snap.commit, archive);
      cas_time.reset();
      *ctx.attempts += 1;
      switch (r.status) {
        case CasStatus::ok: {
          timings::Scope checkpoint_time("checkpoint");
          // The cache ref (a git child) and the checkpoint (a file) at once.
          std::future<void> cached;
          if (remote)
            cached = std::async(std::launch::async, [&ctx, pushed = cand.commit, from = snap.commit] {
              ctx.remember_pushed(pushed, from);
            });
          record_publication(ctx, snap, cand);
          if (cached.valid()) cached.get();
          return Published{snap, std::move(cand), std::nullopt, std::nullopt, nullptr};
        }
        case CasStatus::stale:
          if (hooks.packet) return stale_resume("another writer moved refs/locks/state while it was admitted");
          replan = true;
          round_ms =
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - round_started)
                  .count();
          break;
        case CasStatus::locked:
          if (lock_attempt == kLockAttempts)
            return make_error(Errc::store_write,
                              std::string(remote ? "the remote " + *remote + "'s " : "") +
                                  "refs/locks/state.lock is held by another writer (still there after " +
                                  std::to_string(kLockAttempts) +
                                  " attempts; git-locks never removes it): " + r.detail);
          GITLOCKS_CHECK(next_cas());
          std::this_thread::sleep_for(std::chrono::milliseconds(kLockPauseMs));
          break;
        case CasStatus::failed:
          // A push whose answer was lost (the connection died after the
          // server moved the ref) did publish: the candidate commit is
          // unique, so the remote's tip being it proves it.
          if (remote) {
            auto now_at = ctx.read_tip();
            if (now_at.ok() && *now_at == cand.commit) {
              record_publication(ctx, snap, cand);
              return Published{snap, std::move(cand), std::nullopt, std::nullopt, nullptr};
            }
          }
          return make_error(
              Errc::store_write,
              std::string(remote ? "git push to " + *remote : std::string("git update-ref")) + " failed: " + r.detail);
      }
    }
  }
  return make_error(Errc::stale_retries_exhausted, "other writers kept moving refs/locks/state: gave up after " +
                                                       std::to_string(kMaxReplans) + " fresh plans");
}

int report_published(Context& ctx, const Published& p, const json& extra, const std::vector<std::string>& warnings) {
  const Candidate& c = *p.candidate;
  const json& ops = c.outcome.body.contains("ops") ? c.outcome.body["ops"] : json::array();
  json out = {{"op", ctx.op},
              {"commit", c.commit},
              {"action", action_name(c.outcome.action)},
              {"admitted_at_ms", c.admitted_at_ms},
              {"attempts", ctx.attempts.value_or(0)},
              {"leases", c.outcome.leases},
              {"ops", ops}};
  for (const auto& [k, v] : extra.items()) out[k] = v;
  if (p.checkpoint) out["checkpoint"] = *p.checkpoint;
  if (!p.witnesses.is_null()) out["witnesses"] = p.witnesses;
  if (p.checkpoint_error) out["checkpoint_error"] = p.checkpoint_error->message;
  std::string human;
  std::size_t next_lease = 0;
  auto expiry = [&](std::int64_t at) { return "expires in " + format_duration(at - c.admitted_at_ms); };
  for (const auto& op : ops) {
    const std::string kind = op.value("op", "");
    const IssuedLease* lease = nullptr;
    if ((kind == "claim" || kind == "sem-acquire" || kind == "extend" || kind == "handoff") &&
        next_lease < c.outcome.leases.size())
      lease = &c.outcome.leases[next_lease++];
    std::string line;
    if (kind == "claim" && lease) {
      line = std::string(op.contains("reclaims") ? "reclaimed " : "claimed ") + op["path"].get<std::string>() + " (" +
             op["mode"].get<std::string>() + "): lease " + lease->lease + ", generation " +
             std::to_string(lease->generation) + ", " + expiry(lease->expires_at);
    } else if (kind == "sem-acquire" && lease) {
      line = "acquired a slot of semaphore " + op["sem"].get<std::string>() + " (limit " +
             std::to_string(op["limit"].get<std::int64_t>()) + "): lease " + lease->lease + ", generation " +
             std::to_string(lease->generation) + ", " + expiry(lease->expires_at);
    } else if (kind == "extend" && lease) {
      line = "extended lease " + op["lease"].get<std::string>() + " on " +
             (op.contains("path") ? op["path"].get<std::string>() : "semaphore " + op["sem"].get<std::string>()) +
             ": " + expiry(lease->expires_at);
    } else if (kind == "handoff" && lease) {
      line = "handed lease " + op["lease"].get<std::string>() + " on " +
             (op.contains("path") ? op["path"].get<std::string>() : "semaphore " + op["sem"].get<std::string>()) +
             " to " + op["to_name"].get<std::string>() + " (" + op["to"].get<std::string>().substr(0, 12) +
             "): their lease " + lease->lease + ", generation " + std::to_string(lease->generation) + ", " +
             expiry(lease->expires_at);
    } else if (kind == "release" || kind == "sem-release") {
      line = "released lease " + op["lease"].get<std::string>() + " on " +
             (op.contains("path") ? op["path"].get<std::string>() : "semaphore " + op["sem"].get<std::string>());
    } else if (kind == "sweep") {
      line = "swept " + std::to_string(op["leases"].size()) + " expired lease" + (op["leases"].size() == 1 ? "" : "s");
    } else if (kind == "ticket-drop") {
      line = op.contains("expires_at") ? "dropped lapsed ticket " + op["ticket"].get<std::string>()
                                       : "left the queue (ticket " + op["ticket"].get<std::string>() + ")";
    } else if (kind == "ticket") {
      line = "queued for " + std::to_string(op["wants"].size()) + " resource" + (op["wants"].size() == 1 ? "" : "s");
    } else {
      line = kind;
    }
    human += line + "\n";
  }
  if (c.outcome.action == Action::init) human += "initialised the lock store\n";
  human += "(refs/locks/state -> " + c.commit.hex().substr(0, 12) +
           (extra.contains("waited_ms") ? ", after waiting " + format_duration(extra["waited_ms"].get<std::int64_t>())
                                        : std::string()) +
           ")\n";
  if (p.checkpoint)
    human += "checkpoint " + p.checkpoint->hex().substr(0, 12) + " published, as the store's policy asks " +
             "(refs/locks/state -> " + p.checkpoint->hex().substr(0, 12) + ")\n";
  if (p.checkpoint_error)
    human += "the checkpoint the store's policy asks for failed: " + p.checkpoint_error->message + "\n";
  for (const auto& w : warnings) human += "warning: " + w + "\n";
  return ctx.done(out, human);
}

}  // namespace gitlocks::cli
