// The compressed-state AdamW's AVX2 path (avx2/fma/f16c, as cpu_adam_avx2.cc): the AVX-512 path's
// structure at 8 lanes. Without mask registers, short blocks and tails run padded with zeros, skipped
// elements are blended back before plain stores. Without a 64-bit multiply, the stochastic rounding's hash
// builds each product from three 32x32-bit ones. The same operations as core/adam_int8.cc, in order.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/adam_compressed_kernels.h"
#include "core/adam_update_avx2.h"

namespace tz::adam_compressed_detail {
namespace {

constexpr std::size_t kBlock = 256;

using cpu_adam_detail::broadcast;
using cpu_adam_detail::update;
using cpu_adam_detail::Vec;

inline __m256 abs_ps(__m256 x) { return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }

// std::isfinite(g) as an all-ones lane: |g| < inf is false for NaN and inf.
inline __m256 finite(__m256 g) { return _mm256_cmp_ps(abs_ps(g), _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ); }

// float_to_bf16 in 32-bit lanes whose top half is the result.
inline __m256i bf16_in_top_half(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
}

inline __m256 bf16_to_float(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }

// The top halves of 8 lanes as 8 16-bit values.
inline __m128i top_halves(__m256i x) {
  const __m256i h = _mm256_srli_epi32(x, 16);  // <= 0xffff: the unsigned saturation of packus is exact
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08));
}

// a * b mod 2^64 in 64-bit lanes from 32x32-bit products: lo*lo + ((hi_a*lo_b + lo_a*hi_b) << 32).
inline __m256i mul64(__m256i a, std::uint64_t b) {
  const __m256i bl = _mm256_set1_epi64x(std::int64_t(b & 0xffffffffu)), bh = _mm256_set1_epi64x(std::int64_t(b >> 32));
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), bl), _mm256_mul_epu32(a, bh));
  return _mm256_add_epi64(_mm256_mul_epu32(a, bl), _mm256_slli_epi64(cross, 32));
}

// counter_bits for 4 elements from their z = (e + kSrElementAdd) * kSrElementMul (64-bit lanes).
inline __m256i counter_bits4(std::uint64_t base, __m256i z) {
  z = _mm256_xor_si256(z, _mm256_set1_epi64x(std::int64_t(base)));
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), kSrMix1);
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), kSrMix2);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

// The random bits of elements e .. e + 7, one per 32-bit lane. Element e + j's z is e's plus j * kSrElementMul
// mod 2^64: one scalar product and vector adds in place of an emulated 64-bit multiply.
inline __m256i counter_bits8(std::uint64_t base, std::uint64_t e) {
  constexpr std::uint64_t m = kSrElementMul;
  const __m256i steps = _mm256_set_epi64x(std::int64_t(3 * m), std::int64_t(2 * m), std::int64_t(m), 0);
  const __m256i z = _mm256_add_epi64(_mm256_set1_epi64x(std::int64_t((e + kSrElementAdd) * m)), steps);
  const __m256i a = counter_bits4(base, z);
  const __m256i b = counter_bits4(base, _mm256_add_epi64(z, _mm256_set1_epi64x(std::int64_t(4 * m))));
  // The high dwords, in 128-bit lanes [a0 a1 b0 b1 | a2 a3 b2 b3]; then into element order.
  const __m256 h = _mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_permute4x64_epi64(_mm256_castps_si256(h), _MM_SHUFFLE(3, 1, 2, 0));
}

inline __m256i bf16_sr_in_top_half(__m256 x, __m256i random) {
  const __m256i u = _mm256_castps_si256(x), exp = _mm256_set1_epi32(0x7f800000);
  const __m256i r = _mm256_add_epi32(u, _mm256_and_si256(random, _mm256_set1_epi32(0xffff)));
  const __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(u, exp), exp);
  const __m256i overflow = _mm256_cmpeq_epi32(_mm256_and_si256(r, exp), exp);
  const __m256i sr = _mm256_blendv_epi8(r, u, overflow);
  return _mm256_blendv_epi8(sr, bf16_in_top_half(x), special);
}

