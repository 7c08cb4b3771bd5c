#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "gitlocks/hex.hpp"
#include "gitlocks/state.hpp"
#include "report.h"
#include "timings.h"

namespace gitlocks::cli {

Result<Parsed> Context::parse(const Argv& argv) {
  std::vector<FlagSpec> flags;
  if (command) flags = flag_specs(*command);
  flags.insert(flags.end(), global_flags().begin(), global_flags().end());
  GITLOCKS_TRY(p, parse_flags(argv, flags, command && command->operands_end_flags));
  if (command) GITLOCKS_CHECK(check_parsed(*command, p));
  if (auto r = p.value("repo")) repo_dir = *r;
  if (auto k = p.value("key")) key_flag = *k;
  if (p.has("json")) json_output = true;
  if (auto n = p.value("notary")) notary_flag = *n;
  if (auto r = p.value("remote")) {
    remote_flag = *r;
    remote_.reset();
  }
  if (p.has("allow-test-clock")) allow_test_clock = true;
  return p;
}

Result<ObjectStore*> Context::store() {
  if (!store_) {
    timings::Scope t("open store");
    GITLOCKS_TRY(s, open_git_store(repo_dir.value_or("."), extra_object_dirs));
    store_ = timings::timed(std::move(s));
  }
  return store_.get();
}

Result<const Identity*> Context::identity() {
  if (!identity_) {
    timings::Scope t("identity");
    GITLOCKS_TRY(path, key_file_path(key_flag));
    GITLOCKS_TRY(id, load_identity(path));
    identity_ = std::move(id);
  }
  return &*identity_;
}

void Context::prefetch_config() {
  // --get-regexp matches the lower-cased key: locks.notaryConnectTimeout, locks.notaryReadTimeout.
  if (!config_)
    config_.emplace(git().begin_configs(
        "^(user\\.name|locks\\.remote|locks\\.timeout|locks\\.owner|locks\\.checkpointsigners|locks\\.witnesses|"
        "locks\\.witnessquorum|locks\\.notary|"
        "locks\\.notary(connect|read)timeout)$"));
}

std::string Context::config(const std::string& key) {
  prefetch_config();
  const auto& values = config_->values();
  auto it = values.find(key);
  return it == values.end() ? std::string() : it->second;
}

Result<std::optional<std::string>> Context::pinned_owner() {
  std::string key = config("locks.owner");
  if (key.empty()) return std::optional<std::string>();
  for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!is_hex(key, 64))
    return make_error(Errc::usage,
                      "git config locks.owner must be the store owner's public key (64 hex digits), not '" +
                          config("locks.owner") + "'");
  return std::optional<std::string>(key);
}

std::vector<std::string> Context::config_list(const std::string& key) {
  std::vector<std::string> items;
  std::string item;
  for (char ch : config(key) + " ") {
    if (ch == ' ' || ch == ',' || ch == '\t') {
      if (!item.empty()) items.push_back(std::move(item));
      item.clear();
    } else {
      item += ch;
    }
  }
  return items;
}

Result<std::vector<std::string>> Context::pinned_checkpoint_signers() {
  std::vector<std::string> keys = config_list("locks.checkpointsigners");  // --get-regexp: keys in lower case
  for (std::string& key : keys) {
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!is_hex(key, 64))
      return make_error(Errc::usage,
                        "git config locks.checkpointSigners must list public keys (64 hex digits each, separated by "
                        "spaces or commas), not '" +
                            key + "'");
  }
  return keys;
}

Result<std::int64_t> Context::duration_config(const std::string& name, std::int64_t fallback, std::int64_t max_ms) {
  std::string key = name;  // git config --get-regexp reports keys in lower case
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string text = config(key);
  if (text.empty()) return fallback;
  auto ms = parse_duration(text);
  if (!ms.ok() || *ms < 1 || *ms > max_ms)
    return make_error(Errc::usage, "git config " + name + " must be a duration from 1ms to " + format_duration(max_ms) +
                                       ", got '" + text + "'");
  return *ms;
}

Result<std::optional<std::string>> Context::remote() {
  if (!remote_) {
    const std::string name = remote_flag ? *remote_flag : config("locks.remote");
    if (name.empty()) {
      remote_.emplace(std::nullopt);
    } else {
      // A remote's name becomes part of a ref name (refs/locks/remotes/NAME/state).
      GITLOCKS_TRY(checked, check_remote_name(name));
      GITLOCKS_TRY(timeout, duration_config("locks.timeout", kNetworkTimeoutMs, kNetworkTimeoutMaxMs));
      network_timeout_ms_ = timeout;
      remote_.emplace(checked);
    }
  }
  return *remote_;
}

Result<std::string> Context::state_ref() {
  GITLOCKS_TRY(r, remote());
  if (!r) return std::string(kStateRef);
  return "refs/locks/remotes/" + *r + "/state";
}

Result<std::optional<Oid>> Context::read_tip() {
  GITLOCKS_TRY(r, remote());
  GITLOCKS_TRY(s, store());
  if (!r) return s->read_ref(kStateRef);
  GITLOCKS_TRY(ref, state_ref());
  GITLOCKS_TRY(found, git().fetch_state(*r, ref));
  if (!found) return std::optional<Oid>{};
  return s->read_ref(ref);
}

Result<bool> Context::fetch_archive(const std::optional<Oid>& prev) {
  GITLOCKS_TRY(r, remote());
  if (!r) return false;
  const std::string pattern = prev ? archive_ref(*prev) : std::string(kArchivePrefix) + "*";
  GITLOCKS_CHECK(git().fetch_archive(*r, pattern, "refs/locks/remotes/" + *r + "/archive/"));
  return true;
}

void Context::remember_pushed(const Oid& pushed, const std::optional<Oid>& from) {
  auto ref = state_ref();
  if (!ref.ok()) return;
  (void)git().run({"update-ref", "-m", "git-locks: pushed", *ref, pushed.hex(), from ? from->hex() : kZeroOid});
}

Result<PendingCas> Context::begin_cas() {
  GITLOCKS_TRY(r, remote());
  if (r) return git().begin_push(*r);
  return git().begin_cas();
}

Result<std::string> check_remote_name(const std::string& name) {
  auto bad = [&](const std::string& why) {
    return make_error(Errc::usage, "remote '" + name + "' " + why +
                                       " (give the name of a configured remote: git remote add NAME URL)");
  };
  if (name.size() > 200) return bad("is too long");
  if (name.front() == '-' || name.front() == '/' || name.back() == '/' || name.back() == '.')
    return bad("is not a remote name");
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/'))
      return bad("is not a remote name");
  if (name.find("..") != std::string::npos || name.find("//") != std::string::npos ||
      name.find("/.") != std::string::npos || name.find(".lock") != std::string::npos)
    return bad("is not a remote name");
  return name;
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

int Context::fail(const Error& e) {
  // The core names a lease's TTL ("ttl 2h exceeds this store's max_ttl 1h");
  // unless a batch line gave it ("line" field), it came from --ttl (or the
  // command's default), so say so.
  if (e.fields.count("ttl_ms") && !e.fields.count("line")) {
    Error named = e;
    named.message = "--" + e.message;
    return print_error(op, named, attempts);
  }
  return print_error(op, e, attempts);
}

int Context::done(const gitlocks::json& obj, const std::string& human) {
  std::string text = json_output ? json_line(obj) + "\n" : human;
  if (!text.empty() && text.back() != '\n') text += '\n';
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace gitlocks::cli
