// tools/notary/notary.h — the trusted-time notary (SPEC §6, seed 002) as a
// small library, for `git-locks notary keygen|serve` and for tests.
//
// The notary holds an Ed25519 service key. For each admission request (the
// actor-signed bindings, packet digest and guard interval of one transition;
// never the packet body) it reads its clock T, refuses clock rollback against
// a durably persisted high-water mark, checks lo <= T <= hi, persists T, and
// only then returns the signed attestation. docs/NOTARY.md is the operator's
// guide and lists every HTTP error code.
//
// Every entry point returns a process exit status: 0 success, 2 the key,
// the state directory or the socket failed, 64 usage (bad flag or config).
// Nothing here throws.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gitlocks::notary {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 2;
inline constexpr int kExitUsage = 64;

inline constexpr std::size_t kDefaultMaxRequestBytes = 64 * 1024;
inline constexpr std::size_t kMinRequestBytes = 1024;  // a request is about 900 bytes
inline constexpr std::size_t kMaxRequestBytesLimit = 16 * 1024 * 1024;

// ---------------------------------------------------------------- key file

// Writes a new service key file at `out_path`: exactly one line, the 32-byte
// Ed25519 seed as 64 lowercase hex digits followed by "\n", mode 0600:
// written beside it, fsynced, and linked into place (never overwrites an
// existing file), then the directory fsynced (fsio.h). On success returns 0
// and, when `service_key` is given, stores the public key (64 hex) there. On
// failure returns 2 (or 64 for an empty path) and sets `error` to a one-line
// message; nothing is left behind.
int notary_keygen(const std::string& out_path, std::string& error, std::string* service_key = nullptr);

// ---------------------------------------------------------------- service

struct NotaryConfig {
  std::string key_path;                // a file made by notary_keygen; refused unless owner-only (no group/other bits)
  std::string state_dir;               // created (0700) if missing; holds the high-water mark, locked while serving
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0 picks a free port; IPv6 as [::1]:PORT
  std::string audience;                // the service audience clients pin (1..256 printable ASCII bytes)
  bool test_clock = false;             // T from <state_dir>/test-clock-ms, advertised and signed as "clock":"test"
  bool allow_remote = false;           // permit a non-loopback listen address
  std::size_t max_request_bytes = kDefaultMaxRequestBytes;  // in [kMinRequestBytes, kMaxRequestBytesLimit]
};

// Validates the config, loads the key and the state (refusing a missing,
// malformed or group/world-accessible key, an unwritable, locked or corrupt
// state directory, a non-loopback address without allow_remote), binds,
// prints one JSON line on stdout
//   {"audience":A,"clock":"system"|"test","listening":"HOST:PORT","service_key":HEX}
// and serves until SIGINT or SIGTERM; in-flight requests finish, then it
// prints {"stopped":SIGNAL} and returns 0. Start-up failures print one JSON
// line on stderr, {"error":"notary-start","code":CODE,"op":"notary serve",
// "detail":TEXT}, and return 64 (config) or 2 (key, state, socket).
//
// SIGINT and SIGTERM are blocked in the calling thread while serving and
// consumed by a watcher thread; call this from the main thread before
// starting other threads (or block those signals in them).
int notary_serve(const NotaryConfig& config);

// ---------------------------------------------------------------- command

// The `notary` sub-command's arguments, after the word "notary":
//   keygen --out FILE
//   serve --key FILE --state DIR --listen HOST:PORT --audience NAME
//         [--test-clock] [--allow-remote] [--max-request-bytes N]
// Flags take "--flag VALUE" or "--flag=VALUE". keygen prints
// {"key_file":FILE,"service_key":HEX} on success. Usage errors print
// {"error":"usage","code":"usage","op":"notary ...","detail":TEXT} and
// return 64.
int notary_command(const std::vector<std::string>& args);

}  // namespace gitlocks::notary
