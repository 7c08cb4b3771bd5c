// commands.h — every command of git-locks and its flags, declared once
// (commands.cpp). The parser (Context::parse), the usage lines of --help
// (and so the man page help2man makes of them), `CMD --help`, the bash
// completion script and the MCP tools' input schemas are all generated
// from this declaration; tests/unit/commands_test.cpp ties them together.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"

namespace gitlocks::cli {

// What a flag's value (or a command's operands) is: it decides the MCP
// schema of the value and what bash completes it to.
enum class Val {
  none,      // a switch: "--all"
  text,      // any text
  file,      // a file name (completes to files)
  dir,       // a directory (completes to directories)
  duration,  // 500ms, 30s, 10m, 2h or plain milliseconds
  count,     // a non-negative integer (at least FlagDecl::min)
  choice,    // one of the '|'-separated words of the placeholder
};

struct FlagDecl {
  std::string_view name;         // without the leading "--"
  Val val = Val::none;           // Val::none: the flag takes no value
  std::string_view placeholder;  // "DUR", "TEXT", "exclusive|shared"; "" for a switch
  std::string_view help;         // one line for `CMD --help` and the MCP schema
  bool optional_value = false;   // "--name" alone or "--name=VALUE" (never the next argument)
  bool required = false;         // the command refuses to run without it
  bool repeatable = false;       // every occurrence counts ("--claim A --claim B")
  std::int64_t min = 0;          // Val::count: the least value; a text value: its least length
};

struct CommandDecl {
  std::string_view name;  // one word, or two for a sub-command ("sem acquire")
  std::vector<FlagDecl> flags;
  std::string_view operands;    // the synopsis after the flags ("PATH..."), "" for none
  Val operand_val = Val::none;  // what the operands are (Val::choice: the words of `operands`)
  std::string_view summary;
  // The first operand ends the flags (`run -- CMD`: CMD's own flags are its).
  bool operands_end_flags = false;
  // The notary library parses these flags itself (tools/notary/command.cpp):
  // the global flags do not apply.
  bool own_parser = false;
};

// Every command, in the order --help lists them.
const std::vector<CommandDecl>& commands();
// The command named `name` ("claim", "sem acquire"), nullptr when none.
const CommandDecl* find_command(std::string_view name);

// The usage line of a command: its name, each flag ("[--ttl DUR]",
// "--limit N" when required, "[--wait[=DUR]]", "[--claim PATH]..." when
// repeatable) and its operands.
std::string usage_of(const CommandDecl& c);
// `git-locks CMD --help`: the usage line, the summary, one line per flag.
std::string help_of(const CommandDecl& c);
// What the parser accepts for the command (without the global flags).
std::vector<FlagSpec> flag_specs(const CommandDecl& c);
// What the declaration asks of a parsed command line: no operands for a
// command that takes none ("doctor takes no arguments"), every required
// flag given ("sem acquire needs --limit N: the semaphore's slots; ...").
// Errors: usage.
Status check_parsed(const CommandDecl& c, const Parsed& parsed);
// The words of a Val::choice placeholder or operand list.
std::vector<std::string> choices_of(std::string_view placeholder);

// The flags every command accepts (Context::parse), also before the command.
const std::vector<FlagSpec>& global_flags();

// A bash completion script for `git-locks` and `git locks` (cmd_completion.cpp).
std::string bash_completion();

}  // namespace gitlocks::cli
