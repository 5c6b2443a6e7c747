// What a CPU step's forward and backward spend their time on, by kind of work: the matrix products (time
// per FLOP), attention (time per score: its exponentials and row sums do not shrink with the head width,
// so a model of many narrow heads spends more per FLOP than its products do) and the rest (norms,
// activations, biases, copies: time per activation element). `tierzero bench calibrate` profiles its model's
// step to split the time it measured three ways (the hardware file's "step_mix"); the step-time model then
// times another model's forward and backward as the calibrated one's, scaled kind by kind by the work each
// kind has in the two (docs/planning.md#the-compute-term).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/dtype.h"
#include "model/model_config.h"

namespace tz {

// The work of one micro-step of B sequences of T tokens, by kind.
struct ComputeCounts {
  double model_flops = 0;       // model_flops(): what the step rates are in
  double matmul_flops = 0;      // the products' (model FLOPs less attention's)
  double attention_scores = 0;  // causal query-key pairs: layers x B x query heads x T (T + 1) / 2
  double other_elements = 0;    // activation elements the rest touches: layers x B x T x (width + MLP width)
};
ComputeCounts compute_counts(const ModelConfig& cfg, int B, int T);

struct StepMix {
  ComputeCounts calibrated;  // the calibration model's micro-step (model_flops 0: not measured)
  // Per dtype (fp32, bf16, fp16): the fractions of its forward + backward in products, attention and the
  // rest (all 0: that dtype not measured).
  double share[3][3] = {};
  bool measured(DType dt) const;
  // The time of `c`'s forward + backward as a multiple of the calibrated model's, at the same rate:
  // sum over the kinds of share x (c's work / the calibrated model's). Not measured: c's model FLOPs over
  // the calibrated model's (every FLOP at the one rate, as before the mix).
  double time_ratio(const ComputeCounts& c, DType dt) const;
  bool operator==(const StepMix&) const;
};

nlohmann::json step_mix_json(const StepMix& m);
// Reads the hardware file's "step_mix" (src names the file in errors), refusing fractions outside [0, 1],
// a dtype whose fractions do not sum to 1 and counts that are not positive and finite.
StepMix step_mix_from_json(const nlohmann::json& j, const std::string& src);

}  // namespace tz
