// Progress: the line's text, when it is drawn, and where.
#include "core/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/memory_budget.h"

namespace tz {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kRedrawSeconds = 0.2;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string duration_text(double s) {
  char b[32];
  if (s < 60)
    std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s < 3600)
    std::snprintf(b, sizeof b, "%dm%02ds", int(s) / 60, int(s) % 60);
  else
    std::snprintf(b, sizeof b, "%dh%02dm", int(s) / 3600, int(s) % 3600 / 60);
  return b;
}

Progress::Mode decide_mode() {
  const char* env = std::getenv("TZ_PROGRESS");
  if (env && !std::strcmp(env, "0")) return Progress::Mode::off;
  if (log_context().rank != 0) return Progress::Mode::off;  // one line per job, from rank 0
  if (env && !std::strcmp(env, "1")) return Progress::Mode::lines;
  if (std::getenv("SLURM_JOB_ID")) return Progress::Mode::off;
  return isatty(STDERR_FILENO) ? Progress::Mode::terminal : Progress::Mode::off;
}

}  // namespace

Progress::Mode Progress::mode() {
  static const Mode m = decide_mode();
  return m;
}

std::string Progress::text(const std::string& what, std::uint64_t done, std::uint64_t total, double seconds) {
  std::string s = what + ": " + format_bytes(done);
  char b[96];
  if (total > 0) {
    std::snprintf(b, sizeof b, " of %s (%.0f%%)", format_bytes(total).c_str(), 100.0 * double(done) / double(total));
    s += b;
  }
  if (seconds > 0 && done > 0) {
    const double rate = double(done) / seconds;  // bytes per second
    std::snprintf(b, sizeof b, ", %.1f MB/s", rate / 1e6);
    s += b;
    if (total > done) s += ", " + duration_text(double(total - done) / rate) + " left";
  }
  return s;
}

Progress::Progress(std::string what, std::uint64_t total)
    : what_(std::move(what)), total_(total), start_(Clock::now()), drawn_at_(start_), mode_(mode()) {}

Progress::~Progress() {
  if (mode_ == Mode::off || !drawn_) return;
  if (mode_ == Mode::lines) {
    draw(true);
  } else {
    std::fputs("\r\033[K", stderr);  // wipe the line: what follows is printed where it was
    std::fflush(stderr);
  }
}

void Progress::advance(std::uint64_t bytes) {
  done_ += bytes;
  if (mode_ == Mode::off) return;
  if (!drawn_ || seconds_since(drawn_at_) >= kRedrawSeconds) draw(false);
}

void Progress::draw(bool last) {
  const std::string s = text(what_, done_, total_, seconds_since(start_));
  if (mode_ == Mode::lines) {
    std::fprintf(stderr, "progress: %s%s\n", s.c_str(), last ? " (done)" : "");
  } else {
    winsize w{};
    const std::size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 1 ? w.ws_col : 80;
    // One row: a line that wrapped would leave its first row behind at each redraw.
    std::fprintf(stderr, "\r\033[K%s", s.substr(0, cols - 1).c_str());
  }
  std::fflush(stderr);
  drawn_ = true;
  drawn_at_ = Clock::now();
}

}  // namespace tz
