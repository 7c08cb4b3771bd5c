// Commands that publish one transition: init, claim, extend, release, sweep,
// sem acquire/release, batch.
#include <algorithm>
#include <cctype>
#include <functional>

#include "cli.h"
#include "enforcement.h"
#include "gitlocks/hex.hpp"
#include "gitlocks/limits.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "leases.h"
#include "publish.h"
#include "waiting.h"

namespace gitlocks::cli {
namespace {

Result<std::int64_t> ttl_of(const Parsed& a) {
  if (auto t = a.value("ttl")) return parse_duration(*t);
  return kDefaultTtlMs;
}

Result<std::optional<std::int64_t>> generation_of(const Parsed& a) {
  auto g = a.value("generation");
  if (!g) return std::optional<std::int64_t>{};
  GITLOCKS_TRY(v, parse_count(*g, "--generation"));
  return std::optional<std::int64_t>{v};
}

// Publishes and reports; refusals and errors go to stderr.
int publish_and_report(Context& ctx, const std::string& command, const BodyFn& body) {
  auto p = publish(ctx, command, body);
  if (!p.ok()) return ctx.fail(p.error());
  return report_published(ctx, *p);
}

// The work a signer did on the repository's refs since a lease began: for
// release --landed. Each commit's signer and changed paths are read once.
class WorkIndex {
 public:
  explicit WorkIndex(ObjectStore& store) : store_(store) {}

  struct Work {
    std::optional<std::string> signer;
    std::int64_t time = 0;  // committer time, seconds
    std::vector<RepoPath> paths;
  };
  Result<const Work*> of(const Oid& id, PathCase pc) {
    if (auto hit = seen_.find(id); hit != seen_.end()) return &hit->second;
    Work w;
    GITLOCKS_TRY(signer, commit_signer_of(store_, id));
    w.signer = signer.actor;
    GITLOCKS_TRY(c, store_.read_commit(id));
    w.time = c.time_seconds;
    GITLOCKS_TRY(paths, store_.changed_paths(id));
    for (const auto& p : paths) {
      auto canon = normalize_path_input(p, pc);
      if (!canon.ok()) continue;  // a path no claim can name touches no lease
      auto rp = parse_repo_path(*canon, pc);
      if (rp.ok()) w.paths.push_back(std::move(*rp));
    }
    return &seen_.emplace(id, std::move(w)).first->second;
  }

 private:
  ObjectStore& store_;
  std::map<Oid, Work> seen_;
};

// Whether `changed` is the lease's path or below it.
bool touches(const RepoPath& lease, const RepoPath& changed) {
  return lease.components.size() <= changed.components.size() &&
         std::equal(lease.components.begin(), lease.components.end(), changed.components.begin());
}

// How far back (seconds) before a lease's creation a commit still counts as
// its work: committer clocks are the writers' own.
constexpr std::int64_t kLandedSkewSeconds = 24 * 3600;

// release --landed BRANCH: an admin (a CI job on the integration branch)
// force-releases every live path lease whose holder's signed commits
// touching its path, made since the lease began, are all reachable from
// BRANCH (and at least one is), with reason "landed <commit>".
int release_landed(Context& ctx, const Parsed& a) {
  if (!a.positionals.empty() || a.has("force") || a.has("reason") || a.has("generation"))
    return ctx.fail(make_error(Errc::usage, "usage: release --landed BRANCH (no paths, no --force/--reason)"));
  const std::string branch = *a.value("landed");
  auto tip = ctx.git().run({"rev-parse", "--verify", "--quiet", "--end-of-options", branch + "^{commit}"});
  if (!tip.ok()) return ctx.fail(tip.error());
  const auto landed_id = tip->status == 0 ? Oid::from_hex(tip->out.substr(0, Oid::kHexDigits)) : std::nullopt;
  if (!landed_id) return ctx.fail(make_error(Errc::usage, "--landed " + branch + ": no such branch or commit"));
  const std::string landed = landed_id->hex();
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  // Commits on BRANCH, and commits on any ref (remote-tracking refs
  // included) that BRANCH does not have.
  auto on = rev_list(ctx, {landed});
  if (!on.ok()) return ctx.fail(on.error());
  auto off = rev_list(ctx, {"--all", "--not", landed});
  if (!off.ok()) return ctx.fail(off.error());
  WorkIndex work(**store);
  json released = json::array();
  auto p = publish(ctx, ctx.op, [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    StateReader reader(**store, snap.state, snap.codec());
    std::vector<Lease> live;
    GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& rec) {
      if (rec.resource.kind == RecordKind::path)
        for (const auto& l : rec.leases)
          if (l.live_at(now)) live.push_back(l);
      return true;
    }));
    auto has_work = [&](const std::vector<Oid>& commits, const Lease& l, const RepoPath& lp) -> Result<bool> {
      for (auto it = commits.rbegin(); it != commits.rend(); ++it) {  // newest first
        GITLOCKS_TRY(w, work.of(*it, snap.path_case()));
        if (!w->signer || *w->signer != l.holder) continue;
        if (w->time < l.created_at / 1000 - kLandedSkewSeconds) continue;
        for (const auto& cp : w->paths)
          if (touches(lp, cp)) return true;
      }
      return false;
    };
    json ops = json::array();
    released = json::array();
    for (const Lease& l : live) {
      GITLOCKS_TRY(lp, parse_repo_path(l.path, snap.path_case()));
      GITLOCKS_TRY(pending, has_work(*off, l, lp));
      if (pending) continue;
      GITLOCKS_TRY(done, has_work(*on, l, lp));
      if (!done) continue;
      ops.push_back(ops::force_release(l.path, l.id, "landed " + landed));
      released.push_back({{"lease", l.id}, {"path", l.path}, {"holder", l.holder}, {"holder_name", l.name}});
    }
    if (ops.empty()) return std::optional<json>{};
    return std::optional<json>{transition_body(ctx, now, ops)};
  });
  if (!p.ok()) return ctx.fail(p.error());
  if (!p->candidate)
    return ctx.done({{"op", ctx.op}, {"landed", landed}, {"released", json::array()}, {"commit", nullptr}},
                    "nothing to release: no live lease's work is all on " + branch);
  return report_published(ctx, *p, {{"landed", landed}, {"released", released}});
}

