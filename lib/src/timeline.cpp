#include "timeline.h"

#include <algorithm>
#include <set>

#include "gitlocks/model.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/state.hpp"
#include "records.h"

namespace gitlocks::detail {
namespace {

struct Change {
  std::string location;  // "records/AA/BB/H.json"
  std::optional<Oid> before;
  std::optional<Oid> after;
};

Result<std::optional<Oid>> subtree(ObjectStore& store, const Oid& root, const std::string& name) {
  GITLOCKS_TRY(t, store.read_tree_shared(root));
  for (const auto& e : *t)
    if (e.name == name) return std::optional<Oid>{e.oid};
  return std::optional<Oid>{};
}

// Blob-level differences between two trees, descending only where ids differ.
Status diff_trees(ObjectStore& store, const std::optional<Oid>& a, const std::optional<Oid>& b,
                  const std::string& prefix, int depth, int shard_levels, std::vector<Change>& out) {
  if (a == b) return Ok{};
  // A merge of the two entry lists in name order (no maps: this is the hot path).
  auto by_name = [](const TreeEntry& x, const TreeEntry& y) { return x.name < y.name; };
  // Trees as read are shared, not copied: Git's order is name order for
  // these uniform names. Anything else is sorted in a copy, as before.
  auto sorted = [&](const std::optional<Oid>& id) -> Result<SharedTree> {
    static const SharedTree empty = std::make_shared<const Tree>();
    if (!id) return empty;
    GITLOCKS_TRY(t, store.read_tree_shared(*id));
    const Tree& v = *t;
    for (std::size_t k = 1; k < v.size(); ++k)
      if (!(v[k - 1].name < v[k].name)) {
        Tree copy = v;
        std::sort(copy.begin(), copy.end(), by_name);
        return SharedTree(std::make_shared<const Tree>(std::move(copy)));
      }
    return t;
  };
  GITLOCKS_TRY(ta, sorted(a));
  GITLOCKS_TRY(tb, sorted(b));
  const Tree& ea = *ta;
  const Tree& eb = *tb;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < ea.size() || j < eb.size()) {
    const TreeEntry* xa = nullptr;
    const TreeEntry* xb = nullptr;
    if (j >= eb.size() || (i < ea.size() && ea[i].name < eb[j].name)) {
      xa = &ea[i++];
    } else if (i >= ea.size() || eb[j].name < ea[i].name) {
      xb = &eb[j++];
    } else {
      xa = &ea[i++];
      xb = &eb[j++];
    }
    const std::string& n = xa ? xa->name : xb->name;
    std::optional<Oid> oa = xa ? std::optional<Oid>{xa->oid} : std::nullopt;
    std::optional<Oid> ob = xb ? std::optional<Oid>{xb->oid} : std::nullopt;
    if (oa == ob) continue;
    bool tree_a = xa && xa->is_tree;
    bool tree_b = xb && xb->is_tree;
    if (depth < shard_levels) {
      if ((oa && !tree_a) || (ob && !tree_b))
        return make_error(Errc::invalid, "blob '" + prefix + n + "' where a shard tree belongs");
      GITLOCKS_CHECK(diff_trees(store, oa, ob, prefix + n + "/", depth + 1, shard_levels, out));
    } else {
      if (tree_a || tree_b) return make_error(Errc::invalid, "tree '" + prefix + n + "' where a record belongs");
      out.push_back({prefix + n, oa, ob});
    }
  }
  return Ok{};
}

std::vector<std::string> split(const std::string& location) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t pos; (pos = location.find('/', start)) != std::string::npos; start = pos + 1)
    out.push_back(location.substr(start, pos - start));
  out.push_back(location.substr(start));
  return out;
}

