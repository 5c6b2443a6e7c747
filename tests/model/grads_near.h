// Gradients of two runs of one model compared tensor by tensor: every element within a fraction of its
// tensor's largest reference gradient (a per-tensor scale, as bf16's rounding is relative to the values
// that flow through the tensor, not to each element).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/param_layout.h"

namespace tz::testing {

// Fails at the first element past `frac` of its tensor's largest |want|; returns the largest
// |got - want| / max |want| seen, for the test to report.
inline double expect_grads_near(const std::vector<std::vector<float>>& got,
                                const std::vector<std::vector<float>>& want, const ParamLayout& layout, float frac) {
  double worst = 0;
  for (std::size_t g = 0; g < want.size(); ++g)
    for (const TensorSpec& t : layout.groups[g].tensors) {
      float mx = 0;
      for (std::size_t i = 0; i < t.count; ++i) mx = std::max(mx, std::abs(want[g][t.offset + i]));
      for (std::size_t i = 0; i < t.count; ++i) {
        const float a = got[g][t.offset + i], b = want[g][t.offset + i];
        EXPECT_NEAR(a, b, frac * mx) << t.name << " element " << i;
        if (std::abs(a - b) > frac * mx) return worst;
        if (mx > 0) worst = std::max(worst, std::abs(double(a) - b) / mx);
      }
    }
  return worst;
}

}  // namespace tz::testing