// The ops on leases the user names (extend, release, handoff), published
// as one transition: --ttl and --generation read once, then per snapshot a
// resolver of the actor's leases for `ops_of`.
using LeaseOpsFn = std::function<Result<json>(LeaseResolver& resolve, std::int64_t now, std::int64_t ttl,
                                              std::optional<std::int64_t> gen)>;
int publish_lease_ops(Context& ctx, const Parsed& a, const std::string& command, const LeaseOpsFn& ops_of) {
  auto ttl = ttl_of(a);
  if (!ttl.ok()) return ctx.fail(ttl.error());
  auto gen = generation_of(a);
  if (!gen.ok()) return ctx.fail(gen.error());
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  return publish_and_report(ctx, command, [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    LeaseResolver resolve(**store, snap, (*me)->actor);
    GITLOCKS_TRY(ops, ops_of(resolve, now, *ttl, *gen));
    return std::optional<json>{transition_body(ctx, now, ops)};
  });
}

// extend/release: ops for LEASE-ID|PATH arguments, resolved per snapshot.
// release --force --reason TEXT: an admin's release of any holder's path
// leases (the core checks the policy's admins); --landed: release_landed.
int lease_command(Context& ctx, const Argv& argv, bool extend) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (!extend && a->has("landed")) return release_landed(ctx, *a);
  const bool force = !extend && a->has("force");
  const std::optional<std::string> why = extend ? std::nullopt : a->value("reason");
  if (why && !force) return ctx.fail(make_error(Errc::usage, "--reason goes with --force (or --landed)"));
  if (force && (!why || why->empty()))
    return ctx.fail(make_error(Errc::usage, "release --force needs --reason TEXT: the holder and the log are told"));
  if (a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "name at least one LEASE-ID or PATH"));
  return publish_lease_ops(
      ctx, *a, ctx.op,
      [&](LeaseResolver& resolve, std::int64_t now, std::int64_t ttl, std::optional<std::int64_t> gen) -> Result<json> {
        json ops = json::array();
        for (const auto& arg : a->positionals) {
          const LeaseRef ref{LeaseRef::Kind::id_or_path, arg, gen};
          if (force) {  // every lease the argument names, each once
            GITLOCKS_TRY(found, resolve.force_ops_for(ref, *why));
            for (auto& op : found)
              if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(std::move(op));
            continue;
          }
          GITLOCKS_TRY(op, resolve.op_for(ref, extend));
          if (extend) op["expires_at"] = now + ttl;
          ops.push_back(op);
        }
        return ops;
      });
}

}  // namespace