Result<SharedDoc> load_record(ObjectStore& store, const Change& c, const Oid& id, int format,
                              const RecordCodec& codec) {
  // A record in the clear is its strict canonical parse, which the store
  // may have kept (the planner read it from the source state, or wrote it):
  // shared, not copied.
  const bool plain = &codec == &plain_codec();
  SharedDoc v = plain ? store.parsed_blob(id) : nullptr;
  if (!v) {
    GITLOCKS_TRY(bytes, store.read_blob(id));
    auto decoded = codec.decode(split(c.location), bytes);
    if (!decoded.ok()) return make_error(Errc::invalid, "record " + c.location + ": " + decoded.error().message);
    if (plain) store.keep_parsed(id, *decoded);
    v = std::make_shared<const json>(std::move(decoded).value());
  }
  const json& rec = *v;
  if (!rec.is_object() || !rec.contains("kind") || !rec["kind"].is_string() || !rec.contains("name") ||
      !rec["name"].is_string())
    return make_error(Errc::invalid, "record " + c.location + " has no kind/name");
  std::string resource = rec["kind"].get<std::string>() + ":" + rec["name"].get<std::string>();
  std::string expected;
  for (const auto& part : codec.location(resource, format)) expected += (expected.empty() ? "" : "/") + part;
  if (expected != c.location)
    return make_error(Errc::invalid, "record of " + resource + " stored at " + c.location + ", not " + expected);
  auto st = records::validate(rec, resource);
  if (!st.ok()) return make_error(Errc::invalid, st.error().message);
  return v;
}

// The leases of a record by id.
std::map<std::string, Lease> leases_by_id(const json& rec) {
  std::map<std::string, Lease> out;
  if (rec.is_null()) return out;
  for (Lease& l : leases_of(rec)) {
    const std::string id = l.id;
    out[id] = std::move(l);  // a repeated id: the last one, as stored
  }
  return out;
}

const json& doc_or_null(const SharedDoc& d) {
  static const json null_doc;
  return d ? *d : null_doc;
}

bool overlaps(const std::string& a, const std::string& b) {
  const std::string& s = a.size() <= b.size() ? a : b;
  const std::string& l = a.size() <= b.size() ? b : a;
  return l.compare(0, s.size(), s) == 0 && (l.size() == s.size() || l[s.size()] == '/');
}

// The proper ancestors of a path key: "a/b/c" -> "a", "a/b".
std::vector<std::string> ancestors_of(const std::string& key) {
  std::vector<std::string> out;
  for (std::size_t pos = key.find('/'); pos != std::string::npos; pos = key.find('/', pos + 1))
    out.push_back(key.substr(0, pos));
  return out;
}

// What the lease changes of one commit must do to one holder's marker on
// one ancestor: the net count change and the latest expiry added or renewed.
struct MarkerDelta {
  std::int64_t count[3] = {0, 0, 0};     // [exclusive, shared, intent]
  std::int64_t until[3] = {-1, -1, -1};  // -1: nothing added or renewed
};
constexpr PathMode kPathModes[] = {PathMode::exclusive, PathMode::shared, PathMode::intent};
int mode_index(PathMode m) { return m == PathMode::exclusive ? 0 : m == PathMode::shared ? 1 : 2; }

using LeasesById = std::map<std::string, Lease>;
using MarkerDeltas = std::map<std::string, std::map<std::string, MarkerDelta>>;  // ancestor key -> holder -> delta

// The steps of Timeline::apply that need no model.

// The records a commit changed (by blob id), in `changes`. False when the
// record trees cannot be compared (a record-misplaced violation noted).
Result<bool> diff_records(ObjectStore& store, const Oid& old_state, const Oid& new_state, int format,
                          std::vector<Change>& changes, std::vector<Violation>& violations) {
  std::optional<Oid> old_records;
  if (!old_state.empty()) {
    GITLOCKS_TRY(r, subtree(store, old_state, "records"));
    old_records = r;
  }
  GITLOCKS_TRY(new_records, subtree(store, new_state, "records"));
  auto diff = diff_trees(store, old_records, new_records, "records/", 0, format, changes);
  if (!diff.ok()) {
    if (diff.error().code != Errc::invalid) return diff.error();
    violations.push_back({"record-misplaced", diff.error().message});
    return false;
  }
  return true;
}

