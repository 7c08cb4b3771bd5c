#include "gitlocks/policy.hpp"

#include <algorithm>
#include <set>

#include "gitlocks/hex.hpp"
#include "gitlocks/vault.hpp"

namespace gitlocks {

namespace {
bool is_hex64(const std::string& s) { return is_hex(s, 64); }
Result<std::vector<Family>> parse_families(const json& fams, PathCase path_case) {
  if (!fams.is_array()) return make_error(Errc::bad_json, "policy 'families' must be an array");
  std::vector<Family> out;
  std::set<std::string> names;
  for (const auto& f : fams) {
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
      GITLOCKS_TRY(rp, parse_repo_path(m.get<std::string>(), path_case));
      fam.members.push_back(rp);
    }
    out.push_back(std::move(fam));
  }
  return out;
}

// keyring: {"<epoch>": {"<member hex>": "<sealed hex>"}}
Result<Policy::Keyring> parse_keyring(const json& ring, const char* what) {
  if (!ring.is_object() || ring.empty())
    return make_error(Errc::bad_json, std::string(what) + " must be a non-empty object");
  Policy::Keyring out;
  for (const auto& [epoch, keys] : ring.items()) {
    if (epoch.empty() || epoch.size() > 15 || epoch.find_first_not_of("0123456789") != std::string::npos ||
        (epoch.size() > 1 && epoch[0] == '0'))
      return make_error(Errc::bad_json, std::string(what) + " epoch '" + epoch + "' is not a number");
    if (!keys.is_object() || keys.empty())
      return make_error(Errc::bad_json, std::string(what) + " epoch " + epoch + " has no keys");
    auto& sealed_to = out[std::stoll(epoch)];  // at most 15 digits: fits
    for (const auto& [member, sealed] : keys.items()) {
      // Each entry is a member's key and the epoch key sealed to it.
      if (!is_hex64(member) || !sealed.is_string() || !is_hex(sealed.get<std::string>(), 2 * kSealedEpochKeyBytes))
        return make_error(Errc::bad_json, std::string(what) + " has a malformed entry");
      sealed_to.emplace(member, sealed.get<std::string>());
    }
  }
  return out;
}

Result<std::vector<std::string>> parse_members(const json& m, const std::string& owner) {
  if (!m.is_array() || m.empty()) return make_error(Errc::bad_json, "members must be a non-empty array");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& x : m) {
    if (!x.is_string() || !is_hex64(x.get<std::string>()))
      return make_error(Errc::bad_json, "members must be 64-hex keys");
    if (!seen.insert(x.get<std::string>()).second) return make_error(Errc::bad_json, "duplicate member");
    out.push_back(x.get<std::string>());
  }
  if (!seen.count(owner)) return make_error(Errc::bad_json, "the owner must be a member");
  return out;
}

Status parse_private(const json& doc, Policy& p) {
  GITLOCKS_TRY(visibility, get_string(doc, "visibility"));
  if (visibility != "PRIVATE") return make_error(Errc::unknown_format, "unknown visibility '" + visibility + "'");
  GITLOCKS_TRY(epoch, get_int(doc, "epoch"));
  if (epoch < 1) return make_error(Errc::bad_json, "epoch must be >= 1");
  p.epoch = epoch;
  GITLOCKS_TRY(members, parse_members(doc.contains("members") ? doc["members"] : json(), p.owner));
  p.members = members;
  if (!doc.contains("keyring")) return make_error(Errc::bad_json, "PRIVATE policy needs a keyring");
  GITLOCKS_TRY(keyring, parse_keyring(doc["keyring"], "keyring"));
  const auto current = keyring.find(epoch);
  if (current == keyring.end()) return make_error(Errc::bad_json, "keyring has no entry for the current epoch");
  for (const auto& m : members)
    if (!current->second.count(m))
      return make_error(Errc::bad_json, "the current epoch key is not sealed to every member");
  if (current->second.size() != members.size())
    return make_error(Errc::bad_json, "the current epoch key is sealed to a non-member");
  p.keyring = std::move(keyring);
  if (doc.contains("pending")) {
    const json& pend = doc["pending"];
    GITLOCKS_CHECK(check_keys(pend, {"epoch", "members", "keyring"}, "pending keyring transition"));
    GITLOCKS_TRY(pe, get_int(pend, "epoch"));
    if (pe != epoch + 1) return make_error(Errc::bad_json, "a pending transition must be to the next epoch");
    GITLOCKS_TRY(pm, parse_members(pend.contains("members") ? pend["members"] : json(), p.owner));
    if (!pend.contains("keyring")) return make_error(Errc::bad_json, "pending transition has no keyring");
    GITLOCKS_TRY(pending, parse_keyring(pend["keyring"], "pending keyring"));
    const auto next = pending.find(pe);
    if (pending.size() != 1 || next == pending.end() || next->second.size() != pm.size())
      return make_error(Errc::bad_json, "the pending epoch key must be sealed to exactly its members");
    for (const auto& m : pm)
      if (!next->second.count(m))
        return make_error(Errc::bad_json, "the pending epoch key is not sealed to every member");
    p.pending = true;
    p.pending_members = std::move(pm);
    p.pending_keyring = std::move(pending);
  }
  if (doc.contains("families")) {
    GITLOCKS_CHECK(sealed_epoch(doc["families"]));
    p.families_sealed = true;
    p.sealed_families = doc["families"];
  }
  return Ok{};
}

