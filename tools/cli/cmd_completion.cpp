// `git-locks completion bash`: a bash completion script built from the
// command table (main.cpp) and the global flags (context.cpp), so it lists
// exactly the commands and flags this binary has. The build installs its
// output as share/bash-completion/completions/git-locks.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "cli.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

// What a flag's value or a positional argument completes to, read from the
// usage string's placeholder: FILE or PATH a file name, DIR a directory, a list of
// lowercase words ("exclusive|shared") those words, anything else nothing.
std::string kind_of(const std::string& placeholder) {
  std::vector<std::string> alternatives;
  for (std::size_t at = 0;;) {
    const std::size_t bar = placeholder.find('|', at);
    alternatives.push_back(placeholder.substr(at, bar == std::string::npos ? bar : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 1;
  }
  std::string words;
  bool lowercase = true;
  for (const auto& a : alternatives) {
    if (a == "FILE" || a == "PATH") return "file";
    if (a == "DIR") return "dir";
    lowercase = lowercase && !a.empty() && a[0] != '-' && a.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == a.npos;
    words += (words.empty() ? "" : " ") + a;
  }
  return lowercase && alternatives.size() > 1 ? "words " + words : "none";
}

std::string strip(std::string token) {
  while (!token.empty() && (token.front() == '[' || token.front() == '(')) token.erase(0, 1);
  while (!token.empty() && (token.back() == ']' || token.back() == ')' || token.back() == '.')) token.pop_back();
  return token;
}

struct UsageSpec {
  std::vector<std::string> flags;             // "--mode", in usage order
  std::map<std::string, std::string> values;  // flag -> kind of its value
  std::string positional = "none";            // kind of the positional arguments
};

// Reads a usage string: a flag takes a value when the next token names one
// inside the same bracket group ("[--ttl DUR]"; not "[--all] [PATH...]").
UsageSpec parse_usage(std::string_view name, std::string_view usage) {
  std::vector<std::string> raw;
  std::size_t at = 0;
  while (at < usage.size()) {
    const std::size_t space = usage.find(' ', at);
    const std::string_view t = usage.substr(at, space == std::string_view::npos ? space : space - at);
    if (!t.empty()) raw.emplace_back(t);
    if (space == std::string_view::npos) break;
    at = space + 1;
  }
  std::set<std::string> name_words;
  for (std::size_t i = 0, s = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == ' ') {
      name_words.emplace(name.substr(s, i - s));
      s = i + 1;
    }
  }
  UsageSpec p;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const std::string t = strip(raw[i]);
    if (t.rfind("--", 0) == 0 && t.size() > 2) {
      if (std::find(p.flags.begin(), p.flags.end(), t) == p.flags.end()) p.flags.push_back(t);
      const bool closed = raw[i].back() == ']' || raw[i].back() == ')';
      if (!closed && i + 1 < raw.size()) {
        const std::string& next = raw[i + 1];
        if (next[0] != '[' && next[0] != '(' && next[0] != '|' && next[0] != '-') {
          p.values[t] = kind_of(strip(next));
          ++i;
        }
      }
      continue;
    }
    if (t.empty() || t == "|" || t == "--" || name_words.count(t)) continue;
    const std::string kind = kind_of(t);
    if (p.positional == "none" || kind == "file") p.positional = kind;
  }
  return p;
}

std::string case_arm(const std::string& pattern, const std::string& text) {
  return "    " + pattern + ") echo \"" + text + "\" ;;\n";
}

}  // namespace

