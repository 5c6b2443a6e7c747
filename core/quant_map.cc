// The dynamic maps, and the nearest code by binary search.
#include "core/quant_map.h"

#include <algorithm>
#include <cmath>
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

}  // namespace

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
