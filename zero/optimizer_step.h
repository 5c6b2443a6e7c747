// The optimizer step over this rank's groups: the global gradient norm (per-group partial sums in
// group order, one fp64 all-reduce of a device scalar), then AdamW over every group's optimizer range
// in pieces, where each group's placement says: the device's AdamW on device states, or the CPU Adam on
// the host (states on the host tier, staged from the device, or streamed from NVMe by the optimizer
// swapper), with the updated working params written where they live (device, host tier, or NVMe through
// the parameter swapper's asynchronous write-back); then the all-gather of whole params,
// bucket by bucket, each as soon as its groups are updated (beside the updates of the later groups); and
// zeroing.
// Both AdamWs are the same arithmetic (core/cpu_adam.h), so every placement gives the same bits.
//
// Streams: the device's AdamW runs on the compute stream; what crosses between the tiers moves on two
// copy streams of the step's own, device-to-host (device arrays a host update reads, working params a
// device update made for a shard off the device) and host-to-device (what a host update wrote back,
// kept speculative updates' working params), so on a GPU the staging of the host-updated groups runs
// beside the device AdamW of the others (the twin flow) instead of queueing behind it. The down stream
// waits by event for the compute stream's work up to update() (backward's gradients); the host waits
// for each staged piece before it uses it or reuses its staging.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/backend.h"
#include "core/buffer_plan.h"
#include "zero/group_state.h"
#include "zero/optimizer_plan.h"
#include "zero/optimizer_swapper.h"
#include "zero/param_swapper.h"
#include "zero/speculative_adam.h"
#include "zero/zero_options.h"

namespace tz {

class OptimizerStep {
 public:
  static std::vector<BufferSpec> buffers(const OptimizerPlan& plan);

  OptimizerStep(Device& dev, Stream& stream, Communicator& comm, OptimizerPlan plan,
                std::vector<GroupState>& groups, PlannedBuffers& planned, OptimizerSwapper* optimizer_swap,
                ParamSwapper* param_swap, std::size_t allgather_bucket);

  // The sum over ranks of every rank's sum of squares of the reduced gradient over its shard of every
  // group (the same arithmetic at every stage), NaN when any gradient a rank updates from is not finite.
  double global_norm_squared();
  // AdamW over every group (`adam` with the step's lr, step and gradient scale; weight decay per
  // tensor), the working params written back, whole params all-gathered.
  // Groups updated speculatively during backward with exactly (adam, weight_decay) are kept (their
  // device params copied up); any other speculative update is rolled back and redone.
  void update(const AdamStep& adam, float weight_decay);
  void zero_grads();

  // Speculation (null when the plan has it off): start() as each group's reduced gradient reaches the
  // host at the last micro-step; discard_speculation() when the step is skipped.
  SpeculativeAdam* speculation() { return spec_.get(); }
  void discard_speculation();

 private:
  struct HostStaging;
  void update_on_device(GroupState& g, std::size_t begin, std::size_t n, const AdamStep& a, float wd);
  // p, m, v: the states streamed from NVMe, or null; `piece`: compressed states' piece [begin, begin + n),
  // in `arrays` (a record streamed from NVMe, the piece's begin its own) or else the group's.
  void update_on_host(GroupState& g, std::size_t begin, std::size_t n, float* p, float* m, float* v,
                      const AdamStep& a, float wd, const StatePiece* piece = nullptr,
                      const CompressedArrays* arrays = nullptr);
  // Compressed states on the device: the backend's adamw_compressed, then the working params from the master.
  void update_packed_on_device(GroupState& g, std::size_t begin, const StatePiece& p, const CompressedArrays& a,
                               const AdamStep& adam, float wd);
  // Updated working params at `out` (device) down to the shard off the device, in host memory or the store.
  void params_down(GroupState& g, std::size_t begin, std::size_t n, const std::uint8_t* out);
  // A compressed piece of group g at optimizer-range element `begin`, in `a` (its begin its own there).
  void update_piece(GroupState& g, std::size_t begin, const StatePiece& p, const CompressedArrays& a,
                    const AdamStep& adam, float wd);
  // Params kept in the NVMe store take a compressed piece's working values through a window of
  // update_chunk elements on the chunk's grid (the fp32 path's sub-groups, each on a block), written back
  // when the next piece leaves it: pieces start where tensors do, not on blocks.
  void write_params_window(GroupState& g, std::size_t begin, std::size_t n, const CompressedArrays& a,
                           std::size_t from);
  void flush_params_window();
  // Launches, in order, each all-gather bucket whose groups are all updated (updated_), as one collective
  // group; update() waits for them all at its end.
  void launch_regathers();
  // Resolves group g's speculative update: true when it stands (nothing left to do for g).
  bool keep_speculative(GroupState& g, const AdamStep& a, float wd);

  Device& dev_;
  Backend& be_;
  Stream& stream_;
  Communicator& comm_;
  OptimizerPlan plan_;
  std::vector<GroupState>& groups_;
  OptimizerSwapper* optimizer_swap_;
  ParamSwapper* param_swap_;
  std::size_t allgather_bucket_;
  std::uint8_t* window_ = nullptr;  // the params window's write-back buffer, null when none is open
  int window_g_ = 0;
  std::size_t window_lo_ = 0;
  Buffer<double> partials_;  // device: one partial sum per group, then the total
  Buffer<double> readback_;  // pinned: host groups' partials, then the total read back
  Buffer<float> stage_grad_, stage_master_, stage_m_, stage_v_;  // pinned: device arrays a host update reads
  Buffer<std::uint8_t> stage_params_;                            // pinned: working params going up
  Buffer<std::uint8_t> device_params_out_;                       // device: working params going down
  std::unique_ptr<Event> copied_;  // the compute stream's copies (the norm's readback)
  std::unique_ptr<Stream> down_, up_;                            // copy streams: device to host, host to device
  std::unique_ptr<Event> computed_, down_done_, up_done_;
  std::unique_ptr<SpeculativeAdam> spec_;
  std::vector<std::vector<int>> regather_buckets_;  // groups all-gathered after the step, by bucket
  std::vector<char> updated_;                       // per group: updated in this step
  std::vector<std::vector<StatePiece>> pieces_;     // per group: its compressed states' update pieces
  std::size_t next_regather_ = 0;                   // the first bucket not launched yet
  std::vector<std::unique_ptr<Work>> regathers_;    // launched this step
};

}  // namespace tz
