// state.h — the notary's state directory: the durable high-water mark of
// signed admission times, an exclusive lock, and the test-only clock file.
//
//   DIR/lock             flock()ed while a notary serves from DIR
//   DIR/high-water.json  {"format":"gitlocks-notary-state-v1","high_water_ms":N}
//                        and a newline: the largest T ever signed (0 fresh)
//   DIR/test-clock-ms    with the test clock only: T as decimal milliseconds
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "failure.h"

namespace gitlocks::notary {

inline constexpr const char* kLockFile = "lock";
inline constexpr const char* kHighWaterFile = "high-water.json";
inline constexpr const char* kTestClockFile = "test-clock-ms";
inline constexpr const char* kStateFormat = "gitlocks-notary-state-v1";

class StateDir {
 public:
  // Creates DIR (0700) if missing, takes the lock, loads the high-water mark
  // and rewrites it durably to prove the directory writable. Refuses (codes):
  // state-unwritable, state-locked (another notary serves from DIR),
  // state-corrupt (an unreadable high-water file, or none in a directory that
  // was initialised: the mark is never reset silently).
  static std::unique_ptr<StateDir> open(const std::string& dir, StartFailure& failure);
  ~StateDir();
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

  // The largest T ever persisted; not synchronised (the caller serialises).
  std::int64_t high_water() const { return high_water_; }

  // Durably records t as the high-water mark: temp file, fsync, rename,
  // fsync of the directory. On failure the in-memory mark still becomes t
  // (the rename may have landed), so a rollback is never admitted.
  bool persist_high_water(std::int64_t t, std::string& error);

  // Reads DIR/test-clock-ms: decimal digits, optional surrounding whitespace,
  // at most 2^53-1.
  bool read_test_clock(std::int64_t& t, std::string& error) const;

  const std::string& dir() const { return dir_; }

 private:
  explicit StateDir(std::string dir) : dir_(std::move(dir)) {}
  bool write_high_water(std::int64_t t, std::string& error);

  std::string dir_;
  int dir_fd_ = -1;
  int lock_fd_ = -1;
  std::int64_t high_water_ = 0;
};

}  // namespace gitlocks::notary
