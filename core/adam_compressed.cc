// The compressed-state AdamW: format names, the step's constants, the scalar path (the block
// definitions of core/adam_int8.h, block by block) and the dispatch of chunks of whole blocks over the
// OpenMP team to the chosen ISA's kernel.
#include "core/adam_compressed.h"

#include <algorithm>
#include <cmath>

#include "core/adam_compressed_kernels.h"
#include "core/adam_int8.h"
#include "core/blockwise_quant.h"
#include "core/code_buckets.h"
#include "core/error.h"
#include "core/quant_map.h"
#include "core/stochastic_round.h"

namespace tz {
namespace {

using namespace adam_compressed_detail;

// 64 Ki elements (256 blocks) a chunk, as cpu_adam.cc chunks: its per-chunk cost is nothing at that size,
// and a shard of a few million elements still splits over the team.
constexpr std::size_t kChunk = std::size_t(1) << 16;
static_assert(kChunk % kQuantBlock == 0, "chunks hold whole blocks");

// counter_bits' element-independent part (core/stochastic_round.h).
std::uint64_t sr_base(std::uint64_t seed, std::uint64_t step) {
  return seed * 0x9E3779B97F4A7C15ull ^ (step + 0xD1B54A32D192ED03ull) * 0xBF58476D1CE4E5B9ull;
}

Consts consts(const AdamStep& s, std::uint64_t seed) {
  Consts k{};
  k.adam = cpu_adam_detail::consts_for(s);
  k.signed_map = dynamic_map(true).data();
  k.unsigned_map = dynamic_map(false).data();
  k.signed_buckets = code_buckets(true);
  k.unsigned_buckets = code_buckets(false);
  k.signed_zero = nearest_code(dynamic_map(true), 0.0f);
  k.unsigned_zero = nearest_code(dynamic_map(false), 0.0f);
  k.sr_base = sr_base(seed, std::uint64_t(s.step));
  return k;
}

// The scalar paths: the definitions themselves, a block at a time. `seed` and `step` rebuild the SrKey.
struct Scalar {
  const Consts& k;
  std::uint64_t seed, step;

  void int8(void* p, const float* g, std::size_t n, std::uint8_t* m, float* m_abs, std::uint8_t* v, float* v_abs,
            std::uint64_t element, Master master) const {
    for (std::size_t at = 0, b = 0; at < n; at += kQuantBlock, ++b) {
      const std::size_t len = std::min(kQuantBlock, n - at);
      const Int8Moments s{m + at, m_abs + b, v + at, v_abs + b};
      if (master == Master::bf16_sr)
        adamw_int8_block_bf16(k.adam.c, static_cast<bf16*>(p) + at, g + at, len, s, SrKey{seed, step, element + at});
      else
        adamw_int8_block(k.adam.c, static_cast<float*>(p) + at, g + at, len, s);
    }
  }

  void bf16m(void* p, const float* g, std::size_t n, bf16* m, bf16* v, std::uint64_t element, Master master) const {
    if (master == Master::bf16_sr)
      adamw_bf16m_block_bf16(k.adam.c, static_cast<bf16*>(p), g, n, Bf16Moments{m, v}, SrKey{seed, step, element});
    else
      adamw_bf16m_block(k.adam.c, static_cast<float*>(p), g, n, Bf16Moments{m, v});
  }
};

Int8Kernel int8_kernel(CpuAdamIsa isa) { return isa == CpuAdamIsa::avx512 ? int8_avx512 : int8_avx2; }
Bf16Kernel bf16_kernel(CpuAdamIsa isa) { return isa == CpuAdamIsa::avx512 ? bf16_avx512 : bf16_avx2; }

// Calls body(begin, count) for each chunk of [0, n), in parallel when there is more than one.
template <typename Body>
void for_each_chunk(std::size_t n, Body&& body) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) {
    if (n) body(std::size_t(0), n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) body(c * kChunk, std::min(kChunk, n - c * kChunk));
}

// fp32 moments under a bf16 master: cpu_adamw's arithmetic (no element skipped), then the stochastic
// rounding. Only tensors under kCompressedMinElements take it when int8 or bf16 moments are asked for,
// so it stays scalar.
void fp32_moments_bf16_master(const math::AdamCoeffs& c, bf16* p, float* m, float* v, const float* g, std::size_t n,
                              SrKey key) {
  for (std::size_t i = 0; i < n; ++i) {
    float x = bf16_to_float(p[i]);
    math::adamw_update(x, m[i], v[i], g[i], c);
    p[i] = float_to_bf16_sr(x, counter_bits(key.seed, key.step, key.element + i));
  }
}

}  // namespace

