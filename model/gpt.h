// GPT-2 forward and backward over flat parameter groups, hand-written per block (no autograd), with
// optional activation checkpointing. The model owns activations; parameters come from a ParamProvider.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device.h"
#include "model/gpt_config.h"
#include "model/param_layout.h"
#include "model/param_provider.h"

namespace tz {

enum class ActivationCheckpointing { off, per_block };

struct GptShape {
  int B = 4;   // micro-batch
  int T = 64;  // sequence length (<= max_seq_len)
};

class Gpt {
 public:
  // param_dtype: the working dtype of parameters and matmul inputs (f32, bf16 or f16); activations
  // and gradients are fp32. Allocates every activation buffer now, on `dev`, under its budget.
  // checkpoint_dev: where the per-block checkpoints (the residual stream entering each block) live; by
  // default the compute device. Another tier (the host) holds them when activations are offloaded.
  Gpt(Device& dev, const GptConfig& cfg, GptShape shape, DType param_dtype, ActivationCheckpointing ckpt,
      Device* checkpoint_dev = nullptr);
  ~Gpt();
  Gpt(const Gpt&) = delete;
  Gpt& operator=(const Gpt&) = delete;

  const GptConfig& config() const { return cfg_; }
  const ParamLayout& layout() const { return layout_; }
  GptShape shape() const { return shape_; }
  DType param_dtype() const { return dtype_; }

  // Bytes of activation and scratch buffers this model allocated (for the memory plan).
  std::size_t activation_bytes() const { return act_bytes_; }
  // Bytes of the block checkpoints when they live on checkpoint_dev (0 when on the compute device).
  std::size_t offloaded_checkpoint_bytes() const { return offloaded_ckpt_bytes_; }
  // What activation_bytes() would be, without allocating.
  static std::size_t activation_bytes_for(const GptConfig& cfg, GptShape shape, DType param_dtype,
                                          ActivationCheckpointing ckpt);

  // Runs forward on B*T tokens and returns the mean cross-entropy loss. The logits are replaced by
  // their gradient scaled by dloss_scale / (B*T) (the mean's derivative times the caller's scale, e.g.
  // 1/grad_accum or the fp16 loss scale), ready for backward().
  float forward(ParamProvider& params, const std::int32_t* inputs, const std::int32_t* targets, float dloss_scale);

  // Backward through the whole model, accumulating into the provider's gradients.
  void backward(ParamProvider& params);

  // Per-position losses of the last forward (B*T).
  const float* losses() const { return losses_.data(); }

 private:
  struct BlockActs;
  void block_forward(int layer, CView p, const float* res_in, BlockActs& a, float* res_out);
  void block_backward(int layer, CView p, float* g, const float* res_in, BlockActs& a, float* dres);
  // out[BT, OC] (+)= inp[BT, IC] @ W[IC, OC] + b, with inp cast to the working dtype when needed.
  void linear_forward(float* out, const float* inp, void* inp_lp, CView w, CView b, int IC, int OC, Accumulate acc);
  CView lowp(const float* x, void* scratch, std::size_t n);

  Device& dev_;
  Backend& be_;
  GptConfig cfg_;
  ParamLayout layout_;
  GptShape shape_;
  DType dtype_;
  ActivationCheckpointing ckpt_;
  std::size_t act_bytes_ = 0, offloaded_ckpt_bytes_ = 0;

  std::vector<Buffer<float>> residual_;  // L+1 residual streams [BT, C]; residual_[0] is the embedding output
  std::vector<BlockActs> acts_;          // L sets, or 1 shared set with checkpointing
  Buffer<float> lnf_, lnf_mean_, lnf_rstd_, logits_, losses_;
  Buffer<std::int32_t> inputs_, targets_;
  // backward scratch
  Buffer<float> dres_, dln_, datty_, dqkv_, dfch_, datt_;
  Buffer<std::uint16_t> lp_act_;   // low-precision copy of a matmul input (bf16/fp16 runs only)
  Buffer<std::uint16_t> lp_grad_;  // low-precision copy of an output gradient
};

}  // namespace tz
