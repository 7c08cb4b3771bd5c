// The timeline of leases over a replayed history (query.hpp): per commit,
// the records it changed; per lease, when it began and how it ended.
#include <algorithm>
#include <map>
#include <set>

#include "gitlocks/model.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/trust.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {
namespace {

// Why a commit the replay could not read (ReplayedCommit::state null) has
// no records to show: the error code of reading its layout, format and
// policy, in that order.
std::string unreadable(ObjectStore& store, const Oid& commit) {
  auto tc = read_transition_commit(store, commit);
  if (!tc.ok()) return std::string(errc_name(tc.error().code));
  StateReader reader(store, tc->state);
  if (auto st = reader.check_format(); !st.ok()) return std::string(errc_name(st.error().code));
  auto doc = reader.policy();
  if (!doc.ok()) return std::string(errc_name(doc.error().code));
  auto pol = parse_policy(*doc);
  if (!pol.ok()) return std::string(errc_name(pol.error().code));
  return std::string(errc_name(Errc::invalid));
}

// A lease as the timeline sees it, from its record (its life not yet known).
using Seen = TimelineLease;

// Every lease of `records`, by id, in record order (ids are unique).
std::vector<std::pair<std::string, Seen>> leases_of(const std::vector<json>& records) {
  std::vector<std::pair<std::string, Seen>> out;
  for (const auto& r : records) {
    auto leases = r.find("leases");
    if (leases == r.end() || !leases->is_array()) continue;
    const Resource res = Resource::of(r);
    for (const Lease& l : gitlocks::leases_of(r)) {
      Seen s;
      s.id = l.id;
      // The timeline names a path by itself and a semaphore by its key.
      s.resource = res.kind == RecordKind::sem ? res.key() : res.name;
      s.kind = std::string(record_kind_name(res.kind));
      s.mode = l.mode.empty() ? "slot" : l.mode;
      s.generation = l.generation;
      s.holder = l.holder;
      s.name = l.name;
      s.expires_at = l.expires_at;
      out.emplace_back(l.id, std::move(s));
    }
  }
  return out;
}

json opt_time(const std::optional<std::int64_t>& t) { return t ? json(*t) : json(nullptr); }

// Every ticket of the queue record among `records`, by id.
std::map<std::string, Ticket> tickets_of(const std::vector<json>& records) {
  std::map<std::string, Ticket> out;
  for (const auto& r : records)
    if (Resource::of(r).kind == RecordKind::queue)
      for (const Ticket& t : Record::of(r).tickets) out[t.id] = t;
  return out;
}

// verified_snapshot of `commit` for `keys`: from the anchor naming it, or
// continuing from the newest anchor when the commit descends from it (else
// from the root).
Result<Trusted> verified_for(ObjectStore& store, const Oid& commit, const VerifierKeys& keys, bool allow_test_clock,
                             const std::vector<TrustState>& anchors) {
  TrustOptions to;
  to.allow_test_clock = allow_test_clock;
  to.vault = keys.vault();
  to.verifier = keys.verifier;
  std::optional<TrustState> anchor;
  for (const TrustState& a : anchors)
    if (a.commit == commit) anchor = a;
  if (!anchor && !anchors.empty()) anchor = anchors.back();
  to.anchor = anchor;
  auto trusted = verified_snapshot(store, commit, to);
  if (!trusted.ok() && anchor) {
    auto verdict = trusted.error().fields.find("verdict");
    if (verdict != trusted.error().fields.end() && verdict->second == "rewrite") {
      to.anchor.reset();  // an earlier commit, or another branch: from the root
      return verified_snapshot(store, commit, to);
    }
  }
  return trusted;
}

// A view's snapshot must open its records when the verifier brought keys.
Status readable(const Snapshot& snap) {
  if (snap.keys && snap.keys->codec_error) return snap.keys->codec_error->prefixed("commit " + *snap.commit + ": ");
  return Ok{};
}
}  // namespace

