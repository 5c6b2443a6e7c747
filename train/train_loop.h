// A Loop: one job's steps on top of a Run (train/run_setup.h): micro-steps with gradient accumulation,
// the optimizer step, the stop flag that rides with the loss, validation, the progress line and the
// per-step metrics.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "train/metrics_file.h"
#include "train/op_profile_report.h"
#include "train/phase_clock.h"
#include "train/rank_stats.h"
#include "train/run_records.h"
#include "train/run_setup.h"
#include "train/stop_signals.h"
#include "train/step_metrics.h"
#include "train/train_hooks.h"
#include "train/train_options.h"
#include "train/trainer.h"

namespace tz {

inline constexpr int kStopSlot = 1, kValSlot = 2;  // in the scalars: [train loss sum, stop flag, val loss sum]

// One job's loop state on top of a Run: the step, validation, logging and metrics.
class Loop {
 public:
  // `start`: the step the run resumes after (0 for a new run). `metrics`: rank 0's --metrics file (the
  // other ranks' write nothing); `id`: the run's id and hosts, for the records.
  Loop(const TrainOptions& opt, Communicator& comm, const LogFn& log, const TrainHooks& hooks, Run& run,
       const StopSignals* stop, int start, MetricsFile& metrics, const RunIdentity& id);
  ~Loop();

  void step(int s, TrainResult& result);
  void validate(int s, TrainResult& result);
  // After the run's last step (however it stopped): --prometheus-textfile gets that step if it has not.
  void finish();
  // Whether a rank saw a stop signal before the last step's reduction (the same on every rank).
  bool stop_requested() const { return stop_requested_; }

 private:
  void log(const std::string& line) const {
    if (comm_.rank() == 0) log_(line);
  }
  void report(int s, float loss, const StepStats& st, const StepTimes& t, const CommStats& before,
              TrainResult& result);
  // --profile-ops: attach the per-op profile before a step of the window; after it, collect, and after
  // the window's last step print the table and write its record.
  bool profiling(int s) const { return profile_ && s >= window_.first && s <= window_.last; }
  void profile_begin(int s);
  void profile_end(int s, const StepTimes& t);
  // Seconds left to --steps at the rate of the last (up to 10) steps, wall time between their ends.
  double eta_seconds(int s, double step_ms);
  void write_prometheus();

  const TrainOptions& opt_;
  Communicator& comm_;
  const LogFn& log_;
  const TrainHooks& hooks_;
  Run& run_;
  const StopSignals* stop_;
  bool stop_requested_ = false;
  MetricsFile& metrics_;
  const RunIdentity& id_;
  RankStats ranks_;  // every rank's figures of the last step
  std::deque<std::chrono::steady_clock::time_point> step_ends_;
  nlohmann::json last_record_;  // the last step's, for --prometheus-textfile
  int prometheus_step_ = 0;     // the step the textfile holds
  nlohmann::json plan_peaks_;
  PhaseClock clock_;  // forward, backward and optimizer on the compute stream's clock
  std::size_t BT_;
  std::unique_ptr<OpProfile> profile_;  // --profile-ops
  ProfileWindow window_;
  ProfileReport report_;  // the window's totals so far
  CommStats comm_at_window_;
};

// An fp16 run whose last loss is not finite diverged, and one whose every step overflowed (and was
// skipped) trained nothing: either fails before its final checkpoint and model are written, as a
// diverged fp32 run does (every rank sees the same reduced losses and skips: all throw). A run a signal
// stopped after skipped steps only is not failed: its checkpoint holds the unchanged, finite weights.
void check_fp16_outcome(const TrainOptions& opt, const TrainResult& r, int start, int last, bool stopped);

}  // namespace tz