// Both versions of a changed record (the one before possibly as the
// previous commit read it, `previous`); the one after is kept in `recent`
// for the next commit. False when one is misplaced (a violation noted).
bool read_change(ObjectStore& store, const Change& c, std::map<std::string, SharedDoc>& previous, int format,
                 const RecordCodec& old_codec, const RecordCodec& new_codec, SharedDoc& before_doc,
                 SharedDoc& after_doc, std::map<std::string, SharedDoc>& recent, std::vector<Violation>& violations) {
  if (c.before) {
    auto hit = previous.find(c.location + ' ' + *c.before);
    auto r = hit != previous.end() ? Result<SharedDoc>(std::move(hit->second))
                                   : load_record(store, c, *c.before, format, old_codec);
    if (!r.ok()) {
      violations.push_back({"record-misplaced", r.error().message});
      return false;
    }
    before_doc = std::move(r).value();
  }
  if (c.after) {
    auto r = load_record(store, c, *c.after, format, new_codec);
    if (!r.ok()) {
      violations.push_back({"record-misplaced", r.error().message});
      return false;
    }
    after_doc = std::move(r).value();
    recent.emplace(c.location + ' ' + *c.after, after_doc);
  }
  return true;
}

// What the lease changes on path `name` must do to the markers of its
// ancestors: removed (-1), renewed (a later bound), added (+1).
void mark_deltas(const std::string& name, const LeasesById& old_leases, const LeasesById& new_leases,
                 MarkerDeltas& deltas) {
  auto mark = [&](const std::string& key, const std::string& holder, PathMode mode, int count, std::int64_t until) {
    const int m = mode_index(mode);
    for (const auto& a : ancestors_of(key)) {
      MarkerDelta& d = deltas[a][holder];
      d.count[m] += count;
      d.until[m] = std::max(d.until[m], until);
    }
  };
  for (const auto& [id, l] : old_leases) {
    auto it = new_leases.find(id);
    if (it == new_leases.end()) mark(name, l.holder, l.path_mode(), -1, -1);
    else if (it->second.expires_at != l.expires_at) mark(name, l.holder, l.path_mode(), 0, it->second.expires_at);
  }
  for (const auto& [id, n] : new_leases)
    if (!old_leases.count(id)) mark(name, n.holder, n.path_mode(), 1, n.expires_at);
}

}  // namespace

void Timeline::start_lazy() {
  lazy_ = true;
  paths_.clear();
  max_generation_.clear();
  recent_.clear();
}

Status Timeline::conflicts_in_state(StateReader& reader, const std::string& key, const std::string& holder,
                                    bool exclusive, std::int64_t t, std::vector<std::string>& out) const {
  auto leases_of = [&](const std::string& k) -> Status {
    GITLOCKS_TRY(rec, reader.record(path_resource(k)));
    if (!rec) return Ok{};
    for (const Lease& l : gitlocks::leases_of(*rec))
      if (l.holder != holder && !l.intent() && l.live_at(t) && (exclusive || l.exclusive()))
        out.push_back("lease " + l.id + " on '" + k + "' (live until " + std::to_string(l.expires_at) + ")");
    return Ok{};
  };
  for (const auto& a : ancestors_of(key)) GITLOCKS_CHECK(leases_of(a));
  GITLOCKS_CHECK(leases_of(key));
  // Below the key: the markers, checked by apply() at every commit.
  GITLOCKS_TRY(rec, reader.record(path_resource(key)));
  if (!rec) return Ok{};
  for (const auto& [h, m] : markers_of(*rec)) {
    if (h == holder) continue;
    for (const bool x : {true, false}) {
      if (!x && !exclusive) continue;
      if (m.count(x) > 0 && m.until(x) >= t)
        out.push_back(std::to_string(m.count(x)) + (x ? " exclusive" : " shared") + " lease(s) of " + h + " below '" +
                      key + "' (live until " + std::to_string(m.until(x)) + ")");
    }
  }
  return Ok{};
}

void Timeline::conflicts_for(const std::string& key, const std::string& holder, bool exclusive, std::int64_t t,
                             std::vector<std::string>& out) const {
  auto check = [&](const std::string& k, const std::vector<Live>& leases) {
    for (const auto& l : leases)
      if (l.holder != holder && live_until(l.expires_at, t) && (exclusive || l.exclusive))
        out.push_back("lease " + l.id + " on '" + k + "' (live until " + std::to_string(l.expires_at) + ")");
  };
  // Ancestors.
  for (std::size_t pos = key.find('/'); pos != std::string::npos; pos = key.find('/', pos + 1)) {
    auto it = paths_.find(key.substr(0, pos));
    if (it != paths_.end()) check(it->first, it->second);
  }
  // The key itself and everything below it.
  for (auto it = paths_.lower_bound(key); it != paths_.end(); ++it) {
    if (!overlaps(it->first, key)) {
      if (it->first.compare(0, key.size(), key) != 0) break;
      continue;  // e.g. "ab" after "a": same string prefix, not a component prefix
    }
    check(it->first, it->second);
  }
}

