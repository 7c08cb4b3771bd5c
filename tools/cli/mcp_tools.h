// mcp_tools.h — the tools of `git-locks mcp` (cmd_mcp.cpp): their JSON
// Schemas, the check of a call's arguments against its input schema, the
// CLI command line a call runs, and the tool result made of what that
// command printed. Pure functions: the server loop starts the processes.
//
// A tool call is exactly one run of the CLI (the same binary, with --json):
// the same core, the same publication rules, the same checks. Nothing here
// decides an admission.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"

namespace gitlocks::cli::mcp {

struct Tool {
  std::string name;  // snake_case, e.g. "sem_acquire"
  std::string op;    // the CLI command it runs, e.g. "sem acquire"
  // The command's flags the tool takes: property "accept_rewrite" is flag
  // "--accept-rewrite" (a switch when it takes no value).
  struct Flag {
    std::string property;
    std::string flag;
    bool is_switch = false;
  };
  std::vector<Flag> flags;            // in the order of the command's declaration
  std::vector<std::string> operands;  // the properties given after "--", in order
  json definition;                    // the tools/list entry: name, title, description, inputSchema, outputSchema
};

// Every tool, in the order tools/list shows them.
const std::vector<Tool>& tools();

// The tool named `name`, or nullptr.
const Tool* find_tool(const std::string& name);

// Checks `value` against the subset of JSON Schema 2020-12 our input
// schemas use (type, properties, required, additionalProperties: false,
// items, minItems, enum, minimum, minLength). The first violation as
// "arguments.paths: must be an array", or nullopt when valid.
std::optional<std::string> check_schema(const json& schema, const json& value, const std::string& at = "arguments");

// The CLI arguments after the global flags (e.g. {"claim", "--mode",
// "shared", "--", "src/a.c"}) for a call whose arguments passed
// check_schema.
std::vector<std::string> command_line(const Tool& tool, const json& arguments);

// A tools/call result (content, structuredContent, isError) from the exit
// status and output of the command a call ran.
json tool_result(const Tool& tool, int status, const std::string& out, const std::string& err);

// The isError result of arguments refused before any command ran: the
// CLI's usage error object (error, code, reason "usage", op, detail).
json usage_result(const Tool& tool, const std::string& detail);

}  // namespace gitlocks::cli::mcp
