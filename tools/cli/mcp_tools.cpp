#include "mcp_tools.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "commands.h"
#include "gitlocks/limits.hpp"
#include "report.h"

namespace gitlocks::cli::mcp {
namespace {

// The tools' schemas spell out the planner's note limit.
static_assert(kMaxNoteBytes == 1024, "the claim tool's schema says 'at most 1024 bytes'");

// The CLI's error object (docs/CLI.md "Errors"). Every tool's outputSchema
// admits it beside the success shape: the TypeScript SDK (1.x) checks the
// structuredContent of isError results against outputSchema as well.
constexpr const char* kErrorSchema = R"json({
  "type": "object",
  "description": "the CLI's JSON error object (isError results)",
  "required": ["error", "code", "reason", "op", "detail"],
  "properties": {
    "error": {"enum": ["refused", "usage", "store-read", "store-write"]},
    "code": {"type": "string"},
    "reason": {"type": "string"},
    "op": {"type": "string"},
    "detail": {"type": "string"},
    "holder": {"type": "string"},
    "holder_name": {"type": "string"},
    "path": {"type": "string"},
    "family": {"type": "string"},
    "expires_at_ms": {"type": "integer"},
    "checked_at_ms": {"type": "integer"},
    "last_reason": {"type": "string"},
    "waited_ms": {"type": "integer"},
    "polls": {"type": "integer"},
    "attempts": {"type": "integer"}
  }
})json";

constexpr const char* kDuration =
    R"json({"type": ["string", "integer"], "minimum": 0, "description": "500ms, 30s, 10m, 2h, or integer milliseconds"})json";

// The success output of every command that publishes a transition.
constexpr const char* kTransitionSchema = R"json({
  "type": "object",
  "required": ["op", "commit", "action", "admitted_at_ms", "attempts", "leases", "ops"],
  "properties": {
    "op": {"type": "string"},
    "commit": {"type": "string"},
    "action": {"type": "string"},
    "admitted_at_ms": {"type": "integer"},
    "attempts": {"type": "integer"},
    "leases": {"type": "array", "items": {"type": "object",
      "required": ["resource", "lease", "generation", "expires_at"],
      "properties": {"resource": {"type": "string"}, "lease": {"type": "string"},
                     "generation": {"type": "integer"}, "expires_at": {"type": "integer"}}}},
    "ops": {"type": "array", "items": {"type": "object"}}
  }
})json";

struct Spec {
  const char* name;
  const char* op;
  bool read_only;  // writes nothing (annotations.readOnlyHint)
  const char* title;
  const char* description;
  // The command's flags the tool takes, by their names in commands.cpp: each
  // becomes a property ('-' spelled '_') whose schema follows the flag's
  // declaration, and a "--flag=VALUE" (a switch: "--flag" when true) of the
  // command line, in the declaration's order.
  std::vector<std::string_view> flags;
  // The properties that are the command's operands, in order, after "--"
  // (an array property gives one operand per item).
  std::vector<std::string_view> operands;
  const char* input;   // the operands' properties (an object schema); the flags' are added
  const char* output;  // the success structuredContent; "" for kTransitionSchema
};

