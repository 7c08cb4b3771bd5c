#include "gitlocks/state.hpp"

#include "gitlocks/crypto.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/vault.hpp"
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

namespace {

std::string join(const std::vector<std::string>& loc) {
  std::string s;
  for (const auto& p : loc) s += (s.empty() ? "" : "/") + p;
  return s;
}

class PlainCodec final : public RecordCodec {
 public:
  std::vector<std::string> location(const std::string& resource, int format) const override {
    return record_location(resource, format);
  }
  Result<std::string> encode(const std::vector<std::string>&, const json& record) const override {
    return canon_dump(record);
  }
  Result<json> decode(const std::vector<std::string>& loc, std::string_view stored) const override {
    auto v = canon_parse(stored, CanonMode::strict);
    if (!v.ok()) return make_error(Errc::store_read, "record " + join(loc) + ": " + v.error().message);
    return std::move(v).value();
  }
};

class PrivateCodec final : public RecordCodec {
 public:
  PrivateCodec(const EpochKey& key, std::string store, std::int64_t epoch)
      : key_(key), store_(std::move(store)), epoch_(epoch) {}
  std::vector<std::string> location(const std::string& resource, int) const override {
    std::string h = private_resource_hash(key_, resource);
    return {"records", h.substr(0, 2), h.substr(2, 2), h + ".json"};
  }
  Result<std::string> encode(const std::vector<std::string>& loc, const json& record) const override {
    return seal_document(record, key_, epoch_, store_, join(loc));
  }
  Result<json> decode(const std::vector<std::string>& loc, std::string_view stored) const override {
    auto doc = canon_parse(stored, CanonMode::strict);
    if (!doc.ok()) return make_error(Errc::store_read, "sealed record " + join(loc) + ": " + doc.error().message);
    auto epoch = sealed_epoch(*doc);
    if (!epoch.ok()) return make_error(Errc::store_read, "sealed record " + join(loc) + ": " + epoch.error().message);
    if (*epoch != epoch_)
      return make_error(Errc::store_read, "record " + join(loc) + " is sealed under epoch " + std::to_string(*epoch) +
                                              ", not the current " + std::to_string(epoch_));
    auto v = open_document(*doc, key_, store_, join(loc));
    if (!v.ok()) return make_error(Errc::store_read, v.error().message);
    return std::move(v).value();
  }

 private:
  EpochKey key_;
  std::string store_;
  std::int64_t epoch_;
};

}  // namespace

const RecordCodec& plain_codec() {
  static const PlainCodec codec;
  return codec;
}

std::unique_ptr<RecordCodec> make_private_codec(const Vault& vault, const std::string& store, std::int64_t epoch) {
  const EpochKey* key = vault.key(epoch);
  if (!key) return nullptr;
  return std::make_unique<PrivateCodec>(*key, store, epoch);
}

Result<std::optional<Pins>> result_pins(ObjectStore& store, const Oid& result_state) {
  StateReader reader(store, result_state);
  GITLOCKS_TRY(doc, reader.policy());
  GITLOCKS_TRY(policy, parse_policy(doc));
  return policy.guard_time;
}

Result<std::unique_ptr<RecordCodec>> state_codec(const Policy& policy, const Vault* keys) {
  if (!policy.is_private) return std::unique_ptr<RecordCodec>();
  if (!keys) return make_error(Errc::not_member, "the store is PRIVATE: its records need a member's key");
  auto codec = make_private_codec(*keys, policy.store, policy.epoch);
  if (!codec)
    return make_error(Errc::not_member, "this key cannot open epoch " + std::to_string(policy.epoch) +
                                            " of the PRIVATE store: only the keys of its members at that epoch do");
  return codec;
}

Result<bool> StateReader::is_private() {
  if (private_ >= 0) return private_ == 1;
  GITLOCKS_TRY(doc, policy());
  private_ = member_is(doc, "format", kPrivatePolicyFormat) ? 1 : 0;
  return private_ == 1;
}

Result<const RecordCodec*> StateReader::codec() {
  if (codec_) return codec_;
  GITLOCKS_TRY(priv, is_private());
  if (priv) return make_error(Errc::not_member, "the store is PRIVATE: its records need a member's key");
  return &plain_codec();
}

Result<const Tree*> StateReader::tree(const Oid& id) {
  auto it = trees_.find(id);
  if (it != trees_.end()) return it->second.get();
  GITLOCKS_TRY(t, store_.read_tree_shared(id));
  return trees_.emplace(id, std::move(t)).first->second.get();
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
  Result<json> v = json();
  if (auto hit = store_.parsed_blob(*id)) {
    v = *hit;
  } else {
    GITLOCKS_TRY(bytes, store_.read_blob(*id));
    v = canon_parse(bytes, CanonMode::strict);
    if (!v.ok()) return make_error(Errc::store_read, "format.json: " + v.error().message);
    store_.keep_parsed(*id, *v);
  }
  auto f = get_string(*v, "format");
  if (f.ok() && *f == kStateFormat && v->size() == 1) return version_ = 2;
  if (f.ok() && *f == kStateFormatV1 && v->size() == 1) return version_ = 1;
  return make_error(Errc::unknown_format, "unknown store format " + (f.ok() ? "'" + *f + "'" : std::string("(none)")) +
                                              "; this git-locks understands " + std::string(kStateFormat) +
                                              " (and reads " + std::string(kStateFormatV1) + " for migration)");
}

