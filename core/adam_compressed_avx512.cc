// The compressed-state AdamW's AVX-512 path (avx512f/bw/vl/dq, as cpu_adam_avx512.cc): int8 moments a
// block of 256 at a time (dequantize by 16-bit permutes, update in fp32, the block's absmax, quantize by
// a gather from the code buckets of core/code_buckets.h), bf16 moments 16 elements a vector; fp32 or bf16-sr
// master. Every operation is the scalar definition's (core/adam_int8.cc) in its order: no FMA
// (-ffp-contract=off), IEEE division and square root, and the stochastic rounding's 64-bit counter hash lane
// by lane.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/adam_compressed_kernels.h"
#include "core/adam_update_avx512.h"

namespace tz::adam_compressed_detail {
namespace {

constexpr std::size_t kBlock = 256;

using cpu_adam_detail::bf16_in_top_half;
using cpu_adam_detail::broadcast;
using cpu_adam_detail::update;
using cpu_adam_detail::Vec;

// std::isfinite(g): |g| < inf is false for NaN and inf.
inline __mmask16 finite(__m512 g) {
  return _mm512_cmp_ps_mask(_mm512_abs_ps(g), _mm512_set1_ps(__builtin_inff()), _CMP_LT_OQ);
}

inline __m512 bf16_to_float(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
inline __m256i top_halves(__m512i x) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(x, 16)); }

// counter_bits for 8 elements from their z = (e + kSrElementAdd) * kSrElementMul (64-bit lanes): the
// SplitMix64 finalizer, its high half in each lane.
inline __m512i counter_bits8(std::uint64_t base, __m512i z) {
  z = _mm512_xor_si512(z, _mm512_set1_epi64(std::int64_t(base)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), _mm512_set1_epi64(std::int64_t(kSrMix1)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), _mm512_set1_epi64(std::int64_t(kSrMix2)));
  return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

// The random bits of elements e, e + 1, ..., e + 15, one per 32-bit lane. Element e + j's z is e's plus
// j * kSrElementMul mod 2^64: one scalar product and vector adds in place of a 64-bit vector multiply.
inline __m512i counter_bits16(std::uint64_t base, std::uint64_t e) {
  constexpr std::uint64_t m = kSrElementMul;
  const __m512i steps = _mm512_set_epi64(std::int64_t(7 * m), std::int64_t(6 * m), std::int64_t(5 * m),
                                         std::int64_t(4 * m), std::int64_t(3 * m), std::int64_t(2 * m),
                                         std::int64_t(m), 0);
  const __m512i z = _mm512_add_epi64(_mm512_set1_epi64(std::int64_t((e + kSrElementAdd) * m)), steps);
  const __m512i a = counter_bits8(base, z);
  const __m512i b = counter_bits8(base, _mm512_add_epi64(z, _mm512_set1_epi64(std::int64_t(8 * m))));
  const __m512i high_dwords = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi32(a, high_dwords, b);
}

// float_to_bf16_sr(x, random), 16 lanes, the result in each lane's top half.
inline __m512i bf16_sr_in_top_half(__m512 x, __m512i random) {
  const __m512i u = _mm512_castps_si512(x), exp = _mm512_set1_epi32(0x7f800000);
  const __m512i r = _mm512_add_epi32(u, _mm512_and_si512(random, _mm512_set1_epi32(0xffff)));
  const __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, exp), exp);
  const __mmask16 overflow = _mm512_cmpeq_epi32_mask(_mm512_and_si512(r, exp), exp);
  const __m512i sr = _mm512_mask_mov_epi32(r, overflow, u);
  return _mm512_mask_mov_epi32(sr, special, bf16_in_top_half(x));
}

// The master's 16 elements at p + i as floats, and the store of the updated ones where `keep` is set.
template <Master M>
inline __m512 load_p(const void* p, std::size_t i) {
  if constexpr (M == Master::fp32)
    return _mm512_loadu_ps(static_cast<const float*>(p) + i);
  else
    return bf16_to_float(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(p) + i)));
}

template <Master M>
inline void store_p(void* p, std::size_t i, __mmask16 keep, __m512 x, std::uint64_t base, std::uint64_t element) {
  if constexpr (M == Master::fp32)
    _mm512_mask_storeu_ps(static_cast<float*>(p) + i, keep, x);
  else
    _mm256_mask_storeu_epi16(static_cast<std::uint16_t*>(p) + i, keep,
                             top_halves(bf16_sr_in_top_half(x, counter_bits16(base, element + i))));
}

// A map's code buckets (core/code_buckets.h) in lanes: bucket_code, 16 values at a time, by one gather.
struct Buckets {
  __m512i first, top, neg_base, neg_mask, low_mask;
  __m128i shift;
  const std::uint32_t* entry;
};

