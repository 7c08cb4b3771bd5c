// web [--port P] [--site DIR]: serves the verification page (web/, built by
// the wasm preset into build/wasm/web/site; site_file() keeps every request
// inside it, symlinks included) and a live bundle of this
// repository's refs/locks/state on 127.0.0.1 only. The bundle is made with
// `git bundle create` through the Git adapter and made again whenever the
// ref has moved since the last request; the page polls /live.json and
// verifies again when the tip changes. Nothing is verified here: the browser
// does all of it with the WASM core. Only requests addressed to this server
// by a loopback name are answered (host_allowed): against DNS rebinding.
//
// Prints one JSON line when listening:
//   {"op":"web","url":"http://127.0.0.1:P/?bundle=live.bundle&live=1","port":P,"site":DIR}
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "cli.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRef = "refs/locks/state";

bool is_site(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "index.html", ec) && fs::is_regular_file(dir / "pkg" / "browser.mjs", ec);
}

// --site, else $GIT_LOCKS_WEB_DIR, else next to an installed or built binary.
std::optional<fs::path> find_site(const std::optional<std::string>& flag) {
  if (flag) return is_site(*flag) ? std::optional<fs::path>(fs::absolute(*flag)) : std::nullopt;
  if (const char* env = std::getenv("GIT_LOCKS_WEB_DIR"); env && *env) {
    return is_site(env) ? std::optional<fs::path>(fs::absolute(env)) : std::nullopt;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path bin = exe.parent_path();
  for (const fs::path& candidate : {bin / ".." / "share" / "git-locks" / "web",             // installed
                                    bin / ".." / ".." / ".." / "wasm" / "web" / "site"}) {  // build/<preset>/tools/cli
    if (is_site(candidate)) return fs::weakly_canonical(candidate, ec);
  }
  return std::nullopt;
}

// The file of the site `root` (canonical) that a request path names, or
// nothing. `target` is httplib's decoded path (%2e%2e is "..", %2f is "/"):
// every component must be a plain name — no empty, "." or ".." component,
// no NUL or backslash — and the file, once every symlink is resolved, must
// be a regular file inside `root`, so neither a traversal nor a symlink out
// of the site serves anything else.
std::optional<fs::path> site_file(const fs::path& root, const std::string& target) {
  if (target.empty() || target[0] != '/') return std::nullopt;
  std::string rel = target.substr(1);
  if (rel.empty() || rel.back() == '/') rel += "index.html";
  fs::path path = root;
  for (std::size_t at = 0;;) {
    const std::size_t slash = rel.find('/', at);
    const std::string part = rel.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos ||
        part.find('\\') != std::string::npos)
      return std::nullopt;
    path /= part;
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (ec || !fs::is_regular_file(real, ec)) return std::nullopt;
  auto [in_root, in_real] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  (void)in_real;
  if (in_root != root.end()) return std::nullopt;
  return real;
}

// Whether a request's Host names this server by a loopback name:
// 127.0.0.1:PORT, localhost:PORT or [::1]:PORT, PORT the port listened on.
// A page of another origin whose name resolves to 127.0.0.1 (DNS rebinding)
// sends its own name, so it cannot read the store. A Host without a port
// means port 80 (RFC 9110 7.2), so it is accepted only when that is the port.
bool host_allowed(const std::string& host, int port) {
  std::string lower = host;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* name : {"127.0.0.1", "localhost", "[::1]"}) {
    if (lower == std::string(name) + ":" + std::to_string(port)) return true;
    if (port == 80 && lower == name) return true;
  }
  return false;
}

bool read_whole(const fs::path& file, std::string& out) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

const char* mime_type(const fs::path& file) {
  static const std::pair<const char*, const char*> types[] = {{".html", "text/html; charset=utf-8"},
                                                              {".css", "text/css"},
                                                              {".js", "text/javascript"},
                                                              {".mjs", "text/javascript"},
                                                              {".wasm", "application/wasm"},
                                                              {".png", "image/png"},
                                                              {".svg", "image/svg+xml"},
                                                              {".json", "application/json"}};
  const std::string ext = file.extension().string();
  for (const auto& [e, type] : types)
    if (ext == e) return type;
  return "application/octet-stream";
}

// The bundle of refs/locks/state, made again when the ref moves. A remote
// store is fetched on every look (the page polls /live.json).
class LiveBundle {
 public:
  explicit LiveBundle(Context& ctx) : ctx_(ctx) {}

  // The current tip (the null id when there is no store).
  Result<Oid> tip() {
    std::lock_guard<std::mutex> hold(mutex_);
    return tip_locked();
  }

