#include "waiting.h"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <memory>
#include <thread>

#include "args.h"
#include "checkpoint.h"
#include "gitlocks/path.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/timefmt.hpp"

namespace gitlocks::cli {
namespace {

namespace fs = std::filesystem;

// What the queue compares wants by (the core's wants_conflict): the
// store's policy and path case at the clone's tip, verified. Without one
// (no store yet, a history that does not verify) the defaults: paths
// compared as written, no families. A PRIVATE store's families are sealed:
// its waiters are ordered by their paths only.
struct QueueRules {
  Policy policy;
  PathCase path_case = PathCase::sensitive;
};

QueueRules queue_rules(Context& ctx, const std::string& ref) {
  QueueRules rules;
  auto store = ctx.store();
  if (!store.ok()) return rules;
  auto tip = (*store)->read_ref(ref);
  if (!tip.ok() || !*tip) return rules;
  auto snap = verified_tip_snapshot(ctx, *tip);
  if (!snap.ok() || snap->state.empty()) return rules;
  rules.path_case = snap->path_case();
  rules.policy = snap->policy;
  return rules;
}

// A want as the core compares it; nullopt for a path no claim could name
// (its attempt is refused as bad-path: it stands in nobody's way).
std::optional<Wanted> as_wanted(const WantedResource& w, PathCase path_case) {
  if (w.path.empty()) return Wanted{std::nullopt, false, w.sem};
  auto p = parse_repo_path(w.path, path_case);
  if (!p.ok()) return std::nullopt;
  return Wanted{std::move(*p), w.shared, ""};
}

// The wants in the store's canonical form (NFC; case-folded in a
// case-insensitive store), so that two waiters' spellings of one path meet.
std::vector<WantedResource> canonical(std::vector<WantedResource> wanted, PathCase path_case) {
  for (auto& w : wanted) {
    if (w.path.empty()) continue;
    auto text = normalize_path_input(w.path, path_case);
    if (text.ok()) w.path = *text;
  }
  return wanted;
}

json resources_json(const std::vector<WantedResource>& wanted) {
  json out = json::array();
  for (const auto& w : wanted) {
    if (w.path.empty()) out.push_back({{"sem", w.sem}});
    else out.push_back({{"path", w.path}, {"mode", w.shared ? "shared" : "exclusive"}});
  }
  return out;
}

std::vector<WantedResource> resources_of(const json& doc) {
  std::vector<WantedResource> out;
  if (!doc.is_array()) return out;
  for (const auto& r : doc) {
    if (!r.is_object()) continue;
    WantedResource w;
    if (r.contains("path") && r["path"].is_string()) {
      w.path = r["path"].get<std::string>();
      w.shared = member_is(r, "mode", "shared");
    } else if (r.contains("sem") && r["sem"].is_string()) {
      w.sem = r["sem"].get<std::string>();
    } else {
      continue;
    }
    out.push_back(std::move(w));
  }
  return out;
}

std::string read_fd(int fd) {
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (1u << 20)) break;  // not ours: an entry is a few hundred bytes
  }
  return text;
}

