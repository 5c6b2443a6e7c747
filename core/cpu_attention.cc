// Causal self-attention loops, parallel over (batch, head) so each gradient element has one writer.
#include "core/cpu_attention.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/elementwise.h"

namespace tz::cpu {

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
  const std::size_t C3 = std::size_t(3) * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (std::size_t(b) * T + t) * C3 + h * hs;
        float* a = att + ((std::size_t(b) * NH + h) * T + t) * T;
        float mx = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (std::size_t(b) * T + t2) * C3 + C + h * hs;
          float dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
          dot *= scale;
          a[t2] = dot;
          mx = dot > mx ? dot : mx;
        }
        float sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          float e = math::exp_f(a[t2] - mx);
          a[t2] = e;
          sum += e;
        }
        float inv = 1.0f / sum;
        for (int t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
        for (int t2 = t + 1; t2 < T; ++t2) a[t2] = 0;
        float* o = out + (std::size_t(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (std::size_t(b) * T + t2) * C3 + 2 * C + h * hs;
          float w = a[t2];
#pragma omp simd
          for (int i = 0; i < hs; ++i) o[i] += w * v[i];
        }
      }
    }
  }
}

void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att, int B, int T,
                        int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
  const std::size_t C3 = std::size_t(3) * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        float* base = dqkv + (std::size_t(b) * T + t) * C3 + h * hs;
        std::memset(base, 0, sizeof(float) * hs);
        std::memset(base + C, 0, sizeof(float) * hs);
        std::memset(base + 2 * C, 0, sizeof(float) * hs);
      }
      for (int t = 0; t < T; ++t) {
        const float* a = att + ((std::size_t(b) * NH + h) * T + t) * T;
        float* da = datt + ((std::size_t(b) * NH + h) * T + t) * T;
        const float* d = dout + (std::size_t(b) * T + t) * C + h * hs;
        const float* q = qkv + (std::size_t(b) * T + t) * C3 + h * hs;
        float* dq = dqkv + (std::size_t(b) * T + t) * C3 + h * hs;
        // out = sum_t2 a[t2] v[t2]  ->  da[t2] = d . v[t2],  dv[t2] += a[t2] d
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (std::size_t(b) * T + t2) * C3 + 2 * C + h * hs;
          float* dv = dqkv + (std::size_t(b) * T + t2) * C3 + 2 * C + h * hs;
          float dot = 0;
          float w = a[t2];
#pragma omp simd reduction(+ : dot)
          for (int i = 0; i < hs; ++i) {
            dot += d[i] * v[i];
            dv[i] += w * d[i];
          }
          da[t2] = dot;
        }
        // softmax backward: dpre[t2] = a[t2] * (da[t2] - sum_j a[j] da[j])
        float s = 0;
        for (int t2 = 0; t2 <= t; ++t2) s += a[t2] * da[t2];
        for (int t2 = 0; t2 <= t; ++t2) {
          float dpre = a[t2] * (da[t2] - s) * scale;
          const float* k = qkv + (std::size_t(b) * T + t2) * C3 + C + h * hs;
          float* dk = dqkv + (std::size_t(b) * T + t2) * C3 + C + h * hs;
#pragma omp simd
          for (int i = 0; i < hs; ++i) {
            dq[i] += dpre * k[i];
            dk[i] += dpre * q[i];
          }
        }
        for (int t2 = t + 1; t2 < T; ++t2) da[t2] = 0;
      }
    }
  }
}

}  // namespace tz::cpu
