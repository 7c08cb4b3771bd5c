#include "records.h"

#include <algorithm>

#include "gitlocks/hex.hpp"
#include "gitlocks/limits.hpp"
#include "gitlocks/model.hpp"

namespace gitlocks::records {

bool is_empty(const json& rec) { return rec.is_null() || Record::of(rec).carries_nothing(); }

namespace {

Status bad(const std::string& resource, const std::string& what) {
  return make_error(Errc::store_read, "malformed record of " + resource + ": " + what);
}

bool is_int(const json& obj, const char* key, std::int64_t min = 0) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() && it->get<std::int64_t>() >= min &&
         it->get<std::int64_t>() <= kMaxSafeInteger;
}

bool is_str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string();
}

Status validate_lease(const json& l, const std::string& resource, bool path) {
  if (!l.is_object()) return bad(resource, "lease is not an object");
  static const char* allowed[] = {"id",         "holder",     "name", "mode", "generation",
                                  "expires_at", "created_at", "note", "path"};
  for (const auto& item : l.items()) {
    const std::string& k = item.key();
    if (std::none_of(std::begin(allowed), std::end(allowed), [&](const char* a) { return k == a; }))
      return bad(resource, "unknown lease field '" + k + "'");
  }
  if (!is_str(l, "id") || !is_hex(l["id"].get<std::string>(), kLeaseIdHexDigits)) return bad(resource, "lease id");
  if (!is_str(l, "holder") || !is_hex(l["holder"].get<std::string>(), 64)) return bad(resource, "lease holder");
  if (!is_str(l, "name")) return bad(resource, "lease name");
  if (!is_int(l, "generation", 1) || !is_int(l, "expires_at") || !is_int(l, "created_at"))
    return bad(resource, "lease generation/expires_at/created_at");
  if (l.contains("note") && !l["note"].is_string()) return bad(resource, "lease note");
  if (path) {
    if (!is_str(l, "mode") || !parse_path_mode(l["mode"].get<std::string>())) return bad(resource, "lease mode");
    if (!is_str(l, "path")) return bad(resource, "lease path");
  } else if (l.contains("mode") || l.contains("path")) {
    return bad(resource, "semaphore lease with a path field");
  }
  return Ok{};
}

Status validate_leases(const json& rec, const std::string& resource, bool path) {
  auto it = rec.find("leases");
  if (it == rec.end() || !it->is_array()) return bad(resource, "leases");
  std::int64_t last = 0;
  for (const auto& l : *it) {
    GITLOCKS_CHECK(validate_lease(l, resource, path));
    std::int64_t g = l["generation"].get<std::int64_t>();
    if (g <= last || g > rec["generation"].get<std::int64_t>())
      return bad(resource, "lease generations out of order or above the record's");
    last = g;
  }
  return Ok{};
}

// A ticket of the queue record (docs/FORMAT.md "Tickets"), in seq order.
Status validate_ticket(const json& t, const std::string& resource, std::int64_t seq, std::int64_t& last) {
  if (!t.is_object()) return bad(resource, "ticket is not an object");
  GITLOCKS_CHECK(
      check_keys(t, {"id", "holder", "name", "seq", "expires_at", "created_at", "wants", "behind"}, "ticket"));
  if (!is_str(t, "id") || !is_hex(t["id"].get<std::string>(), kLeaseIdHexDigits)) return bad(resource, "ticket id");
  if (!is_str(t, "holder") || !is_hex(t["holder"].get<std::string>(), 64)) return bad(resource, "ticket holder");
  if (!is_str(t, "name")) return bad(resource, "ticket name");
  if (!is_int(t, "seq", 1) || !is_int(t, "expires_at") || !is_int(t, "created_at"))
    return bad(resource, "ticket seq/expires_at/created_at");
  const std::int64_t s = t["seq"].get<std::int64_t>();
  if (s <= last || s > seq) return bad(resource, "ticket seqs out of order or above the queue's");
  last = s;
  auto wants = t.find("wants");
  if (wants == t.end() || !wants->is_array() || wants->empty() || wants->size() > kMaxTicketWants)
    return bad(resource, "ticket wants");
  for (const auto& w : *wants) {
    const bool path = w.is_object() && w.size() == 2 && is_str(w, "path") && is_str(w, "mode") &&
                      (w["mode"] == "exclusive" || w["mode"] == "shared");
    const bool sem = w.is_object() && w.size() == 1 && is_str(w, "sem");
    if (!path && !sem) return bad(resource, "ticket want");
  }
  auto behind = t.find("behind");
  if (behind == t.end() || !behind->is_array()) return bad(resource, "ticket behind");
  std::string prev;
  for (const auto& k : *behind) {
    if (!k.is_string() || !is_hex(k.get<std::string>(), 64) || k.get<std::string>() <= prev)
      return bad(resource, "ticket behind: keys sorted, unique");
    prev = k.get<std::string>();
  }
  return Ok{};
}

}  // namespace

