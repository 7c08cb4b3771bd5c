#include "gitlocks/state.hpp"

#include "gitlocks/crypto.hpp"
#include "gitlocks/policy.hpp"
#include "records.h"
#include "tree_edit.h"

namespace gitlocks {

std::string path_resource(const std::string& path_key) { return "path:" + path_key; }
std::string sem_resource(const std::string& name) { return "sem:" + name; }
std::string family_resource(const std::string& name) { return "family:" + name; }

std::vector<std::string> record_location(const std::string& resource, int format) {
  std::string h = sha256_hex(resource);
  if (format == 1) return {"records", h.substr(0, 2), h + ".json"};
  return {"records", h.substr(0, 2), h.substr(2, 2), h + ".json"};
}

Result<const Tree*> StateReader::tree(const Oid& id) {
  auto it = trees_.find(id);
  if (it != trees_.end()) return &it->second;
  GITLOCKS_TRY(t, store_.read_tree(id));
  return &trees_.emplace(id, std::move(t)).first->second;
}

Result<std::optional<Oid>> StateReader::lookup(const std::vector<std::string>& path) {
  Oid cur = root_;
  for (std::size_t i = 0; i < path.size(); ++i) {
    GITLOCKS_TRY(t, tree(cur));
    const TreeEntry* found = nullptr;
    for (const auto& e : *t)
      if (e.name == path[i]) found = &e;
    if (!found) return std::optional<Oid>{};
    bool last = i + 1 == path.size();
    if (found->is_tree == last)
      return make_error(Errc::store_read, "unexpected entry type at '" + path[i] + "' in state tree");
    cur = found->oid;
  }
  return std::optional<Oid>{cur};
}

Result<int> StateReader::format_version() {
  if (version_) return version_;
  GITLOCKS_TRY(id, lookup({"format.json"}));
  if (!id) return make_error(Errc::store_read, "state tree has no format.json");
  GITLOCKS_TRY(bytes, store_.read_blob(*id));
  auto v = canon_parse(bytes, CanonMode::strict);
  if (!v.ok()) return make_error(Errc::store_read, "format.json: " + v.error().message);
  auto f = get_string(*v, "format");
  if (f.ok() && *f == kStateFormat && v->size() == 1) return version_ = 2;
  if (f.ok() && *f == kStateFormatV1 && v->size() == 1) return version_ = 1;
  return make_error(Errc::unknown_format,
                    "unknown store format " + (f.ok() ? "'" + *f + "'" : std::string("(none)")) +
                        "; this git-locks understands " + std::string(kStateFormat) + " (and reads " +
                        std::string(kStateFormatV1) + " for migration)");
}

Status StateReader::check_format() {
  GITLOCKS_TRY(version, format_version());
  if (version == 1)
    return make_error(Errc::unknown_format, "the store is in format 1 (" + std::string(kStateFormatV1) +
                                                "); run `git-locks migrate` to rewrite it as format 2");
  return Ok{};
}

Result<std::string> StateReader::policy_bytes() {
  GITLOCKS_TRY(id, lookup({"policy.json"}));
  if (!id) return make_error(Errc::store_read, "state tree has no policy.json");
  return store_.read_blob(*id);
}

Result<json> StateReader::policy() {
  GITLOCKS_TRY(bytes, policy_bytes());
  auto v = canon_parse(bytes, CanonMode::strict);
  if (!v.ok()) return make_error(Errc::store_read, "policy.json: " + v.error().message);
  return std::move(v).value();
}

Result<std::optional<json>> StateReader::record(const std::string& resource) {
  GITLOCKS_TRY(version, format_version());
  GITLOCKS_TRY(id, lookup(record_location(resource, version)));
  if (!id) return std::optional<json>{};
  GITLOCKS_TRY(bytes, store_.read_blob(*id));
  auto v = canon_parse(bytes, CanonMode::strict);
  if (!v.ok()) return make_error(Errc::store_read, "record of " + resource + ": " + v.error().message);
  return std::optional<json>{std::move(v).value()};
}

Status StateReader::for_each_record(const std::function<bool(const json&)>& fn) {
  GITLOCKS_TRY(version, format_version());
  GITLOCKS_TRY(top, tree(root_));
  const TreeEntry* rec = nullptr;
  for (const auto& e : *top)
    if (e.name == "records" && e.is_tree) rec = &e;
  if (!rec) return Ok{};
  // Copy ids level by level: the cache may rehash while we walk.
  GITLOCKS_TRY(l1, tree(rec->oid));
  Tree level1 = *l1;
  for (const auto& a : level1) {
    GITLOCKS_TRY(l2p, tree(a.oid));
    Tree level2 = *l2p;
    if (version == 1) {  // one shard level: the records are here
      for (const auto& r : level2) {
        GITLOCKS_TRY(bytes, store_.read_blob(r.oid));
        auto v = canon_parse(bytes, CanonMode::strict);
        if (!v.ok()) return make_error(Errc::store_read, "record " + r.name + ": " + v.error().message);
        if (!fn(*v)) return Ok{};
      }
      continue;
    }
    for (const auto& b : level2) {
      GITLOCKS_TRY(l3p, tree(b.oid));
      Tree level3 = *l3p;
      for (const auto& r : level3) {
        GITLOCKS_TRY(bytes, store_.read_blob(r.oid));
        auto v = canon_parse(bytes, CanonMode::strict);
        if (!v.ok())
          return make_error(Errc::store_read, "record " + r.name + ": " + v.error().message);
        if (!fn(*v)) return Ok{};
      }
    }
  }
  return Ok{};
}

Result<Oid> write_state(ObjectStore& store, const json& policy, const std::vector<json>& records, int format) {
  if (format != 1 && format != 2) return make_error(Errc::unknown_format, "unknown state format version");
  GITLOCKS_CHECK(parse_policy(policy));
  GITLOCKS_TRY(policy_bytes, canon_dump(policy));
  GITLOCKS_TRY(format_bytes, canon_dump(json{{"format", format == 1 ? kStateFormatV1 : kStateFormat}}));
  detail::TreeUpdates updates;
  GITLOCKS_TRY(format_id, store.write_blob(format_bytes));
  GITLOCKS_TRY(policy_id, store.write_blob(policy_bytes));
  updates[{"format.json"}] = format_id;
  updates[{"policy.json"}] = policy_id;
  for (const auto& rec : records) {
    if (!rec.is_object() || !rec.contains("kind") || !rec["kind"].is_string() || !rec.contains("name") ||
        !rec["name"].is_string())
      return make_error(Errc::bad_json, "a record needs string fields kind and name");
    const std::string resource = rec["kind"].get<std::string>() + ":" + rec["name"].get<std::string>();
    if (auto v = records::validate(rec, resource); !v.ok()) return make_error(Errc::bad_json, v.error().message);
    if (records::is_empty(rec)) return make_error(Errc::bad_json, "the record of " + resource + " carries nothing");
    GITLOCKS_TRY(bytes, canon_dump(rec));
    GITLOCKS_TRY(id, store.write_blob(bytes));
    if (!updates.emplace(record_location(resource, format), id).second)
      return make_error(Errc::bad_json, "two records of " + resource);
  }
  GITLOCKS_TRY(root, detail::tree_apply(store, std::nullopt, updates));
  if (!root) return make_error(Errc::store_write, "empty state tree");
  return *root;
}

}  // namespace gitlocks