// Input schemas never use $ref or formats: check_schema below checks
// exactly the keywords they use.
const Spec kSpecs[] = {
    {"claim",
     "claim",
     false,
     "Claim paths",
     "Claim repository paths, all or none (git-locks claim). Refused with held-path while another holder's live lease "
     "is in the way (the error names holder, holder_name, path and expires_at_ms), or with reason queued-behind while "
     "another holder's older ticket waits for it. With wait: block up to that long until admitted, holding a ticket "
     "in the store's queue (waiters of every clone are admitted in ticket order), then refused with wait-timeout; "
     "refused with deadlock when the wait could never end.",
     {"mode", "ttl", "note", "wait"},
     {"paths"},
     R"json({"type": "object", "additionalProperties": false, "required": ["paths"], "properties": {
       "paths": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                 "description": "repository paths; a trailing / claims a directory"}}})json",
     ""},
    {"extend",
     "extend",
     false,
     "Extend leases",
     "Renew your leases to expire ttl from now (git-locks extend).",
     {"ttl", "generation"},
     {"leases"},
     R"json({"type": "object", "additionalProperties": false, "required": ["leases"], "properties": {
       "leases": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                  "description": "each a lease id (24 hex digits) or the path of your lease"}}})json",
     ""},
    {"release",
     "release",
     false,
     "Release leases",
     "Release your leases (git-locks release).",
     {"generation"},
     {"leases"},
     R"json({"type": "object", "additionalProperties": false, "required": ["leases"], "properties": {
       "leases": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                  "description": "each a lease id (24 hex digits) or the path of your lease"}}})json",
     ""},
    {"handoff",
     "handoff",
     false,
     "Hand off leases",
     "Hand your live leases to another actor in one transition (git-locks handoff): the key in `to` holds them at "
     "the next generation, as if it had claimed them, with no moment in which a third writer could take them.",
     {"to", "to-name", "ttl", "note", "generation"},
     {"leases"},
     R"json({"type": "object", "additionalProperties": false, "required": ["leases"], "properties": {
       "leases": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                  "description": "each a lease id (24 hex digits) or the path of your lease"}}})json",
     ""},
    {"status",
     "status",
     true,
     "Lease status",
     "Live leases, optionally only those overlapping paths; all: expired ones too (git-locks status).",
     {"all"},
     {"paths"},
     R"json({"type": "object", "additionalProperties": false, "properties": {
       "paths": {"type": "array", "items": {"type": "string", "minLength": 1}}}})json",
     R"json({"type": "object", "required": ["store", "commit", "now_ms", "policy", "leases"], "properties": {
       "store": {"type": ["string", "null"]}, "commit": {"type": ["string", "null"]}, "now_ms": {"type": "integer"},
       "policy": {"type": ["object", "null"]}, "policy_hash": {"type": "string"}, "guard_time": {"type": "object"},
       "leases": {"type": "array", "items": {"type": "object",
         "required": ["kind", "resource", "lease", "holder", "generation", "expires_at", "live", "mine"]}}}})json"},
    {"wait",
     "wait",
     true,
     "Wait until claimable",
     "Block until a claim of the paths would be admitted, writing nothing (git-locks wait); on timeout refused with "
     "the last refusal's code.",
     {"timeout"},
     {"paths"},
     R"json({"type": "object", "additionalProperties": false, "required": ["paths"], "properties": {
       "paths": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}}})json",
     R"json({"type": "object", "required": ["op", "paths", "claimable", "polls"], "properties": {
       "op": {"const": "wait"}, "paths": {"type": "array", "items": {"type": "string"}},
       "claimable": {"const": true}, "polls": {"type": "integer"}}})json"},
    {"fence",
     "fence",
     true,
     "Check a fencing token",
     "Succeeds when generation is a live generation of resource (PATH, path:PATH or sem:NAME), else refused with "
     "stale-generation (git-locks fence).",
     {},
     {"resource", "generation"},
     R"json({"type": "object", "additionalProperties": false, "required": ["resource", "generation"], "properties": {
       "resource": {"type": "string", "minLength": 1}, "generation": {"type": "integer", "minimum": 0}}})json",
     R"json({"type": "object", "required": ["op", "resource", "generation", "live", "lease", "holder", "expires_at"],
       "properties": {"op": {"const": "fence"}, "resource": {"type": "string"}, "generation": {"type": "integer"},
       "live": {"const": true}, "lease": {"type": "string"}, "holder": {"type": "string"}, "name": {"type": "string"},
       "expires_at": {"type": "integer"}, "commit": {"type": "string"}}})json"},
    {"sem_acquire",
     "sem acquire",
     false,
     "Acquire a semaphore slot",
     "Take a slot of counted semaphore name (git-locks sem acquire); every holder must agree on limit.",
     {"limit", "ttl", "note"},
     {"name"},
     R"json({"type": "object", "additionalProperties": false, "required": ["name"], "properties": {
       "name": {"type": "string", "minLength": 1}}})json",
     ""},
    {"sem_release",
     "sem release",
     false,
     "Release a semaphore slot",
     "Give your slot back (git-locks sem release).",
     {"generation"},
     {"name"},
     R"json({"type": "object", "additionalProperties": false, "required": ["name"], "properties": {
       "name": {"type": "string", "minLength": 1}}})json",
     ""},
    {"whoami",
     "whoami",
     true,
     "Who am I",
     "The actor key this server acts with, its display name, key file, and the key in OpenSSH form (ssh_key: what "
     "Git's SSH commit signatures carry).",
     {},
     {},
     R"json({"type": "object", "additionalProperties": false})json",
     R"json({"type": "object", "required": ["actor", "name", "key_file", "ssh_key"], "properties": {
       "actor": {"type": "string"}, "name": {"type": "string"}, "key_file": {"type": "string"},
       "ssh_key": {"type": "string"}}})json"},
    {"log",
     "log",
     true,
     "History",
     "The history of refs/locks/state, newest first (git-locks log).",
     {"limit"},
     {},
     R"json({"type": "object", "additionalProperties": false})json",
     R"json({"type": "object", "required": ["commits"], "properties": {"commits": {"type": "array", "items": {
       "type": "object", "required": ["commit", "parent", "admitted_at_ms", "actor", "command", "action", "summary"]}}}})json"},
    {"verify",
     "verify",
     false,
     "Verify the history",
     "Replay refs/locks/state and check every commit since the trust checkpoint (full: from the root). isError "
     "when any commit is invalid (git-locks verify).",
     {"full", "from", "accept-rewrite"},
     {},
     R"json({"type": "object", "additionalProperties": false})json",
     R"json({"type": "object", "required": ["tip", "commits", "invalid", "ok", "verdicts"], "properties": {
       "tip": {"type": "string"}, "commits": {"type": "integer"}, "invalid": {"type": "integer"},
       "structural": {"type": "integer"}, "ok": {"type": "boolean"},
       "first_invalid": {"type": ["string", "null"]}, "checkpoint": {"type": ["string", "null"]},
       "recovery": {"type": ["string", "null"]},
       "verdicts": {"type": "array", "items": {"type": "object", "required": ["commit", "ok", "reason"]}}}})json"},
};

