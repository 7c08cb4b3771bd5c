#include "gitlocks/doctor.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "gitlocks/crypto.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "records.h"

namespace gitlocks {

json finding_json(const Finding& f) {
  json out = f.fields;
  out.update(json{{"severity", f.severity}, {"code", f.code}, {"location", f.location}, {"detail", f.detail}});
  return out;
}

Finding ref_lock_finding(const RefLockObservation& seen) {
  const std::int64_t age_s = std::max<std::int64_t>(seen.age_ms, 0) / 1000;
  json held_by = json::array();
  std::string holders;
  for (const auto& h : seen.holders) {
    held_by.push_back({{"pid", h.pid}, {"command", h.command}});
    holders += std::string(holders.empty() ? "" : ", ") + "pid " + std::to_string(h.pid) + " (" + h.command + ")";
  }
  const char* scan = seen.scan == HolderScan::complete  ? "complete"
                     : seen.scan == HolderScan::partial ? "partial"
                                                        : "unavailable";
  std::string detail = seen.location + " exists, " + std::to_string(age_s) + " s old; ";
  if (!holders.empty()) {
    detail += "held open by " + holders + ", a live process on this machine";
  } else {
    detail += "held by: none found";
    if (seen.scan == HolderScan::complete) detail += " among this machine's processes";
    else if (seen.scan == HolderScan::partial)
      detail += " among the processes of this machine it could read (" + std::to_string(seen.unreadable) +
                " could not be read)";
    else detail += " (open files cannot be listed on this platform)";
    detail +=
        ". Not proof that its writer stopped: git closes the lock file before renaming it, and a process on "
        "another machine sharing this filesystem cannot be seen";
  }
  detail += seen.age_ms >= kRefLockStaleMs ? ". Every writer gives up while it exists; remove it only once its writer "
                                             "has stopped (docs/CLI.md, doctor)"
                                           : ". Likely a publication in progress: run doctor again";
  Finding f{seen.age_ms >= kRefLockStaleMs ? "warning" : "info", "ref-lock", seen.location, detail};
  f.fields = {{"path", seen.path}, {"age_s", age_s}, {"held_by", held_by}, {"holder_scan", scan}};
  if (seen.scan == HolderScan::partial) f.fields["unreadable_processes"] = seen.unreadable;
  return f;
}

namespace {

struct Walker {
  ObjectStore& store;
  int format;
  std::vector<Finding>& out;
  // A PRIVATE store's records are sealed: opened with the member's codec;
  // without one only their place in the layout is checked (and counted).
  const RecordCodec* codec = nullptr;
  bool sealed_without_key = false;
  std::size_t sealed_unopened = 0;
  std::map<std::string, Record> records;  // resource -> record (the well-formed ones)

  void error(const std::string& code, const std::string& loc, const std::string& detail) {
    out.push_back({"error", code, loc, detail});
  }