Result<CommitView> commit_view(ObjectStore& store, const Oid& commit, const CommitViewOptions& options) {
  GITLOCKS_TRY(c, store.read_commit(commit));
  const VerifierKeys keys = verifier_keys(store, commit, options.member);
  CommitView out;
  std::vector<TrustState> anchors = options.anchors;
  if (options.with_parent && !c.parents.empty()) {
    GITLOCKS_TRY(parent, verified_for(store, c.parents.front(), keys, options.allow_test_clock, anchors));
    GITLOCKS_CHECK(readable(parent.snapshot));
    anchors.push_back(*parent.trust);
    out.parent_trust = std::move(parent.trust);
    out.replayed = parent.replayed;
    out.parent = std::move(parent.snapshot);
  }
  GITLOCKS_TRY(at, verified_for(store, commit, keys, options.allow_test_clock, anchors));
  GITLOCKS_CHECK(readable(at.snapshot));
  out.at = std::move(at.snapshot);
  out.trust = std::move(*at.trust);
  out.replayed += at.replayed;
  return out;
}

Result<RecordChanges> commit_changes(ObjectStore& store, const CommitView& view) {
  const RecordCodec* new_codec = view.at.codec();
  const RecordCodec* old_codec = nullptr;
  Oid parent_state;
  if (view.parent) {
    parent_state = view.parent->state;
    old_codec = view.parent->codec();
    // record_changes tells a rekey by the codec: states of one epoch share one.
    if (old_codec && new_codec && view.parent->epoch() == view.at.epoch()) old_codec = new_codec;
  }
  return record_changes(store, parent_state, view.at.state, old_codec, new_codec);
}

// A commit the timeline read: the next one's parent.
struct ReadCommit {
  Oid state;
  std::shared_ptr<const RecordCodec> codec;
  std::int64_t epoch = -1;
};

struct LeaseTimelineBuilder::Impl {
  ObjectStore& store;
  LeaseTimeline out;
  std::map<std::string, std::size_t> open;          // lease id -> index in out.leases
  std::map<std::string, Seen> live;                 // in force after the last readable commit
  std::map<std::string, std::size_t> open_tickets;  // ticket id -> index in out.tickets
  std::map<std::string, Ticket> queued;             // the queue after the last readable commit
  bool gap = false;                                 // the last commit's records could not be read
  std::size_t next = 0;                             // the index of the next transition
  std::optional<ReadCommit> previous;               // the last commit read
  Oid policy_blob;                                  // of out.policy
};

LeaseTimelineBuilder::LeaseTimelineBuilder(ObjectStore& store)
    : impl_(new Impl{store, {}, {}, {}, {}, {}, false, 0, std::nullopt, Oid()}) {
  impl_->out.policy = nullptr;
}

LeaseTimelineBuilder::~LeaseTimelineBuilder() = default;

