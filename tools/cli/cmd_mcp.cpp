// mcp: a Model Context Protocol server on stdin/stdout (JSON-RPC 2.0, one
// message per line; protocol versions 2025-11-25 and 2025-06-18). Each
// tools/call runs this same binary as a child, `git-locks --json` with the
// server's global flags and the tool's arguments as the CLI's flags
// (mcp_tools.h): every call is exactly the CLI's transition, made with the
// key the server was started with. Calls run on their own threads, so a
// blocking wait does not stop the server answering. Stdout carries protocol
// messages only; diagnostics go to stderr. docs/CLI.md "MCP server".
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "cli.h"
#include "mcp_tools.h"
#include "process.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

// Newest first: an unsupported requested version is answered with the first.
constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18"};

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
// MCP: a resource URI the server does not have.
constexpr int kResourceNotFound = -32002;

// The one resource: the store's status, whose updates a client can
// subscribe to (docs/CLI.md "MCP server").
constexpr const char* kStatusUri = "git-locks://status";

// One JSON message per line; writers on several threads never interleave.
class Output {
 public:
  void send(const json& message) {
    std::string line = json_line(message) + "\n";
    std::lock_guard<std::mutex> lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }
  void result(const json& id, json result) { send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}); }
  void error(const json& id, int code, const std::string& message) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
  }

 private:
  std::mutex mutex_;
};

// A tools/call in flight: its child, and whether the client cancelled it.
struct Call {
  std::mutex mutex;
  pid_t pid = -1;  // while the child may be signalled (not yet reaped)
  bool cancelled = false;
};

class Server {
 public:
  explicit Server(std::vector<std::string> base) : base_(std::move(base)) {}

  void handle(const std::string& line);
  // Sends SIGTERM to the command of every call in flight; none of them
  // gets a response.
  void terminate_calls();
  // Stdin is closed: terminates the calls in flight and waits for their
  // threads.
  void shutdown();

 private:
  void request(const json& id, const std::string& method, const json& params);
  void notification(const std::string& method, const json& params);
  void call_tool(const json& id, const json& params);
  void run(const std::string& key, const json& id, const mcp::Tool& tool, const json& arguments,
           std::shared_ptr<Call> call);
  void cancel(const std::string& key);
  void read_resource(const std::string& key, const json& id, std::shared_ptr<Call> call);
  // Runs `argv` as the child of `call` (a cancel signals it) and sends the
  // response `response_of` makes of its result, unless cancelled.
  void run_child(const std::string& key, const json& id, std::shared_ptr<Call> call,
                 const std::vector<std::string>& argv, const std::function<json(const ProcessResult&)>& response_of);
  void subscribe(const json& id, const json& params, bool on);
  // The subscription's `git-locks watch` child, stopped (and its thread
  // joined) for unsubscribe and at shutdown.
  void stop_watch();

  std::vector<std::string> base_;  // this binary, its global flags, --json
  std::mutex watch_mutex_;
  pid_t watch_pid_ = -1;
  std::thread watch_thread_;
  Output out_;
  bool initialized_ = false;  // initialize was answered
  std::mutex calls_mutex_;
  std::condition_variable calls_done_;
  std::map<std::string, std::shared_ptr<Call>> calls_;  // by the request id's JSON text
};

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

void Server::handle(const std::string& line) {
  if (line.find_first_not_of(" \t\r") == std::string::npos) return;
  json msg = json::parse(line, nullptr, false);
  if (msg.is_discarded()) return out_.error(nullptr, kParseError, "Parse error: not a JSON text");
  if (msg.is_array())
    return out_.error(nullptr, kInvalidRequest, "Invalid Request: JSON-RPC batches are not supported");
  if (!msg.is_object()) return out_.error(nullptr, kInvalidRequest, "Invalid Request: not a JSON object");
  const bool has_id = msg.contains("id");
  const json id = has_id && valid_id(msg["id"]) ? msg["id"] : json(nullptr);
  if (msg.value("jsonrpc", json()) != "2.0")
    return out_.error(id, kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"");
  if (!msg.contains("method")) {
    // A response: this server sends no requests, so there is nothing to match it with.
    if (has_id && (msg.contains("result") || msg.contains("error"))) return;
    return out_.error(id, kInvalidRequest, "Invalid Request: no method");
  }
  if (!msg["method"].is_string()) return out_.error(id, kInvalidRequest, "Invalid Request: method must be a string");
  if (has_id && !valid_id(msg["id"]))
    return out_.error(nullptr, kInvalidRequest, "Invalid Request: id must be a string or an integer");
  const std::string method = msg["method"];
  const json params = msg.value("params", json::object());
  if (!params.is_object()) {
    if (has_id) out_.error(id, kInvalidParams, "Invalid params: params must be an object");
    return;
  }
  if (has_id) request(id, method, params);
  else notification(method, params);
}

