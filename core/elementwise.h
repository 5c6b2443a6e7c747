// Elementwise math shared by the CPU and CUDA backends (TZ_HOST_DEVICE), so CPU tests check the
// exact arithmetic GPU kernels run.
#pragma once

#include <cmath>

#include "core/dtype.h"

namespace tz::math {

inline constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kLayerNormEps = 1e-5f;

// exp(x) within 2 ulp on [-87.3, 88.7] (clamped outside; NaN stays NaN), branch-free so CPU loops
// vectorise (glibc's expf vectorises only under -ffast-math, which would break NaN checks).
// Cody-Waite reduction by ln 2 and the Cephes degree-6 polynomial.
TZ_HOST_DEVICE inline float exp_f(float x) {
  x = x < -87.3f ? -87.3f : x;  // written as compares, not fminf/fmaxf, so a NaN passes through
  x = x > 88.7f ? 88.7f : x;
  float n = floorf(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * bits_float(std::uint32_t(int(n) + 127) << 23);
}

// tanh through exp_f: absolute error ~1e-7 (relative error grows near 0, harmless inside GELU,
// where tanh is added to 1).
TZ_HOST_DEVICE inline float tanh_f(float u) { return 1.0f - 2.0f / (exp_f(2.0f * u) + 1.0f); }

TZ_HOST_DEVICE inline float gelu(float x) {
  float cube = 0.044715f * x * x * x;
  return 0.5f * x * (1.0f + tanh_f(kGeluScale * (x + cube)));
}

// d gelu(x) / dx for the tanh approximation.
TZ_HOST_DEVICE inline float gelu_grad(float x) {
  // Past |x| = 20 the tanh has saturated (derivative 1 or 0 to float precision); returning early also
  // keeps x^3 from overflowing to Inf and producing 0 * Inf = NaN for huge inputs.
  if (fabsf(x) > 20.0f) return x > 0.0f ? 1.0f : 0.0f;
  float cube = 0.044715f * x * x * x;
  float tanh_out = tanh_f(kGeluScale * (x + cube));
  float sech2 = 1.0f - tanh_out * tanh_out;
  return 0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

// SiLU (x * sigmoid(x)) and the SwiGLU product silu(g) * u of Llama's MLP. exp_f clamps, so a very
// negative g gives a sigmoid near 0 rather than 1 / Inf.
TZ_HOST_DEVICE inline float sigmoid(float x) { return 1.0f / (1.0f + exp_f(-x)); }
TZ_HOST_DEVICE inline float swiglu(float g, float u) { return g * sigmoid(g) * u; }
// d(silu(g) u)/dg * d and d(silu(g) u)/du * d.
TZ_HOST_DEVICE inline void swiglu_grad(float g, float u, float d, float& dg, float& du) {
  const float s = sigmoid(g);
  dg = d * u * (s * (1.0f + g * (1.0f - s)));
  du = d * (g * s);
}

// One rotary pair (x1 = channel i, x2 = channel i + hd/2) rotated by the angle whose cosine and sine are
// c and s: Hugging Face's x * cos + rotate_half(x) * sin. Backward rotates by -angle (s negated).
TZ_HOST_DEVICE inline void rope_rotate(float& x1, float& x2, float c, float s) {
  const float a = x1 * c - x2 * s;
  const float b = x2 * c + x1 * s;
  x1 = a;
  x2 = b;
}

// RMSNorm's reciprocal root mean square from a row's sum of squares.
TZ_HOST_DEVICE inline float rms_rstd(float sum_squares, int C, float eps) {
  return 1.0f / sqrtf(sum_squares / float(C) + eps);
}

struct AdamCoeffs {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float step_size;         // lr / (1 - beta1^t)
  float inv_bias2_sqrt;    // 1 / sqrt(1 - beta2^t)
};

// One AdamW element update, in torch.optim.AdamW's order of operations (single-tensor path):
// p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= step_size * m / (sqrt(v)/sqrt(bc2) + eps),
// except that sqrt(v) is multiplied by the reciprocal of sqrt(bc2) (computed once per step in double),
// as DeepSpeed's CPU Adam does: one division per element instead of two, within an ulp of PyTorch's
// rounding, and the difference between a divider-bound and a memory-bound CPU step.
TZ_HOST_DEVICE inline void adamw_update(float& p, float& m, float& v, float g, const AdamCoeffs& c) {
  g *= c.grad_scale;
  m = c.beta1 * m + (1.0f - c.beta1) * g;
  v = c.beta2 * v + (1.0f - c.beta2) * g * g;
  float denom = sqrtf(v) * c.inv_bias2_sqrt + c.eps;
  p = p * (1.0f - c.lr * c.weight_decay) - c.step_size * (m / denom);
}

}  // namespace tz::math