TimelineTransition LeaseTimelineBuilder::add(const ReplayedCommit& rc) {
  const Verdict& v = rc.verdict;
  Impl& b = *impl_;
  ObjectStore& store = b.store;
  LeaseTimeline& out = b.out;
  auto& open = b.open;
  auto& live = b.live;
  bool& gap = b.gap;
  const std::size_t i = b.next++;
  TimelineTransition tr;
  tr.index = i;
  tr.commit = v.commit;
  tr.time = v.time ? v.time : out.end_time;
  if (v.time) out.end_time = v.time;
  tr.command = v.command;
  tr.actor = v.actor;
  tr.ok = v.ok;
  tr.level = v.level;
  tr.reason = v.reason;
  tr.detail = v.detail;
  std::set<std::string> resources;
  std::set<std::int64_t> generations;
  // The leases of the records this commit changed, before and after; after
  // a commit whose records could not be read, the whole state against the
  // leases last seen.
  std::vector<std::pair<std::string, Seen>> before, after;
  std::map<std::string, Ticket> tickets_before, tickets_after;
  bool queue_changed = false;
  std::map<std::string, Released> released;  // lease id -> the last force-release of its record
  auto note_released = [&](const std::vector<json>& records) {
    for (const auto& r : records)
      if (auto gone = released_of(r)) released[gone->lease.id] = std::move(*gone);
  };
  // The last policy read, in the clear in every store (a PRIVATE state
  // without the key of its epoch too).
  if (rc.state && (b.policy_blob.empty() || b.policy_blob != rc.policy_blob)) {
    out.policy = policy_document(rc.policy);
    b.policy_blob = rc.policy_blob;
  }
  // The commit's state, policy and codec are the replay's (ReplayedCommit):
  // the keys that open its records are the verifier's, as for every host.
  auto read = [&]() -> Status {
    if (!rc.state) return make_error(Errc::invalid, "unreadable");
    const Oid& state = *rc.state;
    GITLOCKS_CHECK(StateReader(store, state).check_format());
    if (rc.policy.is_private && !rc.codec)
      return make_error(Errc::not_member, "commit " + v.commit + ": no key of epoch " +
                                              std::to_string(rc.policy.epoch) + " among the verifier's");
    ReadCommit at{state, rc.codec, rc.codec ? rc.policy.epoch : -1};
    // The replay hands commits out along first parents: the last commit
    // read is this one's parent. After a commit whose records could not be
    // read (or for the first one: the root, or the first after a trusted
    // start), the whole state against the leases last seen.
    if (gap || !b.previous) {
      StateReader reader(store, state, at.codec.get());
      std::vector<json> records;
      GITLOCKS_CHECK(reader.for_each_record([&](const json& r) {
        records.push_back(r);
        return true;
      }));
      before.assign(live.begin(), live.end());
      after = leases_of(records);
      note_released(records);
      tickets_before = b.queued;
      tickets_after = tickets_of(records);
      queue_changed = true;
    } else {
      const ReadCommit& p = *b.previous;
      // record_changes tells a rekey by the codec: states of one epoch share one.
      const RecordCodec* old_codec = p.codec && at.codec && p.epoch == at.epoch ? at.codec.get() : p.codec.get();
      GITLOCKS_TRY(changes, record_changes(store, p.state, state, old_codec, at.codec.get()));
      before = leases_of(changes.before);
      after = leases_of(changes.after);
      note_released(changes.after);
      for (const auto* side : {&changes.before, &changes.after})
        for (const auto& r : *side) queue_changed = queue_changed || Resource::of(r).kind == RecordKind::queue;
      if (queue_changed) {
        tickets_before = tickets_of(changes.before);
        tickets_after = tickets_of(changes.after);
      }
    }
    b.previous = std::move(at);
    return Ok{};
  };
  if (auto st = read(); !st.ok()) {
    b.previous.reset();
    tr.state_error = rc.state ? std::string(errc_name(st.error().code)) : unreadable(store, v.commit);
  } else {
    std::map<std::string, const Seen*> before_by_id, after_by_id;
    for (const auto& [id, s] : before) before_by_id[id] = &s;
    for (const auto& [id, s] : after) after_by_id[id] = &s;
    std::set<std::string> added;
    // A new lease held by another than the signer comes of a hand-off
    // (docs/FORMAT.md "Hand-off"): every other op admits the signer's own.
    std::map<std::string, const Seen*> handed;  // resource -> the receiver's lease
    for (const auto& [id, l] : after) {
      auto was = before_by_id.find(id);
      if (was == before_by_id.end()) {
        if (open.count(id)) continue;
        added.insert(l.resource);
        if (l.holder != v.actor) handed[l.resource] = &l;
        resources.insert(l.resource);
        generations.insert(l.generation);
        open[id] = out.leases.size();
        TimelineLease tl = l;
        tl.start = tr.time;
        tl.start_commit = i;
        out.leases.push_back(std::move(tl));
      } else if (was->second->expires_at != l.expires_at) {  // renewed
        resources.insert(l.resource);
        generations.insert(l.generation);
        if (auto o = open.find(id); o != open.end()) out.leases[o->second].expires_at = l.expires_at;
      }
      live[id] = l;
    }
    for (const auto& [id, l] : before) {
      if (after_by_id.count(id)) continue;
      live.erase(id);
      auto o = open.find(id);
      if (o == open.end()) continue;
      resources.insert(l.resource);
      generations.insert(l.generation);
      TimelineLease& lease = out.leases[o->second];
      open.erase(o);
      lease.end = tr.time;
      lease.end_commit = i;
      // How it ended: another lease took its resource in this commit (not
      // a sweep, which only removes), or it was gone after its expiry, or
      // its holder released it.
      if (auto gone = released.find(id); gone != released.end()) {
        lease.end_kind = "force-release";
        lease.released_by = gone->second.by;
        lease.released_by_name = gone->second.by_name;
        lease.release_reason = gone->second.reason;
      } else if (auto to = handed.find(l.resource); to != handed.end() && l.holder == v.actor) {
        lease.end_kind = "handoff";
        lease.handed_to = to->second->holder;
        lease.handed_to_name = to->second->name;
      } else if (l.mode == "intent" && l.holder == v.actor && tr.time && live_until(l.expires_at, *tr.time)) {
        lease.end_kind = "release";  // its holder's lock replaced it (docs/FORMAT.md "Intent")
      } else if (added.count(l.resource) && v.command != "sweep") {
        lease.end_kind = "reclaim";
        tr.reclaims.push_back(l.resource);
      } else if (tr.time && !live_until(l.expires_at, *tr.time)) {  // model.hpp: the one liveness rule
        lease.end_kind = "expired";
      } else {
        lease.end_kind = "release";
      }
    }
    if (gap) {
      live.clear();
      for (const auto& [id, l] : after) live[id] = l;
    }
    if (queue_changed) {
      // A waiter admitted leaves the queue in the commit that issues it a lease.
      bool issued_to_actor = false;
      for (const auto& [id, l] : after)
        if (!before_by_id.count(id) && l.holder == v.actor) issued_to_actor = true;
      for (const auto& [id, t] : tickets_before) {
        if (tickets_after.count(id)) continue;
        b.queued.erase(id);
        auto o = b.open_tickets.find(id);
        if (o == b.open_tickets.end()) continue;
        TimelineTicket& tt = out.tickets[o->second];
        b.open_tickets.erase(o);
        tt.end = tr.time;
        tt.end_commit = i;
        tt.end_kind = t.holder != v.actor ? "lapsed" : issued_to_actor ? "admitted" : "gave-up";
        resources.insert(kQueueResource);
      }
      for (const auto& [id, t] : tickets_after) {
        b.queued[id] = t;
        auto o = b.open_tickets.find(id);
        if (o != b.open_tickets.end()) {
          out.tickets[o->second].expires_at = t.expires_at;
          continue;
        }
        if (tickets_before.count(id)) continue;  // present before the first commit read
        TimelineTicket tt;
        tt.id = t.id;
        tt.holder = t.holder;
        tt.name = t.name;
        tt.seq = t.seq;
        tt.expires_at = t.expires_at;
        tt.wants = json::array();
        for (const TicketWant& w : t.wants) tt.wants.push_back(w.to_json());
        tt.start = tr.time;
        tt.start_commit = i;
        b.open_tickets[id] = out.tickets.size();
        out.tickets.push_back(std::move(tt));
        resources.insert(kQueueResource);
      }
    }
  }
  gap = tr.state_error.has_value();
  tr.resources.assign(resources.begin(), resources.end());
  tr.generations.assign(generations.begin(), generations.end());
  return tr;
}

