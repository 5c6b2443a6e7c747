// Progress: one line for long work that is not a training step (loading a Hugging Face folder, writing
// one, saving, verifying and resuming checkpoints, `ckpt export`, `data prepare`): bytes done, the rate
// and the time left. It is drawn in place on a terminal only: rank 0's stderr a tty and not a Slurm job
// step (whose output goes to a file however srun is run), and the line is wiped when the work ends, so
// the log that follows reads as without it. A log, a pipe or `sbatch` output gets nothing.
// TZ_PROGRESS=0 turns it off; TZ_PROGRESS=1 turns it on anywhere, as whole lines (for a test or a log
// that wants it).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tz {

class Progress {
 public:
  // `what` says the work ("saving checkpoint step-00000040"); `total` is its bytes (0: unknown, the line
  // then shows the bytes and the rate only).
  Progress(std::string what, std::uint64_t total);
  // Wipes the line (terminal) or writes the last figures (TZ_PROGRESS=1), if anything was drawn.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Adds `bytes` done; redraws at most every 200 ms.
  void advance(std::uint64_t bytes);

  // How this process shows progress, decided once from TZ_PROGRESS, the rank, SLURM_JOB_ID and stderr.
  enum class Mode { off, terminal, lines };
  static Mode mode();

  // The text of the line: "WHAT: 1.2 GiB of 4.8 GiB (25%), 812.0 MB/s, 4 s left" (for a test).
  static std::string text(const std::string& what, std::uint64_t done, std::uint64_t total, double seconds);

 private:
  void draw(bool last);

  std::string what_;
  std::uint64_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_, drawn_at_;
  bool drawn_ = false;
  Mode mode_;
};

}  // namespace tz
