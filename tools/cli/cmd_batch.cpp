// batch [FILE|-]: JSON Lines of operations published as one transition, all
// or nothing. Line schema (docs/CLI.md):
//   {"op":"claim","path":P,"mode"?:M,"ttl"?:DUR,"note"?:S}
//   {"op":"extend","lease"|"path"|"sem":X,"ttl"?:DUR,"generation"?:G}
//   {"op":"release","lease"|"path":X,"generation"?:G}
//   {"op":"sem-acquire","sem":N,"limit":L,"ttl"?:DUR,"note"?:S}
//   {"op":"sem-release","sem":N,"generation"?:G}
// DUR is a duration string ("30s") or integer milliseconds.
#include "batch_parse.h"
#include "cli.h"
#include "gitlocks/limits.hpp"
#include "leases.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

// The planner names a failing op of several by its index (the error's
// "op_index" field); name the input line as well.
Error with_line(const Error& e, const std::vector<BatchLine>& lines) {
  std::size_t index = 0;  // one line: it is the op
  if (lines.size() > 1) {
    auto f = e.fields.find("op_index");
    if (f == e.fields.end()) return e;
    if (!f->second.is_number() || f->second.number() < 0) return e;
    index = static_cast<std::size_t>(f->second.number());
    if (index >= lines.size()) return e;
  }
  Error out = e.prefixed("line " + std::to_string(lines[index].number) + ": ");
  out.fields["line"] = lines[index].number;
  return out;
}

}  // namespace

int cmd_batch(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.size() > 1) return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  std::int64_t default_ttl = kDefaultTtlMs;
  if (auto t = a->value("ttl")) {
    auto v = parse_duration(*t);
    if (!v.ok()) return ctx.fail(v.error());
    default_ttl = *v;
  }
  const std::string source = a->positionals.empty() ? "-" : a->positionals[0];
  auto text = read_input(source);
  if (!text.ok()) return ctx.fail(text.error());
  auto parsed = parse_batch(*text, default_ttl);
  if (!parsed.ok()) return ctx.fail(parsed.error());
  const std::vector<BatchLine>& lines = *parsed;
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  auto p = publish(ctx, "batch", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    LeaseResolver resolve(**store, snap, (*me)->actor);
    json ops = json::array();
    for (const auto& l : lines) {
      json op = l.op;
      if (l.ref) {
        auto r = resolve.op_for(*l.ref, l.extend);
        if (!r.ok()) {
          Error e = r.error().prefixed("line " + std::to_string(l.number) + ": ");
          e.fields["line"] = l.number;
          return e;
        }
        op = std::move(*r);
      }
      if (l.extend || !l.ref) op["expires_at"] = now + l.ttl;
      ops.push_back(std::move(op));
    }
    return std::optional<json>{transition_body(ctx, now, ops)};
  });
  if (!p.ok()) {
    const Error& e = p.error();
    const bool planner_said =
        (e.code != Errc::stale_retries_exhausted && classify(e.code).kind == ErrorKind::refused) ||
        classify(e.code).kind == ErrorKind::usage;
    const bool from_line = e.fields.count("line") > 0;
    return ctx.fail(planner_said && !from_line ? with_line(e, lines) : e);
  }
  return report_published(ctx, *p);
}

}  // namespace gitlocks::cli
