// progress.h — git-style progress on a terminal (issue 16): one line on
// stderr, redrawn in place,
//   Verifying commits:  42% (2100/5000)
//   Verifying commits: 100% (5000/5000), done.
// shown only when stderr is a terminal, the work is still running after a
// delay (1 s, or $GIT_PROGRESS_DELAY seconds as git honours it), and the
// caller did not ask for --quiet. Redrawn at most every 100 ms or on a new
// percentage. When stdout is the same terminal, clear() erases the line
// before the caller writes there, so the two never interleave.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace gitlocks::cli {

class Progress {
 public:
  Progress(std::string title, bool quiet);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  void update(std::size_t done, std::size_t total);
  // Ends the line with ", done." (when it was ever shown).
  void finish();
  // Erases the line (before writing to a stdout on the same terminal); the
  // next update() draws it again.
  void clear();
  bool shown() const { return shown_; }

 private:
  void draw(bool final);
  std::string title_;
  bool enabled_ = false;
  bool shown_ = false;
  bool drawn_ = false;  // the line is on the screen now
  bool finished_ = false;
  std::size_t done_ = 0, total_ = 0;
  int last_percent_ = -1;
  std::size_t last_width_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::chrono::milliseconds delay_{1000};
};

}  // namespace gitlocks::cli