LeaseTimeline LeaseTimelineBuilder::finish() && { return std::move(impl_->out); }

Result<LeaseTimeline> lease_timeline(ObjectStore& store, const Oid& tip, const ReplayOptions& options) {
  LeaseTimelineBuilder builder(store);
  std::vector<TimelineTransition> transitions;
  GITLOCKS_CHECK(
      replay_commits(store, tip, options, [&](const ReplayedCommit& rc) { transitions.push_back(builder.add(rc)); }));
  LeaseTimeline out = std::move(builder).finish();
  out.transitions = std::move(transitions);
  return out;
}

json timeline_transition_json(const TimelineTransition& t) {
  return {{"index", t.index},
          {"commit", t.commit},
          {"time", opt_time(t.time)},
          {"command", t.command},
          {"actor", t.actor},
          {"ok", t.ok},
          {"level", level_name(t.level)},
          {"reason", t.reason},
          {"detail", t.detail},
          {"resources", t.resources},
          {"generations", t.generations},
          {"reclaims", t.reclaims},
          {"state_error", t.state_error ? json(*t.state_error) : json(nullptr)}};
}

json timeline_lease_json(const TimelineLease& l) {
  json out = {{"id", l.id},
              {"resource", l.resource},
              {"kind", l.kind},
              {"mode", l.mode},
              {"generation", l.generation},
              {"holder", l.holder},
              {"name", l.name},
              {"expires_at", l.expires_at},
              {"start", opt_time(l.start)},
              {"end", opt_time(l.end)},
              {"end_kind", l.end_kind ? json(*l.end_kind) : json(nullptr)},
              {"start_commit", l.start_commit}};
  if (l.end_commit) out["end_commit"] = *l.end_commit;
  if (l.released_by) {
    out["released_by"] = *l.released_by;
    out["released_by_name"] = l.released_by_name.value_or("");
    out["release_reason"] = l.release_reason.value_or("");
  }
  if (l.handed_to) {
    out["handed_to"] = *l.handed_to;
    out["handed_to_name"] = l.handed_to_name.value_or("");
  }
  return out;
}

