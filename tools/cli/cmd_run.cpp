// run [--claim PATH]... [--shared PATH]... [--sem NAME:LIMIT]... [--ttl DUR] [--wait[=DUR]]
//     [--on-lost terminate|keep] [--grace DUR] -- CMD [ARG...]
//
// Admit (one transition), launch, renew every TTL/3 while the command runs,
// release when it ends, exit with its status. Never launched when admission
// fails; with --wait it waits for admission first (waiting.h), or exits 1
// wait-timeout. The command runs in a process group of its own (process.h:
// Job); SIGINT/SIGTERM sent to the wrapper are forwarded to that group;
// while it waits they end the wrapper, which then holds nothing.
//
// A lost lease (a renewal refused, or expiry while renewals failed) is
// reported at once as a lease-lost error and stops the work: SIGTERM to the
// command's group, SIGKILL after --grace (default 10s), unless --on-lost
// keep. Either way the wrapper then exits 1, not with the command's status:
// the work did not run under its leases to the end (seed 002: only the
// wrapper can revoke a process's ability to act).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cli.h"
#include "gitlocks/model.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/query.hpp"
#include "process.h"
#include "publish.h"
#include "report.h"
#include "waiting.h"

namespace gitlocks::cli {
namespace {

constexpr std::int64_t kDefaultRunTtlMs = 60 * 1000;
constexpr std::int64_t kDefaultGraceMs = 10 * 1000;  // SIGTERM to SIGKILL after a lost lease
using Clock = std::chrono::steady_clock;

struct Held {
  json target;           // {"path":P} or {"sem":N}
  std::string resource;  // "path:KEY" or "sem:NAME", as the store files it
  std::string lease;
  std::int64_t generation = 0;
  std::int64_t expires_at = 0;
  bool lost = false;

  std::string label() const {
    return target.contains("path") ? target["path"].get<std::string>()
                                   : "semaphore " + target["sem"].get<std::string>();
  }
  json op(const char* kind) const {
    json o = target;
    o["op"] = kind;
    o["lease"] = lease;
    o["generation"] = generation;
    return o;
  }
};

// The body of one "run" transition: `ops` built at the current time.
BodyFn body_of(Context& ctx, const std::function<json(std::int64_t now)>& ops) {
  return [&ctx, ops](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    return std::optional<json>{transition_body(ctx, now, ops(now))};
  };
}

// Publishes `ops` built at the current time as one "run" transition.
Result<Published> publish_ops(Context& ctx, const std::function<json(std::int64_t now)>& ops) {
  return publish(ctx, "run", body_of(ctx, ops));
}

void report(Context& ctx, const Error& e) { print_error(ctx.op, e, ctx.attempts); }

// What a lost lease does to the command (--on-lost): terminate stops its
// process group, SIGTERM at once and SIGKILL once --grace has passed; keep
// lets it run on. The renewer thread calls lost(); the main thread, which
// reaps the command, calls the rest, so the group's id stays the
// command's for as long as signals may be sent to it.
class Stopper {
 public:
  Stopper(Job& job, bool terminate, std::int64_t grace_ms) : job_(job), terminate_(terminate), grace_(grace_ms) {}

  // What happens next, for the lease-lost error's detail and field on_lost.
  std::string action() const { return terminate_ ? "terminate" : "keep"; }
  std::string consequence() const {
    return terminate_ ? "; stopping the command: SIGTERM to its process group, SIGKILL after " +
                            format_duration(grace_.count())
                      : "; --on-lost keep: the command runs on without it";
  }

  // A lease was lost (reported already). The first loss sends SIGTERM.
  void lost() {
    std::lock_guard<std::mutex> lk(m_);
    if (lost_) return;
    lost_ = true;
    if (!terminate_) return;
    job_.signal(SIGTERM);
    job_.signal(SIGCONT);  // a stopped command handles it too
    kill_at_ = Clock::now() + grace_;
  }

  bool any_lost() const {
    std::lock_guard<std::mutex> lk(m_);
    return lost_;
  }

  // While the command runs: SIGKILL once the grace has passed. Returns how
  // long until then, nullopt when no SIGKILL is pending.
  std::optional<std::chrono::milliseconds> kill_when_due() {
    std::lock_guard<std::mutex> lk(m_);
    if (!kill_at_) return std::nullopt;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*kill_at_ - Clock::now());
    if (left.count() > 0) return left;
    job_.signal(SIGKILL);
    kill_at_.reset();
    return std::nullopt;
  }

  // The command has ended (not yet reaped): after a SIGTERM, what is left
  // of its group is work without a lease, killed now.
  void command_ended() {
    std::lock_guard<std::mutex> lk(m_);
    if (lost_ && terminate_) job_.signal(SIGKILL);
    kill_at_.reset();
  }

