#include "admission.h"

#include <sodium.h>

#include <chrono>

namespace gitlocks::notary {
namespace {

std::string interval_text(std::int64_t lo, std::int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

Reply error_reply(int status, std::string_view code, const std::string& detail, const json& extra) {
  json body = extra.is_object() ? extra : json::object();
  body["error"] = code;
  body["detail"] = detail;
  auto text = canon_dump(body);
  return {status, text.ok() ? *text : R"({"detail":"unencodable error","error":"internal"})"};
}

Admitter::Admitter(const KeyPair& service, std::string audience, StateDir& state, bool test_clock,
                   std::size_t max_request_bytes)
    : service_(service),
      pins_{std::move(audience), to_hex(service.public_key)},
      state_(state),
      test_clock_(test_clock),
      max_request_bytes_(max_request_bytes) {}

Admitter::~Admitter() { sodium_memzero(service_.secret_key.data(), service_.secret_key.size()); }

Reply Admitter::discovery() const {
  json d = {{"audience", pins_.audience},
            {"service_key", pins_.service_key},
            {"profiles", json::array({kProfileGuardTime, kProfileTimeAdd})},
            {"clock", test_clock_ ? "test" : "system"},
            {"max_request_bytes", max_request_bytes_}};
  auto text = canon_dump(d);
  if (!text.ok()) return error_reply(500, "internal", text.error().message);
  return {200, *text};
}

bool Admitter::read_clock(std::int64_t& t, std::string& error) const {
  if (test_clock_) return state_.read_test_clock(t, error);
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count();
  if (now < 0 || now > kMaxSafeInteger) {
    error = "the system clock is outside [0, 2^53-1] ms";
    return false;
  }
  t = static_cast<std::int64_t>(now);
  return true;
}

Reply Admitter::admit(std::string_view request) {
  if (request.size() > max_request_bytes_)
    return error_reply(413, "request-too-large",
                       "the request has " + std::to_string(request.size()) + " bytes; the limit is " +
                           std::to_string(max_request_bytes_));
  // Verification needs no shared state: do it before taking the lock.
  auto req = open_admission_request(request);
  if (!req.ok()) {
    const Error& e = req.error();
    int status = e.code == Errc::bad_signature ? 403 : 400;
    return error_reply(status, errc_name(e.code), e.message);
  }
  const std::int64_t lo = (*req)["interval"][0].get<std::int64_t>();
  const std::int64_t hi = (*req)["interval"][1].get<std::int64_t>();

  std::lock_guard<std::mutex> lock(mutex_);
  std::int64_t t = 0;
  std::string error;
  if (!read_clock(t, error)) return error_reply(503, "clock-unavailable", error);
  const std::int64_t mark = state_.high_water();
  if (t < mark)
    return error_reply(409, "clock-rollback",
                       "T = " + std::to_string(t) + " is below the high-water mark " + std::to_string(mark) +
                           " of times already signed; refusing to sign",
                       {{"t", t}, {"high_water_ms", mark}});
  if (t < lo || t > hi)
    return error_reply(422, "guard-window",
                       "T = " + std::to_string(t) + " is outside the guard interval " + interval_text(lo, hi),
                       {{"t", t}, {"interval", json::array({lo, hi})}});
  // Durable before any signature over t leaves this process.
  if (t > mark && !state_.persist_high_water(t, error)) return error_reply(503, "state-unwritable", error);
  auto att = make_attestation(*req, pins_, t, test_clock_, service_);
  if (!att.ok()) return error_reply(500, "internal", att.error().message);
  return {200, std::move(*att)};
}

}  // namespace gitlocks::notary