std::string_view moment_format_name(MomentFormat f) {
  switch (f) {
    case MomentFormat::fp32:
      return "fp32";
    case MomentFormat::bf16:
      return "bf16";
    case MomentFormat::int8:
      return "int8";
  }
  return "?";
}

std::string_view master_format_name(MasterFormat f) { return f == MasterFormat::bf16_sr ? "bf16-sr" : "fp32"; }

MomentFormat parse_moment_format(std::string_view name, std::string_view source) {
  for (MomentFormat f : {MomentFormat::fp32, MomentFormat::bf16, MomentFormat::int8})
    if (name == moment_format_name(f)) return f;
  TZ_FAIL(source, " '", name, "' is not an optimizer-state format: use fp32, bf16 or int8");
}

MasterFormat parse_master_format(std::string_view name, std::string_view source) {
  for (MasterFormat f : {MasterFormat::fp32, MasterFormat::bf16_sr})
    if (name == master_format_name(f)) return f;
  TZ_FAIL(source, " '", name, "' is not a master-weight format: use fp32 or bf16-sr");
}

double moment_bytes_per_element(MomentFormat f) {
  switch (f) {
    case MomentFormat::fp32:
      return 8.0;
    case MomentFormat::bf16:
      return 4.0;
    case MomentFormat::int8:
      return 2.0 + 8.0 / double(kQuantBlock);
  }
  return 0.0;
}

void adamw_compressed(CpuAdamIsa isa, const AdamStep& s, const CompressedStates& st, const float* g, std::size_t n,
                      ShardPosition at) {
  TZ_CHECK(cpu_adam_isa_supported(isa), "this CPU cannot run the ", cpu_adam_isa_name(isa), " CPU Adam path");
  const bool bf16_master = st.master == MasterFormat::bf16_sr;
  if (st.moments == MomentFormat::fp32 && !bf16_master) {
    cpu_adamw_with(isa, static_cast<float*>(st.p), static_cast<float*>(st.m), static_cast<float*>(st.v), g, n, s,
                   nullptr, DType::f32);
    return;
  }
  const Consts k = consts(s, at.seed);
  const Scalar scalar{k, at.seed, std::uint64_t(s.step)};
  const Master master = bf16_master ? Master::bf16_sr : Master::fp32;
  const std::size_t ps = bf16_master ? 2 : 4;
  switch (st.moments) {
    case MomentFormat::fp32:
      for_each_chunk(n, [&](std::size_t b, std::size_t len) {
        fp32_moments_bf16_master(k.adam.c, static_cast<bf16*>(st.p) + b, static_cast<float*>(st.m) + b,
                                 static_cast<float*>(st.v) + b, g + b, len,
                                 SrKey{at.seed, std::uint64_t(s.step), at.first_element + b});
      });
      return;
    case MomentFormat::bf16: {
      const Bf16Kernel kernel = isa == CpuAdamIsa::scalar ? nullptr : bf16_kernel(isa);
      for_each_chunk(n, [&](std::size_t b, std::size_t len) {
        void* p = static_cast<char*>(st.p) + b * ps;
        bf16 *m = static_cast<bf16*>(st.m) + b, *v = static_cast<bf16*>(st.v) + b;
        if (kernel)
          kernel(k, p, g + b, len, m, v, at.first_element + b, master);
        else
          scalar.bf16m(p, g + b, len, m, v, at.first_element + b, master);
      });
      return;
    }
    case MomentFormat::int8: {
      TZ_CHECK(at.first_element % kQuantBlock == 0, "an int8-moment shard must start on a block of ", kQuantBlock,
               " elements; it starts at element ", at.first_element);
      TZ_CHECK(st.m_absmax && st.v_absmax, "int8 moments need their absmax arrays");
      const Int8Kernel kernel = isa == CpuAdamIsa::scalar ? nullptr : int8_kernel(isa);
      for_each_chunk(n, [&](std::size_t b, std::size_t len) {
        void* p = static_cast<char*>(st.p) + b * ps;
        std::uint8_t *m = static_cast<std::uint8_t*>(st.m) + b, *v = static_cast<std::uint8_t*>(st.v) + b;
        float *ma = st.m_absmax + b / kQuantBlock, *va = st.v_absmax + b / kQuantBlock;
        if (kernel)
          kernel(k, p, g + b, len, m, ma, v, va, at.first_element + b, master);
        else
          scalar.int8(p, g + b, len, m, ma, v, va, at.first_element + b, master);
      });
      return;
    }
  }
}

}  // namespace tz
