// The training engine on one rank: working params, fp32 gradients and the AdamW states per flat
// group, the optimizer step with global-norm clipping. It is the model's ParamProvider. (ZeRO
// partitioning across ranks extends this with shard maps; here every group is whole.)
#pragma once

#include <cstdint>
#include <vector>

#include "core/device.h"
#include "model/gpt.h"
#include "model/param_layout.h"
#include "zero/lr_schedule.h"

namespace tz {

struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
  float grad_clip = 1.0f;  // max global gradient norm; 0 disables clipping
};

struct StepStats {
  int step = 0;
  float lr = 0;
  double grad_norm = 0;
};

class Engine final : public ParamProvider {
 public:
  // Takes fp32 initial values per group (from init_gpt_params or a safetensors file).
  Engine(Device& dev, const ParamLayout& layout, DType working, const std::vector<std::vector<float>>& init,
         AdamConfig adam, LrConfig lr);

  CView acquire(int group, Pass pass) override;
  void release(int group, Pass pass) override {}
  float* grad(int group) override { return grads_[group].data(); }
  void grad_ready(int group) override {}

  // Clips by the global norm, applies AdamW to every group, zeroes the gradients. Throws when the
  // gradient is NaN/Inf, naming the step.
  StepStats step();

  void zero_grad();
  int steps_done() const { return step_; }
  // fp32 master values of a group (the working params when training in fp32).
  const float* master(int group) const;
  std::size_t persistent_bytes() const { return persistent_bytes_; }

 private:
  Device& dev_;
  const ParamLayout& layout_;
  DType working_;
  AdamConfig adam_;
  LrConfig lr_;
  int step_ = 0;
  std::size_t persistent_bytes_ = 0;
  std::vector<Buffer<std::uint16_t>> params_lp_;  // working params when not fp32
  std::vector<Buffer<float>> master_, m_, v_, grads_;
};

}  // namespace tz
