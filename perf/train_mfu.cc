// train_mfu: reads the step records of a metrics file and reduces them to medians.
#include "perf/train_mfu.h"

#include <cmath>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "model/json_bounded.h"
#include "model/model_family.h"
#include "zero/step_time.h"
#include "perf/timing.h"

namespace tz {

nlohmann::json train_mfu(const TrainMfuOptions& opt) {
  TZ_CHECK(opt.skip >= 0 && opt.world >= 1, "--skip must be >= 0 and --world >= 1");
  std::ifstream f(opt.metrics);
  TZ_CHECK(bool(f), "cannot read the metrics file ", opt.metrics,
           ": run tierzero train --metrics FILE first");
  std::vector<double> step, fwd, bwd, optim, wait, losses;
  nlohmann::json last;
  double tokens_per_step = 0;
  int seen = 0, line_no = 0;
  for (std::string line; std::getline(f, line);) {
    ++line_no;
    if (line.empty()) continue;
    const nlohmann::json r = parse_json_bounded(line, opt.metrics + " line " + std::to_string(line_no),
                                                "a metrics file of tierzero train?");
    if (!r.is_object() || !r.contains("ms") || !r.contains("tokens_per_s")) continue;  // validation records
    if (r.contains("loss") && r["loss"].is_number())
      losses.push_back(r["loss"].get<double>());  // every step's: is it training?
    if (seen++ < opt.skip) continue;
    const nlohmann::json& ms = r["ms"];
    step.push_back(ms.at("step").get<double>());
    fwd.push_back(ms.value("forward", 0.0));
    bwd.push_back(ms.value("backward", 0.0));
    optim.push_back(ms.value("optimizer", 0.0));
    wait.push_back(ms.value("comm_wait", 0.0));
    // A whole number of tokens (B x T x accumulation x ranks), recovered from the rounded-off rate.
    tokens_per_step = std::round(r["tokens_per_s"].get<double>() * ms.at("step").get<double>() / 1e3);
    last = r;
  }
  TZ_CHECK(!step.empty(), opt.metrics, " has ", seen, " step record", seen == 1 ? "" : "s",
           ", none left after --skip ", opt.skip, ": train more steps");
  const double flops_per_token = model_family(opt.model).flops_per_token(opt.model, opt.seq_len);
  const double step_ms = bench::median(step), tokens_per_s = tokens_per_step / (step_ms / 1e3);
  const double tflops = tokens_per_s * flops_per_token / opt.world / 1e12;
  nlohmann::json out = {
      {"metrics", opt.metrics},
      {"steps_used", step.size()},
      {"steps_skipped", opt.skip},
      {"tokens_per_step", tokens_per_step},
      {"ms_per_step", step_ms},
      {"ms_forward", bench::median(fwd)},
      {"ms_backward", bench::median(bwd)},
      {"ms_optimizer", bench::median(optim)},
      {"ms_comm_wait", bench::median(wait)},
      {"tokens_per_s", tokens_per_s},
      {"flops_per_token", flops_per_token},
      {"flops_formula", model_family(opt.model).flops_formula()},
      {"tflops_per_device", tflops},
      {"world", opt.world},
      {"peak_tflops", opt.peak_tflops > 0 ? nlohmann::json(opt.peak_tflops) : nlohmann::json(nullptr)},
      {"peak_source", opt.peak_source},
      {"mfu", opt.peak_tflops > 0 ? nlohmann::json(tflops / opt.peak_tflops) : nlohmann::json(nullptr)}};
  out["losses"] = losses;
  if (last.contains("peak_bytes")) out["peak_bytes"] = last["peak_bytes"];
  if (last.contains("offload")) out["offload_last_step"] = last["offload"];
  return out;
}

}  // namespace tz
