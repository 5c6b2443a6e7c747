// Host loops and chunked reductions (see host_ops.h).
#include "core/host_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace tz {
namespace {

// Sum of f(x[i]) in double over fixed-size chunks added in chunk order.
template <typename F>
double chunked_sum(const float* x, std::size_t n, F f) {
  constexpr std::size_t kChunk = 1 << 16;
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  auto chunk = [&](const float* p, std::size_t m) {
    double t = 0;
#pragma omp simd reduction(+ : t)
    for (std::size_t i = 0; i < m; ++i) t += f(p[i]);
    return t;
  };
  if (chunks <= 1) return chunk(x, n);
  std::vector<double> part(chunks);
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) part[c] = chunk(x + c * kChunk, std::min(kChunk, n - c * kChunk));
  double t = 0;
  for (double v : part) t += v;
  return t;
}

template <typename T>
void cast_loop(T* dst, const float* src, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) dst[i] = from_float<T>(src[i]);
}

}  // namespace

void host_copy(float* dst, const float* src, std::size_t n) {
  if (n) std::memcpy(dst, src, n * sizeof(float));
}

void host_add(float* y, const float* x, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) y[i] += x[i];
}

void host_zero(float* x, std::size_t n) {
  if (n) std::memset(x, 0, n * sizeof(float));
}

double host_sum(const float* x, std::size_t n) {
  return chunked_sum(x, n, [](float v) { return double(v); });
}

double host_sum_squares(const float* x, std::size_t n) {
  return chunked_sum(x, n, [](float v) { return double(v) * double(v); });
}

bool host_all_finite(const float* x, std::size_t n) {
  int bad = 0;
#pragma omp parallel for reduction(| : bad) schedule(static)
  for (std::size_t i = 0; i < n; ++i) bad |= !std::isfinite(x[i]);
  return bad == 0;
}

void host_cast(void* dst, DType t, const float* src, std::size_t n) {
  switch (t) {
    case DType::f32:
      if (n) std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::bf16:
      return cast_loop(static_cast<bf16*>(dst), src, n);
    case DType::f16:
      return cast_loop(static_cast<fp16*>(dst), src, n);
    default:
      TZ_FAIL("cannot cast floats to ", dtype_name(t), " on the host");
  }
}

}  // namespace tz
