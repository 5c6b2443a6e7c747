// What a training run holds of a model: forward and backward over parameters a ParamProvider hands out,
// whatever the family. A family (model/model_family.h) makes it; the engine and the loop know only this.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/stream.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/param_provider.h"

namespace tz {

// The dtypes a model computes in: parameters and matrix-product inputs (param: fp32, bf16 or fp16) and
// activations with their gradients (act: the param dtype, or fp32). One DType gives both; statistics,
// losses and parameter gradients are fp32 whatever these are.
struct Precision {
  DType param = DType::f32;
  DType act = DType::f32;
  Precision() = default;
  Precision(DType p) : param(p), act(p) {}  // NOLINT: implicit, the usual case
  Precision(DType p, DType a) : param(p), act(a) {}
  bool operator==(const Precision&) const = default;
};

// Throws naming the dtypes unless param is fp32, bf16 or fp16 and act is param or fp32.
void check_precision(const Precision& p);

struct ModelShape {
  int B = 4;   // micro-batch
  int T = 64;  // sequence length (<= max_seq_len)
  int max_logits_rows = 0;  // > 0: at most this many rows of logits at once (tests); 0: the family's choice
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  virtual const ParamLayout& layout() const = 0;
  virtual ModelShape shape() const = 0;

  // Device bytes of the model's buffers, and host-tier bytes of offloaded activation checkpoints.
  virtual std::size_t activation_bytes() const = 0;
  virtual std::size_t offloaded_checkpoint_bytes() const = 0;

  // Runs forward on B*T tokens (host memory: pageable or pinned) on `stream` and adds the sum of the
  // B*T per-position cross-entropy losses to loss_sum[0] (a device double). The output gradient is left
  // scaled by dloss_scale / (B*T) (the mean's derivative times the caller's scale, e.g. 1/grad_accum or
  // the fp16 loss scale), ready for backward().
  virtual void forward(ParamProvider& params, const std::int32_t* inputs, const std::int32_t* targets,
                       float dloss_scale, double* loss_sum, Stream& stream) = 0;

  // Backward through the whole model on `stream`, accumulating into the provider's gradients and calling
  // grad_ready(g) for each group in the family's gradient order.
  virtual void backward(ParamProvider& params, Stream& stream) = 0;
};

}  // namespace tz