 private:
  mutable std::mutex m_;
  Job& job_;
  const bool terminate_;
  const std::chrono::milliseconds grace_;
  bool lost_ = false;
  std::optional<Clock::time_point> kill_at_;
};

// A refusal says the lease is gone; a store error (or lost races) does not.
bool is_refusal(const Error& e) {
  return classify(e.code).kind == ErrorKind::refused && e.code != Errc::stale_retries_exhausted;
}

class Renewer {
 public:
  Renewer(Context& ctx, std::vector<Held>& held, std::int64_t ttl, Stopper& stopper)
      : ctx_(ctx), held_(held), ttl_(ttl), stopper_(stopper) {}

  void start() {
    thread_ = std::thread([this] { loop(); });
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    std::int64_t pause = std::max<std::int64_t>(ttl_ / 3, 1);
    for (;;) {
      std::unique_lock<std::mutex> lk(m_);
      if (cv_.wait_for(lk, std::chrono::milliseconds(pause), [this] { return stop_; })) return;
      lk.unlock();
      pause = renew();
      if (pause < 0) return;
    }
  }

  // Renews every lease still held; returns the pause before the next
  // renewal, or -1 when nothing is held any more.
  std::int64_t renew() {
    std::vector<Held*> live;
    for (auto& h : held_)
      if (!h.lost) live.push_back(&h);
    if (live.empty()) return -1;
    const std::int64_t next = std::max<std::int64_t>(ttl_ / 3, 1);
    const std::int64_t retry = std::clamp<std::int64_t>(ttl_ / 10, 50, 1000);
    auto p = extend_all(live);
    if (p.ok()) {
      adopt(live, *p);
      return next;
    }
    if (!is_refusal(p.error())) {
      // A store error: the leases stand until they expire; retry soon.
      report(ctx_, p.error().prefixed("renewal failed; retrying until the lease expires: "));
      lose_expired(live);
      return retry;
    }
    // All or nothing: find out lease by lease which ones are gone.
    std::int64_t pause = next;
    for (Held* h : live) {
      auto one = extend_all({h});
      if (one.ok()) {
        adopt({h}, *one);
      } else if (is_refusal(one.error())) {
        auto now = now_ms();
        lose(*h, lease_lost_by_refusal(h->lease, h->resource, h->expires_at, now.ok() ? *now : 0, one.error()));
      } else {
        report(ctx_, one.error().prefixed("renewal of " + h->lease + " failed; retrying until it expires: "));
        lose_expired({h});
        pause = retry;
      }
    }
    return pause;
  }

  Result<Published> extend_all(const std::vector<Held*>& which) {
    return publish_ops(ctx_, [&](std::int64_t now) {
      json ops = json::array();
      for (Held* h : which) {
        json o = h->op("extend");
        o["expires_at"] = now + ttl_;
        ops.push_back(o);
      }
      return ops;
    });
  }

  static void adopt(const std::vector<Held*>& which, const Published& p) {
    const auto& leases = p.candidate->outcome.leases;
    for (std::size_t i = 0; i < which.size() && i < leases.size(); ++i) which[i]->expires_at = leases[i].expires_at;
  }

  // After a failed renewal: the leases of `which` that have expired are lost.
  void lose_expired(const std::vector<Held*>& which) {
    auto now = now_ms();
    if (!now.ok()) return;
    for (Held* h : which)
      if (!live_until(h->expires_at, *now)) lose(*h, lease_lost_by_expiry(h->lease, h->resource, h->expires_at, *now));
  }

  // Reports the loss at once, then stops the command (--on-lost).
  void lose(Held& h, Error e) {
    h.lost = true;
    e.message += stopper_.consequence();
    e.fields["on_lost"] = stopper_.action();
    report(ctx_, e);
    stopper_.lost();
  }

  Context& ctx_;
  std::vector<Held>& held_;
  std::int64_t ttl_;
  Stopper& stopper_;
  std::thread thread_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
};

void release_all(Context& ctx, std::vector<Held>& held) {
  std::vector<Held*> live;
  for (auto& h : held)
    if (!h.lost) live.push_back(&h);
  auto release = [&](const std::vector<Held*>& which) {
    return publish_ops(ctx, [&](std::int64_t) {
      json ops = json::array();
      for (Held* h : which) ops.push_back(h->op(h->target.contains("path") ? "release" : "sem-release"));
      return ops;
    });
  };
  if (live.empty()) return;
  auto p = release(live);
  if (p.ok()) return;
  if (classify(p.error().code).kind != ErrorKind::refused || live.size() == 1) {
    report(ctx, p.error().prefixed("release failed: "));
    return;
  }
  for (Held* h : live) {
    auto one = release({h});
    if (!one.ok()) report(ctx, one.error().prefixed("release of " + h->lease + " on " + h->label() + " failed: "));
  }
}

}  // namespace

