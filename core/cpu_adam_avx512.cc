// CPU Adam's AVX-512 path (built with -mavx512f/bw/vl/dq; run only where cpu_adam.cc finds them):
// 16 elements a vector, two vectors an iteration, a masked tail, the bf16/fp16 working copy rounded in
// registers. The step is memory-bound; see cpu_adam_kernels.h for the prefetch and streaming stores.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "core/adam_update_avx512.h"
#include "core/cpu_adam_kernels.h"

namespace tz::cpu_adam_detail {
namespace {

// 16 values.
inline __m256i to_bf16(__m512 x) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_in_top_half(x), 16)); }

// 32 values from two vectors: the top halves of a's lanes, then of b's, in one permute.
inline __m512i to_bf16(__m512 a, __m512 b) {
  const __m512i odd_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,
                                             31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi16(bf16_in_top_half(a), odd_words, bf16_in_top_half(b));
}

// float_to_fp16 is IEEE round-to-nearest-even with gradual underflow and quiet NaNs that keep the
// top payload bits, which is what vcvtps2ph does under the imm rounding mode (MXCSR.DAZ is off).
inline __m256i to_fp16(__m512 x) { return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT); }

inline __m512i to_fp16(__m512 a, __m512 b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(to_fp16(a)), to_fp16(b), 1);
}

// The working copy of 32 elements from two vectors: one full cache line per store with 16-bit types.
template <WorkingOut W, Store S>
inline void store_working(void* working, std::size_t i, __m512 a, __m512 b) {
  if constexpr (W == WorkingOut::f32) {
    float* out = static_cast<float*>(working) + i;
    if constexpr (S == Store::streaming) {
      _mm512_stream_ps(out, a);
      _mm512_stream_ps(out + 16, b);
    } else {
      _mm512_storeu_ps(out, a);
      _mm512_storeu_ps(out + 16, b);
    }
  } else if constexpr (W != WorkingOut::none) {
    auto* out = reinterpret_cast<__m512i*>(static_cast<std::uint16_t*>(working) + i);
    const __m512i h = W == WorkingOut::bf16 ? to_bf16(a, b) : to_fp16(a, b);
    if constexpr (S == Store::streaming)
      _mm512_stream_si512(out, h);
    else
      _mm512_storeu_si512(out, h);
  }
}

template <WorkingOut W>
inline void store_working_masked(void* working, std::size_t i, __mmask16 mask, __m512 p) {
  if constexpr (W == WorkingOut::f32) {
    _mm512_mask_storeu_ps(static_cast<float*>(working) + i, mask, p);
  } else if constexpr (W == WorkingOut::bf16) {
    _mm256_mask_storeu_epi16(static_cast<std::uint16_t*>(working) + i, mask, to_bf16(p));
  } else if constexpr (W == WorkingOut::f16) {
    _mm256_mask_storeu_epi16(static_cast<std::uint16_t*>(working) + i, mask, to_fp16(p));
  }
}

// The address kPrefetchBytes past x, computed as an integer: it may lie past the end of the array
// (prefetches never fault), where pointer arithmetic would be undefined.
inline const char* prefetch_address(const float* x) {
  return reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(x) + kPrefetchBytes);
}

// One vector is one cache line of each stream.
inline void prefetch_ahead(const float* p, const float* m, const float* v, const float* g) {
  _mm_prefetch(prefetch_address(p), _MM_HINT_T0);
  _mm_prefetch(prefetch_address(m), _MM_HINT_T0);
  _mm_prefetch(prefetch_address(v), _MM_HINT_T0);
  _mm_prefetch(prefetch_address(g), _MM_HINT_T0);
}

template <WorkingOut W, Store S>
void run(const Consts& consts, float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  const Vec k = broadcast(consts);
  std::size_t i = 0;
  // Two vectors an iteration, so a 16-bit working copy is written a full cache line at a time.
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead(p + i, m + i, v + i, g + i);
    prefetch_ahead(p + i + 16, m + i + 16, v + i + 16, g + i + 16);
    __m512 pa = _mm512_loadu_ps(p + i), ma = _mm512_loadu_ps(m + i), va = _mm512_loadu_ps(v + i);
    __m512 pb = _mm512_loadu_ps(p + i + 16), mb = _mm512_loadu_ps(m + i + 16),
           vb = _mm512_loadu_ps(v + i + 16);
    update(k, pa, ma, va, _mm512_loadu_ps(g + i));
    update(k, pb, mb, vb, _mm512_loadu_ps(g + i + 16));
    _mm512_storeu_ps(p + i, pa);
    _mm512_storeu_ps(p + i + 16, pb);
    _mm512_storeu_ps(m + i, ma);
    _mm512_storeu_ps(m + i + 16, mb);
    _mm512_storeu_ps(v + i, va);
    _mm512_storeu_ps(v + i + 16, vb);
    store_working<W, S>(working, i, pa, pb);
  }
  // The last 0-31 elements, 16 at a time under a mask: masked-off lanes load zeros and are never stored.
  for (; i < n; i += 16) {
    const __mmask16 mask = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1u);
    __m512 pv = _mm512_maskz_loadu_ps(mask, p + i), mv = _mm512_maskz_loadu_ps(mask, m + i),
           vv = _mm512_maskz_loadu_ps(mask, v + i);
    update(k, pv, mv, vv, _mm512_maskz_loadu_ps(mask, g + i));
    _mm512_mask_storeu_ps(p + i, mask, pv);
    _mm512_mask_storeu_ps(m + i, mask, mv);
    _mm512_mask_storeu_ps(v + i, mask, vv);
    store_working_masked<W>(working, i, mask, pv);
  }
  // Streaming stores are weakly ordered: fence them before another thread may read the copy.
  if constexpr (S == Store::streaming) _mm_sfence();
}