// The master's 8 elements as floats, and the store of the updated ones where `keep` is set (the others
// keep their bits: `old` is what was loaded).
template <Master M>
inline __m256 load_p(const void* p, std::size_t i) {
  if constexpr (M == Master::fp32)
    return _mm256_loadu_ps(static_cast<const float*>(p) + i);
  else
    return bf16_to_float(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(p) + i)));
}

template <Master M>
inline void store_p(void* p, std::size_t i, __m256 keep, __m256 old, __m256 x, std::uint64_t base,
                    std::uint64_t element) {
  if constexpr (M == Master::fp32) {
    _mm256_storeu_ps(static_cast<float*>(p) + i, _mm256_blendv_ps(old, x, keep));
  } else {
    // old is the bf16 widened: its top halves are the stored bits.
    const __m256i y = _mm256_blendv_epi8(_mm256_castps_si256(old),
                                         bf16_sr_in_top_half(x, counter_bits8(base, element + i)),
                                         _mm256_castps_si256(keep));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<std::uint16_t*>(p) + i), top_halves(y));
  }
}

// A map's code buckets (core/code_buckets.h) in lanes: bucket_code, 8 values at a time, by one gather.
struct Buckets {
  __m256i first, top, neg_base, neg_mask, low_mask;
  __m128i shift;
  const std::uint32_t* entry;
};

Buckets arrange(const CodeBuckets& b) {
  const auto lanes = [](std::uint32_t x) { return _mm256_set1_epi32(int(x)); };
  return {lanes(b.first), lanes(b.top), lanes(b.neg_base), lanes(b.neg_mask), lanes((1u << b.shift) - 1),
          _mm_cvtsi32_si128(int(b.shift)), b.entry};
}

// bucket_code(b, q) for q in [-1, 1], not NaN.
inline __m256i nearest_codes(const Buckets& b, __m256 q) {
  const __m256i u = _mm256_castps_si256(q), a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i negative = _mm256_srai_epi32(u, 31);
  // A negative value's low bits complemented (mask - x is mask ^ x within the mask).
  const __m256i low = _mm256_and_si256(_mm256_xor_si256(u, negative), b.low_mask);
  __m256i j = _mm256_sub_epi32(_mm256_srl_epi32(a, b.shift), b.first);
  j = _mm256_min_epi32(_mm256_max_epi32(j, _mm256_setzero_si256()), b.top);
  j = _mm256_blendv_epi8(j, _mm256_add_epi32(_mm256_and_si256(j, b.neg_mask), b.neg_base), negative);
  const __m256i e = _mm256_i32gather_epi32(reinterpret_cast<const int*>(b.entry), j, 4);
  // code + (low >= threshold): both under 2^24, so the signed compare orders them (-1 where low is below).
  const __m256i below = _mm256_cmpgt_epi32(_mm256_and_si256(e, _mm256_set1_epi32(0xffffff)), low);
  return _mm256_add_epi32(_mm256_add_epi32(_mm256_srli_epi32(e, 24), _mm256_set1_epi32(1)), below);
}

// 8 codes (each < 256 in a 32-bit lane) to 8 bytes at `out`.
inline void store_codes(std::uint8_t* out, __m256i c) {
  const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                             0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8(c, low_bytes);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out),
                   _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
}

