// The state's model as types (gitlocks/model.hpp).
#include "gitlocks/model.hpp"

namespace gitlocks {

std::string_view record_kind_name(RecordKind k) {
  switch (k) {
    case RecordKind::path:
      return "path";
    case RecordKind::sem:
      return "sem";
    case RecordKind::family:
      return "family";
    case RecordKind::queue:
      return "queue";
  }
  return "path";
}

std::optional<RecordKind> parse_record_kind(std::string_view name) {
  if (name == "path") return RecordKind::path;
  if (name == "sem") return RecordKind::sem;
  if (name == "family") return RecordKind::family;
  if (name == "queue") return RecordKind::queue;
  return std::nullopt;
}

std::string Resource::key() const { return std::string(record_kind_name(kind)) + ":" + name; }

std::optional<Resource> Resource::parse(std::string_view key) {
  const auto colon = key.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto kind = parse_record_kind(key.substr(0, colon));
  if (!kind) return std::nullopt;
  return Resource{*kind, std::string(key.substr(colon + 1))};
}

Resource Resource::of(const json& record) {
  return Resource{parse_record_kind(record.value("kind", "")).value_or(RecordKind::path), record.value("name", "")};
}

Lease Lease::of(const json& l) {
  Lease out;
  out.id = l.value("id", "");
  out.holder = l.value("holder", "");
  out.name = l.value("name", "");
  out.generation = l.value("generation", std::int64_t{0});
  out.expires_at = l.value("expires_at", std::int64_t{0});
  out.created_at = l.value("created_at", std::int64_t{0});
  out.mode = l.value("mode", "");
  out.path = l.value("path", "");
  if (auto n = l.find("note"); n != l.end() && n->is_string()) out.note = n->get<std::string>();
  return out;
}

json Lease::to_json() const {
  json l = {{"id", id},
            {"holder", holder},
            {"name", name},
            {"generation", generation},
            {"expires_at", expires_at},
            {"created_at", created_at}};
  if (!mode.empty()) l["mode"] = mode;
  if (!path.empty()) l["path"] = path;
  if (note) l["note"] = *note;
  return l;
}

std::string Lease::label() const {
  return (name.empty() ? std::string("holder") : name) + " (" + holder.substr(0, 12) + ")";
}

std::vector<Lease> leases_of(const json& record) {
  std::vector<Lease> out;
  auto it = record.find("leases");
  if (it == record.end() || !it->is_array()) return out;
  out.reserve(it->size());
  for (const auto& l : *it) out.push_back(Lease::of(l));
  return out;
}

std::optional<PathMode> parse_path_mode(std::string_view name) {
  if (name == "exclusive") return PathMode::exclusive;
  if (name == "shared") return PathMode::shared;
  if (name == "intent") return PathMode::intent;
  return std::nullopt;
}

const char* path_mode_name(PathMode m) {
  return m == PathMode::exclusive ? "exclusive" : m == PathMode::shared ? "shared" : "intent";
}

Marker Marker::of(const json& m) {
  return {m.value("x", std::int64_t{0}),  m.value("xu", std::int64_t{0}), m.value("s", std::int64_t{0}),
          m.value("su", std::int64_t{0}), m.value("i", std::int64_t{0}),  m.value("iu", std::int64_t{0})};
}

json Marker::to_json() const {
  json j{{"x", exclusive}, {"xu", exclusive_until}, {"s", shared}, {"su", shared_until}};
  if (intent > 0) {
    j["i"] = intent;
    j["iu"] = intent_until;
  }
  return j;
}

namespace {

// holder -> T of the object `field` of a record (none when it has none).
template <typename T>
std::map<std::string, T> per_holder(const json& record, const char* field) {
  std::map<std::string, T> out;
  if (!record.is_object()) return out;
  auto it = record.find(field);
  if (it == record.end() || !it->is_object()) return out;
  for (const auto& [holder, v] : it->items()) out.emplace(holder, T::of(v));
  return out;
}

}  // namespace

std::map<std::string, Marker> markers_of(const json& record) { return per_holder<Marker>(record, "below"); }

Marker marker_of(const json& record, const std::string& holder) {
  if (!record.is_object()) return {};
  auto below = record.find("below");
  if (below == record.end() || !below->is_object()) return {};
  auto it = below->find(holder);
  return it == below->end() ? Marker{} : Marker::of(*it);
}

FamilyHolder FamilyHolder::of(const json& e) {
  return {e.value("n", std::int64_t{0}), e.value("until", std::int64_t{0})};
}

json FamilyHolder::to_json() const { return json{{"n", leases}, {"until", until}}; }

std::map<std::string, FamilyHolder> family_holders_of(const json& record) {
  return per_holder<FamilyHolder>(record, "holders");
}

std::optional<Released> released_of(const json& record) {
  auto gone = record.find("released");
  if (gone == record.end() || !gone->is_object()) return std::nullopt;
  return Released{Lease::of(gone->value("lease", json::object())), gone->value("by", ""), gone->value("by_name", ""),
                  gone->value("reason", "")};
}

Record Record::path(std::string key) {
  Record r;
  r.resource = {RecordKind::path, std::move(key)};
  return r;
}

Record Record::sem(std::string name, std::int64_t limit) {
  Record r;
  r.resource = {RecordKind::sem, std::move(name)};
  r.limit = limit;
  return r;
}

Record Record::family(std::string name) {
  Record r;
  r.resource = {RecordKind::family, std::move(name)};
  return r;
}

Record Record::queue() {
  Record r;
  r.resource = {RecordKind::queue, "tickets"};
  return r;
}

TicketWant TicketWant::of(const json& w) {
  TicketWant out;
  out.path = w.value("path", "");
  out.mode = w.value("mode", "");
  out.sem = w.value("sem", "");
  return out;
}

json TicketWant::to_json() const {
  if (path.empty()) return {{"sem", sem}};
  return {{"path", path}, {"mode", mode}};
}

Ticket Ticket::of(const json& t) {
  Ticket out;
  out.id = t.value("id", "");
  out.holder = t.value("holder", "");
  out.name = t.value("name", "");
  out.seq = t.value("seq", std::int64_t{0});
  out.expires_at = t.value("expires_at", std::int64_t{0});
  out.created_at = t.value("created_at", std::int64_t{0});
  if (auto w = t.find("wants"); w != t.end() && w->is_array())
    for (const auto& want : *w) out.wants.push_back(TicketWant::of(want));
  if (auto b = t.find("behind"); b != t.end() && b->is_array())
    for (const auto& k : *b)
      if (k.is_string()) out.behind.push_back(k.get<std::string>());
  return out;
}

json Ticket::to_json() const {
  json w = json::array();
  for (const auto& want : wants) w.push_back(want.to_json());
  return {{"id", id},
          {"holder", holder},
          {"name", name},
          {"seq", seq},
          {"expires_at", expires_at},
          {"created_at", created_at},
          {"wants", std::move(w)},
          {"behind", behind}};
}

std::string Ticket::label() const {
  return (name.empty() ? std::string("holder") : name) + " (" + holder.substr(0, 12) + "), ticket #" +
         std::to_string(seq);
}

Ticket* Record::ticket(const std::string& id) {
  for (Ticket& t : tickets)
    if (t.id == id) return &t;
  return nullptr;
}

Record Record::of(const json& record) {
  Record r;
  r.resource = Resource::of(record);
  switch (r.resource.kind) {
    case RecordKind::queue:
      r.generation = record.value("seq", std::int64_t{0});
      if (auto t = record.find("tickets"); t != record.end() && t->is_array())
        for (const auto& ticket : *t) r.tickets.push_back(Ticket::of(ticket));
      break;
    case RecordKind::family:
      r.holders = family_holders_of(record);
      break;
    case RecordKind::sem:
      r.limit = record.value("limit", std::int64_t{0});
      [[fallthrough]];
    case RecordKind::path:
      r.generation = record.value("generation", std::int64_t{0});
      r.leases = leases_of(record);
      r.below = markers_of(record);
      r.released = released_of(record);
      break;
  }
  return r;
}

namespace {

// A lease as a record of `kind` stores it: a path lease always with its
// mode and path, a semaphore's without.
json stored_lease(const Lease& l, RecordKind kind) {
  json out = l.to_json();
  if (kind == RecordKind::path) {
    out["mode"] = l.mode;
    out["path"] = l.path;
  }
  return out;
}

template <typename T>
json per_holder_json(const std::map<std::string, T>& entries) {
  json out = json::object();
  for (const auto& [holder, e] : entries) out[holder] = e.to_json();
  return out;
}

}  // namespace

json Record::to_json() const {
  json out = {{"kind", record_kind_name(resource.kind)}, {"name", resource.name}};
  if (resource.kind == RecordKind::family) {
    out["holders"] = per_holder_json(holders);
    return out;
  }
  if (resource.kind == RecordKind::queue) {
    out["seq"] = generation;
    json list = json::array();
    for (const Ticket& t : tickets) list.push_back(t.to_json());
    out["tickets"] = std::move(list);
    return out;
  }
  out["generation"] = generation;
  json list = json::array();
  for (const Lease& l : leases) list.push_back(stored_lease(l, resource.kind));
  out["leases"] = std::move(list);
  if (resource.kind == RecordKind::sem) {
    out["limit"] = limit;
    return out;
  }
  out["below"] = per_holder_json(below);
  if (released)
    out["released"] = {{"lease", stored_lease(released->lease, RecordKind::path)},
                       {"by", released->by},
                       {"by_name", released->by_name},
                       {"reason", released->reason}};
  return out;
}

bool Record::carries_nothing() const {
  if (resource.kind == RecordKind::family) return holders.empty();
  if (resource.kind == RecordKind::queue) return generation == 0 && tickets.empty();
  return generation == 0 && leases.empty() && below.empty();
}

Lease* Record::lease(const std::string& id) {
  for (Lease& l : leases)
    if (l.id == id) return &l;
  return nullptr;
}

const Lease* Record::lease(const std::string& id) const { return const_cast<Record*>(this)->lease(id); }

}  // namespace gitlocks
