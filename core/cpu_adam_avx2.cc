// CPU Adam's AVX2 path (built with -mavx2 -mfma -mf16c; run only where cpu_adam.cc finds them):
// 8 elements a vector, four an iteration, a masked tail, the bf16/fp16 working copy rounded in
// registers. See cpu_adam_kernels.h for the prefetch and streaming stores.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "core/adam_update_avx2.h"
#include "core/cpu_adam_kernels.h"

namespace tz::cpu_adam_detail {
namespace {

// float_to_bf16 on 8 lanes with integer ops, as 32-bit lanes holding the result in their low half:
// add 0x7fff plus the kept lowest bit (ties to even), keep the top half; NaN keeps its top half with
// the quiet bit set.
inline __m256i to_bf16_lanes(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

// 16 bf16 values from two vectors. Every lane is <= 0xffff, so the saturating pack is exact; it packs
// within 128-bit halves (a0-3 b0-3 a4-7 b4-7), so the quadwords are put back in order.
inline __m256i to_bf16(__m256 a, __m256 b) {
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(to_bf16_lanes(a), to_bf16_lanes(b)), 0xd8);
}

// float_to_fp16 is IEEE round-to-nearest-even with gradual underflow and quiet NaNs that keep the
// top payload bits, which is what vcvtps2ph does under the imm rounding mode (MXCSR.DAZ is off).
inline __m256i to_fp16(__m256 a, __m256 b) {
  return _mm256_set_m128i(_mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT),
                          _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
}

// The address kPrefetchBytes past x, computed as an integer: it may lie past the end of the array
// (prefetches never fault), where pointer arithmetic would be undefined.
inline const char* prefetch_address(const float* x) {
  return reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(x) + kPrefetchBytes);
}

inline void prefetch_ahead(const float* p, const float* m, const float* v, const float* g) {
  _mm_prefetch(prefetch_address(p), _MM_HINT_T0);
  _mm_prefetch(prefetch_address(m), _MM_HINT_T0);
  _mm_prefetch(prefetch_address(v), _MM_HINT_T0);
  _mm_prefetch(prefetch_address(g), _MM_HINT_T0);
}

template <Store S>
inline void store_ps(float* out, __m256 x) {
  if constexpr (S == Store::streaming)
    _mm256_stream_ps(out, x);
  else
    _mm256_storeu_ps(out, x);
}

// Up to 8 elements (count >= 1) with masked loads and stores: masked-off lanes load zeros and are never
// stored. AVX2 has no 16-bit masked store, so a low-precision result goes through a small array.
template <WorkingOut W>
void step_partial(const Vec& k, float* p, float* m, float* v, const float* g, std::size_t count,
                  void* working) {
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256 pv = _mm256_maskload_ps(p, mask), mv = _mm256_maskload_ps(m, mask), vv = _mm256_maskload_ps(v, mask);
  update(k, pv, mv, vv, _mm256_maskload_ps(g, mask));
  _mm256_maskstore_ps(p, mask, pv);
  _mm256_maskstore_ps(m, mask, mv);
  _mm256_maskstore_ps(v, mask, vv);
  if constexpr (W == WorkingOut::f32) {
    _mm256_maskstore_ps(static_cast<float*>(working), mask, pv);
  } else if constexpr (W != WorkingOut::none) {
    alignas(32) std::uint16_t half[16];
    const __m256i h = W == WorkingOut::bf16 ? to_bf16(pv, pv) : to_fp16(pv, pv);
    _mm256_store_si256(reinterpret_cast<__m256i*>(half), h);
    std::uint16_t* out = static_cast<std::uint16_t*>(working);
    for (std::size_t j = 0; j < count; ++j) out[j] = half[j];
  }
}

// 8 elements at x[0..7] of each array: load, update, store p, m, v; returns the new p.
inline __m256 step8(const Vec& k, float* p, float* m, float* v, const float* g) {
  __m256 pv = _mm256_loadu_ps(p), mv = _mm256_loadu_ps(m), vv = _mm256_loadu_ps(v);
  update(k, pv, mv, vv, _mm256_loadu_ps(g));
  _mm256_storeu_ps(p, pv);
  _mm256_storeu_ps(m, mv);
  _mm256_storeu_ps(v, vv);
  return pv;
}

// The working copy of 16 elements from two vectors.
template <WorkingOut W, Store S>
inline void store_working(void* working, std::size_t i, __m256 a, __m256 b) {
  if constexpr (W == WorkingOut::f32) {
    store_ps<S>(static_cast<float*>(working) + i, a);
    store_ps<S>(static_cast<float*>(working) + i + 8, b);
  } else if constexpr (W != WorkingOut::none) {
    auto* out = reinterpret_cast<__m256i*>(static_cast<std::uint16_t*>(working) + i);
    const __m256i h = W == WorkingOut::bf16 ? to_bf16(a, b) : to_fp16(a, b);
    if constexpr (S == Store::streaming)
      _mm256_stream_si256(out, h);
    else
      _mm256_storeu_si256(out, h);
  }
}

template <WorkingOut W, Store S>
void run(const Consts& consts, float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  const Vec k = broadcast(consts);
  std::size_t i = 0;
  // 32 elements an iteration: two cache lines of each stream, and a 16-bit working copy written a full
  // line at a time by two back-to-back stores (measured faster than half a line an iteration).
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead(p + i, m + i, v + i, g + i);
    prefetch_ahead(p + i + 16, m + i + 16, v + i + 16, g + i + 16);
    const __m256 p0 = step8(k, p + i, m + i, v + i, g + i);
    const __m256 p1 = step8(k, p + i + 8, m + i + 8, v + i + 8, g + i + 8);
    const __m256 p2 = step8(k, p + i + 16, m + i + 16, v + i + 16, g + i + 16);
    const __m256 p3 = step8(k, p + i + 24, m + i + 24, v + i + 24, g + i + 24);
    store_working<W, S>(working, i, p0, p1);
    store_working<W, S>(working, i + 16, p2, p3);
  }
  for (; i < n; i += 8) {
    const std::size_t count = n - i < 8 ? n - i : 8;
    void* w =
        W == WorkingOut::none ? nullptr : static_cast<char*>(working) + i * (W == WorkingOut::f32 ? 4 : 2);
    step_partial<W>(k, p + i, m + i, v + i, g + i, count, w);
  }
  // Streaming stores are weakly ordered: fence them before another thread may read the copy.
  if constexpr (S == Store::streaming) _mm_sfence();
}

