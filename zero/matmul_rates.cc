// MatmulRates: the interpolation on the two curves and the hardware file's section.
#include "zero/matmul_rates.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/error.h"

namespace tz {
namespace {

int index_of(DType dt) { return dt == DType::f32 ? 0 : dt == DType::bf16 ? 1 : 2; }

// The rate at `x` on `curve` (ascending): straight in log2(at) between the nearest points, held at the ends.
double rate_at(const std::vector<RatePoint>& curve, int i, double x) {
  if (x <= curve.front().at) return curve.front().tflops[i];
  if (x >= curve.back().at) return curve.back().tflops[i];
  std::size_t k = 1;
  while (curve[k].at < x) ++k;
  const RatePoint &a = curve[k - 1], &b = curve[k];
  const double t = std::log2(x / a.at) / std::log2(double(b.at) / a.at);
  return a.tflops[i] + t * (b.tflops[i] - a.tflops[i]);
}

constexpr const char* kNames[3] = {"fp32", "bf16", "fp16"};

}  // namespace

double MatmulRates::factor(DType dt, int w, int t) const {
  if (!measured()) return 1;
  const int i = index_of(dt);
  for (const auto* curve : {&by_width, &by_tokens})
    for (const RatePoint& p : *curve)
      if (p.tflops[i] <= 0) return 1;
  return rate_at(by_width, i, w) / rate_at(by_width, i, width) * rate_at(by_tokens, i, t) / rate_at(by_tokens, i, tokens);
}

nlohmann::json MatmulRates::to_json() const {
  auto curve = [](const std::vector<RatePoint>& c) {
    nlohmann::json a = nlohmann::json::array();
    for (const RatePoint& p : c) a.push_back({{"at", p.at}, {"fp32", p.tflops[0]}, {"bf16", p.tflops[1]}, {"fp16", p.tflops[2]}});
    return a;
  };
  return {{"width", width}, {"tokens", tokens}, {"by_width", curve(by_width)}, {"by_tokens", curve(by_tokens)}};
}

MatmulRates MatmulRates::from_json(const nlohmann::json& j, const std::string& src) {
  const std::string what = src + ": hardware field 'matmul_rates'";
  TZ_CHECK(j.is_object(), what, " must be an object (what `tierzero bench calibrate` writes)");
  auto whole = [&](const nlohmann::json& v, const std::string& key) {
    TZ_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 1 && v.get<double>() <= (1 << 24) &&
                 v.get<double>() == std::floor(v.get<double>()),
             what, ": '", key, "' must be a whole number in [1, 16777216], got ", v.dump());
    return int(v.get<double>());
  };
  MatmulRates r;
  TZ_CHECK(j.contains("width") && j.contains("tokens"), what, " needs 'width' and 'tokens' (the calibrated model's)");
  r.width = whole(j["width"], "width");
  r.tokens = whole(j["tokens"], "tokens");
  for (auto [key, curve, through] : {std::tuple{"by_width", &r.by_width, r.width}, std::tuple{"by_tokens", &r.by_tokens, r.tokens}}) {
    TZ_CHECK(j.contains(key) && j[key].is_array() && !j[key].empty(), what, ": '", key,
             "' must be a non-empty list of {\"at\": N, \"fp32\": R, \"bf16\": R, \"fp16\": R}");
    for (const nlohmann::json& e : j[key]) {
      TZ_CHECK(e.is_object() && e.contains("at"), what, ": '", key, "' entry ", e.dump(), " must be {\"at\": N, \"fp32\": R, ...}");
      RatePoint p;
      p.at = whole(e["at"], std::string(key) + ".at");
      TZ_CHECK(curve->empty() || p.at > curve->back().at, what, ": '", key, "' must be in ascending 'at', without repeats");
      for (int i = 0; i < 3; ++i) {
        const nlohmann::json& v = e.value(kNames[i], nlohmann::json(0.0));
        TZ_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0 && v.get<double>() <= 1e6 &&
                     (v.get<double>() == 0 || v.get<double>() >= 1e-6),
                 what, ": '", key, "' entry at ", p.at, ": '", kNames[i],
                 "' must be 0 (not measured) or a rate in [1e-6, 1e6] TFLOP/s");
        p.tflops[i] = v.get<double>();
      }
      curve->push_back(p);
    }
    TZ_CHECK(std::any_of(curve->begin(), curve->end(), [&](const RatePoint& p) { return p.at == through; }), what, ": '", key,
             "' must include the calibrated ", std::string(key) == "by_width" ? "width " : "tokens ", through);
  }
  return r;
}

}  // namespace tz