json timeline_ticket_json(const TimelineTicket& t) {
  json out = {{"id", t.id},
              {"holder", t.holder},
              {"name", t.name},
              {"seq", t.seq},
              {"wants", t.wants},
              {"expires_at", t.expires_at},
              {"start", opt_time(t.start)},
              {"end", opt_time(t.end)},
              {"end_kind", t.end_kind ? json(*t.end_kind) : json(nullptr)},
              {"start_commit", t.start_commit}};
  if (t.end_commit) out["end_commit"] = *t.end_commit;
  return out;
}

Result<std::string> lease_timeline_text(const LeaseTimeline& t,
                                        const std::vector<std::pair<std::string, std::string>>& extra) {
  // Each member's text, written element by element: no JSON tree of the
  // whole history is ever built.
  auto array_text = [](const auto& items, const auto& to_json) -> Result<std::string> {
    std::string text = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
      GITLOCKS_TRY(item, canon_dump(to_json(items[i])));
      if (i) text += ',';
      text += item;
    }
    text += ']';
    return text;
  };
  std::map<std::string, std::string> members(extra.begin(), extra.end());
  GITLOCKS_TRY(end_time, canon_dump(opt_time(t.end_time)));
  GITLOCKS_TRY(policy, canon_dump(t.policy));
  GITLOCKS_TRY(leases, array_text(t.leases, timeline_lease_json));
  GITLOCKS_TRY(transitions, array_text(t.transitions, timeline_transition_json));
  GITLOCKS_TRY(tickets, array_text(t.tickets, timeline_ticket_json));
  members["end_time"] = std::move(end_time);
  members["tickets"] = std::move(tickets);
  members["policy"] = std::move(policy);
  members["leases"] = std::move(leases);
  members["transitions"] = std::move(transitions);
  // Canonical order: keys sorted by their bytes (std::map's order).
  std::string out = "{";
  bool first = true;
  for (auto& [key, text] : members) {
    GITLOCKS_TRY(name, canon_dump(json(key)));
    if (!first) out += ',';
    first = false;
    out += name;
    out += ':';
    out += text;
    text.clear();
    text.shrink_to_fit();
  }
  out += '}';
  return out;
}

}  // namespace gitlocks
