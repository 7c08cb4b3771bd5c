// Read-only commands: status, fence, log, whoami.
#include <algorithm>

#include "cli.h"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/state.hpp"
#include "leases.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

std::string holder_label(const json& lease) {
  std::string name = lease.value("name", "");
  std::string key = lease.value("holder", "").substr(0, 12);
  return name.empty() ? key : name + " (" + key + ")";
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

namespace {

std::string status_header() {
  return pad("RESOURCE", 32) + pad("MODE", 11) + pad("HOLDER", 28) + pad("GEN", 6) + pad("EXPIRES IN", 12) + "LEASE\n";
}

std::string status_row(const json& e) {
  const bool path = e["kind"] == "path";
  std::string what =
      path ? e["path"].get<std::string>()
           : "sem " + e["sem"].get<std::string>() + " (limit " + std::to_string(e["limit"].get<std::int64_t>()) + ")";
  std::string left = e["live"].get<bool>() ? format_duration(e["expires_in_ms"].get<std::int64_t>()) : "expired";
  return pad(what, 31) + " " + pad(path ? e["mode"].get<std::string>() : "slot", 11) +
         pad(holder_label(e) + (e["mine"].get<bool>() ? " *" : ""), 27) + " " +
         pad(std::to_string(e["generation"].get<std::int64_t>()), 6) + pad(left, 12) + e["lease"].get<std::string>() +
         "\n";
}

std::string status_table(const json& leases) {
  if (leases.empty()) return "";
  std::string out = status_header();
  for (const auto& e : leases) out += status_row(e);
  return out;
}

}  // namespace

int cmd_status(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {{"all", false}});
  if (!a.ok()) return ctx.fail(a.error());
  // A PATH as typed: its NFC form, folded in a case-insensitive store.
  auto filters_for = [&](PathCase path_case) -> Result<std::vector<RepoPath>> {
    std::vector<RepoPath> out;
    for (const auto& p : a->positionals) {
      GITLOCKS_TRY(text, normalize_path_input(p, path_case));
      GITLOCKS_TRY(rp, parse_repo_path(text, path_case));
      out.push_back(rp);
    }
    return out;
  };
  if (auto checked = filters_for(PathCase::sensitive); !checked.ok()) return ctx.fail(checked.error());
  auto now = now_ms();
  if (!now.ok()) return ctx.fail(now.error());
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  auto filtered = filters_for(snap->path_case);
  if (!filtered.ok()) return ctx.fail(filtered.error());
  const std::vector<RepoPath> filters = std::move(*filtered);
  json out = {
      {"store", nullptr}, {"commit", nullptr}, {"now_ms", *now}, {"policy", nullptr}, {"leases", json::array()}};
  if (!snap->commit) return ctx.done(out, "no lock store in this repository (run `git-locks init`)");
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  std::string me;
  if (auto id = ctx.identity(); id.ok()) me = (*id)->actor;  // only marks "mine"
  auto vault = open_vault(ctx, **store, *snap);
  if (!vault.ok()) return ctx.fail(vault.error());
  StateReader reader(**store, snap->state, (*vault)->codec.get());
  auto policy = reader.policy();
  if (!policy.ok()) return ctx.fail(policy.error());
  if (auto v = (*vault)->get(); v && policy->contains("families")) {  // PRIVATE: the sealed families
    auto families = open_document((*policy)["families"], *v->key(snap->epoch), snap->store_id, "policy.json#families");
    if (!families.ok())
      return ctx.fail(make_error(Errc::store_read, "policy.json families: " + families.error().message));
    (*policy)["families"] = *families;
  }
  out["store"] = snap->store_id;
  out["commit"] = *snap->commit;
  out["policy"] = {{"min_ttl_ms", (*policy)["min_ttl_ms"]},
                   {"max_ttl_ms", (*policy)["max_ttl_ms"]},
                   {"families", (*policy)["families"]},
                   {"owner", (*policy)["owner"]}};
  out["policy_hash"] = snap->policy_hash;
  out["guard_time"] = snap->guard_time ? json{{"enabled", true},
                                              {"audience", snap->guard_time->audience},
                                              {"service_key", snap->guard_time->service_key}}
                                       : json{{"enabled", false}};
  auto header = [&](std::size_t n) {
    return "refs/locks/state -> " + snap->commit->substr(0, 12) + " (store " + snap->store_id.substr(0, 12) +
           "): " + std::to_string(n) + (a->has("all") ? " leases\n" : " live leases\n");
  };
  if (!filters.empty()) {  // the core query, by index
    auto leases = list_leases(reader, *now, filters, a->has("all"), me);
    if (!leases.ok()) return ctx.fail(leases.error());
    out["leases"] = std::move(*leases);
    return ctx.done(out, header(out["leases"].size()) + status_table(out["leases"]));
  }
  // Every lease: streamed row by row (the core's for_each_lease), so memory
  // does not grow with the rows. The JSON is byte for byte the one document
  // it would be: the rows go where the "leases" placeholder is.
  static const std::string kMark = "\x01leases\x01";
  out["leases"] = kMark;
  const std::string doc = json_line(out);
  const std::string placeholder = json_line(json(kMark));
  const std::size_t at = doc.find(placeholder);
  std::string text;
  auto flush = [&](std::size_t above) {
    if (text.size() < above) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    text.clear();
  };
  bool first = true;
  auto st = for_each_lease(
      reader, *now, a->has("all"), me,
      [&](std::size_t n) { text = ctx.json_output ? doc.substr(0, at) + "[" : header(n) + (n ? status_header() : ""); },
      [&](const json& row) {
        if (ctx.json_output) {
          if (!first) text += ',';
          text += json_line(row);
        } else {
          text += status_row(row);
        }
        first = false;
        flush(64u << 10);
        return true;
      });
  if (!st.ok()) {
    flush(0);
    std::fflush(stdout);
    return ctx.fail(st.error());
  }
  if (ctx.json_output) text += "]" + doc.substr(at + placeholder.size()) + "\n";
  flush(0);
  std::fflush(stdout);
  return kExitOk;
}