Buckets arrange(const CodeBuckets& b) {
  const auto lanes = [](std::uint32_t x) { return _mm512_set1_epi32(int(x)); };
  return {lanes(b.first), lanes(b.top), lanes(b.neg_base), lanes(b.neg_mask), lanes((1u << b.shift) - 1),
          _mm_cvtsi32_si128(int(b.shift)), b.entry};
}

// bucket_code(b, q) for q in [-1, 1], not NaN.
inline __m512i nearest_codes(const Buckets& b, __m512 q) {
  const __m512i u = _mm512_castps_si512(q), a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 negative = _mm512_movepi32_mask(u);
  // A negative value's low bits complemented (mask - x is mask ^ x within the mask).
  const __m512i low = _mm512_and_si512(_mm512_xor_si512(u, _mm512_srai_epi32(u, 31)), b.low_mask);
  __m512i j = _mm512_sub_epi32(_mm512_srl_epi32(a, b.shift), b.first);
  j = _mm512_min_epi32(_mm512_max_epi32(j, _mm512_setzero_si512()), b.top);
  j = _mm512_mask_add_epi32(j, negative, _mm512_and_si512(j, b.neg_mask), b.neg_base);
  const __m512i e = _mm512_i32gather_epi32(j, b.entry, 4);
  const __mmask16 above = _mm512_cmpge_epu32_mask(low, _mm512_and_si512(e, _mm512_set1_epi32(0xffffff)));
  const __m512i code = _mm512_srli_epi32(e, 24);
  return _mm512_mask_add_epi32(code, above, code, _mm512_set1_epi32(1));
}

// A map's 256 values as two planes of 16-bit halves, for map[c] by in-register permutes 32 codes at a time:
// per plane four two-register look-ups of 64 and a blend on each of the code's top two bits, then the halves
// interleaved. On Zen 5 that is 0.12 ns a value against 0.35 for a 16-lane gather (a micro-benchmark).
struct Halves {
  alignas(64) std::uint16_t lo[256], hi[256];
};

Halves halves(const float* map) {
  Halves h;
  for (int c = 0; c < 256; ++c) {
    std::uint32_t u;
    std::memcpy(&u, map + c, 4);
    h.lo[c] = std::uint16_t(u), h.hi[c] = std::uint16_t(u >> 16);
  }
  return h;
}

inline __m512i look_up(const std::uint16_t* plane, __m512i c, __mmask32 bit6, __mmask32 bit7) {
  const auto part = [&](int q) { return _mm512_load_si512(plane + 32 * q); };
  const __m512i a = _mm512_mask_mov_epi16(_mm512_permutex2var_epi16(part(0), c, part(1)), bit6,
                                          _mm512_permutex2var_epi16(part(2), c, part(3)));
  const __m512i b = _mm512_mask_mov_epi16(_mm512_permutex2var_epi16(part(4), c, part(5)), bit6,
                                          _mm512_permutex2var_epi16(part(6), c, part(7)));
  return _mm512_mask_mov_epi16(a, bit7, b);
}

// out[i] = map[codes[i]] * absmax for a block's 256 codes. unpacklo/hi pair the words of each 128-bit lane,
// so the codes go in the order that makes their outputs elements 0-15 and 16-31: word 8L + k of lane L
// (k < 4) takes code 4L + k, word 8L + 4 + k code 16 + 4L + k.
inline void dequantize(const Halves& h, const std::uint8_t* codes, float absmax, float* out) {
  const __m512i order = _mm512_set_epi16(31, 30, 29, 28, 15, 14, 13, 12, 27, 26, 25, 24, 11, 10, 9, 8,  //
                                         23, 22, 21, 20, 7, 6, 5, 4, 19, 18, 17, 16, 3, 2, 1, 0);
  const __m512 a = _mm512_set1_ps(absmax);
  for (std::size_t i = 0; i < kBlock; i += 32) {
    const __m512i c = _mm512_permutexvar_epi16(
        order, _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i))));
    const __mmask32 bit6 = _mm512_test_epi16_mask(c, _mm512_set1_epi16(64));
    const __mmask32 bit7 = _mm512_test_epi16_mask(c, _mm512_set1_epi16(128));
    const __m512i lo = look_up(h.lo, c, bit6, bit7), hi = look_up(h.hi, c, bit6, bit7);
    _mm512_store_ps(out + i, _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(lo, hi)), a));
    _mm512_store_ps(out + i + 16, _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(lo, hi)), a));
  }
}

