#include "batch_parse.h"

#include <sstream>

#include "args.h"

namespace gitlocks::cli {

Result<BatchLine> parse_batch_line(std::size_t number, const std::string& text, std::int64_t default_ttl) {
  auto bad = [&](Errc code, const std::string& why) {
    return Error(code, "line " + std::to_string(number) + ": " + why, {{"line", number}});
  };
  auto doc = canon_parse(text, CanonMode::lenient);
  if (!doc.ok()) return bad(doc.error().code, doc.error().message);
  if (!doc->is_object()) return bad(Errc::bad_json, "each line must be a JSON object");
  auto kind = get_string(*doc, "op");
  if (!kind.ok()) return bad(Errc::bad_json, kind.error().message);
  BatchLine l;
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

Result<std::vector<BatchLine>> parse_batch(const std::string& text, std::int64_t default_ttl) {
  std::vector<BatchLine> lines;
  std::istringstream in(text);
  std::string raw;
  for (std::size_t number = 1; std::getline(in, raw); ++number) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (raw.find_first_not_of(" \t") == std::string::npos) continue;
    GITLOCKS_TRY(l, parse_batch_line(number, raw, default_ttl));
    lines.push_back(std::move(l));
  }
  if (lines.empty()) return make_error(Errc::usage, "the batch is empty");
  return lines;
}

}  // namespace gitlocks::cli