// This waiter's entry in the clone's queue (waiting.h), removed when it ends.
class QueueEntry {
 public:
  static std::unique_ptr<QueueEntry> join(const fs::path& dir, const std::string& ref,
                                          const std::vector<WantedResource>& wanted, QueueRules rules) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return nullptr;
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    char arrival[32];
    std::snprintf(arrival, sizeof arrival, "%020lld",
                  static_cast<long long>(ts.tv_sec) * 1000000000LL + static_cast<long long>(ts.tv_nsec));
    const std::string name = std::string(arrival) + "-" + std::to_string(::getpid()) + "-" + random_hex(4) + ".json";
    const fs::path tmp = dir / ("." + name + ".tmp");
    int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    if (::flock(fd, LOCK_EX) != 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return nullptr;
    }
    const std::string text =
        json{{"ref", ref}, {"resources", resources_json(wanted)}, {"pid", static_cast<long long>(::getpid())}}.dump() +
        "\n";
    bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (!written || ::rename(tmp.c_str(), (dir / name).c_str()) != 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return nullptr;
    }
    return std::unique_ptr<QueueEntry>(new QueueEntry(dir, name, fd, ref, wanted, std::move(rules)));
  }

  ~QueueEntry() {
    ::unlink((dir_ / name_).c_str());
    ::close(fd_);
  }
  QueueEntry(const QueueEntry&) = delete;
  QueueEntry& operator=(const QueueEntry&) = delete;

  // How many live waiters that arrived before this one want a resource of
  // the same store that conflicts with one of ours; entries of dead waiters
  // are removed on the way.
  int ahead() const {
    DIR* d = ::opendir(dir_.c_str());
    if (!d) return 0;
    std::vector<std::string> older;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.empty() || n[0] == '.' || n.size() < 5 || n.substr(n.size() - 5) != ".json") continue;
      if (n < name_) older.push_back(std::move(n));
    }
    ::closedir(d);
    int count = 0;
    for (const auto& n : older) {
      const fs::path file = dir_ / n;
      int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
        // Nobody holds it: its waiter is gone (killed, crashed) or is just
        // leaving. Either way it waits no more.
        ::unlink(file.c_str());
        ::close(fd);
        continue;
      }
      const std::string text = read_fd(fd);
      ::close(fd);
      auto doc = canon_parse(text, CanonMode::lenient);
      // Another process's entry: any member may be of another type.
      if (!doc.ok() || !member_is(*doc, "ref", ref_)) continue;
      bool clash = false;
      for (const auto& t : resources_of(doc->value("resources", json::array()))) {
        auto theirs = as_wanted(t, rules_.path_case);
        clash = theirs && std::any_of(mine_.begin(), mine_.end(),
                                      [&](const Wanted& w) { return wants_conflict(rules_.policy, w, *theirs); });
        if (clash) break;
      }
      if (clash) ++count;
    }
    return count;
  }

 private:
  QueueEntry(fs::path dir, std::string name, int fd, std::string ref, const std::vector<WantedResource>& wanted,
             QueueRules rules)
      : dir_(std::move(dir)), name_(std::move(name)), fd_(fd), ref_(std::move(ref)), rules_(std::move(rules)) {
    for (const auto& w : wanted)
      if (auto parsed = as_wanted(w, rules_.path_case)) mine_.push_back(std::move(*parsed));
  }

  fs::path dir_;
  std::string name_;
  int fd_;
  std::string ref_;
  QueueRules rules_;
  std::vector<Wanted> mine_;  // this waiter's wants, parsed once
};

}  // namespace

bool worth_waiting(Errc code) { return clears_with_time(code); }

Result<std::optional<std::int64_t>> parse_wait(const std::string& value) {
  if (value.empty()) return std::optional<std::int64_t>{};
  auto v = parse_duration(value);
  if (!v.ok()) return make_error(Errc::usage, "--wait=" + value + ": " + v.error().message);
  return std::optional<std::int64_t>{*v};
}

