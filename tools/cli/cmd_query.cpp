// Read-only commands: status, fence, log, whoami.
#include <algorithm>

#include "checkpoint.h"
#include "cli.h"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/sshsig.hpp"
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
  std::string left = e["live"].get<bool>()       ? format_duration(e["expires_in_ms"].get<std::int64_t>())
                     : e.contains("released_by") ? "released"
                                                 : "expired";
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

namespace {
// The human lines of status's "queue": one per live ticket, in order.
std::string queue_text(const json& queue, std::int64_t now) {
  if (queue.empty()) return "";
  std::string out = "waiting (the store's queue, first in line first):\n";
  for (const auto& t : queue) {
    std::string wants;
    for (const auto& w : t["wants"])
      wants += (wants.empty() ? "" : ", ") +
               (w.contains("sem") ? "semaphore " + w["sem"].get<std::string>()
                                  : w["path"].get<std::string>() + " (" + w["mode"].get<std::string>() + ")");
    out += "  #" + std::to_string(t["seq"].get<std::int64_t>()) + " " + t["holder_name"].get<std::string>() + " (" +
           t["holder"].get<std::string>().substr(0, 12) + ") waits for " + wants + "; its ticket lapses " +
           format_when(t["expires_at"].get<std::int64_t>(), now) + " unless renewed\n";
  }
  return out;
}
}  // namespace

int cmd_status(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  // Each PATH as typed: checked before the store is read, then in the
  // store's form (NFC, folded in a case-insensitive store).
  if (auto checked = path_filters(a->positionals, PathCase::sensitive); !checked.ok()) return ctx.fail(checked.error());
  auto now = now_ms();
  if (!now.ok()) return ctx.fail(now.error());
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  if (!snap->commit)
    return ctx.done(
        {{"store", nullptr}, {"commit", nullptr}, {"now_ms", *now}, {"policy", nullptr}, {"leases", json::array()}},
        "no lock store in this repository (run `git-locks init`)");
  StatusQuery q;
  q.now = *now;
  q.include_expired = a->has("all");
  auto filtered = path_filters(a->positionals, snap->path_case());
  if (!filtered.ok()) return ctx.fail(filtered.error());
  q.paths = std::move(*filtered);
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  if (auto id = ctx.identity(); id.ok()) q.me = (*id)->actor;  // only marks "mine"
  if (auto keys = require_keys(ctx, *snap); !keys.ok()) return ctx.fail(keys.error());
  StateReader reader(**store, snap->state, snap->codec());
  auto header = [&](std::size_t n) {
    return "refs/locks/state -> " + snap->commit->hex().substr(0, 12) + " (store " + snap->store_id.substr(0, 12) +
           "): " + std::to_string(n) + (a->has("all") ? " leases\n" : " live leases\n");
  };
  if (!q.paths.empty()) {  // the core's answer, by index
    auto doc = status_document(reader, *snap, q);
    if (!doc.ok()) return ctx.fail(doc.error());
    return ctx.done(
        *doc, header((*doc)["leases"].size()) + status_table((*doc)["leases"]) + queue_text((*doc)["queue"], q.now));
  }
  // Every lease: streamed row by row (the core's for_each_lease), so memory
  // does not grow with the rows. The JSON is byte for byte the one document
  // it would be: the rows go where the "leases" placeholder is.
  auto head = status_head(reader, *snap, q.now);
  if (!head.ok()) return ctx.fail(head.error());
  json out = std::move(*head);
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
      reader, q.now, q.include_expired, q.me,
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
  else text += queue_text(out["queue"], q.now);
  flush(0);
  std::fflush(stdout);
  return kExitOk;
}