Status Timeline::load(ObjectStore& store, const Oid& state, const RecordCodec* codec) {
  lazy_ = false;
  paths_.clear();
  recent_.clear();
  StateReader reader(store, state, codec);
  return reader.for_each_record([&](const json& rec) {
    const Resource r = Resource::of(rec);
    if (!holds_leases(r.kind)) return true;
    max_generation_[r.key()] = rec["generation"].get<std::int64_t>();
    if (r.kind == RecordKind::path)
      for (const Lease& l : leases_of(rec))
        if (!l.intent())  // an intent is in nobody's way
          paths_[rec["name"].get<std::string>()].push_back({l.id, l.holder, l.exclusive(), l.expires_at});
    return true;
  });
}

// A lease a commit admits.
struct Timeline::Admission {
  std::string resource, key, holder, id;
  bool exclusive;
  bool intent;  // an intent conflicts with nothing and is in nobody's way
  std::int64_t expires_at, generation;
  std::int64_t before_generation;  // the record's generation at the parent state (0: no record)
};

// What one commit's record changes amount to, gathered before the checks.
struct Timeline::Effects {
  // The path records this commit changed (by key), and what its lease
  // changes must do to the markers of their ancestors.
  std::map<std::string, std::pair<SharedDoc, SharedDoc>> changed_paths;
  MarkerDeltas deltas;
  std::vector<Admission> admitted;
  std::vector<SharedDoc> semaphores;
  std::map<std::string, SharedDoc> recent;  // the records after, for the next commit
};

// A migration or a rekey moves every record; the leases in force are
// unchanged (re-planning proves it). Reload the model; no generation may
// go back.
Status Timeline::reload_moved(ObjectStore& store, const Oid& old_state, const Oid& new_state,
                              const RecordCodec* old_codec, const RecordCodec* new_codec,
                              std::vector<Violation>& violations) {
  if (lazy_) {  // no model to compare with: both states, read in full (migrations are rare)
    Timeline old_model;
    GITLOCKS_CHECK(old_model.load(store, old_state, old_codec));
    GITLOCKS_CHECK(load(store, new_state, new_codec));
    for (const auto& [res, g] : old_model.max_generation_)
      if (max_generation_[res] < g)
        violations.push_back({"generation-reused", "generation of " + res + " went back in a migration"});
    start_lazy();
    return Ok{};
  }
  auto gens = max_generation_;
  GITLOCKS_CHECK(load(store, new_state, new_codec));
  for (const auto& [res, g] : gens)
    if (max_generation_[res] < g)
      violations.push_back({"generation-reused", "generation of " + res + " went back in a migration"});
  return Ok{};
}

// One changed record: its generation never goes back (checked here when
// lazy, at admission otherwise), its markers' expected changes, its
// removed and renewed leases, and the leases it admits.
void Timeline::follow_change(const SharedDoc& before_doc, const SharedDoc& after_doc, std::int64_t t, Effects& fx,
                             std::vector<Violation>& violations) {
  const json& before = doc_or_null(before_doc);
  const json& after = doc_or_null(after_doc);
  const json& any = after.is_null() ? before : after;
  const std::string kind = any["kind"].get<std::string>();
  // Family records are derived data, the queue holds no lease: leases carry
  // the facts the checker follows.
  if (kind == "family" || kind == "queue") return;
  const std::string name = any["name"].get<std::string>();
  const std::string resource = Resource::of(any).key();
  auto old_leases = leases_by_id(before);
  auto new_leases = leases_by_id(after);
  const std::int64_t before_generation = before.is_null() ? 0 : before["generation"].get<std::int64_t>();
  if (lazy_ && !before.is_null() && before_generation > 0 &&
      (after.is_null() || after["generation"].get<std::int64_t>() < before_generation))
    violations.push_back({"generation-reused",
                          "the generation of " + resource + " went back from " + std::to_string(before_generation)});
  if (kind == "path") {
    fx.changed_paths[name] = {before_doc, after_doc};
    mark_deltas(name, old_leases, new_leases, fx.deltas);
  }
  follow_leases(kind, resource, name, old_leases, new_leases, t, violations);
  for (const auto& [id, n] : new_leases) {
    if (old_leases.count(id)) continue;
    fx.admitted.push_back(
        {resource, name, n.holder, id, n.exclusive(), n.intent(), n.expires_at, n.generation, before_generation});
  }
  if (kind == "sem" && after_doc) fx.semaphores.push_back(after_doc);
}

