// GPT-2 forward and backward over flat parameter groups, hand-written per block (no autograd), with
// optional activation checkpointing. The model owns activations; parameters come from a ParamProvider.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer_plan.h"
#include "core/device.h"
#include "model/activation_checkpoints.h"
#include "model/gpt_layout.h"
#include "model/lm_head.h"
#include "model/model.h"

namespace tz {

class Gpt final : public Model {
 public:
  // Every buffer the model allocates (activations, checkpoints, scratch), for the memory plan.
  // pr: the working dtype of parameters and matmul inputs (f32, bf16 or f16) and that of activations and
  // their gradients (the same, or fp32). checkpoint_kind: where the per-block checkpoints (the residual stream
  // entering each block) live: device memory, or the host tier when activations are offloaded (then
  // with device staging buffers the kernels use instead: see ActivationCheckpoints).
  // `device` decides the matmul workspace (the products whose 16-bit inputs it widens).
  static std::vector<BufferSpec> buffers(const ModelConfig& cfg, ModelShape shape, Precision pr,
                                         ActivationCheckpointing ckpt,
                                         MemoryKind checkpoint_kind = MemoryKind::device,
                                         DeviceKind device = DeviceKind::cpu);
  // Every matrix product forward and backward run, activations' outputs in `act`.
  static std::vector<GemmShape> gemm_shapes(const ModelConfig& cfg, ModelShape shape, DType act);
  // Rows of logits the LM head materialises at once: all B*T rows while they fit kLmHeadChunkBytes, else
  // chunks of this many rows (forward keeps only each chunk's losses; backward recomputes the chunks
  // but the last, whose gradient forward left in place).
  static int logits_rows(const ModelConfig& cfg, ModelShape shape);

  // The groups in the order backward reports their gradients ready (grad_ready): the final norm, the
  // blocks from the last to the first, then the embedding (its gradient is finished by the encoder).
  static std::vector<int> gradient_order(const ParamLayout& layout);

  // Takes every buffer buffers() lists from `planned` (which the caller checks is then complete).
  Gpt(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
      PlannedBuffers& planned, MemoryKind checkpoint_kind = MemoryKind::device);
  // The same with a plan of its own (tests and benchmarks that run the model alone).
  Gpt(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
      MemoryKind checkpoint_kind = MemoryKind::device);
  ~Gpt();  // takes its workspace back from the backend
  Gpt(const Gpt&) = delete;
  Gpt& operator=(const Gpt&) = delete;

  const ModelConfig& config() const override { return cfg_; }
  const ParamLayout& layout() const override { return layout_; }
  ModelShape shape() const override { return shape_; }
  DType param_dtype() const { return dtype_; }
  DType act_dtype() const { return act_; }

  std::size_t activation_bytes() const override { return act_bytes_; }
  std::size_t offloaded_checkpoint_bytes() const override { return offloaded_ckpt_bytes_; }

  // Model's forward; the logits are replaced by their gradient.
  void forward(ParamProvider& params, const std::int32_t* inputs, const std::int32_t* targets, float dloss_scale,
               double* loss_sum, Stream& stream) override;
  void backward(ParamProvider& params, Stream& stream) override;

 private:
  struct BlockActs;
  void init(PlannedBuffers& planned);
  void take_buffers(PlannedBuffers& planned);
  void block_forward(Stream& s, int layer, CView p, CView res_in, BlockActs& a, View res_out);
  void block_backward(Stream& s, int layer, CView p, float* g, CView res_in, BlockActs& a, View dres);
  // out[BT, OC] (+)= inp[BT, IC] @ W[IC, OC] + b, with inp cast to the working dtype when needed.
  void linear_forward(Stream& s, View out, CView inp, void* inp_lp, CView w, CView b, int IC, int OC,
                      Accumulate acc);
  // x in the working dtype: itself, or (fp32 activations of 16-bit parameters) cast into scratch.
  CView lowp(Stream& s, CView x, void* scratch, std::size_t n);
  void copy_acts(Stream& s, View out, CView x, std::size_t n);
  // The LM head's arguments over this model's buffers (model/lm_head.h).
  LmHead lm_head(CView x, CView head);

  std::unique_ptr<PlannedBuffers> own_;  // the plan of the self-planning constructor
  Device& dev_;
  Backend& be_;
  ModelConfig cfg_;
  GptOffsets off_;      // before layout_, whose initialiser fills it
  ParamLayout layout_;
  ModelShape shape_;
  DType dtype_;  // parameters and matmul inputs
  DType act_;    // activations and their gradients
  ActivationCheckpointing ckpt_;
  MemoryKind ckpt_kind_;
  std::size_t act_bytes_ = 0, offloaded_ckpt_bytes_ = 0;

  std::unique_ptr<ActivationCheckpoints> ckpts_;  // L+1 residual streams [BT, C]; [0] is the embedding output
  std::vector<BlockActs> acts_;          // L sets, or 1 shared set with checkpointing
  DynBuffer lnf_, logits_;
  Buffer<float> lnf_mean_, lnf_rstd_, losses_;
  float dloss_ = 0;  // forward's loss-gradient factor, for backward's recomputed logits chunks
  Buffer<std::int32_t> inputs_, targets_;
  // backward scratch
  DynBuffer dres_, dln_, datty_, dqkv_, dfch_;
  Buffer<float> datt_;             // the attention's scratch
  Buffer<std::uint16_t> lp_act_;   // low-precision copy of a matmul input (fp32 activations, 16-bit parameters)
  Buffer<std::uint16_t> lp_grad_;  // low-precision copy of an output gradient
  Buffer<float> gemm_workspace_;   // widened matmul inputs, where the device widens them
};

}  // namespace tz
