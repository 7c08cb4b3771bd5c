// watch [--interval DUR] [--max-events N] [PATH|sem:NAME...]: one line per
// change of the store, as the ref moves (docs/CLI.md "watch"). Every new
// tip is verified first (verified_tip_snapshot, the rule every command
// follows: never act on unverified history); then the commits from the last
// tip seen to the new one are read in order, each against its parent's
// state (record_changes: O(the commit's changes)), and their lease changes
// become events: claimed, renewed, released, expired, force-released,
// handed-off, and lost for the watcher's own leases that ended other than
// by its release or hand-off. A lease whose expiry passes on the local
// clock is reported expired once, when it passes. Writes nothing.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "checkpoint.h"
#include "cli.h"
#include "gitlocks/model.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/timefmt.hpp"
#include "identity.h"
#include "publish.h"
#include "report.h"
#include "vault_host.h"

namespace gitlocks::cli {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

// How often the tip is read: a local ref costs a file read; a remote store
// is fetched each time.
constexpr std::int64_t kLocalIntervalMs = 50;
constexpr std::int64_t kRemoteIntervalMs = 2000;

// A lease as the watcher knows it: its resource ("path:P" or "sem:N").
struct Known {
  std::string resource;
  Lease lease;
};

struct Filters {
  std::vector<RepoPath> paths;
  std::set<std::string> sems;
  bool all() const { return paths.empty() && sems.empty(); }
  bool match(const Known& k) const {
    if (all()) return true;
    if (k.resource.rfind("sem:", 0) == 0) return sems.count(k.resource.substr(4)) > 0;
    auto p = parse_repo_path(k.lease.path);
    if (!p.ok()) return false;
    for (const auto& f : paths)
      if (paths_overlap(*p, f)) return true;
    return false;
  }
};

class Watcher {
 public:
  Watcher(Context& ctx, ObjectStore& store, Filters filters, std::string me, std::int64_t max_events)
      : ctx_(ctx), store_(store), filters_(std::move(filters)), me_(std::move(me)), max_(max_events) {}

  bool done() const { return max_ > 0 && emitted_ >= max_; }

  // The first tip: what is live there is known, nothing is reported (a
  // lease already expired at `now` is not reported expired either).
  Status start(const Snapshot& snap, const std::optional<Oid>& tip, std::int64_t now) {
    tip_ = tip;
    known_.clear();
    expired_.clear();
    if (snap.commit) {
      GITLOCKS_CHECK(require_keys(ctx_, snap));
      StateReader reader(store_, snap.state, snap.codec());
      GITLOCKS_CHECK(reader.for_each_valid_record([&](const Record& rec) {
        for (const Lease& l : rec.leases) {
          known_[l.id] = {rec.resource.key(), l};
          if (!l.live_at(now)) expired_.insert(l.id);
        }
        return true;
      }));
      state_ = snap.state;
      open_ = {};
      if (snap.vault()) {
        GITLOCKS_TRY(o, opened(snap.state, snap.vault()));
        open_ = std::move(o);
      }
    }
    json line = {{"event", "watching"}, {"commit", tip ? json(tip->hex()) : json(nullptr)}};
    emit_raw(line,
             "watching refs/locks/state" + (tip ? " at " + tip->hex().substr(0, 12) : std::string(" (no store yet)")));
    return Ok{};
  }

  // A new tip: verified, then every commit since the last tip, in order.
  Status advance(const std::optional<Oid>& tip, std::int64_t now) {
    if (tip == tip_) return Ok{};
    GITLOCKS_TRY(snap, verified_tip_snapshot(ctx_, tip));
    if (!snap.commit) return start(snap, tip, now);
    GITLOCKS_CHECK(require_keys(ctx_, snap));
    std::vector<Oid> fresh;  // newest first
    bool found = false;
    for (std::optional<Oid> at = tip; at && fresh.size() < kMaxWalk;) {
      if (tip_ && *at == *tip_) {
        found = true;
        break;
      }
      fresh.push_back(*at);
      GITLOCKS_TRY(c, store_.read_commit(*at));
      at = chain_parent(store_, *at, c);
    }
    if (!found && tip_) {
      // Not a descendant of the last tip (a rewrite the trust rules
      // accepted, or a very long absence): start again from the new tip.
      json line = {{"event", "reset"}, {"commit", tip->hex()}};
      emit_raw(line, "the store moved to " + tip->hex().substr(0, 12) +
                         " (not after the last tip seen): watching from there");
      return start(snap, tip, now);
    }
    for (auto it = fresh.rbegin(); it != fresh.rend(); ++it) GITLOCKS_CHECK(follow(*it, snap.vault()));
    tip_ = tip;
    return Ok{};
  }