inline float reduce_max(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

// quantize_block's codes for 8 values x of a block with this absmax (zero_code where it is 0).
template <bool KeepNonzero>
inline __m256i codes8(const Buckets& s, __m256 x, __m256 absmax, bool positive, __m256i zero_code,
                      std::uint8_t zero) {
  const __m256 zero_ps = _mm256_setzero_ps();
  __m256i c = zero_code;
  if (positive) {
    __m256 q = _mm256_div_ps(x, absmax);
    q = _mm256_andnot_ps(_mm256_cmp_ps(q, q, _CMP_UNORD_Q), q);  // nearest_code(NaN) is 0's
    c = nearest_codes(s, q);
  }
  if constexpr (KeepNonzero) {
    const __m256i fix = _mm256_and_si256(_mm256_cmpeq_epi32(c, zero_code),
                                         _mm256_castps_si256(_mm256_cmp_ps(x, zero_ps, _CMP_NEQ_UQ)));
    const __m256i away = _mm256_blendv_epi8(_mm256_set1_epi32((zero - 1) & 0xff), _mm256_set1_epi32(zero + 1),
                                            _mm256_castps_si256(_mm256_cmp_ps(x, zero_ps, _CMP_GT_OQ)));
    c = _mm256_blendv_epi8(c, away, fix);
  }
  return c;
}

struct Tables {
  Vec k;
  Buckets s, u;
  const float *smap, *umap;
  std::uint8_t szero, uzero;
  std::uint64_t base;
};

template <Master M>
void int8_block(const Tables& t, void* p, const float* g, std::uint8_t* mc, float* m_abs, std::uint8_t* vc,
                float* v_abs, std::uint64_t element) {
  alignas(32) float m[kBlock], v[kBlock];
  const __m256 ma = _mm256_set1_ps(*m_abs), va = _mm256_set1_ps(*v_abs);
  __m256 mmax = _mm256_setzero_ps(), vmax = _mm256_setzero_ps();
  for (std::size_t i = 0; i < kBlock; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256i mi = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mc + i)));
    const __m256i vi = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(vc + i)));
    __m256 mv = _mm256_mul_ps(_mm256_i32gather_ps(t.smap, mi, 4), ma);
    __m256 vv = _mm256_mul_ps(_mm256_i32gather_ps(t.umap, vi, 4), va);
    const __m256 ok = finite(gv);
    const __m256 p0 = load_p<M>(p, i);
    __m256 pn = p0, mn = mv, vn = vv;
    update(t.k, pn, mn, vn, gv);
    mv = _mm256_blendv_ps(mv, mn, ok);
    vv = _mm256_blendv_ps(vv, vn, ok);
    store_p<M>(p, i, ok, p0, pn, t.base, element);
    _mm256_store_ps(m + i, mv);
    _mm256_store_ps(v + i, vv);
    // std::max(absmax, |x|) keeps absmax when |x| is NaN; max_ps returns its second operand then.
    mmax = _mm256_max_ps(abs_ps(mv), mmax);
    vmax = _mm256_max_ps(abs_ps(vv), vmax);
  }
  // quantize_block for both moments in one loop, two vectors of each an iteration: four independent
  // divide-and-gather chains (see the AVX-512 path).
  const float m_max = reduce_max(mmax), v_max = reduce_max(vmax);
  const bool m_pos = m_max > 0.0f, v_pos = v_max > 0.0f;
  const __m256 ma2 = _mm256_set1_ps(m_max), va2 = _mm256_set1_ps(v_max);
  const __m256i mz = _mm256_set1_epi32(t.szero), vz = _mm256_set1_epi32(t.uzero);
  for (std::size_t i = 0; i < kBlock; i += 16) {
    const __m256i c0 = codes8<false>(t.s, _mm256_load_ps(m + i), ma2, m_pos, mz, t.szero);
    const __m256i c1 = codes8<false>(t.s, _mm256_load_ps(m + i + 8), ma2, m_pos, mz, t.szero);
    const __m256i c2 = codes8<true>(t.u, _mm256_load_ps(v + i), va2, v_pos, vz, t.uzero);
    const __m256i c3 = codes8<true>(t.u, _mm256_load_ps(v + i + 8), va2, v_pos, vz, t.uzero);
    store_codes(mc + i, c0), store_codes(mc + i + 8, c1), store_codes(vc + i, c2), store_codes(vc + i + 8, c3);
  }
  *m_abs = m_max;
  *v_abs = v_max;
}

