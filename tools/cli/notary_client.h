// notary_client.h — the CLI's HTTP client of a notary (SPEC §6, seed 002;
// docs/NOTARY.md is the server side).
//
// GET /v1/discovery is checked explicitly: both profiles the store needs
// (signed-private-guard-time-v1 and time-add-guard-window-v1, never one
// inferred from the other), the audience and service key equal to the pins,
// and no test clock unless --allow-test-clock. POST /v1/admit sends a stored
// admission request and returns the stored attestation. Error mapping:
//   notary unreachable / timed out        store_write
//   422 guard-window                      guard_window (refused, exit 1)
//   any other HTTP error                  store_write, the notary's JSON
//                                         error quoted in the message
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli.h"
#include "gitlocks/attest.hpp"
#include "gitlocks/transition.hpp"

namespace gitlocks::cli {

// Defaults of `git config locks.notaryConnectTimeout` / `locks.notaryReadTimeout`
// (docs/CLI.md): a notary that accepts the connection and never answers
// fails the command after the read timeout (exit 2), never hangs it.
inline constexpr std::int64_t kNotaryConnectTimeoutMs = 3000;
inline constexpr std::int64_t kNotaryReadTimeoutMs = 10000;
inline constexpr std::int64_t kNotaryMaxTimeoutMs = 600000;

struct NotaryEndpoint {
  std::string url;  // http://HOST:PORT
  bool allow_test_clock = false;
  std::int64_t connect_timeout_ms = kNotaryConnectTimeoutMs;
  std::int64_t read_timeout_ms = kNotaryReadTimeoutMs;  // also the write timeout
};

// --notary URL, else `git config locks.notary`; the timeouts from
// `git config locks.notaryConnectTimeout|locks.notaryReadTimeout` (durations,
// 1 ms to 10 min). Errors: usage when no URL is set, the URL is not
// http://HOST:PORT, or a timeout is not such a duration.
Result<NotaryEndpoint> notary_endpoint(Context& ctx);

// The connect and read timeouts of the notary and the witnesses (ms): `git
// config locks.notaryConnectTimeout|locks.notaryReadTimeout`. Errors: usage.
Result<std::pair<std::int64_t, std::int64_t>> http_timeouts(Context& ctx);

// Fetches discovery and checks it against `pins` (the store's, or those an
// owner is about to pin). Returns the discovery document.
Result<json> check_discovery(const NotaryEndpoint& ep, const Pins& pins);

// POST /v1/admit with a stored admission request; the stored attestation.
Result<std::string> notary_admit(const NotaryEndpoint& ep, const std::string& request_stored);

// The proposal clock of a guard-time store: the system clock, or the test
// seam $GIT_LOCKS_PROPOSAL_MS. It only proposes expires_at; T is the
// notary's. Refuses $GIT_LOCKS_NOW_MS (usage): a fixed client clock must
// never stand in for trusted time.
Result<std::int64_t> proposal_now_ms();

}  // namespace gitlocks::cli