// The leases a record kept or lost: a kept lease keeps its generation,
// holder and mode, and is renewed only later and only while live. The
// model (not lazy) follows removals and renewals.
void Timeline::follow_leases(const std::string& kind, const std::string& resource, const std::string& name,
                             const std::map<std::string, Lease>& old_leases,
                             const std::map<std::string, Lease>& new_leases, std::int64_t t,
                             std::vector<Violation>& violations) {
  std::vector<Live>* live = kind == "path" && !lazy_ ? &paths_[name] : nullptr;
  for (const auto& [id, l] : old_leases) {
    auto it = new_leases.find(id);
    if (it == new_leases.end()) {
      if (live)
        live->erase(std::remove_if(live->begin(), live->end(), [&id = id](const Live& x) { return x.id == id; }),
                    live->end());
      continue;
    }
    const Lease& n = it->second;
    if (n.generation != l.generation || n.holder != l.holder || n.mode != l.mode)
      violations.push_back({"generation-reused", "lease " + id + " changed its generation, holder or mode"});
    if (n.expires_at != l.expires_at) {
      if (!l.live_at(t))
        violations.push_back({"exclusion-violated", "lease " + id + " on " + resource + " was renewed at " +
                                                        std::to_string(t) + " after it expired at " +
                                                        std::to_string(l.expires_at)});
      if (n.expires_at < l.expires_at)
        violations.push_back({"exclusion-violated", "lease " + id + " expiry moved backwards"});
      if (live)
        for (auto& x : *live)
          if (x.id == id) x.expires_at = n.expires_at;
    }
  }
  if (live && live->empty()) paths_.erase(name);
}

// The markers follow the lease changes: on every ancestor of a changed
// lease, and on every changed record, each holder's count changes by
// exactly the net number of its leases added below, and while some remain
// the bound covers every expiry added or renewed and never drops.
Status Timeline::check_markers(StateReader& after_reader, const Effects& fx, std::vector<Violation>& violations) {
  const auto& changed_paths = fx.changed_paths;
  const auto& deltas = fx.deltas;
  std::set<std::string> marked;
  for (const auto& [k, _] : deltas) marked.insert(k);
  for (const auto& [k, _] : changed_paths) marked.insert(k);
  for (const auto& k : marked) {
    SharedDoc before_doc;
    SharedDoc after_doc;
    if (auto c = changed_paths.find(k); c != changed_paths.end()) {
      before_doc = c->second.first;
      after_doc = c->second.second;
    } else {
      auto rec = after_reader.record(path_resource(k));
      if (!rec.ok()) return rec.error();
      if (*rec) before_doc = after_doc = std::make_shared<const json>(std::move(**rec));  // unchanged by this commit
    }
    const json& before = doc_or_null(before_doc);
    const json& after = doc_or_null(after_doc);
    std::set<std::string> holders;
    for (const json* r : {&before, &after})
      for (const auto& [h, _] : markers_of(*r)) holders.insert(h);
    auto d = deltas.find(k);
    if (d != deltas.end())
      for (const auto& [h, _] : d->second) holders.insert(h);
    for (const auto& h : holders) {
      MarkerDelta delta;
      if (d != deltas.end())
        if (auto it = d->second.find(h); it != d->second.end()) delta = it->second;
      for (const PathMode x : kPathModes) {
        const int m = mode_index(x);
        const Marker b = marker_of(before, h);
        const Marker a = marker_of(after, h);
        const std::int64_t want = b.count_of(x) + delta.count[m];
        const std::string what = std::string(path_mode_name(x)) + " marker of " + h + " on '" + k + "'";
        if (a.count_of(x) != want)
          violations.push_back({"marker-mismatch", what + " counts " + std::to_string(a.count_of(x)) +
                                                       " lease(s) below, the lease changes make " +
                                                       std::to_string(want)});
        else if (a.count_of(x) > 0 &&
                 (a.until_of(x) < delta.until[m] || (b.count_of(x) > 0 && a.until_of(x) < b.until_of(x))))
          violations.push_back({"marker-mismatch", what + " bounds its leases at " + std::to_string(a.until_of(x)) +
                                                       ", below an expiry it must cover"});
      }
    }
  }
  return Ok{};
}

