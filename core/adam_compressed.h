// AdamW over one tensor's shard with compressed optimizer states (issue 36): moments in fp32, bf16 or int8
// (blockwise, core/blockwise_quant.h), the master in fp32 or bf16 with stochastic rounding, on the CPU
// Adam's instruction-set paths (AVX-512, AVX2, scalar), every path giving the scalar definition's bits
// (core/adam_int8.h). Nothing trains with it yet: `bench adam --optimizer-states` runs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/backend.h"
#include "core/cpu_adam.h"

namespace tz {

enum class MomentFormat { fp32, bf16, int8 };
enum class MasterFormat { fp32, bf16_sr };

std::string_view moment_format_name(MomentFormat f);  // "fp32", "bf16", "int8"
std::string_view master_format_name(MasterFormat f);  // "fp32", "bf16-sr"
// Throw tz::Error naming `source` (the flag) for another name.
MomentFormat parse_moment_format(std::string_view name, std::string_view source);
MasterFormat parse_master_format(std::string_view name, std::string_view source);

// Tensors of fewer elements keep fp32 moments whatever format is asked (the rule, bitsandbytes'
// min_8bit_size): biases and norm gains, a few percent of a model's moments at most, whose updates the
// quantization error would disturb most, and whose one or few blocks would carry an absmax per 256.
inline constexpr std::size_t kCompressedMinElements = 4096;

// The moment format a tensor of `tensor_elements` gets when `requested` is asked for.
constexpr MomentFormat moment_format_for(std::size_t tensor_elements, MomentFormat requested) {
  return tensor_elements < kCompressedMinElements ? MomentFormat::fp32 : requested;
}

// Bytes of moment state per element (int8: the codes and the absmax per 256, for a whole block).
double moment_bytes_per_element(MomentFormat f);

// One shard's states, typed by the formats: p is float* (fp32 master) or bf16*; m and v are float*, bf16*
// or std::uint8_t* codes; m_absmax and v_absmax (int8 only) hold one float per block of 256.
struct CompressedStates {
  MomentFormat moments = MomentFormat::fp32;
  MasterFormat master = MasterFormat::fp32;
  void* p = nullptr;
  void* m = nullptr;
  void* v = nullptr;
  float* m_absmax = nullptr;
  float* v_absmax = nullptr;
};

// Where the shard lies and what keys its stochastic rounding: `first_element` is the shard's first element's
// index in its tensor (int8 moments need it on a block boundary, so blocks never depend on the sharding),
// and element i's random bits are counter_bits(seed, step, first_element + i).
struct ShardPosition {
  std::size_t first_element = 0;
  std::uint64_t seed = 0;
};

// One AdamW step over n elements of the shard, in place; g (fp32) is read only. fp32 moments are
// cpu_adamw's arithmetic (with an fp32 master, cpu_adamw itself); bf16 and int8 moments leave an element
// whose gradient is NaN or inf as it was (core/adam_int8.h). Runs on the calling thread's OpenMP team
// over chunks of whole blocks.
void adamw_compressed(CpuAdamIsa isa, const AdamStep& s, const CompressedStates& st, const float* g, std::size_t n,
                      ShardPosition at);

}  // namespace tz
