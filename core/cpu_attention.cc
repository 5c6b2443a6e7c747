// Causal self-attention loops. Forward is parallel over (batch, query head); backward over (batch,
// key-value head), each task running its group's query heads in order, so every gradient element has one
// writer and the sums do not depend on the thread count. Keys and values are read where they lie.
#include "core/cpu_attention.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/elementwise.h"

namespace tz::cpu {

void attention_forward(float* out, float* att, const float* qkv, const AttentionShape& s) {
  const int B = s.B, T = s.T, NH = s.NH, hs = s.hd, G = s.group();
  const float scale = 1.0f / std::sqrt(float(hs));
  const std::size_t W = std::size_t(s.qkv_width()), O = std::size_t(s.out_width());
  const std::size_t k_off = O, v_off = O + std::size_t(s.KVH) * hs;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const std::size_t kv = std::size_t(h / G) * hs;
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (std::size_t(b) * T + t) * W + h * hs;
        float* a = att + ((std::size_t(b) * NH + h) * T + t) * T;
        float mx = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (std::size_t(b) * T + t2) * W + k_off + kv;
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
        float* o = out + (std::size_t(b) * T + t) * O + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (std::size_t(b) * T + t2) * W + v_off + kv;
          float w = a[t2];
#pragma omp simd
          for (int i = 0; i < hs; ++i) o[i] += w * v[i];
        }
      }
    }
  }
}

void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att,
                        const float* out, const AttentionShape& s) {
  const int B = s.B, T = s.T, NH = s.NH, KVH = s.KVH, hs = s.hd, G = s.group();
  const float scale = 1.0f / std::sqrt(float(hs));
  const std::size_t W = std::size_t(s.qkv_width()), O = std::size_t(s.out_width());
  const std::size_t k_off = O, v_off = O + std::size_t(KVH) * hs;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int kvh = 0; kvh < KVH; ++kvh) {
      const std::size_t kv = std::size_t(kvh) * hs;
      for (int t = 0; t < T; ++t) {
        float* row = dqkv + (std::size_t(b) * T + t) * W;
        std::memset(row + k_off + kv, 0, sizeof(float) * hs);
        std::memset(row + v_off + kv, 0, sizeof(float) * hs);
      }
      for (int h = kvh * G; h < (kvh + 1) * G; ++h) {
        for (int t = 0; t < T; ++t) std::memset(dqkv + (std::size_t(b) * T + t) * W + h * hs, 0, sizeof(float) * hs);
        for (int t = 0; t < T; ++t) {
          const float* a = att + ((std::size_t(b) * NH + h) * T + t) * T;
          float* da = datt + ((std::size_t(b) * NH + h) * T + t) * T;
          const float* d = dout + (std::size_t(b) * T + t) * O + h * hs;
          const float* q = qkv + (std::size_t(b) * T + t) * W + h * hs;
          float* dq = dqkv + (std::size_t(b) * T + t) * W + h * hs;
          // out = sum_t2 a[t2] v[t2]  ->  da[t2] = d . v[t2],  dv[t2] += a[t2] d
          for (int t2 = 0; t2 <= t; ++t2) {
            const float* v = qkv + (std::size_t(b) * T + t2) * W + v_off + kv;
            float* dv = dqkv + (std::size_t(b) * T + t2) * W + v_off + kv;
            float dot = 0;
            float w = a[t2];
#pragma omp simd reduction(+ : dot)
            for (int i = 0; i < hs; ++i) {
              dot += d[i] * v[i];
              dv[i] += w * d[i];
            }
            da[t2] = dot;
          }
          // softmax backward: dpre[t2] = a[t2] * (da[t2] - sum_j a[j] da[j]), where sum_j a[j] da[j] is
          // d . out: from the stored out when given (16-bit runs, as the fused kernels read it)
          float sum = 0;
          if (out) {
            const float* o = out + (std::size_t(b) * T + t) * O + h * hs;
            for (int i = 0; i < hs; ++i) sum += d[i] * o[i];
          } else {
            for (int t2 = 0; t2 <= t; ++t2) sum += a[t2] * da[t2];
          }
          for (int t2 = 0; t2 <= t; ++t2) {
            float dpre = a[t2] * (da[t2] - sum) * scale;
            const float* k = qkv + (std::size_t(b) * T + t2) * W + k_off + kv;
            float* dk = dqkv + (std::size_t(b) * T + t2) * W + k_off + kv;
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
}

}  // namespace tz::cpu
