// The tools of `git-locks mcp` (tools/cli/mcp_tools.h) without a process:
// the input schema check, the command line a call runs, and the result made
// of a command's exit status and output.
#include "mcp_tools.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using gitlocks::json;
namespace mcp = gitlocks::cli::mcp;

namespace {

const mcp::Tool& tool(const std::string& name) {
  const mcp::Tool* t = mcp::find_tool(name);
  REQUIRE(t != nullptr);
  return *t;
}

std::optional<std::string> check(const std::string& name, const char* arguments) {
  return mcp::check_schema(tool(name).definition["inputSchema"], json::parse(arguments));
}

}  // namespace

TEST_CASE("mcp tools: twelve tools with object input and output schemas") {
  std::vector<std::string> names;
  for (const auto& t : mcp::tools()) {
    names.push_back(t.name);
    CHECK(t.definition["inputSchema"]["type"] == "object");
    CHECK(t.definition["outputSchema"]["type"] == "object");
    CHECK(t.definition["outputSchema"]["anyOf"].size() == 2);
  }
  CHECK(names == std::vector<std::string>{"claim", "extend", "release", "handoff", "status", "wait", "fence",
                                          "sem_acquire", "sem_release", "whoami", "log", "verify"});
  CHECK(mcp::find_tool("sem acquire") == nullptr);
}

TEST_CASE("mcp tools: the input schema check names the first violation") {
  CHECK_FALSE(check("claim", R"({"paths": ["src/a.c"], "mode": "shared", "ttl": 30000, "wait": "20s"})"));
  CHECK(check("claim", R"({"paths": 42})") == "arguments.paths: must be of type \"array\"");
  CHECK(check("claim", R"({"paths": []})") == "arguments.paths: must have at least 1 item(s)");
  CHECK(check("claim", R"({"paths": [""]})") == "arguments.paths[0]: must not be empty");
  CHECK(check("claim", R"({"paths": ["a", 7]})") == "arguments.paths[1]: must be of type \"string\"");
  CHECK(check("claim", R"({})") == "arguments: missing required property 'paths'");
  CHECK(check("claim", R"({"paths": ["a"], "colour": 1})") == "arguments: unknown property 'colour'");
  CHECK(check("claim", R"({"paths": ["a"], "mode": "both"})") ==
        "arguments.mode: must be one of [\"exclusive\",\"shared\",\"intent\"]");
  CHECK(check("claim", R"({"paths": ["a"], "ttl": true})") ==
        "arguments.ttl: must be of type [\"string\",\"integer\"]");
  CHECK(check("claim", R"({"paths": ["a"], "ttl": -1})") == "arguments.ttl: must be at least 0");
  CHECK(check("claim", R"({"paths": ["a"], "ttl": 1.5})"));
  CHECK(check("sem_acquire", R"({"name": "ci", "limit": 0})") == "arguments.limit: must be at least 1");
  CHECK(check("whoami", R"({"x": 1})") == "arguments: unknown property 'x'");
  CHECK(check("verify", R"({"from": ""})") == "arguments.from: must not be empty");
  CHECK(check("log", R"({"limit": 0})") == "arguments.limit: must be at least 1");
  CHECK_FALSE(check("whoami", R"({})"));
}

TEST_CASE("mcp tools: arguments become flags with values attached and paths after --") {
  using V = std::vector<std::string>;
  CHECK(mcp::command_line(tool("claim"), json::parse(R"({"paths": ["-x", "b/"], "note": "-n", "ttl": 5000})")) ==
        V{"claim", "--ttl=5000", "--note=-n", "--", "-x", "b/"});
  CHECK(mcp::command_line(tool("claim"), json::parse(R"({"paths": ["a"], "wait": "20s", "mode": "shared"})")) ==
        V{"claim", "--mode=shared", "--wait=20s", "--", "a"});
  CHECK(mcp::command_line(tool("release"), json::parse(R"({"leases": ["a"], "generation": 3})")) ==
        V{"release", "--generation=3", "--", "a"});
  CHECK(mcp::command_line(tool("status"), json::parse(R"({"all": true})")) == V{"status", "--all", "--"});
  CHECK(mcp::command_line(tool("fence"), json::parse(R"({"resource": "sem:ci", "generation": 2})")) ==
        V{"fence", "--", "sem:ci", "2"});
  CHECK(mcp::command_line(tool("sem_acquire"), json::parse(R"({"name": "ci", "limit": 4})")) ==
        V{"sem", "acquire", "--limit=4", "--", "ci"});
  CHECK(mcp::command_line(tool("verify"), json::parse(R"({"full": true, "accept_rewrite": false})")) ==
        V{"verify", "--full"});
}

TEST_CASE("mcp tools: results carry the command's JSON or its error object") {
  json ok = mcp::tool_result(tool("whoami"), 0, "{\"actor\":\"ab\",\"key_file\":\"k\",\"name\":\"\"}\n", "");
  CHECK(ok["isError"] == false);
  CHECK(ok["structuredContent"]["actor"] == "ab");
  CHECK(json::parse(ok["content"][0]["text"].get<std::string>()) == ok["structuredContent"]);

  json log = mcp::tool_result(tool("log"), 0, "{\"commit\":\"c2\"}\n{\"commit\":\"c1\"}\n", "");
  CHECK(log["structuredContent"] == json::parse(R"({"commits": [{"commit": "c2"}, {"commit": "c1"}]})"));

  const std::string refusal =
      R"({"code":"held-path","detail":"d","error":"refused","expires_at_ms":9,"holder":"h","op":"claim","reason":"held-path"})";
  json refused = mcp::tool_result(tool("claim"), 1, "", refusal + "\n");
  CHECK(refused["isError"] == true);
  CHECK(refused["structuredContent"] == json::parse(refusal));
  CHECK(refused["content"][0]["text"] == "git-locks claim: refused (held-path): d");

  json invalid = mcp::tool_result(tool("verify"), 1, "{\"commit\":\"c\",\"ok\":false,\"reason\":\"r\"}\n",
                                  "{\"ok\":false,\"invalid\":1,\"commits\":1,\"tip\":\"c\"}\n");
  CHECK(invalid["isError"] == true);
  CHECK(invalid["structuredContent"]["verdicts"].size() == 1);
  CHECK(invalid["structuredContent"]["invalid"] == 1);

  json died = mcp::tool_result(tool("status"), 139, "", "Segmentation fault\n");
  CHECK(died["isError"] == true);
  CHECK(died["structuredContent"]["code"] == "store-read");
  CHECK(died["structuredContent"]["op"] == "status");

  json garbled = mcp::tool_result(tool("status"), 0, "not json", "");
  CHECK(garbled["isError"] == true);
  CHECK(garbled["structuredContent"]["code"] == "store-read");

  json usage = mcp::usage_result(tool("sem_acquire"), "arguments: missing required property 'limit'");
  CHECK(usage["structuredContent"] ==
        json::parse(R"({"error":"usage","code":"usage","reason":"usage","op":"sem acquire",
                        "detail":"arguments: missing required property 'limit'"})"));
}
