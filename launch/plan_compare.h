// `tierzero plan --compare`: one table of ways to train one model on one world size (GPU-only at
// stages 0-3, the optimizer on the host or on NVMe, parameters offloaded, compressed optimizer states on
// the host), each on every hardware asked for, planned and its step predicted, with the time and cost per
// million tokens and per run at the prices given. The question "bigger devices or offloading" in one command.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/train_options.h"
#include "zero/hardware.h"

namespace tz {

struct Prices {
  double gpu_hour = 0;      // per device (rank) and hour
  double node_hour = 0;     // per node and hour (its CPUs, memory, network)
  double nvme_tb_hour = 0;  // per TB of NVMe store in use and hour
};

struct CompareRow {
  std::string hardware, option;
  bool fits = false;
  bool predicted = false;  // fits, and the hardware's rates predict its step (else `problem` says why not)
  bool refused = false;    // the planner refused the option outright (`problem` says why): not a budget
  std::string problem;     // when it does not fit: the first tier over budget; or why there is no prediction
  PerTier<std::size_t> bytes;
  double step_s = 0, tokens_per_s = 0, mfu = 0;
  double hours_per_mtok = 0, cost_per_mtok = 0, run_hours = 0, run_cost = 0;
};

// opt: the run (its model, batch, precision, steps); the budgets come from each hardware's memory.
std::vector<CompareRow> compare_options(const TrainOptions& opt, int world, const std::vector<Hardware>& hws,
                                        const Prices& prices);

std::string compare_table(const std::vector<CompareRow>& rows, const Prices& prices, long long run_tokens);
std::string compare_csv(const std::vector<CompareRow>& rows);
nlohmann::json compare_json(const std::vector<CompareRow>& rows);

}  // namespace tz
