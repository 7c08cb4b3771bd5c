#include "waiting.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>

#include "args.h"
#include "checkpoint.h"
#include "gitlocks/limits.hpp"
#include "gitlocks/model.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/state.hpp"
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

// This waiter's ticket in the store's queue (waiting.h, docs/FORMAT.md
// "Tickets"): taken on the first refusal worth waiting for, renewed at half
// its TTL, dropped by the transition that admits the waiter or, when it
// gives up, by its destructor.
class StoreTicket {
 public:
  StoreTicket(Context& ctx, std::vector<WantedResource> wanted) : ctx_(ctx), wanted_(std::move(wanted)) {}
  ~StoreTicket() {
    if (!id_) return;
    const std::string id = *id_;
    (void)publish(ctx_, "ticket-drop", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
      GITLOCKS_CHECK(require_store(ctx_, snap));
      return std::optional<json>{transition_body(ctx_, now, json::array({ops::ticket_drop(id)}))};
    });
  }
  StoreTicket(const StoreTicket&) = delete;
  StoreTicket& operator=(const StoreTicket&) = delete;

  const std::optional<std::string>& id() const { return id_; }
  bool usable() const { return !disabled_; }
  std::int64_t taken() const { return taken_; }

  // Takes a ticket: the deadlock refusal (the wait ends), else nullopt (a
  // ticket refused for another reason leaves this waiter without one).
  std::optional<Error> take() {
    std::size_t index = 0;
    std::int64_t ttl = kTicketTtlMs;
    auto p = publish(ctx_, "ticket", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
      GITLOCKS_CHECK(require_store(ctx_, snap));
      ttl = std::clamp(kTicketTtlMs, snap.policy.min_ttl_ms, snap.policy.max_ttl_ms);
      json list = json::array();
      // The lapsed tickets it sees go first: they count in the wait-for
      // graph until they are dropped.
      GITLOCKS_CHECK(append_lapsed_ticket_drops(ctx_, snap, now, kMaxDrops, list));
      json wants = json::array();
      for (const auto& w : wanted_)
        wants.push_back(w.path.empty() ? ops::want_sem(w.sem)
                                       : ops::want_path(w.path, w.shared ? ops::Mode::shared : ops::Mode::exclusive));
      index = list.size();
      list.push_back(ops::ticket(wants, now + ttl));
      return std::optional<json>{transition_body(ctx_, now, list)};
    });
    if (!p.ok()) {
      if (p.error().code == Errc::deadlock) return p.error();
      disabled_ = true;
      return std::nullopt;
    }
    if (!p->candidate) {
      disabled_ = true;
      return std::nullopt;
    }
    id_ = lease_id(p->candidate->packet.value("instance", ""), index, kQueueResource);
    ttl_ = ttl;
    renew_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ttl / 2);
    ++taken_;
    return std::nullopt;
  }

  // Renews the ticket once half its TTL passed; a ticket that is gone (it
  // lapsed and was dropped) is forgotten: the next refusal takes another.
  void renew_if_due() {
    if (!id_ || std::chrono::steady_clock::now() < renew_at_) return;
    const std::string id = *id_;
    const std::int64_t ttl = ttl_;
    auto p = publish(ctx_, "ticket-renew", [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
      GITLOCKS_CHECK(require_store(ctx_, snap));
      return std::optional<json>{transition_body(ctx_, now, json::array({ops::ticket_renew(id, now + ttl)}))};
    });
    if (p.ok()) {
      renew_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ttl / 2);
    } else if (p.error().sub == reason::no_ticket || p.error().code == Errc::guard_window ||
               p.error().code == Errc::not_holder) {
      id_.reset();
    } else {
      renew_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(kMaxPauseMs);
    }
  }

  // The admitting transition dropped it; or it is gone.
  void forget() { id_.reset(); }

 private:
  static constexpr std::size_t kMaxDrops = 32;
  Context& ctx_;
  std::vector<WantedResource> wanted_;
  std::optional<std::string> id_;
  std::int64_t ttl_ = kTicketTtlMs;
  std::chrono::steady_clock::time_point renew_at_;
  bool disabled_ = false;
  std::int64_t taken_ = 0;
};

volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int sig) { g_interrupted = sig; }