// quantize_block's codes for 16 values x of a block with this absmax (zero_code where it is 0).
template <bool KeepNonzero>
inline __m512i codes16(const Buckets& s, __m512 x, __m512 absmax, bool positive, __m512i zero_code,
                       std::uint8_t zero) {
  const __m512 zero_ps = _mm512_setzero_ps();
  __m512i c = zero_code;
  if (positive) {
    __m512 q = _mm512_div_ps(x, absmax);
    q = _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q), zero_ps);  // nearest_code(NaN) is 0's
    c = nearest_codes(s, q);
  }
  if constexpr (KeepNonzero) {
    const __mmask16 fix = _mm512_mask_cmp_ps_mask(_mm512_cmpeq_epi32_mask(c, zero_code), x, zero_ps, _CMP_NEQ_UQ);
    const __m512i away = _mm512_mask_mov_epi32(_mm512_set1_epi32((zero - 1) & 0xff),
                                               _mm512_cmp_ps_mask(x, zero_ps, _CMP_GT_OQ), _mm512_set1_epi32(zero + 1));
    c = _mm512_mask_mov_epi32(c, fix, away);
  }
  return c;
}

inline void store_codes(std::uint8_t* out, __m512i c) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(c));
}

struct Tables {
  Vec k;
  Buckets s, u;
  Halves smap, umap;
  std::uint8_t szero, uzero;
  std::uint64_t base;
};

// One whole block of 256 (a short one arrives padded).
template <Master M>
void int8_block(const Tables& t, void* p, const float* g, std::uint8_t* mc, float* m_abs, std::uint8_t* vc,
                float* v_abs, std::uint64_t element) {
  alignas(64) float m[kBlock], v[kBlock];
  dequantize(t.smap, mc, *m_abs, m);
  dequantize(t.umap, vc, *v_abs, v);
  __m512 mmax = _mm512_setzero_ps(), vmax = _mm512_setzero_ps();
  for (std::size_t i = 0; i < kBlock; i += 16) {
    const __m512 gv = _mm512_loadu_ps(g + i);
    __m512 mv = _mm512_load_ps(m + i), vv = _mm512_load_ps(v + i);
    const __mmask16 ok = finite(gv);
    __m512 pn = load_p<M>(p, i), mn = mv, vn = vv;
    update(t.k, pn, mn, vn, gv);
    mv = _mm512_mask_mov_ps(mv, ok, mn);
    vv = _mm512_mask_mov_ps(vv, ok, vn);
    store_p<M>(p, i, ok, pn, t.base, element);
    _mm512_store_ps(m + i, mv);
    _mm512_store_ps(v + i, vv);
    // std::max(absmax, |x|) keeps absmax when |x| is NaN; max_ps returns its second operand then.
    mmax = _mm512_max_ps(_mm512_abs_ps(mv), mmax);
    vmax = _mm512_max_ps(_mm512_abs_ps(vv), vmax);
  }
  // quantize_block for both moments in one loop, two vectors of each an iteration: four independent chains
  // of a division and a gather, so the core does not wait on one's latency.
  const float m_max = _mm512_reduce_max_ps(mmax), v_max = _mm512_reduce_max_ps(vmax);
  const bool m_pos = m_max > 0.0f, v_pos = v_max > 0.0f;
  const __m512 ma2 = _mm512_set1_ps(m_max), va2 = _mm512_set1_ps(v_max);
  const __m512i mz = _mm512_set1_epi32(t.szero), vz = _mm512_set1_epi32(t.uzero);
  for (std::size_t i = 0; i < kBlock; i += 32) {
    const __m512i c0 = codes16<false>(t.s, _mm512_load_ps(m + i), ma2, m_pos, mz, t.szero);
    const __m512i c1 = codes16<false>(t.s, _mm512_load_ps(m + i + 16), ma2, m_pos, mz, t.szero);
    const __m512i c2 = codes16<true>(t.u, _mm512_load_ps(v + i), va2, v_pos, vz, t.uzero);
    const __m512i c3 = codes16<true>(t.u, _mm512_load_ps(v + i + 16), va2, v_pos, vz, t.uzero);
    store_codes(mc + i, c0), store_codes(mc + i + 16, c1), store_codes(vc + i, c2), store_codes(vc + i + 16, c3);
  }
  *m_abs = m_max;
  *v_abs = v_max;
}

// A short last block through the whole-block code: copied into zero padding (codes of 0, gradients 0:
// the padded elements' moments stay 0 and leave the absmax alone), the first n copied back.
template <Master M>
void short_block(const Tables& t, void* p, const float* g, std::size_t n, std::uint8_t* mc, float* m_abs,
                 std::uint8_t* vc, float* v_abs, std::uint64_t element) {
  const std::size_t ps = M == Master::fp32 ? 4 : 2;
  alignas(64) unsigned char pp[kBlock * 4] = {};
  alignas(64) float gg[kBlock] = {};
  alignas(64) std::uint8_t mm[kBlock], vv[kBlock];
  std::memset(mm, t.szero, kBlock);
  std::memset(vv, t.uzero, kBlock);
  std::memcpy(pp, p, n * ps);
  std::memcpy(gg, g, n * 4);
  std::memcpy(mm, mc, n);
  std::memcpy(vv, vc, n);
  int8_block<M>(t, pp, gg, mm, m_abs, vv, v_abs, element);
  std::memcpy(p, pp, n * ps);
  std::memcpy(mc, mm, n);
  std::memcpy(vc, vv, n);
}

