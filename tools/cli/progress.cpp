#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace gitlocks::cli {

Progress::Progress(std::string title, bool quiet) : title_(std::move(title)) {
  enabled_ = !quiet && ::isatty(STDERR_FILENO) == 1;
  start_ = last_draw_ = std::chrono::steady_clock::now();
  if (const char* d = std::getenv("GIT_PROGRESS_DELAY"); d && *d) {
    char* end = nullptr;
    const long s = std::strtol(d, &end, 10);
    if (end && *end == '\0' && s >= 0 && s <= 3600) delay_ = std::chrono::milliseconds(s * 1000);
  }
}

Progress::~Progress() { finish(); }

void Progress::update(std::size_t done, std::size_t total) {
  done_ = done;
  total_ = total;
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!shown_ && now - start_ < delay_) return;
  const int percent = total ? static_cast<int>(done * 100 / total) : 100;
  if (drawn_ && percent == last_percent_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_percent_ = percent;
  last_draw_ = now;
  draw(false);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (shown_) draw(true);
}

void Progress::clear() {
  if (!drawn_) return;
  std::string blank = "\r" + std::string(last_width_, ' ') + "\r";
  std::fwrite(blank.data(), 1, blank.size(), stderr);
  std::fflush(stderr);
  drawn_ = false;
}

void Progress::draw(bool final) {
  const int percent = total_ ? static_cast<int>(done_ * 100 / total_) : 100;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%3d%% (%zu/%zu)", percent, done_, total_);
  std::string line = title_ + ": " + buf;
  if (final) line += ", done.";
  // Pad over a longer previous line (git does the same).
  const std::size_t width = line.size();
  if (width < last_width_) line += std::string(last_width_ - width, ' ');
  last_width_ = width;
  line = "\r" + line + (final ? "\n" : "");
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  shown_ = true;
  drawn_ = !final;
}

}  // namespace gitlocks::cli