void Server::request(const json& id, const std::string& method, const json& params) {
  if (method == "ping") return out_.result(id, json::object());
  if (method == "initialize") {
    if (initialized_) return out_.error(id, kInvalidRequest, "Invalid Request: already initialized");
    auto v = params.find("protocolVersion");
    if (v == params.end() || !v->is_string())
      return out_.error(id, kInvalidParams, "Invalid params: protocolVersion must be a string");
    std::string version = kProtocolVersions[0];
    for (const char* ours : kProtocolVersions)
      if (*v == ours) version = ours;
    initialized_ = true;
    return out_.result(
        id, {{"protocolVersion", version},
             {"capabilities",
              {{"tools", {{"listChanged", false}}}, {"resources", {{"subscribe", true}, {"listChanged", false}}}}},
             {"serverInfo", {{"name", "git-locks"}, {"title", "git-locks"}, {"version", GITLOCKS_VERSION}}},
             {"instructions",
              "Leases on paths of this Git repository (refs/locks/state). Claim the paths you are "
              "about to change, release them when done; a held-path refusal names the holder and "
              "its expiry; claim with wait blocks until admitted."}});
  }
  if (!initialized_) return out_.error(id, kInvalidRequest, "Invalid Request: not initialized (send initialize first)");
  if (method == "tools/list") {
    json list = json::array();
    for (const auto& t : mcp::tools()) list.push_back(t.definition);
    return out_.result(id, {{"tools", list}});
  }
  if (method == "tools/call") return call_tool(id, params);
  if (method == "resources/list")
    return out_.result(
        id, {{"resources",
              {{{"uri", kStatusUri},
                {"name", "status"},
                {"title", "Lock store status"},
                {"description",
                 "The live leases of refs/locks/state, as git-locks status --json prints them. Subscribe to be told "
                 "(notifications/resources/updated) whenever the store changes: a lease claimed, renewed, released, "
                 "expired, force-released or handed off."},
                {"mimeType", "application/json"}}}}});
  if (method == "resources/templates/list") return out_.result(id, {{"resourceTemplates", json::array()}});
  if (method == "resources/read" || method == "resources/subscribe" || method == "resources/unsubscribe") {
    auto uri = params.find("uri");
    if (uri == params.end() || !uri->is_string())
      return out_.error(id, kInvalidParams, "Invalid params: uri must be a string");
    if (*uri != kStatusUri) return out_.error(id, kResourceNotFound, "Resource not found: " + uri->get<std::string>());
    if (method != "resources/read") return subscribe(id, params, method == "resources/subscribe");
    const std::string key = id.dump();
    auto call = std::make_shared<Call>();
    {
      std::lock_guard<std::mutex> lock(calls_mutex_);
      if (!calls_.emplace(key, call).second)
        return out_.error(id, kInvalidRequest, "Invalid Request: request id " + key + " is already in use");
    }
    std::thread([this, key, id, call] { read_resource(key, id, call); }).detach();
    return;
  }
  out_.error(id, kMethodNotFound, "Method not found: " + method);
}

void Server::notification(const std::string& method, const json& params) {
  // notifications/initialized and every other notification need no action.
  if (method != "notifications/cancelled") return;
  auto r = params.find("requestId");
  if (r != params.end() && valid_id(*r)) cancel(r->dump());
}

