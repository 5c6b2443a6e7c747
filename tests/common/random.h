// Seeded, platform-independent random numbers for tests: the same seed gives the same inputs on
// every compiler (std::uniform_*_distribution is implementation-defined, so it is not used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tz::test {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}

  std::uint64_t bits64() { return gen_(); }
  std::uint32_t bits32() { return std::uint32_t(gen_() >> 32); }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return double(gen_() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  // Uniform integer in [0, n).
  int below(int n) { return int(unit() * n); }

  std::vector<float> floats(std::size_t n, double lo = -1.0, double hi = 1.0) {
    std::vector<float> v(n);
    for (auto& x : v) x = float(uniform(lo, hi));
    return v;
  }

 private:
  std::mt19937_64 gen_;
};

template <typename T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace tz::test
