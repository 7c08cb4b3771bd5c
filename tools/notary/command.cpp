// notary_command: the `notary keygen|serve` argument syntax, shared by
// `git-locks notary` and the test driver.
#include <cstdio>
#include <map>
#include <optional>

#include "gitlocks/canon.hpp"
#include "notary.h"

namespace gitlocks::notary {
namespace {

struct Flags {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> switches;
};

void print_json(std::FILE* f, const json& v) {
  std::string line = v.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), f);
  std::fflush(f);
}

int usage(const std::string& op, const std::string& detail) {
  print_json(stderr, {{"error", "usage"}, {"code", "usage"}, {"op", op}, {"detail", detail}});
  return kExitUsage;
}

// "--name VALUE", "--name=VALUE" for `valued`, "--name" for `switches`.
std::optional<std::string> parse(const std::vector<std::string>& args, std::size_t from,
                                 const std::vector<std::string>& valued, const std::vector<std::string>& switches,
                                 Flags& out) {
  auto in = [](const std::vector<std::string>& v, const std::string& s) {
    for (const auto& x : v)
      if (x == s) return true;
    return false;
  };
  for (std::size_t i = from; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) return "unexpected argument '" + a + "'";
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (in(switches, name)) {
      if (value) return "--" + name + " takes no value";
      out.switches[name] = true;
    } else if (in(valued, name)) {
      if (!value) {
        if (i + 1 >= args.size()) return "--" + name + " needs a value";
        value = args[++i];
      }
      if (out.values.count(name)) return "--" + name + " given twice";
      out.values[name] = *value;
    } else {
      return "unknown flag --" + name;
    }
  }
  return std::nullopt;
}

int keygen(const std::vector<std::string>& args) {
  const std::string op = "notary keygen";
  Flags f;
  if (auto err = parse(args, 1, {"out"}, {}, f)) return usage(op, *err);
  if (!f.values.count("out")) return usage(op, "keygen needs --out FILE");
  std::string error, service_key;
  int rc = notary_keygen(f.values["out"], error, &service_key);
  if (rc != kExitOk) {
    print_json(stderr, {{"error", rc == kExitUsage ? "usage" : "notary-keygen"},
                        {"code", rc == kExitUsage ? "usage" : "key-write"},
                        {"op", op},
                        {"detail", error}});
    return rc;
  }
  print_json(stdout, {{"key_file", f.values["out"]}, {"service_key", service_key}});
  return kExitOk;
}

int serve(const std::vector<std::string>& args) {
  const std::string op = "notary serve";
  Flags f;
  if (auto err = parse(args, 1, {"key", "state", "listen", "audience", "max-request-bytes"},
                       {"test-clock", "allow-remote"}, f))
    return usage(op, *err);
  for (const char* need : {"key", "state", "listen", "audience"})
    if (!f.values.count(need)) return usage(op, std::string("serve needs --") + need);
  NotaryConfig c;
  c.key_path = f.values["key"];
  c.state_dir = f.values["state"];
  c.listen = f.values["listen"];
  c.audience = f.values["audience"];
  c.test_clock = f.switches.count("test-clock") != 0;
  c.allow_remote = f.switches.count("allow-remote") != 0;
  if (f.values.count("max-request-bytes")) {
    const std::string& v = f.values["max-request-bytes"];
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
      return usage(op, "--max-request-bytes takes a byte count");
    c.max_request_bytes = std::stoul(v);
  }
  return notary_serve(c);
}

}  // namespace

int notary_command(const std::vector<std::string>& args) {
  if (args.empty())
    return usage("notary",
                 "usage: notary keygen --out FILE | notary serve --key FILE --state DIR "
                 "--listen HOST:PORT --audience NAME [--test-clock] [--allow-remote] "
                 "[--max-request-bytes N]");
  if (args[0] == "keygen") return keygen(args);
  if (args[0] == "serve") return serve(args);
  return usage("notary", "unknown notary command '" + args[0] + "' (keygen, serve)");
}

}  // namespace gitlocks::notary
