// The Llama family's forward and backward (Llama 3.x, Qwen2, Mistral), hand-written per block like GPT-2's:
// token embedding; per block RMSNorm, q/k/v in one product (the three matrices lie back to back in the
// group: model/llama_layout.h), rotary embedding, grouped-query attention, the output projection and the
// residual, RMSNorm, gate and up in one product, SwiGLU, down and the residual; a final RMSNorm; the head,
// tied to the embedding or not. Activations and their gradients are in the activation dtype, statistics fp32;
// parameters come in the working dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer_plan.h"
#include "core/device.h"
#include "model/activation_checkpoints.h"
#include "model/llama_layout.h"
#include "model/lm_head.h"
#include "model/model.h"

namespace tz {

class Llama final : public Model {
 public:
  // Every buffer the model takes (see Gpt::buffers; the same names where the same things are meant).
  static std::vector<BufferSpec> buffers(const ModelConfig& cfg, ModelShape shape, Precision pr,
                                         ActivationCheckpointing ckpt, MemoryKind checkpoint_kind, DeviceKind device);
  static std::vector<GemmShape> gemm_shapes(const ModelConfig& cfg, ModelShape shape, DType act);
  static int logits_rows(const ModelConfig& cfg, ModelShape shape);

  // Takes every buffer buffers() lists from `planned`.
  Llama(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
        PlannedBuffers& planned, MemoryKind checkpoint_kind = MemoryKind::device);
  // The same with a plan of its own (tests).
  Llama(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
        MemoryKind checkpoint_kind = MemoryKind::device);
  ~Llama();
  Llama(const Llama&) = delete;
  Llama& operator=(const Llama&) = delete;

  const ModelConfig& config() const override { return cfg_; }
  const ParamLayout& layout() const override { return layout_; }
  ModelShape shape() const override { return shape_; }
  std::size_t activation_bytes() const override { return act_bytes_; }
  std::size_t offloaded_checkpoint_bytes() const override { return offloaded_ckpt_bytes_; }

  void forward(ParamProvider& params, const std::int32_t* inputs, const std::int32_t* targets, float dloss_scale,
               double* loss_sum, Stream& stream) override;
  void backward(ParamProvider& params, Stream& stream) override;

 private:
  struct BlockActs;
  struct Offsets;  // where each tensor starts in its group
  void init(PlannedBuffers& planned);
  void block_forward(Stream& s, CView p, CView res_in, BlockActs& a, View res_out);
  void block_backward(Stream& s, CView p, float* g, CView res_in, BlockActs& a, View dres);
  // out[BT, OC] (+)= inp[BT, IC] @ W[OC, IC]^T (+ b when the model has that bias).
  void linear(Stream& s, View out, CView inp, CView w, const CView* b, int IC, int OC, Accumulate acc);
  // Backward of linear: din[BT, IC] = dout @ W (accumulated when asked), dW += dout^T @ inp, db += sum dout.
  void linear_backward(Stream& s, View din, Accumulate din_acc, float* dw, float* db, CView dout, CView inp, CView w,
                       int IC, int OC);
  // x in the working dtype: itself, or (fp32 activations of 16-bit parameters) cast into scratch.
  CView lowp(Stream& s, CView x, void* scratch, std::size_t n);
  // The LM head's arguments over this model's buffers (model/lm_head.h).
  LmHead lm_head(CView x, CView head);

  std::unique_ptr<PlannedBuffers> own_;
  Device& dev_;
  Backend& be_;
  ModelConfig cfg_;
  LlamaDims d_;
  ParamLayout layout_;
  std::unique_ptr<Offsets> off_;
  ModelShape shape_;
  DType dtype_;  // parameters and matmul inputs
  DType act_;    // activations and their gradients
  ActivationCheckpointing ckpt_;
  MemoryKind ckpt_kind_;
  std::size_t act_bytes_ = 0, offloaded_ckpt_bytes_ = 0;

  std::unique_ptr<ActivationCheckpoints> ckpts_;
  std::vector<BlockActs> acts_;
  DynBuffer norm_, logits_;
  Buffer<float> norm_rstd_, losses_, rope_;
  std::vector<float> rope_host_;  // the table, uploaded by the first forward
  bool rope_uploaded_ = false;
  float dloss_ = 0;
  Buffer<std::int32_t> inputs_, targets_;
  DynBuffer dres_, dnorm_, datty_, dqkv_, dgate_up_, dhidden_;
  Buffer<float> datt_;  // the attention's scratch
  Buffer<std::uint16_t> lp_act_, lp_grad_;
  Buffer<float> gemm_workspace_;
};

}  // namespace tz