template <Master M>
void int8_run(const Consts& k, void* p, const float* g, std::size_t n, std::uint8_t* m, float* m_abs,
              std::uint8_t* v, float* v_abs, std::uint64_t element) {
  const Tables t{broadcast(k.adam),     arrange(k.signed_buckets), arrange(k.unsigned_buckets),
                 halves(k.signed_map),  halves(k.unsigned_map),    k.signed_zero,
                 k.unsigned_zero,       k.sr_base};
  const std::size_t ps = M == Master::fp32 ? 4 : 2;
  for (std::size_t at = 0, b = 0; at < n; at += kBlock, ++b) {
    void* pb = static_cast<char*>(p) + at * ps;
    if (n - at >= kBlock)
      int8_block<M>(t, pb, g + at, m + at, m_abs + b, v + at, v_abs + b, element + at);
    else
      short_block<M>(t, pb, g + at, n - at, m + at, m_abs + b, v + at, v_abs + b, element + at);
  }
}

// bf16 moments, 16 elements: a non-finite gradient's element keeps p, m and v (its stores are masked off).
template <Master M>
inline void bf16_vector(const Vec& k, std::uint64_t base, void* p, const float* g, std::uint16_t* m,
                        std::uint16_t* v, std::size_t i, std::uint64_t element) {
  const __m512 gv = _mm512_loadu_ps(g + i);
  __m512 mv = bf16_to_float(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(m + i)));
  __m512 vv = bf16_to_float(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i)));
  __m512 pv = load_p<M>(p, i);
  const __mmask16 ok = finite(gv);
  update(k, pv, mv, vv, gv);
  _mm256_mask_storeu_epi16(m + i, ok, top_halves(bf16_in_top_half(mv)));
  _mm256_mask_storeu_epi16(v + i, ok, top_halves(bf16_in_top_half(vv)));
  store_p<M>(p, i, ok, pv, base, element);
}

template <Master M>
void bf16_run(const Consts& k, void* p, const float* g, std::size_t n, std::uint16_t* m, std::uint16_t* v,
              std::uint64_t element) {
  const Vec kv = broadcast(k.adam);
  const std::size_t ps = M == Master::fp32 ? 4 : 2;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) bf16_vector<M>(kv, k.sr_base, p, g, m, v, i, element);
  if (i == n) return;
  // The last 1-15 elements through the same code, padded with zeros (finite, stored and dropped).
  const std::size_t r = n - i;
  alignas(64) unsigned char pp[16 * 4] = {};
  alignas(64) float gg[16] = {};
  alignas(64) std::uint16_t mm[16] = {}, vv[16] = {};
  std::memcpy(pp, static_cast<char*>(p) + i * ps, r * ps);
  std::memcpy(gg, g + i, r * 4);
  std::memcpy(mm, m + i, r * 2);
  std::memcpy(vv, v + i, r * 2);
  bf16_vector<M>(kv, k.sr_base, pp, gg, mm, vv, 0, element + i);
  std::memcpy(static_cast<char*>(p) + i * ps, pp, r * ps);
  std::memcpy(m + i, mm, r * 2);
  std::memcpy(v + i, vv, r * 2);
}

}  // namespace

void int8_avx512(const Consts& k, void* p, const float* g, std::size_t n, std::uint8_t* m, float* m_absmax,
                 std::uint8_t* v, float* v_absmax, std::uint64_t element, Master master) {
  if (master == Master::fp32)
    int8_run<Master::fp32>(k, p, g, n, m, m_absmax, v, v_absmax, element);
  else
    int8_run<Master::bf16_sr>(k, p, g, n, m, m_absmax, v, v_absmax, element);
}

void bf16_avx512(const Consts& k, void* p, const float* g, std::size_t n, bf16* m, bf16* v, std::uint64_t element,
                 Master master) {
  auto* m16 = reinterpret_cast<std::uint16_t*>(m);
  auto* v16 = reinterpret_cast<std::uint16_t*>(v);
  if (master == Master::fp32)
    bf16_run<Master::fp32>(k, p, g, n, m16, v16, element);
  else
    bf16_run<Master::bf16_sr>(k, p, g, n, m16, v16, element);
}

}  // namespace tz::adam_compressed_detail