Result<std::vector<std::string>> parse_keys(const json& doc, const char* name) {
  auto it = doc.find(name);
  if (it == doc.end()) return std::vector<std::string>{};
  if (!it->is_array()) return make_error(Errc::bad_json, std::string("policy '") + name + "' must be an array of keys");
  std::vector<std::string> out;
  for (const auto& k : *it) {
    if (!k.is_string() || !is_hex64(k.get<std::string>()))
      return make_error(Errc::bad_json, std::string("policy '") + name + "' must hold 64-hex-digit public keys");
    out.push_back(k.get<std::string>());
  }
  // One spelling per set: sorted and unique, so two policies that say the
  // same thing hash the same.
  if (!std::is_sorted(out.begin(), out.end()) || std::adjacent_find(out.begin(), out.end()) != out.end())
    return make_error(Errc::bad_json, std::string("policy '") + name + "' must be sorted and without duplicates");
  return out;
}

// A ref pattern as `locks.enforce` takes it: a full ref name under refs/,
// or "NAME/*" for every ref below NAME/.
Status check_ref_pattern(const json& p) {
  if (!p.is_string()) return make_error(Errc::bad_json, "policy 'enforce' must be an array of ref patterns");
  const std::string s = p.get<std::string>();
  if (s.rfind("refs/", 0) != 0 || s.size() == 5 || s.size() > 1024 || s.back() == '/' ||
      s.find("//") != std::string::npos)
    return make_error(Errc::usage, "policy 'enforce': '" + s + "' is not a ref pattern under refs/");
  // The store itself and remote-tracking refs (what a server already
  // checked) are never work refs; "refs/*" would name both.
  if (s == "refs/*" || s.rfind("refs/locks/", 0) == 0 || s.rfind("refs/remotes/", 0) == 0)
    return make_error(Errc::usage,
                      "policy 'enforce': '" + s + "' names refs/locks/ or refs/remotes/, which are not work refs");
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool star_ok = c == '*' && i + 1 == s.size() && s[i - 1] == '/';
    if (c < 0x20 || c == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' || c == '[' || c == '\\' ||
        (c == '*' && !star_ok))
      return make_error(Errc::usage, "policy 'enforce': '" + s + "' is not a ref pattern under refs/");
  }
  return Ok{};
}

Status parse_enforcement(const json& doc, Policy& p) {
  if (auto rc = doc.find("require_claim"); rc != doc.end()) {
    GITLOCKS_CHECK(check_keys(*rc, {"paths", "families"}, "require_claim"));
    p.stated.require_claim = true;
    if (auto paths = rc->find("paths"); paths != rc->end()) {
      p.stated.require_claim_paths = true;
      if (!paths->is_array()) return make_error(Errc::bad_json, "require_claim 'paths' must be an array");
      for (const auto& m : *paths) {
        if (!m.is_string()) return make_error(Errc::bad_json, "require_claim paths must be strings");
        GITLOCKS_TRY(rp, parse_repo_path(m.get<std::string>(), p.path_case()));
        p.require_claim_paths.push_back(rp);
      }
    }
    if (auto fams = rc->find("families"); fams != rc->end()) {
      p.stated.require_claim_families = true;
      if (!fams->is_array()) return make_error(Errc::bad_json, "require_claim 'families' must be an array");
      for (const auto& f : *fams) {
        if (!f.is_string()) return make_error(Errc::bad_json, "require_claim families must be names");
        const std::string name = f.get<std::string>();
        // A PRIVATE store's families are sealed: their names are checked
        // once they are opened (unseal_families).
        if (!p.families_sealed &&
            std::none_of(p.families.begin(), p.families.end(), [&](const Family& fam) { return fam.name == name; }))
          return make_error(Errc::usage,
                            "require_claim names family '" + name + "', which the policy does not declare");
        p.require_claim_families.push_back(name);
      }
    }
  }
  if (auto en = doc.find("enforce"); en != doc.end()) {
    if (!en->is_array()) return make_error(Errc::bad_json, "policy 'enforce' must be an array of ref patterns");
    std::vector<std::string> patterns;
    for (const auto& pat : *en) {
      GITLOCKS_CHECK(check_ref_pattern(pat));
      patterns.push_back(pat.get<std::string>());
    }
    p.enforce = std::move(patterns);
  }
  GITLOCKS_TRY(admins, parse_keys(doc, "admins"));
  GITLOCKS_TRY(bots, parse_keys(doc, "bots"));
  p.admins = std::move(admins);
  p.bots = std::move(bots);
  p.stated.admins = doc.contains("admins");
  p.stated.bots = doc.contains("bots");
  return Ok{};
}

