// batch [FILE|-]: JSON Lines of operations published as one transition, all
// or nothing. Line schema (docs/CLI.md):
//   {"op":"claim","path":P,"mode"?:M,"ttl"?:DUR,"note"?:S}
//   {"op":"extend","lease"|"path"|"sem":X,"ttl"?:DUR,"generation"?:G}
//   {"op":"release","lease"|"path":X,"generation"?:G}
//   {"op":"sem-acquire","sem":N,"limit":L,"ttl"?:DUR,"note"?:S}
//   {"op":"sem-release","sem":N,"generation"?:G}
// DUR is a duration string ("30s") or integer milliseconds.
#include <sstream>

#include "cli.h"
#include "leases.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

struct Line {
  std::size_t number = 0;
  json op;                       // claim / sem-acquire: the core op without expires_at
  std::optional<LeaseRef> ref;   // extend / release / sem-release
  bool extend = false;
  std::int64_t ttl = 0;
};

Result<Line> parse_line(std::size_t number, const std::string& text, std::int64_t default_ttl) {
  auto bad = [&](Errc code, const std::string& why) {
    return make_error(code, "line " + std::to_string(number) + ": " + why);
  };
  auto doc = canon_parse(text, CanonMode::lenient);
  if (!doc.ok()) return bad(doc.error().code, doc.error().message);
  if (!doc->is_object()) return bad(Errc::bad_json, "each line must be a JSON object");
  auto kind = get_string(*doc, "op");
  if (!kind.ok()) return bad(Errc::bad_json, kind.error().message);
  Line l;
  l.number = number;
  l.ttl = default_ttl;
  auto allow = [&](std::initializer_list<std::string_view> keys) -> Status {
    auto st = check_keys(*doc, keys, "'" + *kind + "' line");
    if (!st.ok()) return bad(Errc::usage, st.error().message);
    return Ok{};
  };
  auto string_field = [&](const char* key, bool required) -> Result<std::optional<std::string>> {
    if (!doc->contains(key)) {
      if (required) return bad(Errc::usage, std::string("'") + *kind + "' needs \"" + key + "\"");
      return std::optional<std::string>{};
    }
    if (!(*doc)[key].is_string()) return bad(Errc::bad_json, std::string("\"") + key + "\" must be a string");
    return std::optional<std::string>{(*doc)[key].get<std::string>()};
  };
  if (doc->contains("ttl")) {
    const json& t = (*doc)["ttl"];
    Result<std::int64_t> ttl = t.is_string() ? parse_duration(t.get<std::string>())
                               : t.is_number_integer() && t.get<std::int64_t>() >= 0
                                   ? Result<std::int64_t>(t.get<std::int64_t>())
                                   : make_error(Errc::usage, "\"ttl\" must be a duration string or milliseconds");
    if (!ttl.ok()) return bad(Errc::usage, ttl.error().message);
    l.ttl = *ttl;
  }
  std::optional<std::int64_t> generation;
  if (doc->contains("generation")) {
    const json& g = (*doc)["generation"];
    if (!g.is_number_integer() || g.get<std::int64_t>() < 0)
      return bad(Errc::bad_json, "\"generation\" must be a non-negative integer");
    generation = g.get<std::int64_t>();
  }
  if (*kind == "claim" || *kind == "sem-acquire") {
    const bool claim = *kind == "claim";
    GITLOCKS_CHECK(claim ? allow({"op", "path", "mode", "ttl", "note"}) : allow({"op", "sem", "limit", "ttl", "note"}));
    GITLOCKS_TRY(target, string_field(claim ? "path" : "sem", true));
    GITLOCKS_TRY(note, string_field("note", false));
    l.op = {{"op", *kind}, {claim ? "path" : "sem", *target}};
    if (claim) {
      GITLOCKS_TRY(mode, string_field("mode", false));
      l.op["mode"] = mode.value_or("exclusive");
    } else {
      if (!doc->contains("limit") || !(*doc)["limit"].is_number_integer())
        return bad(Errc::usage, "'sem-acquire' needs an integer \"limit\"");
      l.op["limit"] = (*doc)["limit"];
    }
    if (note) l.op["note"] = *note;
    return l;
  }
  if (*kind == "extend" || *kind == "release" || *kind == "sem-release") {
    l.extend = *kind == "extend";
    if (l.extend) GITLOCKS_CHECK(allow({"op", "lease", "path", "sem", "ttl", "generation"}));
    else if (*kind == "release") GITLOCKS_CHECK(allow({"op", "lease", "path", "generation"}));
    else GITLOCKS_CHECK(allow({"op", "sem", "generation"}));
    std::optional<LeaseRef> ref;
    for (auto [key, k] : {std::pair{"lease", LeaseRef::Kind::id}, std::pair{"path", LeaseRef::Kind::path},
                          std::pair{"sem", LeaseRef::Kind::sem}}) {
      GITLOCKS_TRY(v, string_field(key, false));
      if (!v) continue;
      if (ref) return bad(Errc::usage, "name exactly one of \"lease\", \"path\" or \"sem\"");
      ref = LeaseRef{k, *v, generation};
    }
    if (!ref) return bad(Errc::usage, "'" + *kind + "' needs \"lease\", \"path\" or \"sem\"");
    l.ref = ref;
    return l;
  }
  return bad(Errc::usage, "unknown op '" + *kind + "' (claim, extend, release, sem-acquire, sem-release)");
}