// The admissions, in generation order: each generation is new for its
// resource, each path canonical, and no other holder's live lease (nor an
// exclusive family's) is in the way at T. The model (not lazy) takes them
// in.
Status Timeline::check_admissions(StateReader& after_reader, std::vector<Admission>& admitted, std::int64_t t,
                                  const Policy& policy, std::vector<Violation>& violations) {
  std::sort(admitted.begin(), admitted.end(),
            [](const Admission& a, const Admission& b) { return a.generation < b.generation; });
  // The leases in the way of an admission: from the model, or (lazy) from
  // the commit's own state; generations likewise from the model or from the
  // records at the parent state.
  auto conflicts = [&](const std::string& key, const std::string& holder, bool exclusive,
                       std::vector<std::string>& found) -> Status {
    if (lazy_) return conflicts_in_state(after_reader, key, holder, exclusive, t, found);
    conflicts_for(key, holder, exclusive, t, found);
    return Ok{};
  };
  std::map<std::string, std::int64_t> commit_generation;  // lazy: per resource, within this commit
  for (const auto& a : admitted) {
    auto& maxgen =
        lazy_ ? commit_generation.emplace(a.resource, a.before_generation).first->second : max_generation_[a.resource];
    if (a.generation <= maxgen)
      violations.push_back({"generation-reused", "generation " + std::to_string(a.generation) + " of " + a.resource +
                                                     " was issued before (highest " + std::to_string(maxgen) + ")"});
    maxgen = std::max(maxgen, a.generation);
    if (a.resource.rfind("path:", 0) != 0) continue;
    // One spelling per resource: NFC, and folded in a case-insensitive
    // store. Then comparing keys byte for byte is comparing files.
    if (auto canonical = parse_repo_path(a.key, policy.path_case()); !canonical.ok())
      violations.push_back({"path-not-canonical", "lease " + a.id + ": " + canonical.error().message});
    if (a.intent) continue;  // docs/FORMAT.md "Intent": in nobody's way, nothing in its way
    std::vector<std::string> found;
    GITLOCKS_CHECK(conflicts(a.key, a.holder, a.exclusive, found));
    // Exclusive families: another holder live on any member of a family this path belongs to.
    for (const auto& f : policy.families) {
      if (!f.exclusive) continue;
      bool member = false;
      for (const auto& m : f.members) member = member || overlaps(m.key(), a.key);
      if (!member) continue;
      for (const auto& m : f.members) GITLOCKS_CHECK(conflicts(m.key(), a.holder, true, found));
    }
    if (!found.empty())
      violations.push_back({"exclusion-violated", "lease " + a.id + " on '" + a.key + "' admitted at " +
                                                      std::to_string(t) + " while " + found.front() + " conflicts"});
    if (!lazy_) paths_[a.key].push_back({a.id, a.holder, a.exclusive, a.expires_at});
  }
  return Ok{};
}

// No semaphore the commit changed has more live holders at T than its limit.
void Timeline::check_semaphores(const std::vector<SharedDoc>& semaphores, std::int64_t t,
                                std::vector<Violation>& violations) {
  for (const auto& doc : semaphores) {
    const json& rec = *doc;
    std::int64_t live = 0;
    for (const Lease& l : leases_of(rec))
      if (l.live_at(t)) ++live;
    if (live > rec["limit"].get<std::int64_t>())
      violations.push_back({"semaphore-over-limit", "semaphore " + rec["name"].get<std::string>() + " has " +
                                                        std::to_string(live) + " live holders, limit " +
                                                        rec["limit"].dump()});
  }
}

