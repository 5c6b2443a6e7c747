// The CPU Adam started during backward (SuperOffload's speculation, beyond DeepSpeed's default of
// waiting for the whole backward): as soon as a group's reduced gradient shard is on the host at the
// last micro-step, a worker thread updates it with the step's AdamW as if the gradient needs neither
// clipping nor an overflow skip, after saving the group's master, m, v and working params. step() then
// validates: the same AdamStep as the real one means the update is already done; anything else
// (clipping triggered, an fp16 overflow, another scale) restores the saved values, so the result is
// bitwise the step without overlap. Groups qualify when the CPU Adam updates them from host-tier
// states and a host-tier gradient shard (stages 2-3 with the optimizer on cpu), and their working
// params live on the device or the host tier; the first share of them backward hands over is covered.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/buffer_plan.h"
#include "zero/group_state.h"
#include "zero/optimizer_plan.h"

namespace tz {

class SpeculativeAdam {
 public:
  // Whether the plan runs the optimizer speculatively (OffloadOptions::overlap_optimizer resolved for
  // the device) and a group qualifies.
  static bool enabled(const OptimizerPlan& plan);
  // Per group: whether speculation covers it (it qualifies, and it is among the groups backward hands
  // over first, up to OffloadOptions::overlap_optimizer_share of the qualifying elements).
  static std::vector<bool> covered(const OptimizerPlan& plan);
  // The saved copies: one pinned host arena, (12 + working dtype size) bytes per optimizer element of
  // every qualifying group.
  static std::vector<BufferSpec> buffers(const OptimizerPlan& plan);

  SpeculativeAdam(const OptimizerPlan& plan, std::vector<GroupState>& groups, PlannedBuffers& planned);
  ~SpeculativeAdam();  // stops the worker (after its current task); never throws
  SpeculativeAdam(const SpeculativeAdam&) = delete;
  SpeculativeAdam& operator=(const SpeculativeAdam&) = delete;

  // Queues group g's speculative update with `adam` (clip 1, this step's lr, t and unscale) and
  // `weight_decay`; ignored for a group that does not qualify or is already queued this step.
  void start(int g, const AdamStep& adam, float weight_decay);
  // Waits for every queued update; rethrows the first error one of them raised.
  void finish();
  // After finish(): whether group g was updated speculatively with exactly (adam, weight_decay).
  bool done_with(int g, const AdamStep& adam, float weight_decay) const;
  bool started(int g) const { return state_[g] != State::idle; }
  // After finish(): puts back group g's saved master, m, v and working params (host-tier params).
  void roll_back(int g);
  // The working params the speculative update wrote for a group whose params live on the device (to be
  // copied up when the update is kept); null otherwise.
  const std::uint8_t* working_out(int g);
  // Ends the step: every group idle again.
  void reset();

  // Groups whose speculative update was kept or rolled back since the last call (the step's metrics).
  std::pair<int, int> take_counts() { return {std::exchange(kept_, 0), std::exchange(rolled_back_, 0)}; }
  void count_kept() { ++kept_; }

 private:
  enum class State { idle, queued, done };
  struct Task {
    int g;
    AdamStep adam;
    float wd;
  };
  void run();
  void update(const Task& t);
  float* saved(int g, int which);  // 0 master, 1 m, 2 v
  std::uint8_t* saved_working(int g);

  OptimizerPlan plan_;
  std::vector<GroupState>& groups_;
  Buffer<std::uint8_t> arena_;
  std::vector<std::size_t> offset_;  // per group: its bytes in the arena (qualifying groups)
  std::vector<bool> covered_;
  std::vector<State> state_;
  std::vector<Task> task_of_;
  int kept_ = 0, rolled_back_ = 0;

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Task> queue_;
  int running_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace tz