template <WorkingOut W>
void run(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  // Streaming stores need 64-byte aligned addresses (one vector).
  if (W == WorkingOut::f32 && reinterpret_cast<std::uintptr_t>(working) % 64 == 0)
    run<W, Store::streaming>(k, p, m, v, g, n, working);
  else
    run<W, Store::cached>(k, p, m, v, g, n, working);
}

}  // namespace

void adamw_avx512(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working,
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

// The bits of the working copy without rounding: p itself, or the top half of each lane.
template <WorkingOut W, Store S>
inline void store_working_bits(void* working, std::size_t i, __m512 a, __m512 b) {
  if constexpr (W == WorkingOut::f32 || W == WorkingOut::none) {
    store_working<W, S>(working, i, a, b);
  } else {
    const __m512i odd_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,
                                               31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i h = _mm512_permutex2var_epi16(_mm512_castps_si512(a), odd_words, _mm512_castps_si512(b));
    auto* out = reinterpret_cast<__m512i*>(static_cast<std::uint16_t*>(working) + i);
    if constexpr (S == Store::streaming)
      _mm512_stream_si512(out, h);
    else
      _mm512_storeu_si512(out, h);
  }
}

template <WorkingOut W>
inline void store_working_bits_masked(void* working, std::size_t i, __mmask16 mask, __m512 p) {
  if constexpr (W == WorkingOut::f32) {
    _mm512_mask_storeu_ps(static_cast<float*>(working) + i, mask, p);
  } else if constexpr (W != WorkingOut::none) {
    const __m256i h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(p), 16));
    _mm256_mask_storeu_epi16(static_cast<std::uint16_t*>(working) + i, mask, h);
  }
}

// run()'s loads, prefetches and stores (the same iteration shape, store kinds and tail) with the
// arithmetic replaced by an empty asm that "may change" p, m, v and "uses" g.
template <WorkingOut W, Store S>
void pass(float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead(p + i, m + i, v + i, g + i);
    prefetch_ahead(p + i + 16, m + i + 16, v + i + 16, g + i + 16);
    __m512 pa = _mm512_loadu_ps(p + i), ma = _mm512_loadu_ps(m + i), va = _mm512_loadu_ps(v + i);
    __m512 pb = _mm512_loadu_ps(p + i + 16), mb = _mm512_loadu_ps(m + i + 16), vb = _mm512_loadu_ps(v + i + 16);
    const __m512 ga = _mm512_loadu_ps(g + i), gb = _mm512_loadu_ps(g + i + 16);
    asm volatile("" : "+v"(pa), "+v"(ma), "+v"(va), "+v"(pb), "+v"(mb), "+v"(vb) : "v"(ga), "v"(gb));
    _mm512_storeu_ps(p + i, pa);
    _mm512_storeu_ps(p + i + 16, pb);
    _mm512_storeu_ps(m + i, ma);
    _mm512_storeu_ps(m + i + 16, mb);
    _mm512_storeu_ps(v + i, va);
    _mm512_storeu_ps(v + i + 16, vb);
    store_working_bits<W, S>(working, i, pa, pb);
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1u);
    __m512 pv = _mm512_maskz_loadu_ps(mask, p + i), mv = _mm512_maskz_loadu_ps(mask, m + i),
           vv = _mm512_maskz_loadu_ps(mask, v + i);
    const __m512 gv = _mm512_maskz_loadu_ps(mask, g + i);
    asm volatile("" : "+v"(pv), "+v"(mv), "+v"(vv) : "v"(gv));
    _mm512_mask_storeu_ps(p + i, mask, pv);
    _mm512_mask_storeu_ps(m + i, mask, mv);
    _mm512_mask_storeu_ps(v + i, mask, vv);
    store_working_bits_masked<W>(working, i, mask, pv);
  }
  if constexpr (S == Store::streaming) _mm_sfence();
}

template <WorkingOut W>
void pass(float* p, float* m, float* v, const float* g, std::size_t n, void* working) {
  if (W == WorkingOut::f32 && reinterpret_cast<std::uintptr_t>(working) % 64 == 0)
    pass<W, Store::streaming>(p, m, v, g, n, working);
  else
    pass<W, Store::cached>(p, m, v, g, n, working);
}

}  // namespace

void memory_pass_avx512(float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                        WorkingOut out) {
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
