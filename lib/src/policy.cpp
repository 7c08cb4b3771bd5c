#include "gitlocks/policy.hpp"

#include <set>

namespace gitlocks {

namespace {
bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}
}  // namespace

Result<Policy> parse_policy(const json& doc) {
  if (!doc.is_object()) return make_error(Errc::bad_json, "policy must be an object");
  auto fmt = get_string(doc, "format");
  if (!fmt.ok()) return fmt.error();
  if (*fmt != kPolicyFormat)
    return make_error(Errc::unknown_format, "unknown policy format '" + *fmt + "'");
  GITLOCKS_CHECK(
      check_keys(doc, {"format", "store", "owner", "min_ttl_ms", "max_ttl_ms", "families", "guard_time"}, "policy"));
  Policy p;
  GITLOCKS_TRY(store, get_string(doc, "store"));
  GITLOCKS_TRY(owner, get_string(doc, "owner"));
  if (!is_hex64(store)) return make_error(Errc::bad_json, "policy store id must be 64 lowercase hex digits");
  if (!is_hex64(owner)) return make_error(Errc::bad_json, "policy owner must be a 64-hex-digit public key");
  p.store = store;
  p.owner = owner;
  GITLOCKS_TRY(min, get_int(doc, "min_ttl_ms"));
  GITLOCKS_TRY(max, get_int(doc, "max_ttl_ms"));
  if (!(0 < min && min <= max))
    return make_error(Errc::usage, "policy TTL bounds must satisfy 0 < min_ttl_ms <= max_ttl_ms");
  p.min_ttl_ms = min;
  p.max_ttl_ms = max;
  auto fams = doc.find("families");
  if (fams == doc.end() || !fams->is_array())
    return make_error(Errc::bad_json, "policy 'families' must be an array");
  std::set<std::string> names;
  for (const auto& f : *fams) {
    GITLOCKS_CHECK(check_keys(f, {"name", "policy", "members"}, "family"));
    Family fam;
    GITLOCKS_TRY(name, get_string(f, "name"));
    GITLOCKS_TRY(pol, get_string(f, "policy"));
    if (name.empty()) return make_error(Errc::usage, "family name must not be empty");
    if (!names.insert(name).second) return make_error(Errc::usage, "duplicate family '" + name + "'");
    if (pol != "exclusive" && pol != "shared")
      return make_error(Errc::usage, "family '" + name + "': policy must be exclusive or shared");
    fam.name = name;
    fam.exclusive = pol == "exclusive";
    auto members = f.find("members");
    if (members == f.end() || !members->is_array() || members->empty())
      return make_error(Errc::usage, "family '" + name + "' needs a non-empty 'members' array");
    for (const auto& m : *members) {
      if (!m.is_string()) return make_error(Errc::bad_json, "family members must be strings");
      GITLOCKS_TRY(rp, parse_repo_path(m.get<std::string>()));
      fam.members.push_back(rp);
    }
    p.families.push_back(std::move(fam));
  }
  auto gt = doc.find("guard_time");
  if (gt != doc.end()) {
    // Unknown profiles are refused, never ignored: a client that cannot
    // execute a profile's rules must not write to or vouch for the store.
    auto profiles = gt->find("profiles");
    if (gt->is_object() && profiles != gt->end() && profiles->is_array())
      for (const auto& pr : *profiles)
        if (!pr.is_string() || (pr != kProfileGuardTime && pr != kProfileTimeAdd))
          return make_error(Errc::unknown_format, "the store requires guard-time profile " + pr.dump() +
                                                      ", which this git-locks does not support; refusing it");
    GITLOCKS_CHECK(check_keys(*gt, {"audience", "service_key", "disclosure", "profiles", "scope"}, "guard_time"));
    GITLOCKS_TRY(audience, get_string(*gt, "audience"));
    GITLOCKS_TRY(key, get_string(*gt, "service_key"));
    GITLOCKS_TRY(disclosure, get_string(*gt, "disclosure"));
    GITLOCKS_TRY(scope, get_string(*gt, "scope"));
    if (!is_hex64(key)) return make_error(Errc::bad_json, "guard_time service_key must be 64 hex digits");
    if (audience.empty()) return make_error(Errc::bad_json, "guard_time audience must not be empty");
    if (disclosure != kDisclosureGuardWindow) return make_error(Errc::unknown_format, "unknown disclosure " + disclosure);
    if (scope != "ALL_COMMITS") return make_error(Errc::unknown_format, "unknown guard_time scope " + scope);
    if (profiles == gt->end() || *profiles != json::array({kProfileGuardTime, kProfileTimeAdd}))
      return make_error(Errc::unknown_format, "guard_time profiles must be exactly [" + std::string(kProfileGuardTime) +
                                                  ", " + std::string(kProfileTimeAdd) + "]");
    p.guard_time = Pins{audience, key};
  }
  return p;
}

json guard_time_doc(const Pins& pins) {
  return json{{"audience", pins.audience},
              {"service_key", pins.service_key},
              {"disclosure", kDisclosureGuardWindow},
              {"profiles", json::array({kProfileGuardTime, kProfileTimeAdd})},
              {"scope", "ALL_COMMITS"}};
}

json default_policy(const std::string& store_id_hex, const std::string& owner_hex) {
  return json{{"format", kPolicyFormat}, {"store", store_id_hex},     {"owner", owner_hex},
              {"min_ttl_ms", kDefaultMinTtlMs}, {"max_ttl_ms", kDefaultMaxTtlMs}, {"families", json::array()}};
}

json ttl_guards(const Policy& p, const json& prefix) {
  json path = prefix;
  path.push_back("expires_at");
  auto bound = [&](const char* op, std::int64_t ms) {
    return json{{"op", op},
                {"left", {{"from", "time_add"}, {"timestamp", {{"from", "time"}}},
                          {"milliseconds", {{"from", "literal"}, {"value", ms}}}}},
                {"right", {{"from", "body"}, {"path", path}}}};
  };
  return json::array({bound("lte", p.min_ttl_ms), bound("gte", p.max_ttl_ms)});
}

}  // namespace gitlocks