int cmd_init(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  json policy = default_policy(random_hex(32), (*me)->actor);
  if (auto file = a->value("policy")) {
    auto text = read_input(*file);
    if (!text.ok()) return ctx.fail(text.error());
    auto doc = canon_parse(*text, CanonMode::lenient);
    if (!doc.ok()) return ctx.fail(doc.error().prefixed(*file + ": "));
    auto keys = check_keys(*doc,
                           {"min_ttl_ms", "max_ttl_ms", "families", "case_insensitive", "require_claim", "enforce",
                            "admins", "bots", "checkpoint"},
                           "policy file");
    if (!keys.ok()) return ctx.fail(make_error(Errc::usage, *file + ": " + keys.error().message));
    for (const auto& [k, v] : doc->items()) policy[k] = v;
  }
  // Repositories checked out on case-insensitive filesystems (macOS,
  // Windows): one resource per path whatever its case (docs/FORMAT.md).
  if (a->has("case-insensitive")) policy["case_insensitive"] = true;
  auto valid = parse_policy(policy);
  if (!valid.ok()) return ctx.fail(valid.error());
  if (a->has("private")) {  // docs/PRIVATE.md: sealed to the owner under epoch 1
    auto sealed = make_private_policy(policy);
    if (!sealed.ok()) return ctx.fail(sealed.error());
    policy = std::move(*sealed);
  }
  auto p = publish(ctx, "init", [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
    if (snap.commit) return std::optional<json>{};
    return std::optional<json>{json{{"init", policy}}};
  });
  if (!p.ok()) return ctx.fail(p.error());
  if (!p->candidate) {
    const Snapshot& s = p->source;
    return ctx.done({{"op", "init"}, {"created", false}, {"store", s.store_id}, {"commit", *s.commit}},
                    "a lock store already exists here (store " + s.store_id.substr(0, 12) + ", refs/locks/state -> " +
                        s.commit->hex().substr(0, 12) + "); nothing written");
  }
  const Candidate& c = *p->candidate;
  return ctx.done({{"op", "init"},
                   {"created", true},
                   {"store", policy["store"]},
                   {"owner", (*me)->actor},
                   {"commit", c.commit},
                   {"policy", policy},
                   {"attempts", ctx.attempts.value_or(0)}},
                  "initialised a lock store (store " + policy["store"].get<std::string>().substr(0, 12) + ", owner " +
                      (*me)->actor.substr(0, 12) + ", refs/locks/state -> " + c.commit.hex().substr(0, 12) + ")");
}

int cmd_claim(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "name at least one PATH to claim"));
  auto ttl = ttl_of(*a);
  if (!ttl.ok()) return ctx.fail(ttl.error());
  const std::string mode = a->value("mode").value_or("exclusive");
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  // The last snapshot a body was built on: the intents of others the claim
  // overlaps are read there (docs/CLI.md "claim": warnings, never refusals).
  std::optional<Snapshot> seen;
  std::int64_t seen_at = 0;
  const BodyFn body = [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    seen = snap;
    seen_at = now;
    json ops = json::array();
    for (const auto& path : a->positionals) {
      json op = ops::claim(path, mode, now + *ttl);
      if (auto note = a->value("note")) op["note"] = *note;
      ops.push_back(op);
    }
    return std::optional<json>{transition_body(ctx, now, ops)};
  };
  auto intents = [&]() {
    return seen ? intents_near(**store, *seen, seen_at, a->positionals, (*me)->actor) : Intents{};
  };
  auto refused = [&](Error e) {
    const Intents near = intents();
    if (!near.warnings.empty()) {
      // Error fields are flat: how many, and the first one's holder and path.
      e.fields["intents"] = near.list.size();
      e.fields["intent_holder"] = near.list[0]["holder"].get<std::string>();
      e.fields["intent_holder_name"] = near.list[0]["holder_name"].get<std::string>();
      e.fields["intent_path"] = near.list[0]["path"].get<std::string>();
      for (const auto& w : near.warnings) e.message += "; note: " + w;
    }
    return ctx.fail(e);
  };
  // An intent is never refused for another holder's lease: it does not wait.
  if (!a->has("wait") || mode == "intent") {
    auto p = publish(ctx, "claim", body);
    if (!p.ok()) return refused(p.error());
    const Intents near = intents();
    return report_published(ctx, *p, {{"intents", near.list}}, near.warnings);
  }
  auto timeout = parse_wait(*a->value("wait"));
  if (!timeout.ok()) return ctx.fail(timeout.error());
  const WaitOptions w{*timeout, wanted_paths(a->positionals, mode == "shared"), paths_label(a->positionals)};
  std::int64_t waited = 0;
  auto p = publish_when_admitted(ctx, "claim", body, w, &waited);
  if (!p.ok()) return refused(p.error());
  const Intents near = intents();
  return report_published(ctx, *p, {{"waited_ms", waited}, {"intents", near.list}}, near.warnings);
}