// {"every":N,"signers":[...],"cut":BOOL}, each optional.
Status parse_checkpoint_rule(const json& doc, Policy& p) {
  auto it = doc.find("checkpoint");
  if (it == doc.end()) return Ok{};
  if (p.is_private)
    return make_error(Errc::bad_json,
                      "policy 'checkpoint' applies to public stores (a PRIVATE store's checkpoints "
                      "are its owner's)");
  if (!it->is_object()) return make_error(Errc::bad_json, "policy 'checkpoint' must be an object");
  GITLOCKS_CHECK(check_keys(*it, {"every", "signers", "cut"}, "checkpoint"));
  CheckpointRule rule;
  if (it->contains("every")) {
    const json& e = (*it)["every"];
    if (!e.is_number_integer() || e.get<std::int64_t>() < 1 || e.get<std::int64_t>() > kMaxCheckpointEvery)
      return make_error(Errc::bad_json, "policy 'checkpoint.every' must be a whole number of commits in [1, " +
                                            std::to_string(kMaxCheckpointEvery) + "]");
    rule.every = e.get<std::int64_t>();
  }
  GITLOCKS_TRY(signers, parse_keys(*it, "signers"));
  rule.signers = std::move(signers);
  rule.signers_stated = it->contains("signers");
  if (it->contains("cut")) {
    if (!(*it)["cut"].is_boolean()) return make_error(Errc::bad_json, "policy 'checkpoint.cut' must be true or false");
    rule.cut = (*it)["cut"].get<bool>();
  }
  p.checkpoint = std::move(rule);
  return Ok{};
}

}  // namespace

bool Policy::is_admin(const std::string& key) const {
  return key == owner || std::binary_search(admins.begin(), admins.end(), key);
}

bool Policy::is_bot(const std::string& key) const { return std::binary_search(bots.begin(), bots.end(), key); }

bool Policy::may_checkpoint(const std::string& key) const {
  return key == owner ||
         (checkpoint && std::binary_search(checkpoint->signers.begin(), checkpoint->signers.end(), key));
}

bool Policy::requires_claim(const RepoPath& path) const {
  auto covers = [&](const RepoPath& r) {
    return r.components.size() <= path.components.size() &&
           std::equal(r.components.begin(), r.components.end(), path.components.begin());
  };
  for (const auto& r : require_claim_paths)
    if (covers(r)) return true;
  for (const auto& name : require_claim_families)
    for (const auto& f : families)
      if (f.name == name)
        for (const auto& m : f.members)
          if (covers(m)) return true;
  return false;
}

std::vector<const Family*> families_of(const Policy& policy, const RepoPath& path) {
  std::vector<const Family*> out;
  for (const auto& f : policy.families)
    for (const auto& m : f.members)
      if (paths_overlap(m, path)) {
        out.push_back(&f);
        break;
      }
  return out;
}

