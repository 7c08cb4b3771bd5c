// The property of the batch fuzz target (tools/cli/batch_parse), shared with
// the unit suite like properties.h. "" when it holds, else what broke.
#pragma once

#include <string>
#include <string_view>

#include "batch_parse.h"

namespace gitlocks::fuzz {

// Any input is either rejected with a usage-class error naming its line, or
// parsed into ops that are well-formed for the planner: claim and
// sem-acquire carry a string target, extend/release/sem-release a reference,
// TTLs are non-negative. Parsing twice gives the same result.
inline std::string batch_property(std::string_view input) {
  const std::string in(input);
  auto r = cli::parse_batch(in, 600'000);
  auto again = cli::parse_batch(in, 600'000);
  if (r.ok() != again.ok()) return "two parses disagree";
  if (!r.ok()) {
    const Errc c = r.error().code;
    if (c == Errc::store_read || c == Errc::store_write) return "a parse error of the store class";
    if (r.error().message != again.error().message) return "two parses give different errors";
    if (c != Errc::usage && r.error().message.rfind("line ", 0) != 0)
      return "error names no line: " + r.error().message;
    return "";
  }
  if (r->empty()) return "an empty batch was accepted";
  std::size_t last = 0;
  for (const auto& l : *r) {
    if (l.number <= last) return "line numbers do not increase";
    last = l.number;
    if (l.ttl < 0) return "negative TTL accepted";
    if (l.ref) {
      if (!l.op.is_null()) return "a reference line carries an op";
    } else {
      if (!l.op.is_object() || !l.op.contains("op") || !l.op["op"].is_string()) return "op without a kind";
      const std::string kind = l.op["op"].get<std::string>();
      if (kind == "claim" && !(l.op.contains("path") && l.op["path"].is_string())) return "claim without a path";
      if (kind == "sem-acquire" && !(l.op.contains("limit") && l.op["limit"].is_number_integer()))
        return "sem-acquire without an integer limit";
      if (kind != "claim" && kind != "sem-acquire") return "unexpected op kind " + kind;
    }
  }
  return "";
}

}  // namespace gitlocks::fuzz
