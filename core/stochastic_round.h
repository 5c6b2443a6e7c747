// bf16 master weights with stochastic rounding: an fp32 value rounds up to the next bf16 with the
// probability of its distance from the one below, so that updates smaller than a bf16 ulp still move
// the weight on average. The random bits come from a counter-based generator keyed by (seed, step,
// element): a run is reproducible, and every stage, tier and world size draws the same bits for the
// same element of the same step.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace tz {

// 32 random bits for (seed, step, element): SplitMix64's finalizer over the three mixed by odd
// multipliers (the Weyl constant for each), the high half.
TZ_HOST_DEVICE inline std::uint32_t counter_bits(std::uint64_t seed, std::uint64_t step, std::uint64_t element) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (step + 0xD1B54A32D192ED03ull) * 0xBF58476D1CE4E5B9ull ^
                    (element + 0x8CB92BA72F3D8DD7ull) * 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return std::uint32_t(z >> 32);
}

// x to bf16, rounded up with probability (x - down) / (up - down) using the low 16 of `random`: the
// fp32's low 16 bits plus them, truncated. NaN and inf convert as float_to_bf16 does; a finite value
// never rounds to inf (it keeps the largest finite bf16 below it).
TZ_HOST_DEVICE inline bf16 float_to_bf16_sr(float x, std::uint32_t random) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return float_to_bf16(x);
  const std::uint32_t r = u + (random & 0xffffu);
  if ((r & 0x7f800000u) == 0x7f800000u) return bf16{std::uint16_t(u >> 16)};
  return bf16{std::uint16_t(r >> 16)};
}

}  // namespace tz
