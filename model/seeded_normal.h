// The counter-based normal generator every family's initialisation draws from (splitmix64 + Box-Muller),
// so element i of a tensor is computed on its own, the same bits in parallel as in sequence, with any
// compiler and standard library; one stream per tensor, seeded from its name.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace tz {

// splitmix64's k-th output (k >= 1) from seed s.
inline std::uint64_t splitmix(std::uint64_t s, std::uint64_t k) {
  std::uint64_t z = s + k * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1].
inline double uniform_of(std::uint64_t bits) { return (double(bits >> 11) + 1.0) * (1.0 / 9007199254740992.0); }

// A standard normal by Box-Muller on draws 2i+1 and 2i+2 of stream s.
inline double normal_at(std::uint64_t s, std::size_t i) {
  const double u1 = uniform_of(splitmix(s, 2 * std::uint64_t(i) + 1)),
               u2 = uniform_of(splitmix(s, 2 * std::uint64_t(i) + 2));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// A tensor's stream: the seed mixed with its name (FNV-1a), so adding a tensor does not shift the others.
inline std::uint64_t tensor_stream(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = seed ^ 0xcbf29ce484222325ull;
  for (char c : name) h = (h ^ std::uint8_t(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace tz
