// The timeline of leases over a replayed history (query.hpp): per commit,
// the records it changed; per lease, when it began and how it ended.
#include <algorithm>
#include <map>
#include <set>

#include "gitlocks/model.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {
namespace {

// What the vault at the tip adds to a member's view of older commits: its
// keyring holds every epoch's key the member was given. `same`: a view
// already made (the timeline's previous commit), whose policy, keys and
// codec this commit shares when its policy.json is the same blob: the
// keyrings are then the same, and so are the keys that open them.
Result<CommitView> view_with(ObjectStore& store, const Oid& commit, const KeyPair* member, const MemberVault* at_tip,
                             const CommitView* same = nullptr) {
  CommitView out;
  GITLOCKS_TRY(tc, read_transition_commit(store, commit));
  out.commit = std::move(tc);
  StateReader reader(store, out.commit.state);
  GITLOCKS_CHECK(reader.check_format());
  GITLOCKS_TRY(policy_id, reader.policy_id());
  out.policy_id = policy_id;
  if (same && same->policy_id == policy_id) {
    out.policy = same->policy;
    out.codec = same->codec;
    out.epoch = same->epoch;
    return out;
  }
  GITLOCKS_TRY(policy, reader.policy());
  out.policy = std::move(policy);
  GITLOCKS_TRY(is_private, reader.is_private());
  if (!is_private || !member) return out;
  GITLOCKS_TRY(pol, parse_policy(out.policy));
  std::optional<Vault> vault;
  if (auto own = Vault::open(pol, *member); own.ok()) vault = std::move(own).value();
  if (at_tip && at_tip->vault) {
    if (vault) vault->merge(*at_tip->vault);
    else vault = *at_tip->vault;
  }
  out.epoch = pol.epoch;
  auto codec = state_codec(pol, vault ? &*vault : nullptr);
  if (!codec.ok()) return codec.error().prefixed("commit " + commit + ": ");
  out.codec = std::shared_ptr<const RecordCodec>(std::move(codec).value());
  return out;
}

MemberVault tip_vault(ObjectStore& store, const KeyPair* member) {
  if (!member) return {};
  auto ref = store.read_ref(kStateRef);
  if (!ref.ok() || !*ref) return {};
  return open_member_vault(store, **ref, member);
}

// `known_parent`: the view of the commit's parent when the caller has it
// (the timeline's previous commit), else nullptr: it is read here.
Result<RecordChanges> changes_with(ObjectStore& store, const CommitView& at, const KeyPair* member,
                                   const MemberVault* at_tip, const CommitView* known_parent = nullptr) {
  Oid parent_state;
  std::optional<CommitView> read_parent;
  const RecordCodec* new_codec = at.codec.get();
  const RecordCodec* old_codec = nullptr;
  if (!at.commit.parents.empty()) {
    const CommitView* parent = known_parent;
    if (!parent || parent->commit.commit != at.commit.parents.front()) {
      GITLOCKS_TRY(p, view_with(store, at.commit.parents.front(), member, at_tip));
      read_parent = std::move(p);
      parent = &*read_parent;
    }
    parent_state = parent->commit.state;
    old_codec = parent->codec.get();
    // record_changes tells a rekey by the codec: states of one epoch share one.
    if (old_codec && new_codec && parent->epoch == at.epoch) old_codec = new_codec;
  }
  return record_changes(store, parent_state, at.commit.state, old_codec, new_codec);
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

}  // namespace

Result<CommitView> commit_view(ObjectStore& store, const Oid& commit, const KeyPair* member) {
  const MemberVault at_tip = tip_vault(store, member);
  return view_with(store, commit, member, &at_tip);
}

Result<RecordChanges> commit_changes(ObjectStore& store, const CommitView& at, const KeyPair* member) {
  const MemberVault at_tip = tip_vault(store, member);
  return changes_with(store, at, member, &at_tip);
}

struct LeaseTimelineBuilder::Impl {
  ObjectStore& store;
  const KeyPair* member;
  MemberVault at_tip;
  LeaseTimeline out;
  std::map<std::string, std::size_t> open;  // lease id -> index in out.leases
  std::map<std::string, Seen> live;         // in force after the last readable commit
  bool gap = false;                         // the last commit's records could not be read
  std::size_t next = 0;                     // the index of the next transition
  std::optional<CommitView> previous;       // the last commit read: the next one's parent
};

LeaseTimelineBuilder::LeaseTimelineBuilder(ObjectStore& store, const KeyPair* member)
    : impl_(new Impl{store, member, tip_vault(store, member), {}, {}, {}, false, 0, std::nullopt}) {
  impl_->out.policy = nullptr;
}

LeaseTimelineBuilder::~LeaseTimelineBuilder() = default;

TimelineTransition LeaseTimelineBuilder::add(const Verdict& v) {
  Impl& b = *impl_;
  ObjectStore& store = b.store;
  const KeyPair* member = b.member;
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
  std::map<std::string, Released> released;  // lease id -> the last force-release of its record
  auto note_released = [&](const std::vector<json>& records) {
    for (const auto& r : records)
      if (auto gone = released_of(r)) released[gone->lease.id] = std::move(*gone);
  };
  auto read = [&]() -> Status {
    GITLOCKS_TRY(at, view_with(store, v.commit, member, &b.at_tip, b.previous ? &*b.previous : nullptr));
    if (!b.previous || b.previous->policy_id != at.policy_id) out.policy = at.policy;
    if (gap) {
      StateReader reader(store, at.commit.state, at.codec.get());
      std::vector<json> records;
      GITLOCKS_CHECK(reader.for_each_record([&](const json& r) {
        records.push_back(r);
        return true;
      }));
      before.assign(live.begin(), live.end());
      after = leases_of(records);
      note_released(records);
    } else {
      GITLOCKS_TRY(changes, changes_with(store, at, member, &b.at_tip, b.previous ? &*b.previous : nullptr));
      before = leases_of(changes.before);
      after = leases_of(changes.after);
      note_released(changes.after);
    }
    b.previous = std::move(at);
    return Ok{};
  };
  if (auto st = read(); !st.ok()) {
    b.previous.reset();
    tr.state_error = std::string(errc_name(st.error().code));
    // A PRIVATE state without the key of its epoch: the policy is in the clear.
    if (auto tc = read_transition_commit(store, v.commit); tc.ok()) {
      StateReader reader(store, tc->state);
      if (auto p = reader.policy(); p.ok()) out.policy = std::move(*p);
    }
  } else {
    std::map<std::string, const Seen*> before_by_id, after_by_id;
    for (const auto& [id, s] : before) before_by_id[id] = &s;
    for (const auto& [id, s] : after) after_by_id[id] = &s;
    std::set<std::string> added;
    for (const auto& [id, l] : after) {
      auto was = before_by_id.find(id);
      if (was == before_by_id.end()) {
        if (open.count(id)) continue;
        added.insert(l.resource);
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
  }
  gap = tr.state_error.has_value();
  tr.resources.assign(resources.begin(), resources.end());
  tr.generations.assign(generations.begin(), generations.end());
  return tr;
}

LeaseTimeline LeaseTimelineBuilder::finish() && { return std::move(impl_->out); }

Result<LeaseTimeline> lease_timeline(ObjectStore& store, const std::vector<Verdict>& verdicts, const KeyPair* member,
                                     const std::function<void(std::size_t, std::size_t)>& progress) {
  LeaseTimelineBuilder builder(store, member);
  std::vector<TimelineTransition> transitions;
  transitions.reserve(verdicts.size());
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    transitions.push_back(builder.add(verdicts[i]));
    if (progress) progress(i + 1, verdicts.size());
  }
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
  members["end_time"] = std::move(end_time);
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