int cmd_fence(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() != 2)
    return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  const std::string& name = a->positionals[0];
  auto generation = parse_count(a->positionals[1], "GENERATION");
  if (!generation.ok()) return ctx.fail(generation.error());
  // RESOURCE: "sem:NAME", "path:PATH" or a bare PATH: checked before the
  // store is read, then in the store's form.
  if (auto checked = resource_of(name, PathCase::sensitive); !checked.ok()) return ctx.fail(checked.error());
  auto now = now_ms();
  if (!now.ok()) return ctx.fail(now.error());
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  auto resource = resource_of(name, snap->path_case());
  if (!resource.ok()) return ctx.fail(resource.error());
  if (!snap->commit)  // no store: no generation is live
    return ctx.fail(fence_record(std::nullopt, *resource, *generation, *now).error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  if (auto keys = require_keys(ctx, *snap); !keys.ok()) return ctx.fail(keys.error());
  StateReader reader(**store, snap->state, snap->codec());
  auto answer = fence(reader, *resource, *generation, *now);
  if (!answer.ok()) return ctx.fail(answer.error());
  json out = {{"op", "fence"}};
  out.update(*answer);
  out["commit"] = *snap->commit;
  return ctx.done(out, "ok: generation " + std::to_string(*generation) + " of " + *resource + " is live (lease " +
                           out["lease"].get<std::string>() + ", " + holder_label(out) + ", expires in " +
                           format_duration(out["expires_at"].get<std::int64_t>() - *now) + ")");
}

int cmd_log(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
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
  // A member sees PRIVATE bodies, opened with the keys of the tip's keyring
  // (a public store asks for no key; a key that cannot be loaded shows the
  // bodies sealed).
  VerifierKeys keys;
  if (*tip) {
    auto k = identity_keys(ctx, **store, **tip, false);
    if (!k.ok()) return ctx.fail(k.error());
    keys = std::move(k).value();
  }
  std::string text;
  for (std::int64_t n = 0; at && n < limit; ++n) {
    auto tc = read_transition_commit(**store, *at);
    if (!tc.ok()) return ctx.fail(make_error(Errc::store_read, tc.error().message));
    auto doc = canon_parse(tc->packet_stored, CanonMode::strict);
    if (!doc.ok() || !doc->contains("packet") || !(*doc)["packet"].is_object())
      return ctx.fail(make_error(Errc::store_read, "commit " + *at + " carries an unreadable packet"));
    json& p = (*doc)["packet"];
    open_sealed_body(keys.vault(), p);
    // An unverified commit may say anything: actor, name, command and
    // action are shown when they are strings ("" otherwise), the body as
    // stored.
    const json body = p.contains("body") ? p["body"] : json::object();
    std::string summary = describe_transition(p);
    if (summary.rfind("git-locks: ", 0) == 0) summary = summary.substr(11);
    while (!summary.empty() && summary.back() == '\n') summary.pop_back();
    const std::optional<std::int64_t> t = admission_time(*tc, p);  // the notary's T under guard time
    json line = {{"commit", *at},
                 {"parent", tc->parents.empty() ? json(nullptr) : json(tc->parents[0])},
                 {"admitted_at_ms", t ? json(*t) : json(nullptr)},
                 {"actor", string_member(p, "actor")},
                 {"name", string_member(body, "name")},
                 {"command", string_member(p, "command")},
                 {"action", string_member(p, "action")},
                 {"summary", summary},
                 {"body", body}};
    if (ctx.json_output) text += json_line(line) + "\n";
    else text += at->hex().substr(0, 12) + "  " + (t ? format_time(*t) : std::string(24, ' ')) + "  " + summary + "\n";
    // Across a cut to the chain it follows when that is here (the archive:
    // always for a local store; for a remote one once fetched).
    auto c = (*store)->read_commit(*at);
    at = c.ok() ? chain_parent(**store, *at, *c) : std::nullopt;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int cmd_whoami(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  std::string name = ctx.display_name();
  const std::string ssh_key = ssh_public_key_line((*me)->key.public_key);
  return ctx.done(
      {{"actor", (*me)->actor}, {"name", name}, {"key_file", (*me)->key_file}, {"ssh_key", ssh_key}},
      (*me)->actor + (name.empty() ? "" : "  " + name) + "\n(key " + (*me)->key_file + ")\nssh key: " + ssh_key);
}

}  // namespace gitlocks::cli