  // Leases whose expiry passed on the local clock since the last look.
  void expire(std::int64_t now) {
    for (auto& [id, k] : known_) {
      if (k.lease.live_at(now) || expired_.count(id)) continue;
      expired_.insert(id);
      json e = event("expired", k, nullptr, now, "");
      report(e, k);
      if (k.lease.holder == me_) report(event("lost", k, nullptr, now, ""), k);
    }
  }

 private:
  static constexpr std::size_t kMaxWalk = 100000;

  // What opens the records of `state`: the codec of its own policy's epoch
  // (a PRIVATE store; the member's vault has every epoch it was given),
  // none in the clear.
  struct Opened {
    std::shared_ptr<const RecordCodec> codec;
    std::int64_t epoch = -1;
  };
  Result<Opened> opened(const Oid& state, const Vault* vault) {
    GITLOCKS_TRY(doc, StateReader(store_, state).policy());
    GITLOCKS_TRY(policy, parse_policy(doc));
    GITLOCKS_TRY(codec, state_codec(policy, vault));
    return Opened{std::shared_ptr<const RecordCodec>(std::move(codec)), policy.is_private ? policy.epoch : -1};
  }

  Status follow(const Oid& commit, const Vault* vault) {
    GITLOCKS_TRY(tc, read_transition_commit(store_, commit));
    GITLOCKS_TRY(doc, canon_parse(tc.packet_stored, CanonMode::strict));
    json packet = doc.contains("packet") ? doc["packet"] : json::object();
    open_sealed_body(vault, packet);
    const std::optional<std::int64_t> t = admission_time(tc, packet);
    const std::string actor = packet.value("actor", "");
    const std::string command = packet.value("command", "");
    // A public store's records are in the clear: no policy to read per commit.
    Opened now_open;
    if (vault) {
      GITLOCKS_TRY(o, opened(tc.state, vault));
      now_open = std::move(o);
    }
    // States of one epoch share one codec: record_changes tells a rekey by it.
    const RecordCodec* before_codec =
        now_open.epoch == open_.epoch && now_open.codec ? now_open.codec.get() : open_.codec.get();
    GITLOCKS_TRY(changes, record_changes(store_, state_, tc.state, before_codec, now_open.codec.get()));
    state_ = tc.state;
    open_ = std::move(now_open);
    std::map<std::string, Known> before, after;
    std::map<std::string, Released> forced;  // lease id -> its force-release
    for (const auto& r : changes.before) {
      const std::string res = Resource::of(r).key();
      for (const Lease& l : leases_of(r)) before[l.id] = {res, l};
    }
    for (const auto& r : changes.after) {
      const std::string res = Resource::of(r).key();
      for (const Lease& l : leases_of(r)) after[l.id] = {res, l};
      if (auto gone = released_of(r)) forced[gone->lease.id] = *gone;
    }
    const json when = t ? json(*t) : json(nullptr);
    // Hand-offs first: a new lease not the signer's, on the resource of a
    // lease of the signer's that ends here (docs/FORMAT.md "Hand-off").
    std::set<std::string> handed_new, handed_old;
    for (const auto& [id, n] : after) {
      if (before.count(id) || n.lease.holder == actor) continue;
      for (const auto& [old_id, o] : before) {
        if (after.count(old_id) || handed_old.count(old_id) || o.resource != n.resource || o.lease.holder != actor)
          continue;
        json e = event("handed-off", o, commit.hex(), when, actor);
        e["to"] = n.lease.holder;
        e["to_name"] = n.lease.name;
        e["new_lease"] = n.lease.id;
        e["new_generation"] = n.lease.generation;
        e["new_expires_at"] = n.lease.expires_at;
        report(e, o, &n);
        handed_new.insert(id);
        handed_old.insert(old_id);
        break;
      }
    }
    for (const auto& [id, o] : before) {
      if (after.count(id) || handed_old.count(id)) continue;
      known_.erase(id);
      const bool was_expired = expired_.erase(id) > 0;
      if (auto f = forced.find(id); f != forced.end()) {
        json e = event("force-released", o, commit.hex(), when, actor);
        e["by"] = f->second.by;
        e["by_name"] = f->second.by_name;
        e["reason"] = f->second.reason;
        report(e, o);
        if (o.lease.holder == me_) report(event("lost", o, commit.hex(), when, actor), o);
      } else if (o.lease.holder == actor && command != "sweep") {
        report(event("released", o, commit.hex(), when, actor), o);
      } else if (!was_expired) {  // swept or reclaimed after its expiry
        report(event("expired", o, commit.hex(), when, actor), o);
        if (o.lease.holder == me_) report(event("lost", o, commit.hex(), when, actor), o);
      }
    }
    follow_queue(changes, commit, when, actor, after, before);
    for (const auto& [id, n] : after) {
      auto was = before.find(id);
      if (was == before.end()) {
        known_[id] = n;
        if (!handed_new.count(id)) report(event("claimed", n, commit.hex(), when, actor), n);
      } else if (was->second.lease.expires_at != n.lease.expires_at) {
        known_[id] = n;
        expired_.erase(id);
        report(event("renewed", n, commit.hex(), when, actor), n);
      }
    }
    return Ok{};
  }