  // The current tip and its bundle.
  Result<std::pair<Oid, std::string>> bundle() {
    std::lock_guard<std::mutex> hold(mutex_);
    GITLOCKS_TRY(t, tip_locked());
    if (t.empty()) return make_error(Errc::store_read, std::string("no ") + kRef + " in this store");
    if (t != tip_) {
      // `git bundle create -` writes the bundle on stdout.
      GITLOCKS_TRY(r, bundle_of_store(ctx_, t, "-"));
      if (r.status != 0) return make_error(Errc::store_read, "git bundle create failed: " + r.err);
      tip_ = t;
      bytes_ = std::move(r.out);
    }
    return std::make_pair(tip_, bytes_);
  }

 private:
  Result<Oid> tip_locked() {
    GITLOCKS_TRY(t, ctx_.read_tip());
    return t.value_or(Oid{});
  }

  Context& ctx_;  // not thread-safe: used under mutex_ only
  std::mutex mutex_;
  Oid tip_;
  std::string bytes_;
};

}  // namespace

int cmd_web(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  int port = 0;
  if (auto p = a->value("port")) {
    char* end = nullptr;
    const long v = std::strtol(p->c_str(), &end, 10);
    if (p->empty() || *end != '\0' || v < 0 || v > 65535)
      return ctx.fail(make_error(Errc::usage, "--port needs a number from 0 to 65535"));
    port = static_cast<int>(v);
  }
  const auto site = find_site(a->value("site"));
  if (!site) {
    return ctx.fail(make_error(Errc::usage,
                               "the page is not there: build it with the wasm preset (build/wasm/web/site) and pass "
                               "--site DIR or set GIT_LOCKS_WEB_DIR"));
  }
  LiveBundle live(ctx);
  if (auto t = live.tip(); !t.ok()) return ctx.fail(t.error());
  std::string repo_name = ctx.repo_dir.value_or(fs::current_path().string());

  std::error_code ec;
  const fs::path root = fs::canonical(*site, ec);
  if (ec) return ctx.fail(make_error(Errc::usage, "cannot serve " + site->string() + ": " + ec.message()));

  httplib::Server server;
  // Before any route: no Host (an empty one, or several) is 400, as HTTP/1.1 requires; a
  // Host that is not this server's loopback name is 403. `port` is the port
  // listened on by the time a request arrives.
  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    const std::size_t hosts = req.get_header_value_count("Host");
    if (hosts == 1 && host_allowed(req.get_header_value("Host"), port))
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = hosts == 1 ? 403 : 400;
    res.set_content(hosts == 1 ? "forbidden: Host must be 127.0.0.1:" + std::to_string(port) +
                                     ", localhost:" + std::to_string(port) + " or [::1]:" + std::to_string(port) + "\n"
                               : std::string("bad request: exactly one Host header is required\n"),
                    "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Get("/live.json", [&](const httplib::Request&, httplib::Response& res) {
    auto t = live.tip();
    res.set_header("Cache-Control", "no-store");
    if (!t.ok()) {
      res.status = 500;
      res.set_content(json_line(error_object("web", t.error(), std::nullopt)), "application/json");
      return;
    }
    json body = {{"repo", repo_name}, {"ref", kRef}, {"tip", t->empty() ? json(nullptr) : json(*t)}};
    res.set_content(json_line(body), "application/json");
  });
  server.Get("/live.bundle", [&](const httplib::Request&, httplib::Response& res) {
    auto b = live.bundle();
    res.set_header("Cache-Control", "no-store");
    if (!b.ok()) {
      res.status = 404;
      res.set_content(json_line(error_object("web", b.error(), std::nullopt)), "application/json");
      return;
    }
    res.set_header("X-Git-Locks-Tip", b->first.hex());
    res.set_content(b->second, "application/octet-stream");
  });
  // Every other GET is a file of the site, or 404 (registered last: the
  // handlers above match first).
  server.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
    const auto file = site_file(root, req.path);
    std::string body;
    if (!file || !read_whole(*file, body)) {
      res.status = 404;
      res.set_content("not found\n", "text/plain");
      return;
    }
    res.set_content(std::move(body), mime_type(*file));
  });

  const char* host = "127.0.0.1";  // never anything else: the page and the store stay on this machine
  if (port == 0) {
    port = server.bind_to_any_port(host);
    if (port < 0) return ctx.fail(make_error(Errc::usage, "cannot listen on 127.0.0.1"));
  } else if (!server.bind_to_port(host, port)) {
    return ctx.fail(make_error(Errc::usage, "cannot listen on 127.0.0.1:" + std::to_string(port)));
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/?bundle=live.bundle&live=1";
  const std::string line = json_line({{"op", "web"}, {"url", url}, {"port", port}, {"site", site->string()}}) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
  if (!server.listen_after_bind()) return ctx.fail(make_error(Errc::store_read, "the server stopped"));
  return kExitOk;
}

}  // namespace gitlocks::cli
