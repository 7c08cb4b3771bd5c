// The waiters' queue (docs/FORMAT.md "Tickets"): one record, queue:tickets,
// holds every waiter's ticket in the order they were taken. A claim or a
// sem-acquire respects it: an older live ticket of another holder that
// wants a conflicting resource stands in its way (held-path or
// full-semaphore, reason queued-behind), unless that ticket could not be
// admitted either way because one it queued behind still holds a live lease
// in its way (the claim then declares it in "passes", with a guard that
// the lease is live at T). A ticket that would close a cycle in the
// wait-for graph is refused (deadlock).
#include <algorithm>
#include <set>

#include "gitlocks/hex.hpp"
#include "gitlocks/limits.hpp"
#include "gitlocks/timefmt.hpp"
#include "plan_internal.h"

namespace gitlocks::detail {

Result<const Record*> Planner::queue() { return get(kQueueResource); }

std::vector<Wanted> Planner::wants_of(const Ticket& t) const {
  std::vector<Wanted> out;
  for (const TicketWant& w : t.wants) {
    if (w.path.empty()) {
      out.push_back(Wanted{std::nullopt, false, w.sem});
      continue;
    }
    // Stored by a ticket op that parsed it: a path the store cannot parse
    // (a record written by hand) waits for nothing.
    auto p = parse_repo_path(w.path, policy_.path_case());
    if (p.ok()) out.push_back(Wanted{std::move(*p), w.shared(), ""});
  }
  return out;
}

Result<std::vector<std::string>> Planner::blockers(const std::vector<Wanted>& wants, const std::string& who) {
  std::set<std::string> keys;
  for (const Wanted& w : wants) {
    if (w.path) {
      std::vector<Conflict> conflicts;
      GITLOCKS_CHECK(
          path_conflicts(*w.path, w.shared ? PathMode::shared : PathMode::exclusive, who, conflicts, nullptr));
      for (const Conflict& c : conflicts)
        if (!c.holder.empty() && c.holder != who) keys.insert(c.holder);
      continue;
    }
    GITLOCKS_TRY(rec, get(sem_resource(w.sem)));
    if (!rec || static_cast<std::int64_t>(rec->leases.size()) < rec->limit) continue;
    for (const Lease& l : rec->leases)
      if (l.holder != who) keys.insert(l.holder);
  }
  return std::vector<std::string>(keys.begin(), keys.end());
}

Status Planner::queue_for_claim(const Wanted& w, const std::string& who, DeclaredPasses& passes,
                                std::vector<Conflict>& conflicts, std::size_t i) {
  GITLOCKS_TRY(q, queue());
  std::vector<Pass> derived;  // the passes this claim makes, in queue order
  std::vector<const Ticket*> exempt;
  if (q) {
    // Its place: the oldest of its holder's own tickets for what it claims,
    // in any mode (a shared claim keeps the place of its own shared ticket,
    // which another holder's younger exclusive ticket conflicts with).
    const Wanted any_mode{w.path, false, w.sem};
    std::int64_t place = INT64_MAX;
    for (const Ticket& t : q->tickets)
      if (t.holder == who)
        for (const Wanted& tw : wants_of(t))
          if (wants_conflict(policy_, any_mode, Wanted{tw.path, false, tw.sem})) place = std::min(place, t.seq);
    for (const Ticket& t : q->tickets) {
      if (t.holder == who || t.seq >= place) continue;
      const std::vector<Wanted> theirs = wants_of(t);
      auto met =
          std::find_if(theirs.begin(), theirs.end(), [&](const Wanted& tw) { return wants_conflict(policy_, w, tw); });
      if (met == theirs.end()) continue;
      // Could its holder be admitted? Not while one it queued behind holds a
      // lease in its way: the latest such expiry is how long it cannot.
      std::optional<std::int64_t> blocked_until;
      for (const Wanted& tw : theirs) {
        if (!tw.path) continue;
        std::vector<Conflict> in_way;
        GITLOCKS_CHECK(path_conflicts(*tw.path, tw.shared ? PathMode::shared : PathMode::exclusive, t.holder, in_way));
        for (const Conflict& c : in_way)
          if (std::binary_search(t.behind.begin(), t.behind.end(), c.holder))
            blocked_until = std::max(blocked_until.value_or(c.expires_at), c.expires_at);
      }
      const bool declared = passes.has && std::any_of(passes.list.begin(), passes.list.end(),
                                                      [&](const Pass& p) { return p.ticket == t.id; });
      const bool pass = now_ ? blocked_until && live_until(*blocked_until, *now_) : declared;
      if (pass) {
        if (!blocked_until)
          return make_error(Errc::stale_generation,
                            "declared pass of ticket " + t.id + ": its holder is not blocked by one it queued behind")
              .because(reason::passes_mismatch);
        derived.push_back({t.id, *blocked_until});
        continue;
      }
      const std::string text = met->path ? met->path->display() : met->sem;
      Conflict c(t.expires_at, Errc::held_path,
                 "'" + text + "' is waited for by " + t.label() + ", queued before you: the ticket holds its place",
                 t.holder, t.name, text);
      c.ticket = t.id;
      c.ticket_seq = t.seq;
      conflicts.push_back(std::move(c));
    }
  }
  if (now_) {
    passes.has = !derived.empty();
    passes.shape = Ok{};
    passes.list = derived;
  } else {
    GITLOCKS_CHECK(passes.shape);
    if (passes.has && passes.list.empty())
      return make_error(Errc::bad_json, "'passes' must be a non-empty array when present");
    if (passes.list != derived)
      return make_error(Errc::stale_generation, "declared passes do not match the queue in the state")
          .because(reason::passes_mismatch);
  }
  for (std::size_t k = 0; k < derived.size(); ++k)
    guards_.push_back(time_not_after(body_path(i, {"passes", k, "until"}), derived[k].until));
  return Ok{};
}

Status Planner::queue_for_sem(const std::string& name, std::int64_t after_or_now, bool proposing,
                              std::vector<Conflict>& conflicts, std::int64_t& ahead, const Ticket*& first) {
  ahead = 0;
  first = nullptr;
  GITLOCKS_TRY(q, queue());
  if (!q) return Ok{};
  const std::string& who = ctx_.actor;
  std::int64_t place = INT64_MAX;
  auto wants_sem = [&](const Ticket& t) {
    return std::any_of(t.wants.begin(), t.wants.end(),
                       [&](const TicketWant& w) { return w.path.empty() && w.sem == name; });
  };
  for (const Ticket& t : q->tickets)
    if (t.holder == who && wants_sem(t)) place = std::min(place, t.seq);
  for (const Ticket& t : q->tickets) {
    if (t.holder == who || t.seq >= place || !wants_sem(t)) continue;
    // A live ticket takes a slot before this one; an expired one is a
    // conflict this sem-acquire is admitted after (proposing: at `now`;
    // replaying: covered by the declared `after`).
    const bool lapsed = proposing ? !t.live_at(after_or_now) : t.expires_at <= after_or_now;
    if (lapsed) {
      conflicts.push_back({t.expires_at, Errc::full_semaphore,
                           "semaphore '" + name + "' is waited for by " + t.label() + ", queued before you", t.holder,
                           t.name});
      continue;
    }
    ++ahead;
    if (!first) first = &t;
  }
  return Ok{};
}

Status Planner::deadlock_check(const std::vector<Wanted>& wants, const std::string& who) {
  GITLOCKS_TRY(q, queue());
  if (!q) return Ok{};
  // The wait-for graph over holders: a ticket's holder waits for the
  // holders of every lease in its way (live or not: the state decides) and
  // for the holders of older tickets whose wants conflict with its own.
  std::map<std::string, std::string> names;
  for (const Ticket& t : q->tickets) names.emplace(t.holder, t.name);
  auto waits_for = [&](const std::vector<Wanted>& ws, const std::string& holder,
                       std::int64_t seq) -> Result<std::set<std::string>> {
    GITLOCKS_TRY(keys, blockers(ws, holder));
    std::set<std::string> out(keys.begin(), keys.end());
    for (const Ticket& older : q->tickets) {
      if (older.seq >= seq || older.holder == holder) continue;
      const std::vector<Wanted> theirs = wants_of(older);
      for (const Wanted& a : ws)
        if (std::any_of(theirs.begin(), theirs.end(), [&](const Wanted& b) { return wants_conflict(policy_, a, b); }))
          out.insert(older.holder);
    }
    return out;
  };
  std::map<std::string, std::set<std::string>> edges;
  for (const Ticket& t : q->tickets) {
    GITLOCKS_TRY(out, waits_for(wants_of(t), t.holder, t.seq));
    edges[t.holder].insert(out.begin(), out.end());
  }
  GITLOCKS_TRY(mine, waits_for(wants, who, INT64_MAX));
  // A path from one the new ticket waits for back to its holder closes a
  // cycle: breadth first, so the cycle named is a shortest one.
  std::map<std::string, std::string> parent;
  std::vector<std::string> frontier;
  for (const auto& k : mine) {
    parent.emplace(k, who);
    frontier.push_back(k);
  }
  for (std::size_t at = 0; at < frontier.size(); ++at) {
    const std::string cur = frontier[at];
    if (cur == who) {
      std::vector<std::string> cycle;  // who -> ... -> cur(=who), walked back
      for (std::string k = parent.at(cur); k != who; k = parent.at(k)) cycle.push_back(k);
      std::reverse(cycle.begin(), cycle.end());
      auto label = [&](const std::string& k) {
        auto n = names.find(k);
        const std::string name = k == who ? name_ : n != names.end() ? n->second : std::string("holder");
        return name + " (" + k.substr(0, 12) + ")";
      };
      std::string text = label(who);
      std::string keys = who;
      for (const auto& k : cycle) {
        text += " waits for " + label(k) + ", who";
        keys += "," + k;
      }
      text += " waits for " + label(who);
      Error e(Errc::deadlock, "a ticket for these resources would close a cycle in the queue: " + text +
                                  "; waiting cannot end: release what the others wait for, then wait again");
      e.fields["cycle"] = keys;
      e.fields["cycle_length"] = static_cast<std::int64_t>(cycle.size() + 1);
      return e;
    }
    auto next = edges.find(cur);
    if (next == edges.end()) continue;
    for (const auto& k : next->second)
      if (parent.emplace(k, cur).second) frontier.push_back(k);
  }
  return Ok{};
}

Status Planner::ticket(TicketOp& t, std::size_t i) {
  GITLOCKS_TRY(q, queue());
  if (q && q->tickets.size() >= kMaxTickets)
    return make_error(Errc::usage, "the store's queue is full (" + std::to_string(kMaxTickets) +
                                       " tickets): sweep the expired ones or wait without a ticket");
  GITLOCKS_TRY(behind, blockers(t.parsed, ctx_.actor));
  if (now_) {
    t.has_behind = true;
    t.behind_shape = Ok{};
    t.behind = behind;
  } else {
    GITLOCKS_CHECK(t.behind_shape);
    if (!t.has_behind) return make_error(Errc::bad_json, "ticket op needs 'behind'");
    if (t.behind != behind)
      return make_error(Errc::stale_generation, "declared 'behind' does not match the leases in the ticket's way")
          .because(reason::behind_mismatch);
  }
  GITLOCKS_CHECK(deadlock_check(t.parsed, ctx_.actor));

  GITLOCKS_TRY(rec, get_for_write(kQueueResource, Record::queue()));
  Ticket ticket;
  ticket.id = lease_id(ctx_.instance, i, kQueueResource);
  ticket.holder = ctx_.actor;
  ticket.name = name_;
  ticket.seq = ++rec->generation;
  ticket.expires_at = t.expires_at;
  ticket.created_at = created_at_;
  ticket.wants = t.wants;
  ticket.behind = t.behind;
  rec->tickets.push_back(std::move(ticket));
  for (auto& g : ttl_time_guards(policy_, body_path(i, {}), t.expires_at)) guards_.push_back(std::move(g));
  return Ok{};
}

Status Planner::ticket_renew(TicketRenewOp& t, std::size_t i) {
  GITLOCKS_TRY(q, queue());
  const Ticket* found = nullptr;
  if (q)
    for (const Ticket& k : q->tickets)
      if (k.id == t.ticket) found = &k;
  if (!found || found->holder != ctx_.actor)
    return make_error(Errc::not_holder, found ? "ticket " + t.ticket + " is " + found->label() + "'s, not yours"
                                              : "no ticket " + t.ticket + " in the queue (dropped or swept)")
        .because(found ? errc_name(Errc::not_holder) : reason::no_ticket);
  if (now_ && !t.has_prev_expires_at) {
    t.has_prev_expires_at = true;
    t.prev_expires_at = found->expires_at;
  }
  GITLOCKS_TRY(prev, t.prev_expires_at);
  if (prev != found->expires_at)
    return make_error(Errc::stale_generation, "ticket expiry changed since the request was made")
        .because(reason::expiry_changed);
  if (t.expires_at <= prev) return make_error(Errc::guard_window, "a renewal must move the ticket's expiry later");
  if (now_ && *now_ > prev) {
    Error e(Errc::guard_window, "ticket " + t.ticket + " lapsed " + format_when(prev, *now_) + "; take a new one");
    e.fields["prev_expires_at_ms"] = prev;
    e.fields["checked_at_ms"] = *now_;
    return e;
  }
  GITLOCKS_TRY(rec, get_for_write(kQueueResource, Record::queue()));
  rec->ticket(t.ticket)->expires_at = t.expires_at;
  guards_.push_back(time_not_after(body_path(i, {"prev_expires_at"}), prev));
  for (auto& g : ttl_time_guards(policy_, body_path(i, {}), t.expires_at)) guards_.push_back(std::move(g));
  return Ok{};
}

Status Planner::ticket_drop(TicketDropOp& t, std::size_t i) {
  GITLOCKS_TRY(q, queue());
  const Ticket* found = nullptr;
  if (q)
    for (const Ticket& k : q->tickets)
      if (k.id == t.ticket) found = &k;
  if (!found)
    return make_error(Errc::not_holder, "no ticket " + t.ticket + " in the queue (dropped or swept)")
        .because(reason::no_ticket);
  if (found->holder != ctx_.actor) {
    // Another holder's ticket goes only once it lapsed, as a sweep declares it.
    if (now_ && !t.has_expires_at) {
      t.has_expires_at = true;
      t.expires_at = found->expires_at;
    }
    if (!t.has_expires_at)
      return make_error(Errc::not_holder, "ticket " + t.ticket + " is " + found->label() +
                                              "'s: only its holder drops it before it lapses");
    GITLOCKS_TRY(exp, t.expires_at);
    if (exp != found->expires_at)
      return make_error(Errc::stale_generation, "dropped ticket " + t.ticket + " is not in the queue as declared")
          .because(reason::sweep_mismatch);
    if (now_ && live_until(exp, *now_))
      return make_error(Errc::held_path, "ticket " + t.ticket + " of " + found->label() + " has not lapsed")
          .because(reason::not_expired);
    guards_.push_back(time_after(body_path(i, {"expires_at"}), exp));
  } else if (t.has_expires_at) {
    return make_error(Errc::bad_json, "dropping your own ticket declares no 'expires_at'");
  }
  GITLOCKS_TRY(rec, get_for_write(kQueueResource, Record::queue()));
  rec->tickets.erase(
      std::find_if(rec->tickets.begin(), rec->tickets.end(), [&](const Ticket& k) { return k.id == t.ticket; }));
  return Ok{};
}

// --- reading

Result<TicketOp> Planner::read_ticket(const json& op) {
  GITLOCKS_CHECK(check_keys(op, {"op", "wants", "expires_at", "behind"}, "ticket op"));
  TicketOp t;
  auto wants = op.find("wants");
  if (wants == op.end() || !wants->is_array() || wants->empty())
    return make_error(Errc::bad_json, "ticket op needs a non-empty 'wants' array");
  if (wants->size() > kMaxTicketWants)
    return make_error(Errc::usage, "a ticket waits for at most " + std::to_string(kMaxTicketWants) + " resources");
  for (const json& w : *wants) {
    if (!w.is_object()) return make_error(Errc::bad_json, "a ticket's want must be an object");
    if (w.contains("sem")) {
      GITLOCKS_CHECK(check_keys(w, {"sem"}, "ticket want"));
      GITLOCKS_TRY(name, get_string(w, "sem"));
      GITLOCKS_CHECK(check_name(name, "semaphore"));
      t.wants.push_back({"", "", name});
      t.parsed.push_back(Wanted{std::nullopt, false, name});
      continue;
    }
    GITLOCKS_CHECK(check_keys(w, {"path", "mode"}, "ticket want"));
    GITLOCKS_TRY(text, get_string(w, "path"));
    GITLOCKS_TRY(p, parse_repo_path(text, policy_.path_case()));
    if (p.display() != text) return make_error(Errc::bad_path, "path is not normalised");
    GITLOCKS_TRY(mode, get_string(w, "mode"));
    if (mode == "intent") return make_error(Errc::usage, "an intent never waits: it takes no ticket");
    if (mode != "exclusive" && mode != "shared") return make_error(Errc::usage, "mode must be exclusive or shared");
    t.wants.push_back({text, mode, ""});
    t.parsed.push_back(Wanted{p, mode == "shared", ""});
  }
  GITLOCKS_TRY(e, expiry(op));
  t.expires_at = e;
  if (auto b = op.find("behind"); b != op.end()) {
    t.has_behind = true;
    if (!b->is_array()) {
      t.behind_shape = make_error(Errc::bad_json, "'behind' must be an array of keys");
    } else {
      for (const json& k : *b) {
        if (!k.is_string() || !is_hex(k.get<std::string>(), 64)) {
          t.behind_shape = make_error(Errc::bad_json, "'behind' must be an array of keys (64 hex)");
          break;
        }
        t.behind.push_back(k.get<std::string>());
      }
    }
  }
  return t;
}

Result<TicketRenewOp> Planner::read_ticket_renew(const json& op) {
  GITLOCKS_CHECK(check_keys(op, {"op", "ticket", "prev_expires_at", "expires_at"}, "ticket-renew op"));
  TicketRenewOp t;
  GITLOCKS_TRY(id, get_string(op, "ticket"));
  t.ticket = id;
  GITLOCKS_TRY(e, expiry(op));
  t.expires_at = e;
  t.has_prev_expires_at = op.contains("prev_expires_at");
  t.prev_expires_at = get_int(op, "prev_expires_at");
  return t;
}

Result<TicketDropOp> Planner::read_ticket_drop(const json& op) {
  GITLOCKS_CHECK(check_keys(op, {"op", "ticket", "expires_at"}, "ticket-drop op"));
  TicketDropOp t;
  GITLOCKS_TRY(id, get_string(op, "ticket"));
  t.ticket = id;
  t.has_expires_at = op.contains("expires_at");
  t.expires_at = get_int(op, "expires_at");
  return t;
}

}  // namespace gitlocks::detail
