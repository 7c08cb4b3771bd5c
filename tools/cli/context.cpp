#include "cli.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "report.h"

namespace gitlocks::cli {

Result<Parsed> Context::parse(const Argv& argv, std::vector<FlagSpec> flags, bool stop_at_positional) {
  flags.push_back({"repo", true});
  flags.push_back({"key", true});
  flags.push_back({"json", false});
  flags.push_back({"notary", true});
  flags.push_back({"allow-test-clock", false});
  GITLOCKS_TRY(p, parse_flags(argv, flags, stop_at_positional));
  if (auto r = p.value("repo")) repo_dir = *r;
  if (auto k = p.value("key")) key_flag = *k;
  if (p.has("json")) json_output = true;
  if (auto n = p.value("notary")) notary_flag = *n;
  if (p.has("allow-test-clock")) allow_test_clock = true;
  return p;
}

Result<ObjectStore*> Context::store() {
  if (!store_) {
    GITLOCKS_TRY(s, open_git_store(repo_dir.value_or(".")));
    store_ = std::move(s);
  }
  return store_.get();
}

Result<const Identity*> Context::identity() {
  if (!identity_) {
    GITLOCKS_TRY(path, key_file_path(key_flag));
    GITLOCKS_TRY(id, load_identity(path));
    identity_ = std::move(id);
  }
  return &*identity_;
}

void Context::prefetch_name() {
  if (!name_) name_.emplace(git().begin_config("user.name"));
}

std::string Context::display_name() {
  prefetch_name();
  return name_->value();
}

Result<std::string> read_input(const std::string& name) {
  std::stringstream ss;
  if (name == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream f(name, std::ios::binary);
  if (!f) return make_error(Errc::usage, "cannot read " + name);
  ss << f.rdbuf();
  return ss.str();
}

int Context::fail(const Error& e) { return print_error(op, e, attempts); }

int Context::done(const gitlocks::json& obj, const std::string& human) {
  std::string text = json_output ? json_line(obj) + "\n" : human;
  if (!text.empty() && text.back() != '\n') text += '\n';
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace gitlocks::cli