  Status walk(const Oid& tree, const std::string& prefix, std::vector<std::string> shards) {
    GITLOCKS_TRY(entries, store.read_tree(tree));
    const bool leaf_level = static_cast<int>(shards.size()) == format;
    for (const auto& e : entries) {
      const std::string loc = prefix + e.name;
      if (!leaf_level) {
        if (!e.is_tree || e.name.size() != 2) {
          error("unexpected-entry", loc, "expected a two-hex-digit shard tree");
          continue;
        }
        auto next = shards;
        next.push_back(e.name);
        GITLOCKS_CHECK(walk(e.oid, loc + "/", next));
        continue;
      }
      if (e.is_tree || e.name.size() != 69 || e.name.substr(64) != ".json") {
        error("unexpected-entry", loc, "expected <sha256>.json");
        continue;
      }
      if (sealed_without_key) {
        ++sealed_unopened;
        continue;
      }
      GITLOCKS_TRY(bytes, store.read_blob(e.oid));
      json rec;
      if (codec) {
        std::vector<std::string> where{"records"};
        where.insert(where.end(), shards.begin(), shards.end());
        where.push_back(e.name);
        auto opened = codec->decode(where, bytes);
        if (!opened.ok()) {
          error("malformed-record", loc, opened.error().message);
          continue;
        }
        rec = std::move(opened).value();
      } else {
        auto lenient = canon_parse(bytes, CanonMode::lenient);
        if (!lenient.ok()) {
          error("malformed-record", loc, lenient.error().message);
          continue;
        }
        if (!canon_parse(bytes, CanonMode::strict).ok()) error("non-canonical", loc, "record is not canonical JSON");
        rec = std::move(lenient).value();
      }
      if (!rec.is_object() || !rec.contains("kind") || !rec["kind"].is_string() || !rec.contains("name") ||
          !rec["name"].is_string()) {
        error("malformed-record", loc, "record has no kind/name");
        continue;
      }
      const std::string resource = rec["kind"].get<std::string>() + ":" + rec["name"].get<std::string>();
      const std::vector<std::string> want =
          codec ? codec->location(resource, format) : record_location(resource, format);
      if (e.name != want.back()) {
        error("name-hash-mismatch", loc, "record of " + resource + " must be named " + want.back());
        continue;
      }
      bool shard_ok = want.size() == shards.size() + 2;
      for (std::size_t i = 0; shard_ok && i < shards.size(); ++i) shard_ok = shards[i] == want[i + 1];
      if (!shard_ok) error("wrong-shard", loc, "record of " + resource + " belongs under its hash's shard");
      auto valid = records::validate(rec, resource);
      if (!valid.ok()) {
        error("malformed-record", loc, valid.error().message);
        continue;
      }
      records.insert_or_assign(resource, Record::of(rec));
    }
    return Ok{};
  }
};

std::string loc_of(const std::string& resource, int format, const RecordCodec* codec = nullptr) {
  std::string s;
  for (const auto& p : codec ? codec->location(resource, format) : record_location(resource, format))
    s += (s.empty() ? "" : "/") + p;
  return s;
}

}  // namespace

Result<std::vector<Finding>> diagnose(ObjectStore& store, const Oid& state, std::int64_t now,
                                      const std::optional<Oid>& parent_state, const RecordCodec* codec) {
  std::vector<Finding> out;
  StateReader reader(store, state);
  auto version = reader.format_version();
  if (!version.ok()) {
    if (version.error().code != Errc::unknown_format) return version.error();
    out.push_back({"error", "unknown-format", "format.json", version.error().message});
    return out;
  }
  GITLOCKS_TRY(top, store.read_tree(state));
  std::optional<Oid> records_tree;
  for (const auto& e : top) {
    if (e.name == "records" && e.is_tree) records_tree = e.oid;
    else if ((e.name == "format.json" || e.name == "policy.json") && !e.is_tree) continue;
    else out.push_back({"error", "unexpected-entry", e.name, "not part of the state layout"});
  }
  Policy policy;
  auto pdoc = reader.policy();
  if (!pdoc.ok()) {
    out.push_back({"error", "bad-policy", "policy.json", pdoc.error().message});
  } else {
    auto p = parse_policy(*pdoc);
    if (!p.ok())
      out.push_back({"error", p.error().code == Errc::unknown_format ? "unknown-format" : "bad-policy", "policy.json",
                     p.error().message});
    else policy = *p;
  }
  Walker w{store, *version, out, nullptr, false, 0, {}};
  w.codec = policy.is_private ? codec : nullptr;
  w.sealed_without_key = policy.is_private && !codec;
  if (records_tree) GITLOCKS_CHECK(w.walk(*records_tree, "records/", {}));
  if (w.sealed_unopened > 0)
    out.push_back({"info", "sealed-records", "records/",
                   std::to_string(w.sealed_unopened) +
                       " sealed record(s) of this PRIVATE store were not opened: only a member's key opens them, "
                       "so doctor checked their place in the layout only"});
  // A PRIVATE store's families are sealed in its policy: their holder
  // records are compared only when the policy names them in the clear.
  const bool families_known = !policy.is_private || !policy.families.empty();

  // Derived data must match the leases: markers on ancestors, family holders.
  std::map<std::string, std::map<std::string, std::array<std::int64_t, 3>>> markers;  // dir -> holder -> {x, s, i}
  std::map<std::string, std::map<std::string, std::int64_t>> families;                // family -> holder -> n
  for (const auto& [res, rec] : w.records) {
    // The queue's lapsed tickets (docs/FORMAT.md "Tickets"): they count in
    // the wait-for graph until they are dropped.
    if (rec.resource.kind == RecordKind::queue)
      for (const Ticket& t : rec.tickets)
        if (!t.live_at(now))
          out.push_back({"info", "lapsed-ticket", loc_of(res, *version, w.codec),
                         "ticket #" + std::to_string(t.seq) + " (" + t.id + ") of " + t.name + " (" +
                             t.holder.substr(0, 12) + ") lapsed at " + std::to_string(t.expires_at) + " (local clock " +
                             std::to_string(now) + "); `sweep` drops it"});
    if (rec.resource.kind != RecordKind::path) continue;
    const std::string& key = rec.resource.name;
    auto parsed = parse_repo_path(key);
    for (const Lease& l : rec.leases) {
      if (!l.live_at(now))
        out.push_back({"info", "expired-lease", loc_of(res, *version, w.codec),
                       "lease " + l.id + " on '" + key + "' expired at " + std::to_string(l.expires_at) +
                           " (local clock " + std::to_string(now) + "); `sweep` removes it"});
      if (!parsed.ok()) continue;
      for (const auto& a : proper_ancestors(*parsed)) markers[a][l.holder][l.exclusive() ? 0 : l.intent() ? 2 : 1]++;
      for (const Family* f : families_of(policy, *parsed))
        if (f->exclusive && !l.intent()) families[f->name][l.holder]++;
    }
  }
  std::set<std::string> seen_dirs;
  for (const auto& [res, rec] : w.records) {
    const std::string& name = rec.resource.name;
    if (rec.resource.kind == RecordKind::path) {
      seen_dirs.insert(name);
      std::map<std::string, std::array<std::int64_t, 3>> have;
      for (const auto& [h, m] : rec.below) have[h] = {m.exclusive, m.shared, m.intent};
      if (have != markers[name])
        out.push_back({"error", "marker-mismatch", loc_of(res, *version, w.codec),
                       "intention markers of '" + name + "/' do not count the leases below it"});
    } else if (rec.resource.kind == RecordKind::family && families_known) {
      std::map<std::string, std::int64_t> have;
      for (const auto& [h, e] : rec.holders) have[h] = e.leases;
      if (have != families[name])
        out.push_back({"error", "family-mismatch", loc_of(res, *version, w.codec),
                       "holders of family '" + name + "' do not match the leases"});
      families.erase(name);
    }
  }
  for (const auto& [dir, holders] : markers)
    if (!seen_dirs.count(dir) && !holders.empty())
      out.push_back({"error", "marker-mismatch", loc_of(path_resource(dir), *version, w.codec),
                     "no marker record for '" + dir + "/' although leases lie below it"});
  for (const auto& [fam, holders] : families)
    if (!holders.empty() && families_known)
      out.push_back({"error", "family-mismatch", loc_of(family_resource(fam), *version),
                     "no holder record for family '" + fam + "' although members are leased"});

  if (parent_state) {
    StateReader parent(store, *parent_state, w.codec);
    for (const auto& [res, rec] : w.records) {
      if (!holds_leases(rec.resource.kind)) continue;  // only path and sem records count generations
      auto before = parent.record(res);
      if (!before.ok() || !*before || !records::validate(**before, res).ok()) continue;  // the parent's own findings
      const std::int64_t was = Record::of(**before).generation;
      if (rec.generation < was)
        out.push_back(
            {"error", "generation-regression", loc_of(res, *version),
             "generation of " + res + " went from " + std::to_string(was) + " to " + std::to_string(rec.generation)});
    }
  }
  return out;
}

}  // namespace gitlocks