json parse_schema(std::string text) {
  for (std::size_t at; (at = text.find("DURATION")) != std::string::npos;) text.replace(at, 8, kDuration);
  return json::parse(text);  // our own constant text: a typo fails every test at once
}

// The schema of a flag's value, from its declaration (commands.cpp).
json flag_schema(const FlagDecl& f) {
  json out;
  switch (f.val) {
    case Val::none:
      out = {{"type", "boolean"}};
      break;
    case Val::duration:
      out = parse_schema("DURATION");
      break;
    case Val::count:
      out = {{"type", "integer"}, {"minimum", f.min}};
      break;
    case Val::choice:
      out = {{"enum", choices_of(f.placeholder)}};
      break;
    case Val::text:
    case Val::file:
    case Val::dir:
      out = {{"type", "string"}};
      if (f.min > 0) out["minLength"] = f.min;
      break;
  }
  if (!f.help.empty() && !out.contains("description")) out["description"] = std::string(f.help);
  return out;
}

std::string property_of(std::string_view flag) {
  std::string out(flag);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::vector<Tool> build_tools() {
  const json error_schema = parse_schema(kErrorSchema);
  std::vector<Tool> out;
  for (const Spec& s : kSpecs) {
    json success = parse_schema(*s.output ? s.output : kTransitionSchema);
    json input = parse_schema(s.input);
    const CommandDecl* command = find_command(s.op);
    Tool tool{s.name, s.op, {}, {}, {}};
    // Our own constant tables: a tool of no command, or naming a flag its
    // command does not declare, fails every test at once.
    if (!command) throw std::logic_error("mcp tool " + std::string(s.name) + ": no command '" + s.op + "'");
    for (const auto& name : s.flags)
      if (std::none_of(command->flags.begin(), command->flags.end(), [&](const FlagDecl& f) { return f.name == name; }))
        throw std::logic_error("mcp tool " + std::string(s.name) + ": no flag --" + std::string(name));
    for (const FlagDecl& f : command->flags) {
      if (std::find(s.flags.begin(), s.flags.end(), f.name) == s.flags.end()) continue;
      input["properties"][property_of(f.name)] = flag_schema(f);
      if (f.required) input["required"].push_back(property_of(f.name));
      tool.flags.push_back({property_of(f.name), "--" + std::string(f.name), f.val == Val::none});
    }
    tool.operands.assign(s.operands.begin(), s.operands.end());
    tool.definition = {{"name", s.name},
                       {"title", s.title},
                       {"description", s.description},
                       {"inputSchema", std::move(input)},
                       {"outputSchema", {{"type", "object"}, {"anyOf", json::array({success, error_schema})}}},
                       {"annotations", {{"readOnlyHint", s.read_only}, {"openWorldHint", false}}}};
    out.push_back(std::move(tool));
  }
  return out;
}

bool has_type(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "null") return v.is_null();
  return false;
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// JSON Lines as an array; a line that is not JSON is an error (nullopt).
std::optional<json> json_lines(const std::string& text) {
  json out = json::array();
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json v = json::parse(line, nullptr, false);
    if (v.is_discarded()) return std::nullopt;
    out.push_back(std::move(v));
  }
  return out;
}

