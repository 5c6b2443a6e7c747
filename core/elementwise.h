// Elementwise math shared by the CPU and CUDA backends (TZ_HOST_DEVICE), so CPU tests check the
// exact arithmetic GPU kernels run.
#pragma once

#include <cmath>

#include "core/dtype.h"

namespace tz::math {

inline constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kLayerNormEps = 1e-5f;

TZ_HOST_DEVICE inline float gelu(float x) {
  float cube = 0.044715f * x * x * x;
  return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + cube)));
}

// d gelu(x) / dx for the tanh approximation.
TZ_HOST_DEVICE inline float gelu_grad(float x) {
  // Past |x| = 20 the tanh has saturated (derivative 1 or 0 to float precision); returning early also
  // keeps x^3 from overflowing to Inf and producing 0 * Inf = NaN for huge inputs.
  if (fabsf(x) > 20.0f) return x > 0.0f ? 1.0f : 0.0f;
  float cube = 0.044715f * x * x * x;
  float tanh_arg = kGeluScale * (x + cube);
  float tanh_out = tanhf(tanh_arg);
  float cosh_out = coshf(tanh_arg);
  float sech2 = 1.0f / (cosh_out * cosh_out);
  return 0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

struct AdamCoeffs {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float step_size;         // lr / (1 - beta1^t)
  float bias2_sqrt;        // sqrt(1 - beta2^t)
};

// One AdamW element update, in torch.optim.AdamW's order of operations (single-tensor path):
// p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= step_size * m / (sqrt(v)/sqrt(bc2) + eps).
TZ_HOST_DEVICE inline void adamw_update(float& p, float& m, float& v, float g, const AdamCoeffs& c) {
  g *= c.grad_scale;
  m = c.beta1 * m + (1.0f - c.beta1) * g;
  v = c.beta2 * v + (1.0f - c.beta2) * g * g;
  float denom = sqrtf(v) / c.bias2_sqrt + c.eps;
  p = p * (1.0f - c.lr * c.weight_decay) - c.step_size * (m / denom);
}

}  // namespace tz::math