// A short last block padded with zeros (codes of 0, gradients 0: moments that stay 0 and leave the
// absmax alone), the first n copied back.
template <Master M>
void short_block(const Tables& t, void* p, const float* g, std::size_t n, std::uint8_t* mc, float* m_abs,
                 std::uint8_t* vc, float* v_abs, std::uint64_t element) {
  const std::size_t ps = M == Master::fp32 ? 4 : 2;
  alignas(32) unsigned char pp[kBlock * 4] = {};
  alignas(32) float gg[kBlock] = {};
  alignas(32) std::uint8_t mm[kBlock], vv[kBlock];
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
  const Tables t{broadcast(k.adam),   arrange(k.signed_buckets), arrange(k.unsigned_buckets), k.signed_map,
                 k.unsigned_map, k.signed_zero,                k.unsigned_zero,                k.sr_base};
  const std::size_t ps = M == Master::fp32 ? 4 : 2;
  for (std::size_t at = 0, b = 0; at < n; at += kBlock, ++b) {
    void* pb = static_cast<char*>(p) + at * ps;
    if (n - at >= kBlock)
      int8_block<M>(t, pb, g + at, m + at, m_abs + b, v + at, v_abs + b, element + at);
    else
      short_block<M>(t, pb, g + at, n - at, m + at, m_abs + b, v + at, v_abs + b, element + at);
  }
}

template <Master M>
inline void bf16_vector(const Vec& k, std::uint64_t base, void* p, const float* g, std::uint16_t* m,
                        std::uint16_t* v, std::size_t i, std::uint64_t element) {
  const __m256 gv = _mm256_loadu_ps(g + i);
  const __m256 m0 = bf16_to_float(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m + i)));
  const __m256 v0 = bf16_to_float(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
  const __m256 p0 = load_p<M>(p, i);
  const __m256 ok = finite(gv);
  const __m256i keep = _mm256_castps_si256(ok);
  __m256 pv = p0, mv = m0, vv = v0;
  update(k, pv, mv, vv, gv);
  const __m256i mb = _mm256_blendv_epi8(_mm256_castps_si256(m0), bf16_in_top_half(mv), keep);
  const __m256i vb = _mm256_blendv_epi8(_mm256_castps_si256(v0), bf16_in_top_half(vv), keep);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(m + i), top_halves(mb));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(v + i), top_halves(vb));
  store_p<M>(p, i, ok, p0, pv, base, element);
}

template <Master M>
void bf16_run(const Consts& k, void* p, const float* g, std::size_t n, std::uint16_t* m, std::uint16_t* v,
              std::uint64_t element) {
  const Vec kv = broadcast(k.adam);
  const std::size_t ps = M == Master::fp32 ? 4 : 2;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) bf16_vector<M>(kv, k.sr_base, p, g, m, v, i, element);
  if (i == n) return;
  const std::size_t r = n - i;
  alignas(32) unsigned char pp[8 * 4] = {};
  alignas(32) float gg[8] = {};
  alignas(32) std::uint16_t mm[8] = {}, vv[8] = {};
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

void int8_avx2(const Consts& k, void* p, const float* g, std::size_t n, std::uint8_t* m, float* m_absmax,
               std::uint8_t* v, float* v_absmax, std::uint64_t element, Master master) {
  if (master == Master::fp32)
    int8_run<Master::fp32>(k, p, g, n, m, m_absmax, v, v_absmax, element);
  else
    int8_run<Master::bf16_sr>(k, p, g, n, m, m_absmax, v, v_absmax, element);
}

void bf16_avx2(const Consts& k, void* p, const float* g, std::size_t n, bf16* m, bf16* v, std::uint64_t element,
               Master master) {
  auto* m16 = reinterpret_cast<std::uint16_t*>(m);
  auto* v16 = reinterpret_cast<std::uint16_t*>(v);
  if (master == Master::fp32)
    bf16_run<Master::fp32>(k, p, g, n, m16, v16, element);
  else
    bf16_run<Master::bf16_sr>(k, p, g, n, m16, v16, element);
}

}  // namespace tz::adam_compressed_detail