json result(json structured, bool is_error, std::string text) {
  return {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})},
          {"structuredContent", std::move(structured)},
          {"isError", is_error}};
}

json error_result(json error) {
  std::string text = "git-locks " + error.value("op", std::string()) + ": " + error.value("error", std::string()) +
                     " (" + error.value("code", std::string()) + "): " + error.value("detail", std::string());
  return result(std::move(error), true, std::move(text));
}

// An operational failure the command could not report itself (it died, or
// printed something that is not its JSON): store-read, as the CLI reports
// what it cannot read reliably.
json unreadable(const Tool& tool, const std::string& why) {
  return error_result(
      {{"error", "store-read"}, {"code", "store-read"}, {"reason", "store-read"}, {"op", tool.op}, {"detail", why}});
}

}  // namespace

const std::vector<Tool>& tools() {
  static const std::vector<Tool> all = build_tools();
  return all;
}

const Tool* find_tool(const std::string& name) {
  for (const auto& t : tools())
    if (t.name == name) return &t;
  return nullptr;
}

std::optional<std::string> check_schema(const json& schema, const json& value, const std::string& at) {
  if (auto t = schema.find("type"); t != schema.end()) {
    bool ok = false;
    if (t->is_string()) ok = has_type(value, *t);
    for (const auto& one : t->is_array() ? *t : json::array()) ok = ok || has_type(value, one);
    if (!ok) return at + ": must be of type " + t->dump();
  }
  if (auto e = schema.find("enum"); e != schema.end()) {
    if (std::find(e->begin(), e->end(), value) == e->end()) return at + ": must be one of " + e->dump();
  }
  if (auto m = schema.find("minimum"); m != schema.end() && value.is_number()) {
    if (value.get<double>() < m->get<double>()) return at + ": must be at least " + m->dump();
  }
  if (auto m = schema.find("minLength"); m != schema.end() && value.is_string()) {
    if (value.get<std::string>().size() < m->get<std::size_t>()) return at + ": must not be empty";
  }
  if (value.is_array()) {
    if (auto m = schema.find("minItems"); m != schema.end() && value.size() < m->get<std::size_t>())
      return at + ": must have at least " + m->dump() + " item(s)";
    if (auto items = schema.find("items"); items != schema.end())
      for (std::size_t i = 0; i < value.size(); ++i)
        if (auto bad = check_schema(*items, value[i], at + "[" + std::to_string(i) + "]")) return bad;
  }
  if (value.is_object()) {
    const json props = schema.value("properties", json::object());
    for (const auto& r : schema.value("required", json::array()))
      if (!value.contains(r.get<std::string>()))
        return at + ": missing required property '" + r.get<std::string>() + "'";
    for (const auto& [k, v] : value.items()) {
      if (props.contains(k)) {
        if (auto bad = check_schema(props[k], v, at + "." + k)) return bad;
      } else if (schema.value("additionalProperties", true) == false) {
        return at + ": unknown property '" + k + "'";
      }
    }
  }
  return std::nullopt;
}