int cmd_run(Context& ctx, const Argv& argv) {
  // Signals wait until the command runs: then they are forwarded to it.
  sigset_t handled;
  sigset_t previous;
  sigset_t blocked;
  sigemptyset(&handled);
  for (int s : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&handled, s);
  // Also SIGTTOU: with the terminal handed to the command, our error lines
  // are written from the background even under `stty tostop`.
  blocked = handled;
  sigaddset(&blocked, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  struct Restore {
    sigset_t mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};

  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  if (a->positionals.empty()) return ctx.fail(make_error(Errc::usage, "usage: git-locks " + usage_of(*ctx.command)));
  std::int64_t ttl = kDefaultRunTtlMs;
  if (auto t = a->value("ttl")) {
    auto v = parse_duration(*t);
    if (!v.ok()) return ctx.fail(v.error());
    ttl = *v;
  }
  const std::string on_lost = a->value("on-lost").value_or("terminate");
  if (on_lost != "terminate" && on_lost != "keep")
    return ctx.fail(make_error(Errc::usage, "--on-lost takes terminate or keep, not '" + on_lost + "'"));
  std::int64_t grace = kDefaultGraceMs;
  if (auto g = a->value("grace")) {
    auto v = parse_duration(*g);
    if (!v.ok()) return ctx.fail(v.error());
    grace = *v;
  }
  std::vector<std::pair<std::string, std::int64_t>> sems;
  for (const auto& s : a->values("sem")) {
    auto colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return ctx.fail(make_error(Errc::usage, "--sem takes NAME:LIMIT, not '" + s + "'"));
    auto limit = parse_count(s.substr(colon + 1), "--sem limit");
    if (!limit.ok()) return ctx.fail(limit.error());
    sems.emplace_back(s.substr(0, colon), *limit);
  }
  if (a->values("claim").empty() && a->values("shared").empty() && sems.empty())
    return ctx.fail(make_error(Errc::usage, "run needs at least one --claim, --shared or --sem"));
  auto admission_ops = [&](std::int64_t now) {
    json list = json::array();
    auto note = a->value("note");
    for (const char* mode : {"claim", "shared"})
      for (const auto& p : a->values(mode))
        list.push_back(
            ops::claim(p, std::string(mode) == "claim" ? ops::Mode::exclusive : ops::Mode::shared, now + ttl, note));
    for (const auto& [name, limit] : sems) list.push_back(ops::sem_acquire(name, limit, now + ttl, note));
    return list;
  };
  std::optional<Result<Published>> admission;
  if (a->has("wait")) {
    // --wait[=DUR]: the command starts only once every lease is admitted.
    auto timeout = parse_wait(*a->value("wait"));
    if (!timeout.ok()) return ctx.fail(timeout.error());
    WaitOptions w{*timeout, wanted_paths(a->values("claim"), false), ""};
    std::vector<std::string> names = a->values("claim");
    for (const auto& p : a->values("shared")) {
      w.wanted.push_back({p, true, ""});
      names.push_back(p);
    }
    for (const auto& [name, limit] : sems) {
      w.wanted.push_back({"", false, name});
      names.push_back("semaphore " + name);
    }
    w.label = paths_label(names);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);  // Ctrl-C ends a wait
    admission.emplace(publish_when_admitted(ctx, "run", body_of(ctx, admission_ops), w));
    pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  } else {
    admission.emplace(publish_ops(ctx, admission_ops));
  }
  auto& admitted = *admission;
  if (!admitted.ok()) return ctx.fail(admitted.error());

  std::vector<Held> held;
  const Candidate& c = *admitted->candidate;
  const json& ops = c.outcome.body["ops"];
  for (std::size_t i = 0; i < ops.size() && i < c.outcome.leases.size(); ++i) {
    const IssuedLease& l = c.outcome.leases[i];
    Held h;
    h.target = ops[i].contains("path") ? json{{"path", ops[i]["path"]}} : json{{"sem", ops[i]["sem"]}};
    h.resource = l.resource;
    h.lease = l.lease;
    h.generation = l.generation;
    h.expires_at = l.expires_at;
    held.push_back(std::move(h));
  }

  auto job = Job::start(a->positionals, {"GIT_LOCKS_LEASES=" + json_line(json(c.outcome.leases))});
  if (!job.ok()) {
    release_all(ctx, held);
    return ctx.fail(job.error());
  }
  Stopper stopper(*job, on_lost == "terminate", grace);
  Renewer renewer(ctx, held, ttl, stopper);
  renewer.start();

  constexpr std::chrono::milliseconds kTick{200};
  while (!job->ended()) {
    const auto tick = std::min(kTick, stopper.kill_when_due().value_or(kTick));
    siginfo_t info{};
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(tick).count();
    timespec wait{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    int sig = sigtimedwait(&handled, &info, &wait);
    if (sig == SIGINT || sig == SIGTERM) job->signal(sig);
  }
  renewer.stop();
  stopper.command_ended();
  const int status = job->reap();
  release_all(ctx, held);
  if (stopper.any_lost()) return classify(Errc::lease_lost).exit_status;
  return status < 0 ? kExitStore : status;
}

}  // namespace gitlocks::cli
