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
// keyring holds every epoch's key the member was given.
Result<CommitView> view_with(ObjectStore& store, const Oid& commit, const KeyPair* member, const MemberVault* at_tip) {
  CommitView out;
  GITLOCKS_TRY(tc, read_transition_commit(store, commit));
  out.commit = std::move(tc);
  StateReader reader(store, out.commit.state);
  GITLOCKS_CHECK(reader.check_format());
  GITLOCKS_TRY(policy, reader.policy());
  out.policy = std::move(policy);
  GITLOCKS_TRY(is_private, reader.is_private());
  if (!is_private || !member) return out;
  GITLOCKS_TRY(pol, parse_policy(out.policy));
  std::optional<Vault> vault;
  if (auto own = Vault::open(out.policy, *member); own.ok()) vault = std::move(own).value();
  if (at_tip && at_tip->vault) {
    if (vault) vault->merge(*at_tip->vault);
    else vault = *at_tip->vault;
  }
  if (vault) out.codec = make_private_codec(*vault, pol.store, pol.epoch);
  out.epoch = pol.epoch;
  if (!out.codec)
    return make_error(Errc::not_member, "this key is not a member of the PRIVATE store at epoch " +
                                            std::to_string(pol.epoch) + " (the epoch of commit " + commit + ")");
  return out;
}

MemberVault tip_vault(ObjectStore& store, const KeyPair* member) {
  if (!member) return {};
  auto ref = store.read_ref(kStateRef);
  if (!ref.ok() || !*ref) return {};
  return open_member_vault(store, **ref, member);
}

Result<RecordChanges> changes_with(ObjectStore& store, const CommitView& at, const KeyPair* member,
                                   const MemberVault* at_tip) {
  Oid parent_state;
  std::optional<CommitView> parent;
  const RecordCodec* new_codec = at.codec.get();
  const RecordCodec* old_codec = nullptr;
  if (!at.commit.parents.empty()) {
    GITLOCKS_TRY(p, view_with(store, at.commit.parents.front(), member, at_tip));
    parent = std::move(p);
    parent_state = parent->commit.state;
    old_codec = parent->codec.get();
    // record_changes tells a rekey by the codec: states of one epoch share one.
    if (old_codec && new_codec && parent->epoch == at.epoch) old_codec = new_codec;
  }
  return record_changes(store, parent_state, at.commit.state, old_codec, new_codec);
}

// A lease as the timeline sees it, from its record.
struct Seen {
  std::string resource, kind, mode, holder, name;
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
};

// Every lease of `records`, by id, in record order (ids are unique).
std::vector<std::pair<std::string, Seen>> leases_of(const std::vector<json>& records) {
  std::vector<std::pair<std::string, Seen>> out;
  for (const auto& r : records) {
    auto leases = r.find("leases");
    if (leases == r.end() || !leases->is_array()) continue;
    const Resource res = Resource::of(r);
    for (const Lease& l : gitlocks::leases_of(r)) {
      Seen s;
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

Result<json> lease_timeline(ObjectStore& store, const std::vector<Verdict>& verdicts, const KeyPair* member,
                            const std::function<void(std::size_t, std::size_t)>& progress) {
  const MemberVault at_tip = tip_vault(store, member);
  json transitions = json::array();
  json leases = json::array();
  std::map<std::string, std::size_t> open;  // lease id -> index in `leases`
  std::map<std::string, Seen> live;         // in force after the last readable commit
  bool gap = false;                         // the last commit's records could not be read
  std::optional<std::int64_t> last_time;
  json policy = nullptr;
  const std::size_t total = verdicts.size();
  for (std::size_t i = 0; i < total; ++i) {
    const Verdict& v = verdicts[i];
    const std::optional<std::int64_t> time = v.time ? v.time : last_time;
    if (v.time) last_time = v.time;
    std::set<std::string> resources;
    std::set<std::int64_t> generations;
    json reclaims = json::array();
    json state_error = nullptr;
    // The leases of the records this commit changed, before and after; after
    // a commit whose records could not be read, the whole state against the
    // leases last seen.
    std::vector<std::pair<std::string, Seen>> before, after;
    auto read = [&]() -> Status {
      GITLOCKS_TRY(at, view_with(store, v.commit, member, &at_tip));
      policy = at.policy;
      if (gap) {
        StateReader reader(store, at.commit.state, at.codec.get());
        std::vector<json> records;
        GITLOCKS_CHECK(reader.for_each_record([&](const json& r) {
          records.push_back(r);
          return true;
        }));
        before.assign(live.begin(), live.end());
        after = leases_of(records);
      } else {
        GITLOCKS_TRY(changes, changes_with(store, at, member, &at_tip));
        before = leases_of(changes.before);
        after = leases_of(changes.after);
      }
      return Ok{};
    };
    if (auto st = read(); !st.ok()) {
      state_error = std::string(errc_name(st.error().code));
      // A PRIVATE state without the key of its epoch: the policy is in the clear.
      if (auto tc = read_transition_commit(store, v.commit); tc.ok()) {
        StateReader reader(store, tc->state);
        if (auto p = reader.policy(); p.ok()) policy = std::move(*p);
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
          open[id] = leases.size();
          leases.push_back({{"id", id},
                            {"resource", l.resource},
                            {"kind", l.kind},
                            {"mode", l.mode},
                            {"generation", l.generation},
                            {"holder", l.holder},
                            {"name", l.name},
                            {"expires_at", l.expires_at},
                            {"start", opt_time(time)},
                            {"end", nullptr},
                            {"end_kind", nullptr},
                            {"start_commit", i}});
        } else if (was->second->expires_at != l.expires_at) {  // renewed
          resources.insert(l.resource);
          generations.insert(l.generation);
          if (auto o = open.find(id); o != open.end()) leases[o->second]["expires_at"] = l.expires_at;
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
        json& lease = leases[o->second];
        open.erase(o);
        lease["end"] = opt_time(time);
        lease["end_commit"] = i;
        // How it ended: another lease took its resource in this commit (not
        // a sweep, which only removes), or it was gone after its expiry, or
        // its holder released it.
        if (added.count(l.resource) && v.command != "sweep") {
          lease["end_kind"] = "reclaim";
          reclaims.push_back(l.resource);
        } else if (time && *time > l.expires_at) {
          lease["end_kind"] = "expired";
        } else {
          lease["end_kind"] = "release";
        }
      }
      if (gap) {
        live.clear();
        for (const auto& [id, l] : after) live[id] = l;
      }
    }
    gap = !state_error.is_null();
    transitions.push_back({{"index", i},
                           {"commit", v.commit},
                           {"time", opt_time(time)},
                           {"command", v.command},
                           {"actor", v.actor},
                           {"ok", v.ok},
                           {"level", v.level},
                           {"reason", v.reason},
                           {"detail", v.detail},
                           {"resources", json(std::vector<std::string>(resources.begin(), resources.end()))},
                           {"generations", json(std::vector<std::int64_t>(generations.begin(), generations.end()))},
                           {"reclaims", std::move(reclaims)},
                           {"state_error", state_error}});
    if (progress) progress(i + 1, total);
  }
  return json{{"transitions", std::move(transitions)},
              {"leases", std::move(leases)},
              {"policy", std::move(policy)},
              {"end_time", opt_time(last_time)}};
}

}  // namespace gitlocks
