// The --compare table: options x hardware, each through plan_memory() and predict_step().
#include "launch/plan_compare.h"

#include <cstdio>
#include <functional>

#include "core/error.h"
#include "train/trainer.h"
#include "zero/step_time.h"

namespace tz {
namespace {

struct Option {
  const char* name;
  std::function<void(PlanInputs&)> apply;
};

std::vector<Option> options() {
  auto stage = [](int s) { return [s](PlanInputs& in) { in.zero.stage = s; }; };
  auto states_on = [](Tier t, int s, MomentFormat states, MasterFormat master) {
    return [=](PlanInputs& in) {
      in.zero.stage = s, in.offload.optimizer = t;
      in.offload.optimizer_states = states, in.offload.master_weights = master;
    };
  };
  auto host_states = [=](int s, MomentFormat states, MasterFormat master) {
    return states_on(Tier::host, s, states, master);
  };
  return {
      {"stage 0 (data parallel)", stage(0)},
      {"stage 1", stage(1)},
      {"stage 2", stage(2)},
      {"stage 3", stage(3)},
      {"stage 2, optimizer on host",
       [](PlanInputs& in) { in.zero.stage = 2, in.offload.optimizer = Tier::host; }},
      {"stage 3, optimizer on host",
       [](PlanInputs& in) { in.zero.stage = 3, in.offload.optimizer = Tier::host; }},
      {"stage 3, optimizer on NVMe",
       [](PlanInputs& in) { in.zero.stage = 3, in.offload.optimizer = Tier::nvme; }},
      {"stage 3, optimizer + params on host",
       [](PlanInputs& in) {
         in.zero.stage = 3, in.offload.optimizer = Tier::host, in.offload.param = Tier::host;
       }},
      {"stage 3, optimizer + params on NVMe",
       [](PlanInputs& in) {
         in.zero.stage = 3, in.offload.optimizer = Tier::nvme, in.offload.param = Tier::nvme;
       }},
      // Compressed states (issue 36): the bytes they save and the update time they cost.
      {"stage 2, int8 + bf16-sr master", states_on(Tier::device, 2, MomentFormat::int8, MasterFormat::bf16_sr)},
      {"stage 2, optimizer on host, int8 + bf16-sr master",
       host_states(2, MomentFormat::int8, MasterFormat::bf16_sr)},
      {"stage 3, optimizer on host, bf16 states", host_states(3, MomentFormat::bf16, MasterFormat::fp32)},
      {"stage 3, optimizer on host, int8 + bf16-sr master",
       host_states(3, MomentFormat::int8, MasterFormat::bf16_sr)},
      // On NVMe they are also the bytes a step reads and writes.
      {"stage 3, optimizer on NVMe, int8 + bf16-sr master",
       states_on(Tier::nvme, 3, MomentFormat::int8, MasterFormat::bf16_sr)},
  };
}

}  // namespace

std::vector<CompareRow> compare_options(const TrainOptions& opt, int world, const std::vector<Hardware>& hws,
                                        const Prices& prices) {
  std::vector<CompareRow> rows;
  const double tokens_per_step = double(opt.micro_batch) * opt.seq_len * opt.grad_accum * world;
  for (const Hardware& hw : hws) {
    const int rpn = std::min(world, hw.ranks_per_node);
    for (const Option& o : options()) {
      PlanInputs in = plan_inputs(opt, world, 0);
      in.device = hw.device;
      in.offload.optimizer = in.offload.param = Tier::device;
      in.offload.activations = Tier::device;
      // Each option says its states' formats: fp32 unless it names others.
      in.offload.optimizer_states = MomentFormat::fp32, in.offload.master_weights = MasterFormat::fp32;
      o.apply(in);
      if (in_file(in.offload.optimizer) || in_file(in.offload.param))
        if (in.offload.nvme_paths.empty()) in.offload.nvme_paths = {"nvme"};
      // Each rank's share of its node's memory and NVMe.
      in.budget[Tier::device] = hw.device_bytes;
      in.budget[Tier::host] = hw.host_bytes / std::size_t(rpn);
      in.budget[Tier::nvme] = hw.nvme_bytes / std::size_t(rpn);
      CompareRow r;
      r.hardware = hw.name;
      r.option = o.name;
      try {
        const MemoryPlan plan = plan_memory(in);
        for (Tier t : tiers()) r.bytes[t] = plan.total(t);
        r.problem = plan.fit_problem();
        r.fits = r.problem.empty();
        if (r.fits) {
          try {
            const StepPrediction p = predict_step(plan, hw, opt.grad_accum);
            r.step_s = p.step_s, r.tokens_per_s = p.tokens_per_s, r.mfu = p.mfu;
            const int nodes = (world + hw.ranks_per_node - 1) / hw.ranks_per_node;
            const double per_hour = world * prices.gpu_hour + nodes * prices.node_hour +
                                    double(r.bytes[Tier::nvme]) * world / 1e12 * prices.nvme_tb_hour;
            r.hours_per_mtok = 1e6 / r.tokens_per_s / 3600;
            r.cost_per_mtok = r.hours_per_mtok * per_hour;
            r.run_hours = tokens_per_step * opt.steps / r.tokens_per_s / 3600;
            r.run_cost = r.run_hours * per_hour;
            r.predicted = true;
          } catch (const Error& e) {
            r.problem = e.what();  // it fits, but this hardware's rates cannot time it: said, never printed as a number
          }
        }
      } catch (const Error& e) {
        r.fits = false;
        r.refused = true;  // e.g. int8 states at a world size whose shards cut a quantization block
        r.problem = e.what();
      }
      rows.push_back(r);
    }
  }
  return rows;
}

std::string compare_table(const std::vector<CompareRow>& rows, const Prices& prices, long long run_tokens) {
  char line[400];
  std::string s;
  std::snprintf(line, sizeof line, "%-12s %-50s %10s %10s %10s %10s %12s %6s %10s %10s %10s\n", "hardware",
                "option", "device", "host", "nvme", "step ms", "tokens/s", "MFU", "h/Mtok", "$/Mtok",
                "$/run");
  s += line;
  for (const CompareRow& r : rows) {
    auto gib = [](std::size_t b) {
      char x[24];
      std::snprintf(x, sizeof x, "%.1fG", double(b) / double(1 << 30));
      return std::string(x);
    };
    if (!r.fits || !r.predicted) {
      std::snprintf(line, sizeof line, "%-12s %-50s %10s %10s %10s %10s\n", r.hardware.c_str(),
                    r.option.c_str(), gib(r.bytes[Tier::device]).c_str(), gib(r.bytes[Tier::host]).c_str(),
                    gib(r.bytes[Tier::nvme]).c_str(),
                    r.refused ? "refused (below)"
                    : r.fits  ? "no prediction (below)"
                              : "does not fit");
    } else {
      std::snprintf(line, sizeof line,
                    "%-12s %-50s %10s %10s %10s %10.1f %12.0f %5.1f%% %10.4f %10.2f %10.0f\n",
                    r.hardware.c_str(), r.option.c_str(), gib(r.bytes[Tier::device]).c_str(),
                    gib(r.bytes[Tier::host]).c_str(), gib(r.bytes[Tier::nvme]).c_str(), r.step_s * 1e3,
                    r.tokens_per_s, 100 * r.mfu, r.hours_per_mtok, r.cost_per_mtok, r.run_cost);
    }
    s += line;
  }
  for (const CompareRow& r : rows)
    if (r.fits && !r.predicted) s += "no prediction for " + r.hardware + ", " + r.option + ": " + r.problem + "\n";
  for (const CompareRow& r : rows)
    if (r.refused) s += "refused: " + r.hardware + ", " + r.option + ": " + r.problem + "\n";
  std::snprintf(line, sizeof line,
                "prices: %.2f per GPU-hour, %.2f per node-hour, %.2f per TB-hour of NVMe; a run: %lld tokens "
                "(--steps x tokens per step); memory per rank",
                prices.gpu_hour, prices.node_hour, prices.nvme_tb_hour, run_tokens);
  s += line;
  return s;
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::string s = "hardware,option,fits,device_bytes,host_bytes,nvme_bytes,step_ms,tokens_per_s,mfu,hours_per_mtok,"
                  "cost_per_mtok,run_hours,run_cost\n";
  char line[512];
  for (const CompareRow& r : rows) {
    std::snprintf(line, sizeof line, "%s,\"%s\",%d,%zu,%zu,%zu,%.4f,%.2f,%.5f,%.6f,%.6f,%.4f,%.4f\n", r.hardware.c_str(),
                  r.option.c_str(), r.fits ? 1 : 0, r.bytes[Tier::device], r.bytes[Tier::host], r.bytes[Tier::nvme], r.step_s * 1e3, r.tokens_per_s,
                  r.mfu, r.hours_per_mtok, r.cost_per_mtok, r.run_hours, r.run_cost);
    s += line;
  }
  return s;
}

nlohmann::json compare_json(const std::vector<CompareRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const CompareRow& r : rows) {
    nlohmann::json bytes = nlohmann::json::object();  // per tier, by name
    for (Tier t : tiers()) bytes[tier_name(t)] = r.bytes[t];
    a.push_back({{"hardware", r.hardware},
                 {"option", r.option},
                 {"fits", r.fits},
                 {"predicted", r.predicted},
                 {"refused", r.refused},
                 {"problem", r.problem},
                 {"bytes", bytes},
                 {"step_ms", r.step_s * 1e3},
                 {"tokens_per_s", r.tokens_per_s},
                 {"mfu", r.mfu},
                 {"hours_per_million_tokens", r.hours_per_mtok},
                 {"cost_per_million_tokens", r.cost_per_mtok},
                 {"run_hours", r.run_hours},
                 {"run_cost", r.run_cost}});
  }
  return a;
}

}  // namespace tz
