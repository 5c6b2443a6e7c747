// The compute term's kinds of work; the rule and its limits are in docs/planning.md#the-compute-term.
#include "zero/step_mix.h"

#include <cmath>

#include "core/error.h"
#include "model/model_family.h"
#include "zero/hardware.h"

namespace tz {
namespace {

const char* const kDtypes[3] = {"fp32", "bf16", "fp16"};
const char* const kKinds[3] = {"matmul", "attention", "other"};

}  // namespace

ComputeCounts compute_counts(const ModelConfig& cfg, int B, int T) {
  ComputeCounts c;
  const double L = cfg.n_layer, H = cfg.n_head,
               hd = cfg.head_dim > 0 ? cfg.head_dim : double(cfg.n_embd) / cfg.n_head;
  const double ffn = cfg.ffn_dim > 0 ? cfg.ffn_dim : 4.0 * cfg.n_embd;
  c.model_flops = double(B) * T * model_family(cfg).flops_per_token(cfg, T);
  // Both families count attention as 12 x layers x heads x head width x T per token (GPT-2's 12 L C T).
  c.matmul_flops = c.model_flops - double(B) * T * 12.0 * L * H * hd * T;
  c.attention_scores = L * B * H * T * (T + 1.0) / 2;
  c.other_elements = L * B * T * (cfg.n_embd + ffn);
  return c;
}

bool StepMix::measured(DType dt) const {
  const double* s = share[rate_index(dt)];
  return calibrated.model_flops > 0 && s[0] + s[1] + s[2] > 0;
}

double StepMix::time_ratio(const ComputeCounts& c, DType dt) const {
  if (!measured(dt)) return calibrated.model_flops > 0 ? c.model_flops / calibrated.model_flops : 1.0;
  const double* s = share[rate_index(dt)];
  return s[0] * c.matmul_flops / calibrated.matmul_flops +
         s[1] * c.attention_scores / calibrated.attention_scores +
         s[2] * c.other_elements / calibrated.other_elements;
}

bool StepMix::operator==(const StepMix& o) const {
  for (int d = 0; d < 3; ++d)
    for (int k = 0; k < 3; ++k)
      if (share[d][k] != o.share[d][k]) return false;
  return calibrated.model_flops == o.calibrated.model_flops &&
         calibrated.matmul_flops == o.calibrated.matmul_flops &&
         calibrated.attention_scores == o.calibrated.attention_scores &&
         calibrated.other_elements == o.calibrated.other_elements;
}

nlohmann::json step_mix_json(const StepMix& m) {
  nlohmann::json j = {{"model_flops", m.calibrated.model_flops},
                      {"matmul_flops", m.calibrated.matmul_flops},
                      {"attention_scores", m.calibrated.attention_scores},
                      {"other_elements", m.calibrated.other_elements}};
  for (int d = 0; d < 3; ++d)
    j[kDtypes[d]] = {{kKinds[0], m.share[d][0]}, {kKinds[1], m.share[d][1]}, {kKinds[2], m.share[d][2]}};
  return j;
}

StepMix step_mix_from_json(const nlohmann::json& j, const std::string& src) {
  StepMix m;
  TZ_CHECK(j.is_object(), src,
           ": hardware field 'step_mix' must be an object (what `tierzero bench calibrate` writes)");
  auto count = [&](const char* key) {
    TZ_CHECK(j.contains(key) && j[key].is_number(), src, ": hardware field 'step_mix.", key,
             "' is missing or not a number");
    const double v = j[key].get<double>();
    TZ_CHECK(std::isfinite(v) && v > 0 && v < 1e30, src, ": hardware field 'step_mix.", key,
             "' must be a positive number (the calibration model's work per micro-step), got ", v);
    return v;
  };
  m.calibrated.model_flops = count("model_flops");
  m.calibrated.matmul_flops = count("matmul_flops");
  m.calibrated.attention_scores = count("attention_scores");
  m.calibrated.other_elements = count("other_elements");
  for (int d = 0; d < 3; ++d) {
    if (!j.contains(kDtypes[d])) continue;  // that dtype not measured
    const nlohmann::json& e = j[kDtypes[d]];
    TZ_CHECK(e.is_object(), src, ": hardware field 'step_mix.", kDtypes[d],
             "' must be {\"matmul\": F, \"attention\": F, \"other\": F}");
    double sum = 0;
    for (int k = 0; k < 3; ++k) {
      const nlohmann::json& v = e.value(kKinds[k], nlohmann::json(nullptr));
      TZ_CHECK(
          v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0 && v.get<double>() <= 1,
          src, ": hardware field 'step_mix.", kDtypes[d], ".", kKinds[k], "' must be a fraction in [0, 1]");
      m.share[d][k] = v.get<double>();
      sum += m.share[d][k];
    }
    TZ_CHECK(sum == 0 || std::fabs(sum - 1) <= 1e-6, src, ": hardware field 'step_mix.", kDtypes[d],
             "': the fractions of the step sum to ", sum, ", not 1 (or all 0: not measured)");
  }
  return m;
}

}  // namespace tz