int cmd_fence(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {});
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 2) return ctx.fail(make_error(Errc::usage, "usage: fence RESOURCE GENERATION"));
  const std::string& name = a->positionals[0];
  auto generation = parse_count(a->positionals[1], "GENERATION");
  if (!generation.ok()) return ctx.fail(generation.error());
  // RESOURCE: "sem:NAME", "path:PATH" or a bare PATH.
  // A path as typed: its NFC form, folded in a case-insensitive store.
  auto resource_for = [&](PathCase path_case) -> Result<std::string> {
    if (name.rfind("sem:", 0) == 0) return name;
    GITLOCKS_TRY(text, normalize_path_input(name.rfind("path:", 0) == 0 ? name.substr(5) : name, path_case));
    GITLOCKS_TRY(p, parse_repo_path(text, path_case));
    return path_resource(p.key());
  };
  if (auto checked = resource_for(PathCase::sensitive); !checked.ok()) return ctx.fail(checked.error());
  auto now = now_ms();
  if (!now.ok()) return ctx.fail(now.error());
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  auto resolved = resource_for(snap->path_case);
  if (!resolved.ok()) return ctx.fail(resolved.error());
  const std::string resource = *resolved;
  std::optional<json> rec;
  if (snap->commit) {
    auto store = ctx.store();
    if (!store.ok()) return ctx.fail(store.error());
    auto vault = open_vault(ctx, **store, *snap);
    if (!vault.ok()) return ctx.fail(vault.error());
    StateReader reader(**store, snap->state, (*vault)->codec.get());
    auto r = reader.record(resource);
    if (!r.ok()) return ctx.fail(r.error());
    rec = *r;
  }
  std::int64_t current = rec ? rec->value("generation", std::int64_t{0}) : 0;
  if (rec && rec->contains("leases")) {
    for (const auto& l : (*rec)["leases"]) {
      if (l["generation"] != *generation || !lease_live(l, *now)) continue;
      return ctx.done({{"op", "fence"},
                       {"resource", resource},
                       {"generation", *generation},
                       {"live", true},
                       {"lease", l["id"]},
                       {"holder", l["holder"]},
                       {"name", l["name"]},
                       {"expires_at", l["expires_at"]},
                       {"commit", *snap->commit}},
                      "ok: generation " + std::to_string(*generation) + " of " + resource + " is live (lease " +
                          l["id"].get<std::string>() + ", " + holder_label(l) + ", expires in " +
                          format_duration(l["expires_at"].get<std::int64_t>() - *now) + ")");
    }
  }
  return ctx.fail(make_error(Errc::stale_generation, "generation " + std::to_string(*generation) + " of " + resource +
                                                         " is not live (current generation " + std::to_string(current) +
                                                         ")"));
}

int cmd_log(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {{"limit", true}});
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "log takes no arguments"));
  std::int64_t limit = kMaxSafeInteger;
  if (auto l = a->value("limit")) {
    auto v = parse_count(*l, "--limit");
    if (!v.ok()) return ctx.fail(v.error());
    limit = *v;
  }
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto tip = ctx.read_tip();
  if (!tip.ok()) return ctx.fail(tip.error());
  std::optional<Oid> at = *tip;
  std::string text;
  for (std::int64_t n = 0; at && n < limit; ++n) {
    auto tc = read_transition_commit(**store, *at);
    if (!tc.ok()) return ctx.fail(make_error(Errc::store_read, tc.error().message));
    auto doc = canon_parse(tc->packet_stored, CanonMode::strict);
    if (!doc.ok() || !doc->contains("packet") || !(*doc)["packet"].is_object())
      return ctx.fail(make_error(Errc::store_read, "commit " + *at + " carries an unreadable packet"));
    json& p = (*doc)["packet"];
    open_sealed_body(ctx, **store, p);  // PRIVATE stores: members see the body
    const json& body = p.contains("body") ? p["body"] : json::object();
    std::string summary = describe_transition(p);
    if (summary.rfind("git-locks: ", 0) == 0) summary = summary.substr(11);
    while (!summary.empty() && summary.back() == '\n') summary.pop_back();
    const std::optional<std::int64_t> t = admission_time(*tc, p);  // the notary's T under guard time
    json line = {{"commit", *at},
                 {"parent", tc->parents.empty() ? json(nullptr) : json(tc->parents[0])},
                 {"admitted_at_ms", t ? json(*t) : json(nullptr)},
                 {"actor", p.value("actor", "")},
                 {"name", body.value("name", "")},
                 {"command", p.value("command", "")},
                 {"action", p.value("action", "")},
                 {"summary", summary},
                 {"body", body}};
    if (ctx.json_output) text += json_line(line) + "\n";
    else text += at->substr(0, 12) + "  " + (t ? format_time(*t) : std::string(24, ' ')) + "  " + summary + "\n";
    at = tc->parents.empty() ? std::nullopt : std::optional<Oid>(tc->parents[0]);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int cmd_whoami(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {});
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "whoami takes no arguments"));
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  std::string name = ctx.display_name();
  return ctx.done({{"actor", (*me)->actor}, {"name", name}, {"key_file", (*me)->key_file}},
                  (*me)->actor + (name.empty() ? "" : "  " + name) + "\n(key " + (*me)->key_file + ")");
}

}  // namespace gitlocks::cli