Status validate(const json& rec, const std::string& resource) {
  if (!rec.is_object() || !is_str(rec, "kind") || !is_str(rec, "name")) return bad(resource, "kind/name");
  const std::string kind = rec["kind"].get<std::string>();
  const std::string name = rec["name"].get<std::string>();
  if (resource != kind + ":" + name) return bad(resource, "record names '" + kind + ":" + name + "'");
  if (kind == "path") {
    GITLOCKS_CHECK(check_keys(rec, {"kind", "name", "generation", "leases", "below", "released"}, "path record"));
    if (!is_int(rec, "generation")) return bad(resource, "generation");
    GITLOCKS_CHECK(validate_leases(rec, resource, true));
    if (auto gone = rec.find("released"); gone != rec.end()) {  // the last force-release
      if (!gone->is_object() || gone->size() != 4 || !gone->contains("lease") || !is_str(*gone, "by") ||
          !is_hex((*gone)["by"].get<std::string>(), 64) || !is_str(*gone, "by_name") || !is_str(*gone, "reason") ||
          (*gone)["reason"].get<std::string>().empty())
        return bad(resource, "released");
      GITLOCKS_CHECK(validate_lease((*gone)["lease"], resource, true));
      if ((*gone)["lease"]["generation"].get<std::int64_t>() > rec["generation"].get<std::int64_t>())
        return bad(resource, "released lease generation above the record's");
    }
    auto below = rec.find("below");
    if (below == rec.end() || !below->is_object()) return bad(resource, "below");
    for (const auto& [h, m] : below->items()) {
      // {"x","xu","s","su"}, and "i" (at least 1) with "iu" while intents lie below.
      const bool intents = m.is_object() && m.contains("i");
      if (!is_hex(h, 64) || !m.is_object() || m.size() != (intents ? 6u : 4u) || !is_int(m, "x") || !is_int(m, "xu") ||
          !is_int(m, "s") || !is_int(m, "su") || (intents && (!is_int(m, "i", 1) || !is_int(m, "iu"))))
        return bad(resource, "marker of " + h);
    }
    return Ok{};
  }
  if (kind == "sem") {
    GITLOCKS_CHECK(check_keys(rec, {"kind", "name", "limit", "generation", "leases"}, "sem record"));
    if (!is_int(rec, "generation") || !is_int(rec, "limit", 1)) return bad(resource, "generation/limit");
    return validate_leases(rec, resource, false);
  }
  if (kind == "family") {
    GITLOCKS_CHECK(check_keys(rec, {"kind", "name", "holders"}, "family record"));
    auto holders = rec.find("holders");
    if (holders == rec.end() || !holders->is_object()) return bad(resource, "holders");
    for (const auto& [h, e] : holders->items())
      if (!is_hex(h, 64) || !e.is_object() || e.size() != 2 || !is_int(e, "n", 1) || !is_int(e, "until"))
        return bad(resource, "family holder " + h);
    return Ok{};
  }
  if (kind == "queue") {
    GITLOCKS_CHECK(check_keys(rec, {"kind", "name", "seq", "tickets"}, "queue record"));
    if (name != "tickets" || !is_int(rec, "seq")) return bad(resource, "name/seq");
    auto tickets = rec.find("tickets");
    if (tickets == rec.end() || !tickets->is_array() || tickets->size() > kMaxTickets) return bad(resource, "tickets");
    std::int64_t last = 0;
    for (const auto& t : *tickets) GITLOCKS_CHECK(validate_ticket(t, resource, rec["seq"].get<std::int64_t>(), last));
    return Ok{};
  }
  return bad(resource, "unknown kind '" + kind + "'");
}

void bump_marker(Record& rec, const std::string& holder, PathMode mode, std::int64_t until) {
  Marker& m = rec.below[holder];
  m.count_of(mode) += 1;
  std::int64_t& u = m.until_of(mode);
  u = std::max(u, until);
}

void renew_marker(Record& rec, const std::string& holder, PathMode mode, std::int64_t until) {
  auto it = rec.below.find(holder);
  if (it == rec.below.end()) return;
  std::int64_t& u = it->second.until_of(mode);
  u = std::max(u, until);
}

void drop_marker(Record& rec, const std::string& holder, PathMode mode) {
  auto it = rec.below.find(holder);
  if (it == rec.below.end()) return;
  Marker& m = it->second;
  std::int64_t& n = m.count_of(mode);
  n = std::max<std::int64_t>(n - 1, 0);
  if (n == 0) m.until_of(mode) = 0;
  if (m.empty()) rec.below.erase(it);
}

void bump_family_holder(Record& rec, const std::string& holder, std::int64_t until) {
  FamilyHolder& e = rec.holders[holder];
  e.leases += 1;
  e.until = std::max(e.until, until);
}

void renew_family_holder(Record& rec, const std::string& holder, std::int64_t until) {
  auto it = rec.holders.find(holder);
  if (it == rec.holders.end()) return;
  it->second.until = std::max(it->second.until, until);
}

void drop_family_holder(Record& rec, const std::string& holder) {
  auto it = rec.holders.find(holder);
  if (it == rec.holders.end()) return;
  it->second.leases -= 1;
  if (it->second.leases <= 0) rec.holders.erase(it);
}

}  // namespace gitlocks::records