Status StateReader::check_format() {
  GITLOCKS_TRY(version, format_version());
  if (version == 1)
    return make_error(Errc::unknown_format, "the store is in format 1 (" + std::string(kStateFormatV1) +
                                                "); run `git-locks migrate` to rewrite it as format 2");
  return Ok{};
}

Result<Oid> StateReader::policy_id() {
  GITLOCKS_TRY(id, lookup({"policy.json"}));
  if (!id) return make_error(Errc::store_read, "state tree has no policy.json");
  return *id;
}

Result<std::string> StateReader::policy_bytes() {
  GITLOCKS_TRY(id, policy_id());
  return store_.read_blob(id);
}

Result<json> StateReader::policy() {
  GITLOCKS_TRY(id, policy_id());
  if (auto hit = store_.parsed_blob(id)) return json(*hit);
  GITLOCKS_TRY(bytes, store_.read_blob(id));
  auto v = canon_parse(bytes, CanonMode::strict);
  if (!v.ok()) return make_error(Errc::store_read, "policy.json: " + v.error().message);
  store_.keep_parsed(id, *v);
  return std::move(v).value();
}

Result<std::optional<json>> StateReader::record(const std::string& resource) {
  GITLOCKS_TRY(version, format_version());
  GITLOCKS_TRY(c, codec());
  auto loc = c->location(resource, version);
  GITLOCKS_TRY(id, lookup(loc));
  if (!id) return std::optional<json>{};
  // A record in the clear is its strict canonical parse: the store may have
  // kept it (the timeline parsed it as the previous commit's result).
  const bool plain = c == &plain_codec();
  if (plain)
    if (auto hit = store_.parsed_blob(*id)) return std::optional<json>{*hit};
  GITLOCKS_TRY(bytes, store_.read_blob(*id));
  GITLOCKS_TRY(v, c->decode(loc, bytes));
  if (plain) store_.keep_parsed(*id, v);
  return std::optional<json>{std::move(v)};
}

Result<std::optional<Record>> StateReader::valid_record(const std::string& resource) {
  GITLOCKS_TRY(doc, record(resource));
  if (!doc) return std::optional<Record>{};
  GITLOCKS_CHECK(records::validate(*doc, resource));
  return std::optional<Record>{Record::of(*doc)};
}

Status StateReader::for_each_valid_record(const std::function<bool(const Record&)>& fn) {
  GITLOCKS_TRY(version, format_version());
  GITLOCKS_TRY(c, codec());
  Status failed = Ok{};
  GITLOCKS_CHECK(walk_records([&](const std::vector<std::string>& loc, const json& doc) {
    // The name the document gives itself (validate() refuses one without);
    // it must be filed where a read of that name looks (valid_record).
    const bool named = doc.is_object() && doc.contains("kind") && doc["kind"].is_string() && doc.contains("name") &&
                       doc["name"].is_string();
    const std::string resource =
        named ? doc["kind"].get_ref<const std::string&>() + ":" + doc["name"].get_ref<const std::string&>() : "?";
    failed = records::validate(doc, resource);
    if (failed.ok() && c->location(resource, version) != loc)
      failed = make_error(Errc::store_read, "malformed record of " + resource + ": not filed at its own location");
    return failed.ok() && fn(Record::of(doc));
  }));
  return failed;
}

Status StateReader::for_each_record(const std::function<bool(const json&)>& fn) {
  return walk_records([&](const std::vector<std::string>&, const json& doc) { return fn(doc); });
}

Status StateReader::walk_records(const std::function<bool(const std::vector<std::string>&, const json&)>& fn) {
  GITLOCKS_TRY(version, format_version());
  GITLOCKS_TRY(c, codec());
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
        const std::vector<std::string> loc{"records", a.name, r.name};
        GITLOCKS_TRY(bytes, store_.read_blob(r.oid));
        GITLOCKS_TRY(v, c->decode(loc, bytes));
        if (!fn(loc, v)) return Ok{};
      }
      continue;
    }
    for (const auto& b : level2) {
      GITLOCKS_TRY(l3p, tree(b.oid));
      Tree level3 = *l3p;
      for (const auto& r : level3) {
        const std::vector<std::string> loc{"records", a.name, b.name, r.name};
        GITLOCKS_TRY(bytes, store_.read_blob(r.oid));
        GITLOCKS_TRY(v, c->decode(loc, bytes));
        if (!fn(loc, v)) return Ok{};
      }
    }
  }
  return Ok{};
}

Result<Oid> write_state(ObjectStore& store, const json& policy, const std::vector<json>& records, int format,
                        const RecordCodec* codec) {
  if (!codec) codec = &plain_codec();
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
    auto loc = codec->location(resource, format);
    GITLOCKS_TRY(bytes, codec->encode(loc, rec));
    GITLOCKS_TRY(id, store.write_blob(bytes));
    if (!updates.emplace(loc, id).second) return make_error(Errc::bad_json, "two records of " + resource);
  }
  GITLOCKS_TRY(root, detail::tree_apply(store, std::nullopt, updates));
  if (!root) return make_error(Errc::store_write, "empty state tree");
  return *root;
}

}  // namespace gitlocks
