// notary_serve, and the HTTP serving it shares with the witness
// (http_serve.h): configuration checks, then cpp-httplib routes onto the
// Admitter until SIGINT/SIGTERM.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "admission.h"
#include "http_serve.h"
#include "keyfile.h"
#include "listen_address.h"
#include "notary.h"
#include "state.h"

namespace gitlocks::notary {
namespace {

constexpr const char* kDiscoveryPath = "/v1/discovery";
constexpr const char* kAdmitPath = "/v1/admit";
constexpr std::size_t kWorkerThreads = 8;
constexpr std::size_t kMaxAudienceBytes = 256;

// The fixed JSON body of statuses httplib produces before any route runs.
Reply library_error(int status, std::size_t max_request_bytes) {
  switch (status) {
    case 400:
      return error_reply(400, "bad-request", "the HTTP request is malformed");
    case 404:
      return error_reply(404, "not-found", "no such endpoint; see GET /v1/discovery");
    case 413:
      return error_reply(413, "request-too-large",
                         "the request body exceeds the limit of " + std::to_string(max_request_bytes) + " bytes");
    case 414:
      return error_reply(414, "uri-too-long", "the request URI is too long");
    default:
      return error_reply(status, "http-error", "HTTP status " + std::to_string(status));
  }
}

// Blocks SIGINT and SIGTERM in the calling thread (and so in the server's
// threads, created later), restoring the old mask when done.
class SignalBlock {
 public:
  SignalBlock() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SignalBlock() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  const sigset_t& set() const { return set_; }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

int refuse(const StartFailure& f) {
  print_line(stderr, {{"error", "notary-start"}, {"code", f.code}, {"op", "notary serve"}, {"detail", f.detail}});
  return f.exit_status;
}

bool check_config(const NotaryConfig& c, ListenAddress& addr, StartFailure& failure) {
  auto usage = [&](std::string code, std::string detail) {
    failure = {std::move(code), std::move(detail), kExitUsage};
    return false;
  };
  if (c.key_path.empty()) return usage("usage", "serve needs --key FILE");
  if (c.state_dir.empty()) return usage("usage", "serve needs --state DIR");
  if (c.audience.empty() || c.audience.size() > kMaxAudienceBytes ||
      !std::all_of(c.audience.begin(), c.audience.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; }))
    return usage("bad-audience", "the audience must be 1 to 256 printable ASCII characters without spaces");
  return check_listen(c.listen, c.allow_remote, c.max_request_bytes, kMaxRequestBytesLimit, addr, failure);
}

void add_routes(httplib::Server& svr, Admitter& admitter, std::size_t max_request_bytes) {
  svr.Get(kDiscoveryPath, [&](const httplib::Request&, httplib::Response& res) { send(res, admitter.discovery()); });
  svr.Post(kAdmitPath, [&](const httplib::Request& req, httplib::Response& res) {
    if (!is_json_media_type(req.get_header_value("Content-Type"))) {
      send(res, error_reply(415, "unsupported-media-type", "POST /v1/admit takes Content-Type: application/json"));
      return;
    }
    send(res, admitter.admit(req.body));
  });
  add_common_handlers(svr, max_request_bytes, {{kDiscoveryPath, "GET"}, {kAdmitPath, "POST"}});
}

}  // namespace

void print_line(std::FILE* f, const json& v) {
  std::string line = v.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), f);
  std::fflush(f);
}

bool is_json_media_type(const std::string& content_type) {
  std::string media = content_type.substr(0, content_type.find(';'));
  media.erase(std::remove_if(media.begin(), media.end(), [](unsigned char ch) { return std::isspace(ch); }),
              media.end());
  std::transform(media.begin(), media.end(), media.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return media == "application/json";
}

void send(httplib::Response& res, const Reply& r) {
  res.status = r.status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(r.body, "application/json");
}

void add_common_handlers(httplib::Server& svr, std::size_t max_request_bytes,
                         const std::vector<std::pair<std::string, std::string>>& routes) {
  auto not_allowed = [](std::string allow) {
    return [allow](const httplib::Request& req, httplib::Response& res) {
      send(res, error_reply(405, "method-not-allowed", req.method + " is not allowed here; use " + allow));
      res.set_header("Allow", allow);
    };
  };
  for (const auto& [path, method] : routes) {
    if (method != "GET") svr.Get(path, not_allowed(method));
    if (method != "POST") svr.Post(path, not_allowed(method));
    svr.Put(path, not_allowed(method));
    svr.Delete(path, not_allowed(method));
    svr.Patch(path, not_allowed(method));
  }
  svr.set_error_handler([max_request_bytes](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) send(res, library_error(res.status, max_request_bytes));
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send(res, error_reply(500, "internal", "unexpected failure"));
  });
}

