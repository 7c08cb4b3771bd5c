#include "notary_client.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "identity.h"

namespace gitlocks::cli {
namespace {

Result<std::unique_ptr<httplib::Client>> connect(const NotaryEndpoint& ep) {
  auto c = std::make_unique<httplib::Client>(ep.url);
  if (!c->is_valid()) return make_error(Errc::usage, "notary URL " + ep.url + " is not usable (want http://HOST:PORT)");
  c->set_connection_timeout(std::chrono::milliseconds(ep.connect_timeout_ms));
  c->set_read_timeout(std::chrono::milliseconds(ep.read_timeout_ms));
  c->set_write_timeout(std::chrono::milliseconds(ep.read_timeout_ms));
  return c;
}

using Clock = std::chrono::steady_clock;

// httplib reports a timed-out read as a plain Read (or Write) error: the
// elapsed time tells a notary that never answered from one that hung up.
Error unreachable(const NotaryEndpoint& ep, const std::string& what, httplib::Error e, Clock::time_point start) {
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  if ((e == httplib::Error::Read || e == httplib::Error::Write) && elapsed >= ep.read_timeout_ms)
    return make_error(Errc::store_write, "notary " + ep.url + " did not answer " + what + " within " +
                                             format_duration(ep.read_timeout_ms) +
                                             " (git config locks.notaryReadTimeout); nothing was published");
  return make_error(Errc::store_write, "notary " + ep.url + " is unreachable (" + what + ": " + httplib::to_string(e) +
                                           "); nothing was published");
}

}  // namespace

Result<NotaryEndpoint> notary_endpoint(Context& ctx) {
  NotaryEndpoint ep;
  ep.allow_test_clock = ctx.allow_test_clock;
  if (ctx.notary_flag) {
    ep.url = *ctx.notary_flag;
  } else {
    ep.url = ctx.config("locks.notary");
  }
  if (ep.url.empty())
    return make_error(Errc::usage,
                      "this store requires trusted admission time: set `git config locks.notary "
                      "http://HOST:PORT` or pass --notary URL");
  if (ep.url.rfind("http://", 0) != 0 || ep.url.size() <= 7)
    return make_error(Errc::usage, "notary URL must be http://HOST:PORT, got " + ep.url);
  while (ep.url.size() > 7 && ep.url.back() == '/') ep.url.pop_back();
  GITLOCKS_TRY(timeouts, http_timeouts(ctx));
  ep.connect_timeout_ms = timeouts.first;
  ep.read_timeout_ms = timeouts.second;
  return ep;
}

Result<std::pair<std::int64_t, std::int64_t>> http_timeouts(Context& ctx) {
  GITLOCKS_TRY(connect_ms,
               ctx.duration_config("locks.notaryConnectTimeout", kNotaryConnectTimeoutMs, kNotaryMaxTimeoutMs));
  GITLOCKS_TRY(read_ms, ctx.duration_config("locks.notaryReadTimeout", kNotaryReadTimeoutMs, kNotaryMaxTimeoutMs));
  return std::make_pair(connect_ms, read_ms);
}

Result<json> check_discovery(const NotaryEndpoint& ep, const Pins& pins) {
  GITLOCKS_TRY(c, connect(ep));
  const auto start = Clock::now();
  auto res = c->Get("/v1/discovery");
  if (!res) return unreachable(ep, "GET /v1/discovery", res.error(), start);
  if (res->status != 200)
    return make_error(Errc::store_write,
                      "notary discovery failed with HTTP " + std::to_string(res->status) + ": " + res->body);
  json d = json::parse(res->body, nullptr, false);
  if (d.is_discarded()) return make_error(Errc::store_write, "notary discovery is not a JSON object");
  GITLOCKS_CHECK(check_discovery_document(d, pins, ep.allow_test_clock, "notary " + ep.url));
  return d;
}

Result<std::string> notary_admit(const NotaryEndpoint& ep, const std::string& request_stored) {
  GITLOCKS_TRY(c, connect(ep));
  const auto start = Clock::now();
  auto res = c->Post("/v1/admit", request_stored, "application/json");
  if (!res) return unreachable(ep, "POST /v1/admit", res.error(), start);
  if (res->status == 200) return res->body;
  json e = json::parse(res->body, nullptr, false);
  const std::string quoted = e.is_discarded() ? json(res->body).dump() : e.dump();
  if (res->status == 422)
    return make_error(Errc::guard_window, "the notary's admission time is outside the guard interval: " + quoted);
  return make_error(Errc::store_write, "notary refused admission with HTTP " + std::to_string(res->status) + ": " +
                                           quoted + "; nothing was published");
}

Result<std::int64_t> proposal_now_ms() {
  if (const char* o = std::getenv("GIT_LOCKS_NOW_MS"); o && *o)
    return make_error(Errc::usage,
                      "GIT_LOCKS_NOW_MS is refused: this store uses trusted admission time from its "
                      "notary, never a client clock");
  if (const char* p = std::getenv("GIT_LOCKS_PROPOSAL_MS"); p && *p) return parse_count(p, "GIT_LOCKS_PROPOSAL_MS");
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace gitlocks::cli