Result<std::vector<Violation>> Timeline::apply(ObjectStore& store, const Oid& old_state, const Oid& new_state,
                                               std::int64_t t, const Policy& policy, const RecordCodec* old_codec,
                                               const RecordCodec* new_codec) {
  if (!old_codec) old_codec = &plain_codec();
  if (!new_codec) new_codec = &plain_codec();
  std::map<std::string, SharedDoc> previous = std::move(recent_);
  recent_.clear();
  std::vector<Violation> violations;
  StateReader new_reader(store, new_state);
  auto format = new_reader.format_version();
  if (!format.ok()) {
    violations.push_back({"unknown-format", format.error().message});
    return violations;
  }
  if (!old_state.empty()) {
    StateReader old_reader(store, old_state);
    auto old_format = old_reader.format_version();
    if ((old_format.ok() && *old_format != *format) || old_codec != new_codec) {
      GITLOCKS_CHECK(reload_moved(store, old_state, new_state, old_codec, new_codec, violations));
      return violations;
    }
  }
  std::vector<Change> changes;
  GITLOCKS_TRY(comparable, diff_records(store, old_state, new_state, *format, changes, violations));
  if (!comparable) return violations;
  Effects fx;
  // First removals and renewals, then admissions: a reclaim removes the old
  // lease and admits the new one in the same commit.
  for (const auto& c : changes) {
    SharedDoc before_doc;
    SharedDoc after_doc;
    if (!read_change(store, c, previous, *format, *old_codec, *new_codec, before_doc, after_doc, fx.recent, violations))
      continue;
    follow_change(before_doc, after_doc, t, fx, violations);
  }
  StateReader after_reader(store, new_state, new_codec);
  GITLOCKS_CHECK(check_markers(after_reader, fx, violations));
  GITLOCKS_CHECK(check_admissions(after_reader, fx.admitted, t, policy, violations));
  recent_ = std::move(fx.recent);
  check_semaphores(fx.semaphores, t, violations);
  return violations;
}

}  // namespace gitlocks::detail

namespace gitlocks {

Result<RecordChanges> record_changes(ObjectStore& store, const Oid& old_state, const Oid& new_state,
                                     const RecordCodec* old_codec, const RecordCodec* new_codec) {
  using detail::Change;
  // As StateReader: no codec means in the clear, and a PRIVATE state needs one.
  auto resolve = [](StateReader& r, const RecordCodec*& codec) -> Status {
    if (codec) return Ok{};
    GITLOCKS_TRY(priv, r.is_private());
    if (priv) return make_error(Errc::not_member, "the store is PRIVATE: its records need a member's key");
    codec = &plain_codec();
    return Ok{};
  };
  RecordChanges out;
  StateReader new_reader(store, new_state);
  GITLOCKS_TRY(format, new_reader.format_version());
  GITLOCKS_CHECK(resolve(new_reader, new_codec));
  std::optional<Oid> old_records;
  if (!old_state.empty()) {
    StateReader old_reader(store, old_state);
    GITLOCKS_TRY(old_format, old_reader.format_version());
    GITLOCKS_CHECK(resolve(old_reader, old_codec));
    if (old_format != format || old_codec != new_codec) {
      // A migration or a rekey: every record moves.
      old_reader.set_codec(old_codec);
      new_reader.set_codec(new_codec);
      auto all = [](StateReader& r, std::vector<json>& to) {
        return r.for_each_record([&](const json& rec) {
          to.push_back(rec);
          return true;
        });
      };
      GITLOCKS_CHECK(all(old_reader, out.before));
      GITLOCKS_CHECK(all(new_reader, out.after));
      return out;
    }
    GITLOCKS_TRY(r, detail::subtree(store, old_state, "records"));
    old_records = r;
  }
  GITLOCKS_TRY(new_records, detail::subtree(store, new_state, "records"));
  std::vector<Change> changes;
  GITLOCKS_CHECK(detail::diff_trees(store, old_records, new_records, "records/", 0, format, changes));
  for (const auto& c : changes) {
    if (c.before) {
      GITLOCKS_TRY(rec, detail::load_record(store, c, *c.before, format, *old_codec));
      out.before.push_back(*rec);
    }
    if (c.after) {
      GITLOCKS_TRY(rec, detail::load_record(store, c, *c.after, format, *new_codec));
      out.after.push_back(*rec);
    }
  }
  return out;
}

}  // namespace gitlocks
