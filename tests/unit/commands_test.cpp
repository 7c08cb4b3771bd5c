// The command declarations (tools/cli/commands.h) and what is generated
// from them: usage lines, the parser's flags and the MCP tools' schemas and
// command lines. tests/cli/test_misc.py ties the built binary's --help,
// per-command help, parser and completion script to the same declarations.
#include "commands.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "mcp_tools.h"

using gitlocks::json;
namespace cli = gitlocks::cli;

namespace {

const cli::CommandDecl& command(const char* name) {
  const cli::CommandDecl* c = cli::find_command(name);
  REQUIRE(c != nullptr);
  return *c;
}

// The parser's flags for a command, with the global ones, as Context::parse has them.
std::vector<cli::FlagSpec> parser_flags(const cli::CommandDecl& c) {
  auto out = cli::flag_specs(c);
  out.insert(out.end(), cli::global_flags().begin(), cli::global_flags().end());
  return out;
}

}  // namespace

// The expected lines are the usage lines --help printed when they were
// written by hand (before the declarations), where the grammar allows.
TEST_CASE("commands: usage lines are generated from the declared flags") {
  CHECK(cli::usage_of(command("claim")) ==
        "claim [--mode exclusive|shared|intent] [--ttl DUR] [--note TEXT] [--wait[=DUR]] PATH...");
  CHECK(cli::usage_of(command("sem acquire")) == "sem acquire --limit N [--ttl DUR] [--note TEXT] NAME");
  CHECK(cli::usage_of(command("run")) ==
        "run [--claim PATH]... [--shared PATH]... [--sem NAME:LIMIT]... [--ttl DUR] [--note TEXT] [--wait[=DUR]] "
        "[--on-lost terminate|keep] [--grace DUR] -- CMD [ARG...]");
  CHECK(cli::usage_of(command("sweep")) == "sweep");
  CHECK(cli::usage_of(command("notary serve")) ==
        "notary serve --key FILE --state DIR --listen HOST:PORT --audience NAME [--test-clock] [--allow-remote] "
        "[--max-request-bytes N]");
  CHECK(cli::find_command("sem") == nullptr);
  CHECK(cli::find_command("claim ") == nullptr);
}

TEST_CASE("commands: names are unique and every flag is declared once per command") {
  std::set<std::string> names;
  for (const auto& c : cli::commands()) {
    CHECK_MESSAGE(names.insert(std::string(c.name)).second, c.name);
    CHECK_FALSE(c.summary.empty());
    std::set<std::string> flags;
    for (const auto& f : c.flags) {
      CHECK_MESSAGE(flags.insert(std::string(f.name)).second, c.name, " --", f.name);
      CHECK_MESSAGE(f.help.size() > 0, c.name, " --", f.name);
      // A value needs a placeholder in the usage line, and a switch has none.
      CHECK_MESSAGE((f.val == cli::Val::none) == f.placeholder.empty(), c.name, " --", f.name);
      // The global flags are accepted everywhere: a command must not
      // redeclare one (the notary's own parser takes none of them).
      for (const auto& g : cli::global_flags())
        if (!c.own_parser) CHECK_MESSAGE(g.name != f.name, c.name, " --", f.name, " is a global flag");
    }
  }
  CHECK(names.size() == cli::commands().size());
}

TEST_CASE("commands: the parser accepts exactly the declared flags") {
  using V = std::vector<std::string>;
  const auto& claim = command("claim");
  auto ok = cli::parse_flags(V{"--mode", "shared", "--ttl=5s", "--note", "n", "--wait=2s", "a", "b"},
                             parser_flags(claim), claim.operands_end_flags);
  REQUIRE(ok.ok());
  CHECK(ok->value("mode") == "shared");
  CHECK(ok->value("ttl") == "5s");
  CHECK(ok->value("wait") == "2s");
  CHECK(ok->positionals == V{"a", "b"});
  // --wait takes its value only after '='.
  auto alone = cli::parse_flags(V{"--wait", "a"}, parser_flags(claim), false);
  REQUIRE(alone.ok());
  CHECK(alone->value("wait") == "");
  CHECK(alone->positionals == V{"a"});
  // A flag of another command is unknown here.
  auto other = cli::parse_flags(V{"--limit", "3", "a"}, parser_flags(claim), false);
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message == "unknown flag '--limit'");
  // A switch takes no value.
  auto sw = cli::parse_flags(V{"--all=yes"}, parser_flags(command("status")), false);
  REQUIRE_FALSE(sw.ok());
  CHECK(sw.error().message == "flag '--all' takes no value");
  // run: the first operand ends the flags; CMD's own flags are CMD's.
  const auto& run = command("run");
  auto r = cli::parse_flags(V{"--claim", "a", "make", "--ttl", "1"}, parser_flags(run), run.operands_end_flags);
  REQUIRE(r.ok());
  CHECK(r->values("claim") == V{"a"});
  CHECK_FALSE(r->has("ttl"));
  CHECK(r->positionals == V{"make", "--ttl", "1"});
  // Every declared flag of every command parses (with a value when it takes one).
  for (const auto& c : cli::commands()) {
    for (const auto& f : c.flags) {
      V argv{"--" + std::string(f.name)};
      if (f.val != cli::Val::none) argv.back() += "=1";
      auto p = cli::parse_flags(argv, parser_flags(c), c.operands_end_flags);
      CHECK_MESSAGE(p.ok(), c.name, " --", f.name);
      if (p.ok()) CHECK(p->has(std::string(f.name)));
    }
  }
}