WaitOutcome wait_until_admitted(Context& ctx, const WaitOptions& options, const AttemptFn& attempt) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] {
    return static_cast<std::int64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  };
  WaitOutcome out;

  // Where the store is: a local one is watched; the queue is the clone's.
  auto remote = ctx.remote();
  const bool local = remote.ok() && !*remote;
  auto ref = ctx.state_ref();
  std::unique_ptr<QueueEntry> queue;
  if (ref.ok() && !options.wanted.empty()) {
    if (auto dir = git_common_dir(ctx); dir.ok()) {
      QueueRules rules = queue_rules(ctx, *ref);
      const auto wanted = canonical(options.wanted, rules.path_case);
      queue = QueueEntry::join(*dir / "git-locks" / "waiters", *ref, wanted, std::move(rules));
    }
  }
  ObjectStore* store = nullptr;
  if (local) {
    auto s = ctx.store();
    if (s.ok()) store = *s;
  }
  auto tip = [&]() -> std::string {
    if (!store) return "";
    auto t = store->read_ref(kStateRef);
    return t.ok() && *t ? (*t)->hex() : "";
  };

  std::int64_t delay = kFirstPauseMs;
  std::string seen = tip();
  for (;;) {
    if (!queue || queue->ahead() == 0) {
      seen = tip();
      auto e = attempt();
      ++out.attempts;
      if (!e) {
        out.waited_ms = elapsed();
        return out;
      }
      if (!worth_waiting(e->code)) {
        out.error = std::move(e);
        out.waited_ms = elapsed();
        return out;
      }
      out.last_refusal = std::move(e);
    }
    const std::int64_t waited = elapsed();
    if (options.timeout_ms && waited >= *options.timeout_ms) {
      out.timed_out = true;
      out.waited_ms = waited;
      out.error = out.last_refusal;
      return out;
    }
    // Full jitter on the upper half keeps many waiters from trying in step.
    std::int64_t pause =
        delay / 2 + static_cast<std::int64_t>(randombytes_uniform(static_cast<std::uint32_t>(delay / 2 + 1)));
    if (options.timeout_ms) pause = std::min(pause, *options.timeout_ms - waited);
    bool moved = false;
    for (std::int64_t slept = 0; slept < pause && !moved;) {
      const std::int64_t step = store ? std::min(kRefWatchMs, pause - slept) : pause - slept;
      std::this_thread::sleep_for(std::chrono::milliseconds(step));
      slept += step;
      if (store) {
        std::string now_tip = tip();
        moved = now_tip != seen;
        seen = now_tip;
      }
    }
    if (!moved) delay = std::min(local ? kMaxPauseMs : kMaxRemotePauseMs, delay * 2);
  }
}

Error timeout_error(const WaitOptions& options, const WaitOutcome& outcome) {
  std::string detail = "timed out after " + format_duration(outcome.waited_ms) + " waiting for " + options.label +
                       " (" + std::to_string(outcome.attempts) + (outcome.attempts == 1 ? " attempt" : " attempts");
  Fields fields;
  if (outcome.last_refusal) {
    detail += "): " + outcome.last_refusal->message;
    fields = outcome.last_refusal->fields;
    fields["last_reason"] = std::string(errc_name(outcome.last_refusal->code));
  } else {
    detail += ", behind earlier waiters of this clone)";
  }
  fields["waited_ms"] = outcome.waited_ms;
  fields["polls"] = outcome.attempts;
  return Error(Errc::wait_timeout, detail, std::move(fields));
}

Result<Published> publish_when_admitted(Context& ctx, const std::string& command, const BodyFn& make_body,
                                        const WaitOptions& options, std::int64_t* waited_ms) {
  std::optional<Published> got;
  auto outcome = wait_until_admitted(ctx, options, [&]() -> std::optional<Error> {
    auto p = publish(ctx, command, make_body);
    if (!p.ok()) return p.error();
    got = std::move(*p);
    return std::nullopt;
  });
  if (waited_ms) *waited_ms = outcome.waited_ms;
  if (outcome.timed_out) {
    ctx.attempts.reset();
    return timeout_error(options, outcome);
  }
  if (outcome.error) return *outcome.error;
  return std::move(*got);
}

std::vector<WantedResource> wanted_paths(const std::vector<std::string>& paths, bool shared) {
  std::vector<WantedResource> out;
  for (const auto& p : paths) out.push_back({p, shared, ""});
  return out;
}

std::string paths_label(const std::vector<std::string>& paths) {
  std::string out;
  for (std::size_t i = 0; i < paths.size() && i < 3; ++i) out += (i ? ", '" : "'") + paths[i] + "'";
  if (paths.size() > 3) out += " and " + std::to_string(paths.size() - 3) + " more";
  return out;
}

}  // namespace gitlocks::cli