  // The queue's changes (docs/FORMAT.md "Tickets"): a new ticket is
  // "queued"; a ticket its holder dropped in a commit that issued it a
  // lease is "admitted"; dropped otherwise, "unqueued" (why: "gave-up" by
  // its holder, "lapsed" when another dropped it after its expiry).
  // Renewals are not reported.
  void follow_queue(const RecordChanges& changes, const Oid& commit, const json& when, const std::string& actor,
                    const std::map<std::string, Known>& after, const std::map<std::string, Known>& before) {
    std::map<std::string, Ticket> was, is;
    for (const auto& r : changes.before)
      if (Resource::of(r).kind == RecordKind::queue)
        for (const Ticket& t : Record::of(r).tickets) was[t.id] = t;
    for (const auto& r : changes.after)
      if (Resource::of(r).kind == RecordKind::queue)
        for (const Ticket& t : Record::of(r).tickets) is[t.id] = t;
    if (was.empty() && is.empty()) return;
    const bool issued_to_actor = std::any_of(after.begin(), after.end(), [&](const auto& kv) {
      return !before.count(kv.first) && kv.second.lease.holder == actor;
    });
    for (const auto& [id, t] : was) {
      if (is.count(id)) continue;
      json e = ticket_event(t.holder != actor ? "unqueued"
                            : issued_to_actor ? "admitted"
                                              : "unqueued",
                            t, commit.hex(), when, actor);
      if (e["event"] == "unqueued") e["why"] = t.holder == actor ? "gave-up" : "lapsed";
      report_ticket(e, t);
    }
    for (const auto& [id, t] : is)
      if (!was.count(id)) report_ticket(ticket_event("queued", t, commit.hex(), when, actor), t);
  }

  static json ticket_event(const std::string& kind, const Ticket& t, const json& commit, const json& time,
                           const std::string& actor) {
    json wants = json::array();
    for (const TicketWant& w : t.wants) wants.push_back(w.to_json());
    return {{"event", kind},
            {"commit", commit},
            {"time", time},
            {"actor", actor.empty() ? json(nullptr) : json(actor)},
            {"resource", kQueueResource},
            {"ticket", t.id},
            {"seq", t.seq},
            {"holder", t.holder},
            {"holder_name", t.name},
            {"wants", std::move(wants)},
            {"expires_at", t.expires_at}};
  }

  void report_ticket(const json& e, const Ticket& t) {
    if (done()) return;
    bool match = filters_.all();
    std::string wants;
    for (const TicketWant& w : t.wants) {
      wants += (wants.empty() ? "" : ", ") + (w.path.empty() ? "semaphore " + w.sem : w.path + " (" + w.mode + ")");
      if (w.path.empty()) {
        match = match || filters_.sems.count(w.sem) > 0;
      } else if (auto p = parse_repo_path(w.path); p.ok()) {
        for (const auto& f : filters_.paths) match = match || paths_overlap(*p, f);
      }
    }
    if (!match) return;
    std::string human = e["event"].get<std::string>() + " ticket #" + std::to_string(t.seq) + " of " + t.name + " (" +
                        t.holder.substr(0, 12) + ") for " + wants;
    if (e.contains("why")) human += " (" + e["why"].get<std::string>() + ")";
    const json& time = e["time"];
    emit_raw(
        e, (time.is_number_integer() ? format_instant_ms(time.get<std::int64_t>()) : std::string("-")) + "  " + human);
  }

  static json event(const std::string& kind, const Known& k, const json& commit, const json& time,
                    const std::string& actor) {
    const bool sem = k.resource.rfind("sem:", 0) == 0;
    json e = {{"event", kind},
              {"commit", commit},
              {"time", time},
              {"actor", actor.empty() ? json(nullptr) : json(actor)},
              {"resource", k.resource},
              {"lease", k.lease.id},
              {"holder", k.lease.holder},
              {"holder_name", k.lease.name},
              {"generation", k.lease.generation},
              {"expires_at", k.lease.expires_at}};
    if (sem) e["sem"] = k.resource.substr(4);
    else {
      e["path"] = k.lease.path;
      e["mode"] = k.lease.mode;
    }
    return e;
  }