Result<Policy> parse_policy(const json& doc) {
  if (!doc.is_object()) return make_error(Errc::bad_json, "policy must be an object");
  auto fmt = get_string(doc, "format");
  if (!fmt.ok()) return fmt.error();
  Policy p;
  if (*fmt == kPrivatePolicyFormat) {
    p.is_private = true;
    GITLOCKS_CHECK(check_keys(
        doc,
        {"format", "visibility", "store", "owner", "min_ttl_ms", "max_ttl_ms", "families", "guard_time", "members",
         "epoch", "keyring", "pending", "case_insensitive", "require_claim", "enforce", "admins", "bots", "checkpoint"},
        "policy"));
  } else if (*fmt == kPolicyFormat) {
    GITLOCKS_CHECK(check_keys(doc,
                              {"format", "store", "owner", "min_ttl_ms", "max_ttl_ms", "families", "guard_time",
                               "case_insensitive", "require_claim", "enforce", "admins", "bots", "checkpoint"},
                              "policy"));
  } else {
    return make_error(Errc::unknown_format, "unknown policy format '" + *fmt + "'");
  }
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
  if (auto ci = doc.find("case_insensitive"); ci != doc.end()) {
    if (!ci->is_boolean()) return make_error(Errc::bad_json, "policy 'case_insensitive' must be true or false");
    p.case_insensitive = ci->get<bool>();
    p.stated.case_insensitive = true;
  }
  if (!p.is_private) {
    auto fams = doc.find("families");
    if (fams == doc.end()) return make_error(Errc::bad_json, "policy 'families' must be an array");
    GITLOCKS_TRY(families, parse_families(*fams, p.path_case()));
    p.families = std::move(families);
  } else {
    GITLOCKS_CHECK(parse_private(doc, p));
  }
  GITLOCKS_CHECK(parse_enforcement(doc, p));
  GITLOCKS_CHECK(parse_checkpoint_rule(doc, p));
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
    if (disclosure != kDisclosureGuardWindow)
      return make_error(Errc::unknown_format, "unknown disclosure " + disclosure);
    if (scope != "ALL_COMMITS") return make_error(Errc::unknown_format, "unknown guard_time scope " + scope);
    if (profiles == gt->end() || *profiles != json::array({kProfileGuardTime, kProfileTimeAdd}))
      return make_error(Errc::unknown_format, "guard_time profiles must be exactly [" + std::string(kProfileGuardTime) +
                                                  ", " + std::string(kProfileTimeAdd) + "]");
    p.guard_time = Pins{audience, key};
  }
  return p;
}

Status unseal_families(Policy& policy, const Vault& vault) {
  if (!policy.families_sealed || !policy.sealed_families) return Ok{};
  const EpochKey* key = vault.key(policy.epoch);
  if (!key) return make_error(Errc::not_member, "no key for epoch " + std::to_string(policy.epoch));
  GITLOCKS_TRY(epoch, sealed_epoch(*policy.sealed_families));
  if (epoch != policy.epoch) return make_error(Errc::bad_json, "families are sealed under another epoch");
  GITLOCKS_TRY(plain, open_document(*policy.sealed_families, *key, policy.store, "policy.json#families"));
  GITLOCKS_TRY(families, parse_families(plain, policy.path_case()));
  policy.families = std::move(families);
  policy.families_sealed = false;
  for (const auto& name : policy.require_claim_families)
    if (std::none_of(policy.families.begin(), policy.families.end(), [&](const Family& f) { return f.name == name; }))
      return make_error(Errc::usage, "require_claim names family '" + name + "', which the policy does not declare");
  return Ok{};
}

json guard_time_doc(const Pins& pins) {
  return json{{"audience", pins.audience},
              {"service_key", pins.service_key},
              {"disclosure", kDisclosureGuardWindow},
              {"profiles", json::array({kProfileGuardTime, kProfileTimeAdd})},
              {"scope", "ALL_COMMITS"}};
}

namespace {
json keyring_document(const Policy::Keyring& ring) {
  json out = json::object();
  for (const auto& [epoch, sealed_to] : ring) out[std::to_string(epoch)] = sealed_to;
  return out;
}

json path_texts(const std::vector<RepoPath>& paths) {
  json out = json::array();
  for (const auto& rp : paths) out.push_back(rp.display());
  return out;
}
}  // namespace

json families_document(const std::vector<Family>& families) {
  json out = json::array();
  for (const auto& f : families)
    out.push_back(
        {{"name", f.name}, {"policy", f.exclusive ? "exclusive" : "shared"}, {"members", path_texts(f.members)}});
  return out;
}