std::vector<std::string> command_line(const Tool& tool, const json& a) {
  std::vector<std::string> argv;
  const std::string_view op = tool.op;
  for (std::size_t at = 0, space; at <= op.size(); at = space + 1) {
    space = op.find(' ', at);
    if (space == std::string_view::npos) space = op.size();
    argv.emplace_back(op.substr(at, space - at));
  }
  for (const auto& f : tool.flags) {
    auto it = a.find(f.property);
    if (it == a.end()) continue;
    if (!f.is_switch) argv.push_back(f.flag + "=" + text_of(*it));
    else if (it->get<bool>()) argv.push_back(f.flag);
  }
  if (tool.operands.empty()) return argv;
  argv.push_back("--");  // an operand starting with '-' is never read as a flag
  for (const auto& name : tool.operands) {
    auto it = a.find(name);
    if (it == a.end()) continue;
    if (!it->is_array()) argv.push_back(text_of(*it));
    for (const auto& one : it->is_array() ? *it : json::array()) argv.push_back(text_of(one));
  }
  return argv;
}

json tool_result(const Tool& tool, int status, const std::string& out, const std::string& err) {
  // verify --json: verdicts on stdout, the summary on stderr; exit 1 is an
  // invalid history, reported with the same summary.
  if (tool.name == "verify" && (status == kExitOk || status == kExitRefused)) {
    auto verdicts = json_lines(out);
    auto summary = json_lines(err);
    if (verdicts && summary && !summary->empty() && summary->back().is_object() && !summary->back().contains("error")) {
      json s = summary->back();
      s["verdicts"] = *verdicts;
      std::string text = s.dump();
      return result(std::move(s), status != kExitOk, std::move(text));
    }
  }
  if (status == kExitOk) {
    json structured;
    if (tool.name == "log") {
      auto commits = json_lines(out);
      if (!commits) return unreadable(tool, "git-locks log printed a line that is not JSON");
      structured = {{"commits", *commits}};
    } else {
      structured = json::parse(out, nullptr, false);
      if (!structured.is_object()) return unreadable(tool, "git-locks " + tool.op + " printed no JSON object");
    }
    std::string text = structured.dump();
    return result(std::move(structured), false, std::move(text));
  }
  // The first error object on stderr is the command's own report.
  if (auto lines = json_lines(err)) {
    for (const auto& e : *lines)
      if (e.is_object() && e.contains("error") && e.contains("code")) return error_result(e);
  }
  std::string why =
      "git-locks " + tool.op + " exited with status " + std::to_string(status) + " without an error object";
  if (!err.empty()) why += ": " + err.substr(0, 2000);
  return unreadable(tool, why);
}

json usage_result(const Tool& tool, const std::string& detail) {
  return error_result(
      {{"error", "usage"}, {"code", "usage"}, {"reason", "usage"}, {"op", tool.op}, {"detail", detail}});
}

}  // namespace gitlocks::cli::mcp