  // One event, when the filters let its lease (or the lease handed to) through.
  void report(const json& e, const Known& k, const Known* also = nullptr) {
    if (done() || !(filters_.match(k) || (also && filters_.match(*also)))) return;
    const std::string what = e.contains("path")
                                 ? e["path"].get<std::string>() + " (" + e["mode"].get<std::string>() + ")"
                                 : "a slot of semaphore " + e["sem"].get<std::string>();
    std::string human = e["event"].get<std::string>() + " " + what + " of " + k.lease.label() + ", generation " +
                        std::to_string(k.lease.generation);
    if (e["event"] == "handed-off")
      human += " -> " + e["to_name"].get<std::string>() + " (" + e["to"].get<std::string>().substr(0, 12) + ")";
    if (e["event"] == "force-released")
      human += " by " + e["by_name"].get<std::string>() + ": " + e["reason"].get<std::string>();
    if (e["event"] == "claimed" || e["event"] == "renewed") human += ", until " + format_instant_ms(k.lease.expires_at);
    const json& t = e["time"];
    emit_raw(e, (t.is_number_integer() ? format_instant_ms(t.get<std::int64_t>()) : std::string("-")) + "  " + human);
  }

  void emit_raw(const json& line, const std::string& human) {
    const std::string text = ctx_.json_output ? json_line(line) : human;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (line.value("event", "") != "watching" && line.value("event", "") != "reset") ++emitted_;
  }

  Context& ctx_;
  ObjectStore& store_;
  Filters filters_;
  std::string me_;
  std::int64_t max_;
  std::int64_t emitted_ = 0;
  std::optional<Oid> tip_;
  Oid state_;                           // the last tip's state (null before the store exists)
  Opened open_;                         // what opens its records
  std::map<std::string, Known> known_;  // the leases in the last tip's state
  std::set<std::string> expired_;       // known leases already reported expired by the clock
};

}  // namespace

int cmd_watch(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto remote = ctx.remote();
  if (!remote.ok()) return ctx.fail(remote.error());
  std::int64_t interval = *remote ? kRemoteIntervalMs : kLocalIntervalMs;
  if (auto i = a->value("interval")) {
    auto d = parse_duration(*i);
    if (!d.ok()) return ctx.fail(d.error());
    if (*d < 10) return ctx.fail(make_error(Errc::usage, "--interval must be at least 10ms"));
    interval = *d;
  }
  std::int64_t max_events = 0;
  if (auto m = a->value("max-events")) {
    auto n = parse_count(*m, "--max-events");
    if (!n.ok()) return ctx.fail(n.error());
    if (*n < 1) return ctx.fail(make_error(Errc::usage, "--max-events must be at least 1"));
    max_events = *n;
  }
  Filters filters;
  std::vector<std::string> typed;
  for (const auto& p : a->positionals) {
    if (p.rfind("sem:", 0) == 0) {
      if (p.size() == 4) return ctx.fail(make_error(Errc::usage, "sem: needs a semaphore name"));
      filters.sems.insert(p.substr(4));
    } else {
      typed.push_back(p);
    }
  }
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  std::string me;
  if (auto id = ctx.identity(); id.ok()) me = (*id)->actor;  // only for "lost"
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  auto tip = ctx.read_tip();
  if (!tip.ok()) return ctx.fail(tip.error());
  // Paths in the store's form (a case-insensitive store folds them).
  auto first = verified_tip_snapshot(ctx, *tip);
  if (!first.ok()) return ctx.fail(first.error());
  auto parsed = path_filters(typed, first->commit ? first->path_case() : PathCase::sensitive);
  if (!parsed.ok()) return ctx.fail(parsed.error());
  filters.paths = std::move(*parsed);
  Watcher w(ctx, **store, std::move(filters), me, max_events);
  auto started = now_ms();
  if (!started.ok()) return ctx.fail(started.error());
  if (auto st = w.start(*first, *tip, *started); !st.ok()) return ctx.fail(st.error());
  while (!g_stop && !w.done()) {
    auto now = now_ms();
    if (!now.ok()) return ctx.fail(now.error());
    w.expire(*now);
    if (w.done()) break;
    for (std::int64_t slept = 0; slept < interval && !g_stop; slept += 10) ::usleep(10'000);
    if (g_stop) break;
    auto next = ctx.read_tip();
    if (!next.ok()) return ctx.fail(next.error());
    auto seen = now_ms();
    if (!seen.ok()) return ctx.fail(seen.error());
    if (auto st = w.advance(*next, *seen); !st.ok()) return ctx.fail(st.error());
  }
  return 0;
}

}  // namespace gitlocks::cli