void Server::call_tool(const json& id, const json& params) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string())
    return out_.error(id, kInvalidParams, "Invalid params: name must be a string");
  const mcp::Tool* tool = mcp::find_tool(*name);
  if (!tool) return out_.error(id, kInvalidParams, "Unknown tool: " + name->get<std::string>());
  const json arguments = params.value("arguments", json::object());
  if (!arguments.is_object()) return out_.error(id, kInvalidParams, "Invalid params: arguments must be an object");
  // A schema violation is a tool execution error (2025-11-25: input
  // validation errors are), so that a model can correct its call.
  if (auto bad = mcp::check_schema(tool->definition["inputSchema"], arguments))
    return out_.result(id, mcp::usage_result(*tool, *bad));
  const std::string key = id.dump();
  auto call = std::make_shared<Call>();
  {
    std::lock_guard<std::mutex> lock(calls_mutex_);
    if (!calls_.emplace(key, call).second)
      return out_.error(id, kInvalidRequest, "Invalid Request: request id " + key + " is already in use");
  }
  std::thread([this, key, id, tool, arguments, call] { run(key, id, *tool, arguments, call); }).detach();
}

void Server::run(const std::string& key, const json& id, const mcp::Tool& tool, const json& arguments,
                 std::shared_ptr<Call> call) {
  std::vector<std::string> argv = base_;
  for (auto& a : mcp::command_line(tool, arguments)) argv.push_back(std::move(a));
  run_child(key, id, std::move(call), argv, [&](const ProcessResult& r) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", mcp::tool_result(tool, r.status, r.out, r.err)}};
  });
}

void Server::run_child(const std::string& key, const json& id, std::shared_ptr<Call> call,
                       const std::vector<std::string>& argv,
                       const std::function<json(const ProcessResult&)>& response_of) {
  std::optional<json> response;
  auto proc = Process::start(argv, {});
  if (!proc.ok()) {
    std::fprintf(stderr, "git-locks mcp: %s\n", proc.error().message.c_str());
    response =
        json{{"jsonrpc", "2.0"},
             {"id", id},
             {"error", {{"code", kInternalError}, {"message", "cannot run git-locks: " + proc.error().message}}}};
  } else {
    {
      std::lock_guard<std::mutex> lock(call->mutex);
      call->pid = proc->pid();
      if (call->cancelled) ::kill(call->pid, SIGTERM);
    }
    ProcessResult r = proc->finish("", [&] {
      std::lock_guard<std::mutex> lock(call->mutex);
      call->pid = -1;
    });
    response = response_of(r);
  }
  bool cancelled = false;
  {
    std::lock_guard<std::mutex> lock(call->mutex);
    cancelled = call->cancelled;
  }
  // A cancelled request gets no response (basic/utilities/cancellation).
  if (!cancelled) out_.send(*response);
  std::lock_guard<std::mutex> lock(calls_mutex_);
  calls_.erase(key);
  calls_done_.notify_all();
}

// resources/read of the status: `git-locks status` run as a child, as a
// tools/call runs its command.
void Server::read_resource(const std::string& key, const json& id, std::shared_ptr<Call> call) {
  std::vector<std::string> argv = base_;
  argv.push_back("status");
  run_child(key, id, std::move(call), argv, [&](const ProcessResult& r) {
    if (r.status == 0)
      return json{
          {"jsonrpc", "2.0"},
          {"id", id},
          {"result", {{"contents", {{{"uri", kStatusUri}, {"mimeType", "application/json"}, {"text", r.out}}}}}}};
    return json{
        {"jsonrpc", "2.0"},
        {"id", id},
        {"error", {{"code", kInternalError}, {"message", "git-locks status failed: " + r.err}, {"data", r.err}}}};
  });
}

