// How fast a training step's matrix products run at shapes other than the calibrated model's (the hardware
// file's "matmul_rates", written by `tierzero bench calibrate` since issue 33): the step-time model's
// compute rate is measured on one model, and narrower or wider models, or fewer tokens per micro-step,
// run their products at other rates (on a CPU node, a 256-wide GPT-2 step ran 10-16% under the rate of the
// 384-wide one it was calibrated on). Two measured curves through the calibrated point, each dtype's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tz {

// The rate of one model's products (TFLOP/s: their FLOPs over their summed times, each product as the
// training step runs it) with one of its sizes at `at`, for fp32, bf16 and fp16 (0: not measured).
struct RatePoint {
  int at = 0;
  double tflops[3] = {0, 0, 0};
  bool operator==(const RatePoint&) const = default;
};

struct MatmulRates {
  int width = 0, tokens = 0;  // the calibrated model's width (n_embd) and tokens per micro-step; 0: not measured
  // The calibrated model's products with its width scaled (n_embd and the widths that follow it: the MLP's,
  // the heads'), and with its tokens per micro-step scaled; ascending, each through the calibrated point.
  std::vector<RatePoint> by_width, by_tokens;
  bool operator==(const MatmulRates&) const = default;

  bool measured() const { return width > 0 && !by_width.empty() && !by_tokens.empty(); }
  // The factor on the calibrated step rate for a model `width` wide at `tokens` per micro-step: on each
  // curve the rate there (straight in log2 of the size between the nearest points, held beyond the ends)
  // over the rate at the calibrated size, the two multiplied. 1 when not measured or that dtype is not.
  double factor(DType dt, int width, int tokens) const;

  nlohmann::json to_json() const;
  // Throws naming `src` and the field on a malformed section.
  static MatmulRates from_json(const nlohmann::json& j, const std::string& src);
};

}  // namespace tz