std::string bash_completion(const std::vector<CommandUsage>& commands, const std::vector<FlagSpec>& globals) {
  std::set<std::string> global_names;  // listed once, not again under a command that names one too
  for (const auto& g : globals) global_names.insert("--" + std::string(g.name));
  std::vector<std::string> top;
  std::map<std::string, std::string> subcommands;  // "sem" -> "acquire release"
  std::string flags_arms, value_arms, positional_arms;
  for (const auto& c : commands) {
    const std::string name(c.name);
    const std::size_t space = name.find(' ');
    const std::string first = name.substr(0, space);
    if (std::find(top.begin(), top.end(), first) == top.end()) top.push_back(first);
    if (space != std::string::npos) {
      std::string& subs = subcommands[first];
      subs += (subs.empty() ? "" : " ") + name.substr(space + 1);
    }
    const UsageSpec p = parse_usage(c.name, c.usage);
    std::string flags;
    for (const auto& f : p.flags) {
      if (!global_names.count(f)) flags += (flags.empty() ? "" : " ") + f;
    }
    if (!flags.empty()) flags_arms += case_arm("\"" + name + "\"", flags);
    for (const auto& [flag, kind] : p.values) value_arms += case_arm("\"" + name + " " + flag + "\"", kind);
    if (p.positional != "none") positional_arms += case_arm("\"" + name + "\"", p.positional);
  }
  std::string global_words = "--help --version";
  for (const auto& g : globals) {
    global_words += " --" + std::string(g.name);
    if (g.takes_value) {
      const std::string kind = g.name == "repo" ? "dir" : g.name == "key" ? "file" : "none";
      value_arms += case_arm("*\" --" + std::string(g.name) + "\"", kind);
    }
  }
  std::string top_words, sub_arms;
  for (const auto& t : top) top_words += (top_words.empty() ? "" : " ") + t;
  for (const auto& [first, subs] : subcommands) sub_arms += case_arm(first, subs);

  std::string out;
  out += "# bash completion for git-locks and `git locks` (git-locks " GITLOCKS_VERSION
         "), generated by\n"
         "# `git-locks completion bash` from its command table: do not edit.\n"
         "__git_locks_commands=\"" +
         top_words +
         "\"\n"
         "__git_locks_globals=\"" +
         global_words +
         "\"\n\n"
         "__git_locks_subcommands() {\n  case $1 in\n" +
         sub_arms +
         "  esac\n}\n\n"
         "__git_locks_flags() {\n  case $1 in\n" +
         flags_arms +
         "  esac\n}\n\n"
         "# What the value of flag $2 of command $1 completes to; status 1: $2 takes no value.\n"
         "__git_locks_value() {\n  case \"$1 $2\" in\n" +
         value_arms +
         "    *) return 1 ;;\n  esac\n}\n\n"
         "__git_locks_positional() {\n  case $1 in\n" +
         positional_arms + "    *) echo none ;;\n  esac\n}\n\n";
  out += R"sh(__git_locks_complete_kind() {
  case $1 in
    file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$2") ;;
    dir) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$2") ;;
    words\ *) mapfile -t COMPREPLY < <(compgen -W "${1#words }" -- "$2") ;;
  esac
}

# __git_locks_reply FIRST CWORD WORD...: sets COMPREPLY for the word at index
# CWORD of WORD...; the arguments of git-locks start at index FIRST.
__git_locks_reply() {
  local first=$1 cword=$2 i cmd="" kind subs
  shift 2
  local -a w=("$@")
  local cur=${w[cword]}
  COMPREPLY=()
  for ((i = first; i < cword; i++)); do
    case ${w[i]} in
      -*) __git_locks_value "" "${w[i]}" >/dev/null && ((i++)) ;;
      *) cmd=${w[i]}; break ;;
    esac
  done
  if [[ -n $cmd ]]; then
    subs=$(__git_locks_subcommands "$cmd")
    if [[ -n $subs ]]; then
      if ((i + 1 == cword)); then
        __git_locks_complete_kind "words $subs" "$cur"
        return 0
      fi
      cmd="$cmd ${w[i + 1]}"
    fi
    for ((; i < cword; i++)); do
      if [[ ${w[i]} == -- ]]; then
        __git_locks_complete_kind file "$cur"
        return 0
      fi
    done
  fi
  if ((cword - 1 >= first)) && [[ ${w[cword - 1]} == -* ]] && kind=$(__git_locks_value "$cmd" "${w[cword - 1]}"); then
    __git_locks_complete_kind "$kind" "$cur"
  elif [[ $cur == -* ]]; then
    __git_locks_complete_kind "words $(__git_locks_flags "$cmd") $__git_locks_globals" "$cur"
  elif [[ -z $cmd ]]; then
    __git_locks_complete_kind "words $__git_locks_commands" "$cur"
  else
    __git_locks_complete_kind "$(__git_locks_positional "$cmd")" "$cur"
  fi
  return 0
}

_git_locks_cli() { __git_locks_reply 1 "$COMP_CWORD" "${COMP_WORDS[@]}"; }
complete -F _git_locks_cli git-locks

# `git locks ...`: git's completion calls _git_<command> for an external
# command, with words, cword and __git_cmd_idx (the index of "locks") set.
_git_locks() { __git_locks_reply "$((${__git_cmd_idx:-1} + 1))" "$cword" "${words[@]}"; }
)sh";
  return out;
}

int cmd_completion_bash(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv, {});
  if (!a.ok()) return ctx.fail(a.error());
  if (!a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "completion bash takes no arguments"));
  const std::string script = bash_completion(command_table(), global_flags());
  std::fwrite(script.data(), 1, script.size(), stdout);
  return kExitOk;
}

}  // namespace gitlocks::cli