// The planner names a failing op by its index ("op 3 (claim): ..."); name
// the input line as well.
Error with_line(const Error& e, const std::vector<Line>& lines) {
  std::size_t index = 0;
  if (lines.size() == 1) return make_error(e.code, "line " + std::to_string(lines[0].number) + ": " + e.message);
  if (e.message.rfind("op ", 0) != 0) return e;
  try {
    index = std::stoul(e.message.substr(3));
  } catch (...) {
    return e;
  }
  if (index >= lines.size()) return e;
  return make_error(e.code, "line " + std::to_string(lines[index].number) + ": " + e.message);
}

}  // namespace

int cmd_batch(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {{"ttl", true}});
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() > 1) return ctx.fail(make_error(Errc::usage, "usage: batch [FILE|-]"));
  std::int64_t default_ttl = 10 * 60 * 1000;
  if (auto t = a->value("ttl")) {
    auto v = parse_duration(*t);
    if (!v.ok()) return ctx.fail(v.error());
    default_ttl = *v;
  }
  const std::string source = a->positionals.empty() ? "-" : a->positionals[0];
  auto text = read_input(source);
  if (!text.ok()) return ctx.fail(text.error());
  std::vector<Line> lines;
  std::istringstream in(*text);
  std::string raw;
  for (std::size_t number = 1; std::getline(in, raw); ++number) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (raw.find_first_not_of(" \t") == std::string::npos) continue;
    auto l = parse_line(number, raw, default_ttl);
    if (!l.ok()) return ctx.fail(l.error());
    lines.push_back(std::move(*l));
  }
  if (lines.empty()) return ctx.fail(make_error(Errc::usage, "the batch is empty"));
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto p = publish(ctx, "batch", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(snap));
    LeaseResolver resolve(**store, snap, (*me)->actor);
    json ops = json::array();
    for (const auto& l : lines) {
      json op = l.op;
      if (l.ref) {
        auto r = resolve.op_for(*l.ref, l.extend);
        if (!r.ok()) return make_error(r.error().code, "line " + std::to_string(l.number) + ": " + r.error().message);
        op = std::move(*r);
      }
      if (l.extend || !l.ref) op["expires_at"] = now + l.ttl;
      ops.push_back(std::move(op));
    }
    return std::optional<json>{transition_body(ctx, now, ops)};
  });
  if (!p.ok()) {
    const Error& e = p.error();
    const bool planner_said = (e.code != Errc::stale_retries_exhausted && classify(e.code).kind == ErrorKind::refused) ||
                              classify(e.code).kind == ErrorKind::usage;
    const bool from_line = e.message.rfind("line ", 0) == 0;
    return ctx.fail(planner_said && !from_line ? with_line(e, lines) : e);
  }
  return report_published(ctx, *p);
}

}  // namespace gitlocks::cli