bool check_listen(const std::string& listen, bool allow_remote, std::size_t max_request_bytes, std::size_t max_limit,
                  ListenAddress& addr, StartFailure& failure) {
  auto usage = [&](std::string code, std::string detail) {
    failure = {std::move(code), std::move(detail), kExitUsage};
    return false;
  };
  if (max_request_bytes < kMinRequestBytes || max_request_bytes > max_limit)
    return usage("bad-max-request-bytes", "max request bytes must lie in [" + std::to_string(kMinRequestBytes) + ", " +
                                              std::to_string(max_limit) + "]");
  std::string error;
  if (!parse_listen_address(listen, addr, error)) return usage("bad-listen", error);
  if (!addr.loopback && !allow_remote)
    return usage("remote-listen", "refusing to listen on non-loopback address " + listen +
                                      " without --allow-remote (put TLS and access control in front of it)");
  return true;
}

int serve_until_signalled(httplib::Server& svr, const ListenAddress& addr, const std::string& listen,
                          std::size_t max_request_bytes, const std::function<json(int port)>& banner,
                          const std::function<int(const StartFailure&)>& refuse_start) {
  SignalBlock signals;
  svr.new_task_queue = [] { return new httplib::ThreadPool(kWorkerThreads); };
  svr.set_payload_max_length(max_request_bytes);
  svr.set_keep_alive_timeout(1);  // idle keep-alive connections hold a worker
  svr.set_tcp_nodelay(true);

  // httplib's default sets SO_REUSEPORT, which would let a second server
  // share the port; keep only SO_REUSEADDR, and remember the socket.
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd = sock;
  });
  int port =
      addr.port == 0 ? svr.bind_to_any_port(addr.host) : (svr.bind_to_port(addr.host, addr.port) ? addr.port : -1);
  if (port < 0)
    return refuse_start(
        {"listen-failed", "cannot listen on " + listen + " (address in use or unavailable)", kExitFailure});
  // httplib listens with a backlog of 5: bursts of clients would overflow it
  // and be reset. Listening again on a listening socket only raises it.
  if (::listen(listen_fd, SOMAXCONN) != 0)
    return refuse_start({"listen-failed", "cannot raise the listen backlog on " + listen, kExitFailure});

  std::atomic<bool> done{false};
  std::atomic<int> caught{0};
  std::thread watcher([&] {
    const timespec tick{0, 50'000'000};
    while (!done.load()) {
      int sig = sigtimedwait(&signals.set(), nullptr, &tick);
      if (sig > 0) {
        caught = sig;
        break;
      }
    }
    // stop() is a no-op until the accept loop runs: wait for it.
    while (!done.load()) {
      if (svr.is_running()) {
        svr.stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });

  print_line(stdout, banner(port));
  bool served = svr.listen_after_bind();
  done = true;
  watcher.join();
  if (caught.load() == 0 && !served)
    return refuse_start({"listen-failed", "the server stopped accepting connections on " + listen, kExitFailure});
  print_line(stdout, {{"stopped", caught.load() == SIGINT ? "SIGINT" : "SIGTERM"}});
  return kExitOk;
}

int notary_serve(const NotaryConfig& config) {
  ListenAddress addr;
  StartFailure failure;
  if (!check_config(config, addr, failure)) return refuse(failure);
  if (!crypto_init()) return refuse({"crypto-init", "libsodium failed to initialise", kExitFailure});
  KeyPair key;
  if (!load_service_key(config.key_path, key, failure)) return refuse(failure);
  auto state = StateDir::open(config.state_dir, failure);
  if (!state) return refuse(failure);
  Admitter admitter(key, config.audience, *state, config.test_clock, config.max_request_bytes);
  sodium_memzero(key.secret_key.data(), key.secret_key.size());

  httplib::Server svr;
  add_routes(svr, admitter, config.max_request_bytes);
  return serve_until_signalled(
      svr, addr, config.listen, config.max_request_bytes,
      [&](int port) {
        return json{{"listening", addr.with_port(port)},
                    {"audience", admitter.pins().audience},
                    {"service_key", admitter.pins().service_key},
                    {"clock", config.test_clock ? "test" : "system"}};
      },
      refuse);
}

}  // namespace gitlocks::notary
