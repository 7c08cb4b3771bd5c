// http_serve.h — what the notary and the witness (`git-locks witness
// serve`) share as HTTP services: JSON replies, the fixed bodies of the
// errors httplib produces itself, 405 for the wrong method, and the serve
// loop (bind, a listen backlog of SOMAXCONN, one JSON line when listening,
// serve until SIGINT or SIGTERM, one JSON line when stopped).
#pragma once

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "admission.h"
#include "failure.h"
#include "listen_address.h"

namespace gitlocks::notary {

// Cache-Control: no-store, the body as application/json.
void send(httplib::Response& res, const Reply& r);
// Whether a Content-Type names application/json (parameters ignored).
bool is_json_media_type(const std::string& content_type);
// The error handler for statuses httplib produces before any route runs
// (400, 404, 413, 414), and an exception handler (500 internal); and 405
// with Allow for the other methods of each path in `routes` (path, the
// method it takes).
void add_common_handlers(httplib::Server& svr, std::size_t max_request_bytes,
                         const std::vector<std::pair<std::string, std::string>>& routes);

// Validates what every service checks at start-up: the listen address
// (loopback unless allow_remote) and the request-size limit (in
// [kMinRequestBytes, max_limit]). Fills `addr`.
bool check_listen(const std::string& listen, bool allow_remote, std::size_t max_request_bytes, std::size_t max_limit,
                  ListenAddress& addr, StartFailure& failure);

// Binds `svr` (8 worker threads, keep-alive 1 s, the payload limit) to
// `addr`, prints banner(port) on stdout as one JSON line, and serves until
// SIGINT or SIGTERM; then prints {"stopped":SIGNAL} and returns 0. A
// failure to listen returns refuse(failure). Call from the main thread
// before other threads exist (SIGINT and SIGTERM are blocked while serving
// and consumed by a watcher thread).
int serve_until_signalled(httplib::Server& svr, const ListenAddress& addr, const std::string& listen,
                          std::size_t max_request_bytes, const std::function<json(int port)>& banner,
                          const std::function<int(const StartFailure&)>& refuse);

// One JSON line on `f`, flushed.
void print_line(std::FILE* f, const json& v);

}  // namespace gitlocks::notary
