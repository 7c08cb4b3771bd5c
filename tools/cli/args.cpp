#include "args.h"

#include "gitlocks/canon.hpp"

namespace gitlocks::cli {

std::optional<std::string> Parsed::value(const std::string& name) const {
  auto it = flags.find(name);
  if (it == flags.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

const std::vector<std::string>& Parsed::values(const std::string& name) const {
  static const std::vector<std::string> kNone;
  auto it = flags.find(name);
  return it == flags.end() ? kNone : it->second;
}

Result<Parsed> parse_flags(const std::vector<std::string>& argv, const std::vector<FlagSpec>& specs,
                           bool stop_at_positional) {
  Parsed out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      out.positionals.insert(out.positionals.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
      return out;
    }
    if (a.size() < 2 || a[0] != '-' || a == "-") {
      if (stop_at_positional) {
        out.positionals.insert(out.positionals.end(), argv.begin() + static_cast<long>(i), argv.end());
        return out;
      }
      out.positionals.push_back(a);
      continue;
    }
    if (a.rfind("--", 0) != 0) return make_error(Errc::usage, "unknown flag '" + a + "'");
    std::string name = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == name) spec = &s;
    if (!spec) return make_error(Errc::usage, "unknown flag '--" + name + "'");
    if (spec->optional_value) {
      if (!inline_value && i + 1 < argv.size() && parse_duration(argv[i + 1]).ok())
        return make_error(Errc::usage, "write '--" + name + "=" + argv[i + 1] + "': --" + name +
                                           " takes its value only after '=' (a path named '" + argv[i + 1] +
                                           "' goes after --)");
      out.flags[name].push_back(inline_value.value_or(""));
      continue;
    }
    if (!spec->takes_value) {
      if (inline_value) return make_error(Errc::usage, "flag '--" + name + "' takes no value");
      out.flags[name].push_back("");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argv.size()) return make_error(Errc::usage, "flag '--" + name + "' needs a value");
      inline_value = argv[++i];
    }
    out.flags[name].push_back(*inline_value);
  }
  return out;
}

Result<std::int64_t> parse_count(std::string_view text, std::string_view what) {
  if (text.empty() || text.size() > 16)
    return make_error(Errc::usage, std::string(what) + " must be a non-negative integer");
  std::int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return make_error(Errc::usage,
                        std::string(what) + " must be a non-negative integer, not '" + std::string(text) + "'");
    v = v * 10 + (c - '0');
  }
  if (v > kMaxSafeInteger) return make_error(Errc::usage, std::string(what) + " is too large");
  return v;
}

Result<std::int64_t> parse_duration(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    std::int64_t ms;
  };
  static constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
  std::string_view digits = text;
  std::int64_t scale = 1;
  for (const auto& u : kUnits) {
    if (text.size() > u.suffix.size() && text.substr(text.size() - u.suffix.size()) == u.suffix) {
      digits = text.substr(0, text.size() - u.suffix.size());
      scale = u.ms;
      break;
    }
  }
  if (digits.empty() || digits.size() > 15 || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return make_error(Errc::usage,
                      "bad duration '" + std::string(text) + "' (use 500ms, 30s, 10m, 2h or milliseconds)");
  auto n = parse_count(digits, "duration");
  if (!n.ok()) return n.error();
  if (*n > kMaxSafeInteger / scale) return make_error(Errc::usage, "duration '" + std::string(text) + "' is too large");
  return *n * scale;
}

}  // namespace gitlocks::cli