// handoff (LEASE-ID|PATH)... --to KEY [--to-name NAME] [--ttl DUR] [--note
// TEXT]: one transition ends each named lease of yours and gives its
// resource to KEY at the next generation (docs/FORMAT.md "Hand-off").
int cmd_handoff(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.empty())
    return ctx.fail(make_error(Errc::usage, "name at least one LEASE-ID or PATH to hand off"));
  auto to = a->value("to");
  if (!to) return ctx.fail(make_error(Errc::usage, "handoff needs --to KEY: the receiver's public key (64 hex)"));
  std::string key = *to;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!is_hex(key, 64))
    return ctx.fail(make_error(Errc::usage, "--to " + *to +
                                                ": not a public key (64 hex digits; `git-locks whoami` "
                                                "prints yours)"));
  const std::string name = a->value("to-name").value_or(key.substr(0, 12));
  return publish_lease_ops(
      ctx, *a, "handoff",
      [&](LeaseResolver& resolve, std::int64_t now, std::int64_t ttl, std::optional<std::int64_t> gen) -> Result<json> {
        json ops = json::array();
        for (const auto& arg : a->positionals) {
          // The lease as a release would name it; handed on instead.
          GITLOCKS_TRY(release, resolve.op_for(LeaseRef{LeaseRef::Kind::id_or_path, arg, gen}, false));
          const bool sem = release.contains("sem");
          const ops::Target t = sem ? ops::Target::semaphore(release["sem"].get<std::string>())
                                    : ops::Target::path(release["path"].get<std::string>());
          json op = ops::handoff(t, release["lease"].get<std::string>(), key, name, now + ttl, a->value("note"));
          if (release.contains("generation")) op["generation"] = release["generation"];
          ops.push_back(std::move(op));
        }
        return ops;
      });
}

int cmd_extend(Context& ctx, const Argv& argv) { return lease_command(ctx, argv, true); }

int cmd_release(Context& ctx, const Argv& argv) { return lease_command(ctx, argv, false); }

int cmd_sweep(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto p = publish(ctx, "sweep", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    GITLOCKS_TRY(op, propose_sweep(**store, snap.state, now, snap.vault()));
    json list = json::array();
    if (op) list.push_back(*op);
    // The queue's lapsed tickets go too (docs/FORMAT.md "Tickets").
    GITLOCKS_CHECK(append_lapsed_ticket_drops(ctx, snap, now, kMaxOps, list));
    if (list.empty()) return std::optional<json>{};
    return std::optional<json>{transition_body(ctx, now, list)};
  });
  if (!p.ok()) return ctx.fail(p.error());
  if (!p->candidate)
    return ctx.done({{"op", "sweep"}, {"swept", 0}, {"commit", nullptr}},
                    "nothing to sweep: no lease or ticket has expired");
  return report_published(ctx, *p);
}

int cmd_sem_acquire(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 1)
    return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  auto limit = parse_count(*a->value("limit"), "--limit");  // required (commands.cpp)
  if (!limit.ok()) return ctx.fail(limit.error());
  auto ttl = ttl_of(*a);
  if (!ttl.ok()) return ctx.fail(ttl.error());
  return publish_and_report(ctx, "sem-acquire",
                            [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
                              GITLOCKS_CHECK(require_store(ctx, snap));
                              json op = ops::sem_acquire(a->positionals[0], *limit, now + *ttl);
                              if (auto note = a->value("note")) op["note"] = *note;
                              return std::optional<json>{transition_body(ctx, now, json::array({op}))};
                            });
}

int cmd_sem_release(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 1)
    return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  auto gen = generation_of(*a);
  if (!gen.ok()) return ctx.fail(gen.error());
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  return publish_and_report(ctx, "sem-release",
                            [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
                              GITLOCKS_CHECK(require_store(ctx, snap));
                              LeaseResolver resolve(**store, snap, (*me)->actor);
                              GITLOCKS_TRY(op, resolve.op_for({LeaseRef::Kind::sem, a->positionals[0], *gen}, false));
                              return std::optional<json>{transition_body(ctx, now, json::array({op}))};
                            });
}

}  // namespace gitlocks::cli