json policy_document(const Policy& p) {
  json doc{{"format", std::string(p.is_private ? kPrivatePolicyFormat : kPolicyFormat)},
           {"store", p.store},
           {"owner", p.owner},
           {"min_ttl_ms", p.min_ttl_ms},
           {"max_ttl_ms", p.max_ttl_ms}};
  if (p.stated.case_insensitive) doc["case_insensitive"] = p.case_insensitive;
  if (p.is_private) {
    doc["visibility"] = "PRIVATE";
    doc["epoch"] = p.epoch;
    doc["members"] = p.members;
    doc["keyring"] = keyring_document(p.keyring);
    if (p.pending)
      doc["pending"] = {
          {"epoch", p.epoch + 1}, {"members", p.pending_members}, {"keyring", keyring_document(p.pending_keyring)}};
    if (p.sealed_families) doc["families"] = *p.sealed_families;
  } else {
    doc["families"] = families_document(p.families);
  }
  if (p.guard_time) doc["guard_time"] = guard_time_doc(*p.guard_time);
  if (p.stated.require_claim) {
    json rc = json::object();
    if (p.stated.require_claim_paths) rc["paths"] = path_texts(p.require_claim_paths);
    if (p.stated.require_claim_families) rc["families"] = p.require_claim_families;
    doc["require_claim"] = std::move(rc);
  }
  if (p.enforce) doc["enforce"] = *p.enforce;
  if (p.stated.admins) doc["admins"] = p.admins;
  if (p.stated.bots) doc["bots"] = p.bots;
  if (p.checkpoint) {
    json c = json::object();
    if (p.checkpoint->every) c["every"] = *p.checkpoint->every;
    if (p.checkpoint->signers_stated) c["signers"] = p.checkpoint->signers;
    if (p.checkpoint->cut) c["cut"] = *p.checkpoint->cut;
    doc["checkpoint"] = std::move(c);
  }
  return doc;
}

Policy policy_rekeyed(Policy p, const std::optional<json>& families) {
  p.epoch += 1;
  p.members = std::move(p.pending_members);
  p.keyring[p.epoch] = p.pending_keyring.at(p.epoch);
  p.pending = false;
  p.pending_members.clear();
  p.pending_keyring.clear();
  if (families) p.sealed_families = *families;
  return p;
}

Result<Policy::Keyring> parse_pending_keyring(const json& keyring) { return parse_keyring(keyring, "pending keyring"); }

Result<std::optional<json>> resealed_families(const Policy& p, const EpochKey& from, const EpochKey& to) {
  if (!p.sealed_families) return std::optional<json>();
  GITLOCKS_TRY(plain, open_document(*p.sealed_families, from, p.store, "policy.json#families"));
  GITLOCKS_TRY(resealed, seal_document(plain, to, p.epoch + 1, p.store, "policy.json#families"));
  return std::optional<json>(json::parse(resealed));
}

std::optional<std::string> unsettable_difference(const Policy& a, const Policy& b) {
  if (a.case_insensitive != b.case_insensitive || a.stated.case_insensitive != b.stated.case_insensitive)
    return "case_insensitive";
  if (a.epoch != b.epoch) return "epoch";
  if (a.is_private != b.is_private) return "format";
  if (!(a.guard_time == b.guard_time)) return "guard_time";
  if (a.keyring != b.keyring) return "keyring";
  if (a.members != b.members) return "members";
  if (a.owner != b.owner) return "owner";
  if (a.pending != b.pending || a.pending_members != b.pending_members || a.pending_keyring != b.pending_keyring)
    return "pending";
  if (a.store != b.store) return "store";
  // A PRIVATE store's families are sealed (settable only in the clear, and
  // policy set applies to public stores): as stored, they are its own.
  if (a.families_sealed != b.families_sealed || a.sealed_families != b.sealed_families) return "families";
  return std::nullopt;
}

json default_policy(const std::string& store_id_hex, const std::string& owner_hex) {
  return json{{"format", kPolicyFormat},        {"store", store_id_hex},          {"owner", owner_hex},
              {"min_ttl_ms", kDefaultMinTtlMs}, {"max_ttl_ms", kDefaultMaxTtlMs}, {"families", json::array()}};
}

std::vector<TimeGuard> ttl_time_guards(const Policy& p, const json& prefix, std::int64_t expires_at) {
  json path = prefix;
  path.push_back("expires_at");
  return {TimeGuard{TimeGuard::Cmp::lte, p.min_ttl_ms, path, expires_at},
          TimeGuard{TimeGuard::Cmp::gte, p.max_ttl_ms, path, expires_at}};
}

json ttl_guards(const Policy& p, const json& prefix) { return guard_documents(ttl_time_guards(p, prefix, 0)); }

}  // namespace gitlocks