TEST_CASE("commands: the declaration refuses operands of a command that takes none and a missing required flag") {
  using V = std::vector<std::string>;
  auto parsed = [](const cli::CommandDecl& c, const V& argv) {
    auto p = cli::parse_flags(argv, parser_flags(c), c.operands_end_flags);
    REQUIRE(p.ok());
    return cli::check_parsed(c, *p);
  };
  auto doctor = parsed(command("doctor"), V{"x"});
  REQUIRE_FALSE(doctor.ok());
  CHECK(doctor.error().code == gitlocks::Errc::usage);
  CHECK(doctor.error().message == "doctor takes no arguments");
  CHECK(parsed(command("doctor"), V{}).ok());
  auto sem = parsed(command("sem acquire"), V{"ci"});
  REQUIRE_FALSE(sem.ok());
  CHECK(sem.error().code == gitlocks::Errc::usage);
  CHECK(sem.error().message == "sem acquire needs --limit N: the semaphore's slots; every holder must agree");
  CHECK(parsed(command("sem acquire"), V{"--limit", "2", "ci"}).ok());
  // Every required flag of guard-time enable, the last one missing.
  auto enable = parsed(command("guard-time enable"), V{"--audience", "a", "--service-key", "k", "--disclosure",
                                                       "GUARD_WINDOW", "--expected-policy-hash", "h"});
  REQUIRE_FALSE(enable.ok());
  CHECK(enable.error().message.rfind("guard-time enable needs --operation-id ID: ", 0) == 0);
  // Operands are the handler's to count where the command takes some.
  CHECK(parsed(command("status"), V{"a", "b"}).ok());
}

TEST_CASE("commands: every MCP tool runs a declared command with its declared flags") {
  for (const auto& t : gitlocks::cli::mcp::tools()) {
    const cli::CommandDecl* c = cli::find_command(t.op);
    REQUIRE_MESSAGE(c != nullptr, t.name);
    const json& schema = t.definition["inputSchema"];
    // Every property is an operand or a flag of the command, typed as the flag is declared.
    const json declared = schema.value("properties", json::object());
    std::set<std::string> properties;
    for (const auto& [name, sub] : declared.items()) properties.insert(name);
    for (const auto& op : t.operands) CHECK_MESSAGE(properties.erase(op) == 1, t.name, " operand ", op);
    for (const auto& f : t.flags) {
      CHECK_MESSAGE(properties.erase(f.property) == 1, t.name, " flag ", f.flag);
      const cli::FlagDecl* decl = nullptr;
      for (const auto& d : c->flags)
        if ("--" + std::string(d.name) == f.flag) decl = &d;
      REQUIRE_MESSAGE(decl != nullptr, t.name, " ", f.flag);
      REQUIRE(declared.contains(f.property));
      const json& s = declared.at(f.property);
      switch (decl->val) {
        case cli::Val::none:
          CHECK(s["type"] == "boolean");
          break;
        case cli::Val::count:
          CHECK(s["type"] == "integer");
          CHECK(s["minimum"] == decl->min);
          break;
        case cli::Val::duration:
          CHECK(s["type"] == json::array({"string", "integer"}));
          break;
        case cli::Val::choice:
          CHECK(s.contains("enum"));
          break;
        default:
          CHECK(s["type"] == "string");
      }
      const json required = schema.value("required", json::array());
      CHECK_MESSAGE(decl->required == (std::find(required.begin(), required.end(), f.property) != required.end()),
                    t.name, " ", f.flag);
    }
    CHECK_MESSAGE(properties.empty(), t.name, " has properties that are neither flag nor operand");
  }
}

TEST_CASE("commands: an MCP call's command line parses back to its arguments") {
  // Every property of every tool given at once: the command's own parser
  // reads each flag back with its value, and the operands in order.
  for (const auto& t : gitlocks::cli::mcp::tools()) {
    const cli::CommandDecl& c = command(t.op.c_str());
    json args = json::object();
    for (const auto& f : t.flags) args[f.property] = f.is_switch ? json(true) : json("-v" + f.property);
    std::vector<std::string> operands;
    for (const auto& op : t.operands) {
      args[op] = json::array({"-" + op, op + "/x"});
      operands.insert(operands.end(), {"-" + op, op + "/x"});
    }
    auto argv = gitlocks::cli::mcp::command_line(t, args);
    const std::size_t words = std::count(t.op.begin(), t.op.end(), ' ') + 1;
    REQUIRE(argv.size() >= words);
    std::string name;
    for (std::size_t i = 0; i < words; ++i) name += (i ? " " : "") + argv[i];
    CHECK(name == t.op);
    auto p = cli::parse_flags(std::vector<std::string>(argv.begin() + static_cast<long>(words), argv.end()),
                              parser_flags(c), c.operands_end_flags);
    REQUIRE_MESSAGE(p.ok(), t.name);
    for (const auto& f : t.flags) {
      const std::string flag = f.flag.substr(2);
      REQUIRE_MESSAGE(p->has(flag), t.name, " ", f.flag);
      CHECK(*p->value(flag) == (f.is_switch ? "" : "-v" + f.property));
    }
    CHECK(p->flags.size() == t.flags.size());
    CHECK(p->positionals == operands);
  }
}