// resources/subscribe starts one `git-locks --json watch` child (the
// server's global flags: the same store, remote and keys); each change it
// reports becomes notifications/resources/updated for the status.
// Subscribing again keeps the one child; unsubscribe stops it.
void Server::subscribe(const json& id, const json&, bool on) {
  if (!on) {
    stop_watch();
    return out_.result(id, json::object());
  }
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    if (watch_pid_ > 0) return out_.result(id, json::object());
  }
  stop_watch();  // a child that ended by itself: its thread is joined
  std::vector<std::string> argv = base_;
  argv.push_back("watch");
  auto proc = Process::start(argv, {});
  if (!proc.ok()) return out_.error(id, kInternalError, "cannot run git-locks watch: " + proc.error().message);
  // The first line says the watch has read the tip: changes after the
  // response are all reported.
  auto first = proc->read_line();
  if (!first || json::parse(*first, nullptr, false).value("event", "") != "watching") {
    ProcessResult r = proc->finish("");
    return out_.error(id, kInternalError, "git-locks watch failed: " + r.err);
  }
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    watch_pid_ = proc->pid();
  }
  watch_thread_ = std::thread([this, p = std::make_shared<Process>(std::move(*proc))] {
    while (auto line = p->read_line()) {
      const json event = json::parse(*line, nullptr, false);
      if (event.is_discarded() || event.value("event", "") == "watching") continue;
      out_.send({{"jsonrpc", "2.0"}, {"method", "notifications/resources/updated"}, {"params", {{"uri", kStatusUri}}}});
    }
    ProcessResult r = p->finish("", [&] {
      std::lock_guard<std::mutex> lock(watch_mutex_);
      watch_pid_ = -1;
    });
    if (r.status != 0 && r.status != 128 + SIGTERM)
      std::fprintf(stderr, "git-locks mcp: the subscription's watch ended (exit %d): %s", r.status, r.err.c_str());
  });
  out_.result(id, json::object());
}

void Server::stop_watch() {
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    if (watch_pid_ > 0) ::kill(watch_pid_, SIGTERM);
  }
  if (watch_thread_.joinable()) watch_thread_.join();
}

void Server::cancel(const std::string& key) {
  std::lock_guard<std::mutex> lock(calls_mutex_);
  auto it = calls_.find(key);
  if (it == calls_.end()) return;  // unknown or already answered: ignored
  std::lock_guard<std::mutex> call_lock(it->second->mutex);
  it->second->cancelled = true;
  if (it->second->pid > 0) ::kill(it->second->pid, SIGTERM);
}

void Server::terminate_calls() {
  {
    std::lock_guard<std::mutex> watch(watch_mutex_);
    if (watch_pid_ > 0) ::kill(watch_pid_, SIGTERM);
  }
  std::lock_guard<std::mutex> lock(calls_mutex_);
  for (auto& [key, call] : calls_) {
    std::lock_guard<std::mutex> call_lock(call->mutex);
    call->cancelled = true;
    if (call->pid > 0) ::kill(call->pid, SIGTERM);
  }
}

void Server::shutdown() {
  terminate_calls();
  stop_watch();
  std::unique_lock<std::mutex> lock(calls_mutex_);
  calls_done_.wait(lock, [&] { return calls_.empty(); });
}

Result<std::string> self_executable() {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= buf.size())
    return make_error(Errc::store_read, "cannot read /proc/self/exe: the server runs each call as this binary");
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

}  // namespace

int cmd_mcp(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto exe = self_executable();
  if (!exe.ok()) return ctx.fail(exe.error());
  std::vector<std::string> base = {*exe};
  if (ctx.repo_dir) base.insert(base.end(), {"--repo", *ctx.repo_dir});
  if (ctx.key_flag) base.insert(base.end(), {"--key", *ctx.key_flag});
  if (ctx.remote_flag) base.insert(base.end(), {"--remote", *ctx.remote_flag});
  if (ctx.notary_flag) base.insert(base.end(), {"--notary", *ctx.notary_flag});
  if (ctx.allow_test_clock) base.push_back("--allow-test-clock");
  base.push_back("--json");
  // Never destroyed: the signal thread below may use it until the process ends.
  Server& server = *new Server(std::move(base));
  // A host that stops the server with a signal (the spec's shutdown after
  // closing stdin) must not leave a waiting command behind: the signals are
  // taken by one thread, which terminates the calls in flight and exits.
  // Blocked here, before any thread starts; children start unblocked.
  sigset_t stop;
  sigemptyset(&stop);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::thread([&server, stop] {
    int sig = 0;
    if (sigwait(&stop, &sig) != 0) return;
    server.terminate_calls();
    std::_Exit(128 + sig);
  }).detach();
  for (std::string line; std::getline(std::cin, line);) server.handle(line);
  server.shutdown();
  return kExitOk;
}

}  // namespace gitlocks::cli