// While a waiter may hold a ticket, SIGINT, SIGTERM and SIGHUP end the wait
// instead of the process: the ticket is dropped (the StoreTicket declared
// after this scope goes first), then the old action is restored and the
// signal raised again, so the process ends as the signal says (a shell
// sees 130 for Ctrl-C) and nobody queues behind a waiter that is gone.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (std::size_t k = 0; k < kSignals.size(); ++k) ::sigaction(kSignals[k], &sa, &old_[k]);
  }
  ~InterruptScope() {
    for (std::size_t k = 0; k < kSignals.size(); ++k) ::sigaction(kSignals[k], &old_[k], nullptr);
    if (g_interrupted) ::raise(g_interrupted);
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  static bool interrupted() { return g_interrupted != 0; }

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
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
  std::optional<InterruptScope> interrupts;  // before the ticket: it goes after it
  std::unique_ptr<StoreTicket> ticket;
  if (ref.ok() && !options.wanted.empty()) {
    QueueRules rules = queue_rules(ctx, *ref);
    const auto wanted = canonical(options.wanted, rules.path_case);
    // GIT_LOCKS_WAIT_TICKETS=0: wait without a ticket, by backoff alone (for
    // a store that git-locks versions without tickets must still verify).
    const char* tickets = std::getenv("GIT_LOCKS_WAIT_TICKETS");
    if (options.ticket && !(tickets && std::string(tickets) == "0")) {
      interrupts.emplace();
      ticket = std::make_unique<StoreTicket>(ctx, wanted);
    }
    if (auto dir = git_common_dir(ctx); dir.ok())
      queue = QueueEntry::join(*dir / "git-locks" / "waiters", *ref, wanted, std::move(rules));
  }
  auto finish = [&] {
    if (ticket) out.tickets = ticket->taken();
  };
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
    if (ticket) ticket->renew_if_due();
    if (!queue || queue->ahead() == 0) {
      seen = tip();
      const std::optional<std::string> held = ticket ? ticket->id() : std::nullopt;
      auto e = attempt(held);
      ++out.attempts;
      if (!e) {
        if (ticket) ticket->forget();  // dropped by the transition that admitted us
        out.waited_ms = elapsed();
        finish();
        return out;
      }
      if (held && e->sub == reason::no_ticket) {
        // Our ticket lapsed and was dropped: try again at once without it.
        ticket->forget();
        continue;
      }
      if (!worth_waiting(e->code)) {
        out.error = std::move(e);
        out.waited_ms = elapsed();
        finish();
        return out;
      }
      out.last_refusal = std::move(e);
      if (ticket && !ticket->id() && ticket->usable()) {
        if (auto refused = ticket->take()) {
          out.error = std::move(refused);
          out.waited_ms = elapsed();
          finish();
          return out;
        }
        seen = tip();  // our own ticket moved the ref
      }
    }
    const std::int64_t waited = elapsed();
    if (options.timeout_ms && waited >= *options.timeout_ms) {
      out.timed_out = true;
      out.waited_ms = waited;
      out.error = out.last_refusal;
      finish();
      return out;
    }
    // Full jitter on the upper half keeps many waiters from trying in step.
    std::int64_t pause =
        delay / 2 + static_cast<std::int64_t>(randombytes_uniform(static_cast<std::uint32_t>(delay / 2 + 1)));
    if (options.timeout_ms) pause = std::min(pause, *options.timeout_ms - waited);
    bool moved = false;
    for (std::int64_t slept = 0; slept < pause && !moved && !InterruptScope::interrupted();) {
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
    if (InterruptScope::interrupted()) {
      // The scope re-raises the signal once the ticket is dropped.
      out.error = Error(Errc::wait_timeout, "interrupted");
      out.waited_ms = elapsed();
      finish();
      return out;
    }
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
  auto outcome =
      wait_until_admitted(ctx, options, [&](const std::optional<std::string>& ticket) -> std::optional<Error> {
        // Admitted, the waiter leaves the queue in the same transition.
        BodyFn with_drop = [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
          GITLOCKS_TRY(body, make_body(snap, now));
          if (body && ticket && body->contains("ops")) (*body)["ops"].push_back(ops::ticket_drop(*ticket));
          return body;
        };
        auto p = publish(ctx, command, ticket ? with_drop : make_body);
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
