// admission.h — the notary's decision for one admission request, apart from
// HTTP: open and verify the request, read T, refuse rollback and T outside
// the interval, persist T, sign. Replies are canonical JSON bodies with the
// HTTP status that fits (docs/NOTARY.md lists every error code).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "gitlocks/attest.hpp"
#include "state.h"

namespace gitlocks::notary {

struct Reply {
  int status = 200;
  std::string body;  // canonical JSON: the stored attestation, or {"detail","error",...}
};

// {"detail":DETAIL,"error":CODE} plus the members of `extra` (an object).
Reply error_reply(int status, std::string_view code, const std::string& detail, const json& extra = json::object());

class Admitter {
 public:
  Admitter(const KeyPair& service, std::string audience, StateDir& state, bool test_clock,
           std::size_t max_request_bytes);
  ~Admitter();
  Admitter(const Admitter&) = delete;
  Admitter& operator=(const Admitter&) = delete;

  const Pins& pins() const { return pins_; }
  // {"audience","clock","max_request_bytes","profiles","service_key"}
  Reply discovery() const;
  // Safe to call from many threads: admissions are serialised, so the
  // high-water mark and the sequence of signed T are non-decreasing.
  Reply admit(std::string_view request);

 private:
  bool read_clock(std::int64_t& t, std::string& error) const;

  KeyPair service_;
  Pins pins_;
  StateDir& state_;
  bool test_clock_;
  std::size_t max_request_bytes_;
  std::mutex mutex_;
};

}  // namespace gitlocks::notary