template <WorkingOut W>
void run(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  // Streaming stores need the vector's natural alignment: 32 B.
  if (W != WorkingOut::none && reinterpret_cast<std::uintptr_t>(working) % 32 == 0)
    run<W, Store::streaming>(k, p, m, v, g, n, working);
  else
    run<W, Store::cached>(k, p, m, v, g, n, working);
}

}  // namespace

void adamw_avx2(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                WorkingOut out) {
  switch (out) {
    case WorkingOut::none:
      run<WorkingOut::none>(k, p, m, v, g, n, working);
      break;
    case WorkingOut::f32:
      run<WorkingOut::f32>(k, p, m, v, g, n, working);
      break;
    case WorkingOut::bf16:
      run<WorkingOut::bf16>(k, p, m, v, g, n, working);
      break;
    case WorkingOut::f16:
      run<WorkingOut::f16>(k, p, m, v, g, n, working);
      break;
  }
}

namespace {

// The bits of a 16-element working copy without rounding: p itself, or the top half of each lane.
template <WorkingOut W, Store S>
inline void store_working_bits(void* working, std::size_t i, __m256 a, __m256 b) {
  if constexpr (W == WorkingOut::f32 || W == WorkingOut::none) {
    store_working<W, S>(working, i, a, b);
  } else {
    // packus interleaves 128-bit lanes (a0 b0 a1 b1): put them back in order.
    const __m256i h = _mm256_permute4x64_epi64(
        _mm256_packus_epi32(_mm256_srli_epi32(_mm256_castps_si256(a), 16), _mm256_srli_epi32(_mm256_castps_si256(b), 16)),
        0xd8);
    auto* out = reinterpret_cast<__m256i*>(static_cast<std::uint16_t*>(working) + i);
    if constexpr (S == Store::streaming)
      _mm256_stream_si256(out, h);
    else
      _mm256_storeu_si256(out, h);
  }
}

// run()'s loads, prefetches and stores with the arithmetic replaced by an empty asm that "may change"
// p, m, v and "uses" g.
template <WorkingOut W, Store S>
void pass(float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    prefetch_ahead(p + i, m + i, v + i, g + i);
    __m256 a0 = _mm256_loadu_ps(p + i), b0 = _mm256_loadu_ps(m + i), c0 = _mm256_loadu_ps(v + i);
    __m256 a1 = _mm256_loadu_ps(p + i + 8), b1 = _mm256_loadu_ps(m + i + 8), c1 = _mm256_loadu_ps(v + i + 8);
    const __m256 d0 = _mm256_loadu_ps(g + i), d1 = _mm256_loadu_ps(g + i + 8);
    asm volatile("" : "+x"(a0), "+x"(b0), "+x"(c0), "+x"(a1), "+x"(b1), "+x"(c1) : "x"(d0), "x"(d1));
    _mm256_storeu_ps(p + i, a0);
    _mm256_storeu_ps(p + i + 8, a1);
    _mm256_storeu_ps(m + i, b0);
    _mm256_storeu_ps(m + i + 8, b1);
    _mm256_storeu_ps(v + i, c0);
    _mm256_storeu_ps(v + i + 8, c1);
    store_working_bits<W, S>(working, i, a0, a1);
  }
  for (; i < n; ++i) {
    float a = p[i], b = m[i], c = v[i];
    const float d = g[i];
    asm volatile("" : "+x"(a), "+x"(b), "+x"(c) : "x"(d));
    p[i] = a;
    m[i] = b;
    v[i] = c;
    if constexpr (W == WorkingOut::f32) static_cast<float*>(working)[i] = a;
    if constexpr (W == WorkingOut::bf16) {
      std::uint32_t bits;
      __builtin_memcpy(&bits, &a, 4);
      static_cast<std::uint16_t*>(working)[i] = std::uint16_t(bits >> 16);
    }
  }
  if constexpr (S == Store::streaming) _mm_sfence();
}

template <WorkingOut W>
void pass(float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  if (W != WorkingOut::none && reinterpret_cast<std::uintptr_t>(working) % 32 == 0)
    pass<W, Store::streaming>(p, m, v, g, n, working);
  else
    pass<W, Store::cached>(p, m, v, g, n, working);
}

}  // namespace

void memory_pass_avx2(float* p, float* m, float* v, const float* g, std::size_t n, void* working, WorkingOut out) {
  switch (out) {
    case WorkingOut::none:
      return pass<WorkingOut::none>(p, m, v, g, n, working);
    case WorkingOut::f32:
      return pass<WorkingOut::f32>(p, m, v, g, n, working);
    case WorkingOut::bf16:
    case WorkingOut::f16:
      return pass<WorkingOut::bf16>(p, m, v, g, n, working);
  }
}

}  // namespace tz::cpu_adam_detail
