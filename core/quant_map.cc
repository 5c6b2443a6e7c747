// The dynamic maps, the nearest code by binary search, and its thresholds for vector code.
#include "core/quant_map.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tz {
namespace {

// Each value in float64, rounded once to float32: the construction without torch's float32 linspace,
// whose accumulated rounding moves 90 of the signed and 99 of the unsigned values by 1 or 2 ulp.
QuantMap build(bool is_signed) {
  std::vector<double> data;
  for (int i = 0; i < 7; ++i) {
    const int n = is_signed ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    std::vector<double> b;
    for (int k = 0; k < n; ++k) b.push_back(0.1 + 0.9 * double(k) / double(n - 1));
    const double scale = std::pow(10.0, double(i - 6));
    for (int k = 0; k + 1 < n; ++k) {
      const double mean = (b[std::size_t(k)] + b[std::size_t(k) + 1]) / 2;
      data.push_back(scale * mean);
      if (is_signed) data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0);
  data.push_back(1.0);
  std::sort(data.begin(), data.end());
  QuantMap map{};
  for (std::size_t i = 0; i < map.size(); ++i) map[i] = float(data[i]);
  return map;
}

// A float's position in the order of the floats (-0 just below +0): consecutive floats, consecutive keys.
std::int64_t order_key(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return (u & 0x80000000u) ? -std::int64_t(u & 0x7fffffffu) - 1 : std::int64_t(u);
}

float from_order_key(std::int64_t k) {
  const std::uint32_t u = k < 0 ? std::uint32_t(-(k + 1)) | 0x80000000u : std::uint32_t(k);
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

QuantThresholds thresholds(const QuantMap& map) {
  QuantThresholds t{};
  t[0] = -std::numeric_limits<float>::infinity();
  for (std::size_t k = 1; k < t.size(); ++k) {
    // nearest_code(map[k - 1]) = k - 1 and nearest_code(map[k]) = k: the first float between them that
    // gives k or more.
    std::int64_t lo = order_key(map[k - 1]), hi = order_key(map[k]);
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (nearest_code(map, from_order_key(mid)) >= k ? hi : lo) = mid;
    }
    t[k] = from_order_key(hi);
  }
  return t;
}

}  // namespace

const QuantThresholds& code_thresholds(bool is_signed) {
  static const QuantThresholds s = thresholds(dynamic_map(true)), u = thresholds(dynamic_map(false));
  return is_signed ? s : u;
}

const QuantMap& dynamic_map(bool is_signed) {
  static const QuantMap s = build(true), u = build(false);
  return is_signed ? s : u;
}

std::uint8_t nearest_code(const QuantMap& map, float x) {
  if (std::isnan(x)) x = 0.0f;
  // The first value >= x; the nearest is it or the one before it.
  const auto it = std::lower_bound(map.begin(), map.end(), x);
  if (it == map.begin()) return 0;
  if (it == map.end()) return 255;
  const std::size_t hi = std::size_t(it - map.begin()), lo = hi - 1;
  const float dhi = map[hi] - x, dlo = x - map[lo];
  if (dlo < dhi) return std::uint8_t(lo);
  if (dhi < dlo) return std::uint8_t(hi);
  return std::uint8_t(std::fabs(map[lo]) <= std::fabs(map[hi]) ? lo : hi);  // a tie: the smaller magnitude
}

}  // namespace tz
