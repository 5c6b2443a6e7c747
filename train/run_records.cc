// The start, resume and end records of --metrics.
#include "train/run_records.h"

#include <unistd.h>

#include <ctime>

#include "core/device_traits.h"
#include "core/error.h"
#include "zero/tier.h"

namespace tz {

nlohmann::json settings_record(const TrainOptions& o) {
  return {{"model", o.model_name},
          {"model_shape", o.model.describe()},
          {"parameters", o.model.num_parameters_unpadded()},
          {"zero_stage", o.zero.stage},
          {"micro_batch", o.micro_batch},
          {"seq_len", o.seq_len},
          {"grad_accum", o.grad_accum},
          {"lr", o.lr.lr},
          {"min_lr", o.lr.min_lr},
          {"warmup", o.lr.warmup},
          {"lr_schedule", describe_lr_schedule(o.lr)},
          {"steps", o.steps},
          {"dtype", std::string(dtype_name(o.dtype))},
          {"device", device_kind_name(o.device)},
          {"offload_optimizer", tier_name(o.offload.optimizer)},
          {"offload_param", tier_name(o.offload.param)},
          {"offload_activations", tier_name(o.offload.activations)},
          {"checkpoint_activations", o.checkpointing != ActivationCheckpointing::off},
          {"seed", o.seed},
          {"data", o.data},
          {"val_data", o.val_data},
          {"save_dir", o.save_dir}};
}

nlohmann::json run_marker_record(const std::string& event, int step, const RunIdentity& id,
                                 const TrainOptions& opt, const MemoryPlan& plan) {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return {{"event", event},
          {"run_id", id.run_id},
          {"step", step},
          {"world_size", id.hosts.size()},
          {"hosts", id.hosts},
          {"time", when},
          {"tokens_per_step", id.tokens_per_step},
          {"steps", opt.steps},
          {"settings", settings_record(opt)},
          {"plan_peak_bytes",
           {{"device", plan.total(Tier::device)},
            {"host", plan.total(Tier::host)},
            {"nvme", plan.total(Tier::nvme)}}}};
}

nlohmann::json run_end_record(int last, int signal) {
  return {{"event", "end"}, {"step", last}, {"signal", signal}};
}

std::string this_host() {
  if (!log_context().host.empty()) return log_context().host;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace tz
