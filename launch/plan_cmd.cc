// `tierzero plan`: the memory plan `train` would allocate for the same flags, printed per rank
// without allocating anything (and without MPI: the world size is a flag).
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/flag_table.h"
#include "launch/parse_args.h"
#include "launch/train_flags.h"
#include "train/setting_checks.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"
#include "zero/plan_advice.h"
#include "zero/step_time.h"
#include "launch/hardware_file.h"
#include "launch/plan_compare.h"
#include "model/file_io.h"
#include "model/output_set.h"
#include "model/protected_inputs.h"

namespace po = boost::program_options;

namespace tz {

namespace {

// plan's own flags, and every train flag.
struct PlanFlags {
  TrainFlags f;
  int world = 1, rank = -1, ranks_per_node = 0, threads_per_rank = 0;
  std::string hardware, csv;
  bool compare = false, json = false;
  Prices prices;
};

po::options_description plan_options(PlanFlags& p) {
  po::options_description desc(
      "tierzero plan: print the memory plan of a training run (every buffer each rank would allocate,\n"
      "by state class and tier, against the budgets) without allocating it or starting MPI; when it does\n"
      "not fit, the smallest changes that do, and exit 1 (docs/planning.md)\n\n"
      "flags: every `tierzero train` flag, plus");
  desc.add_options()("world", po::value(&p.world)->default_value(p.world),
                     "number of ranks the job would run on")(
      "rank", po::value(&p.rank)->default_value(p.rank),
      "print only this rank's plan, in [0, world) (-1: rank 0's, and each later rank's that differs, "
      "among ranks 0-63 and the last)")(
      "hardware", po::value(&p.hardware)->default_value(""),
      "predict the step time on: a preset (h100-80g, h200-141g, gh200, a100-40g, v100-32g, cpu-node), local "
      "(this machine's `tierzero bench calibrate`), or a hardware JSON file")(
      "ranks-per-node", po::value(&p.ranks_per_node)->default_value(0),
      "ranks on each node, filled in order (0: the hardware's devices per node; CPU hardware: its "
      "calibration's)")(
      "threads-per-rank", po::value(&p.threads_per_rank)->default_value(0),
      "CPU hardware: the compute threads each rank runs (OMP_NUM_THREADS); ranks using fewer cores "
      "than the calibration measured its rates on (its cores: ranks x threads) get that share of the "
      "node's compute and CPU Adam rates, more are no faster (0: the node's cores shared by its ranks)")(
      "compare", po::bool_switch(&p.compare),
      "one table of options (stages 0-3, optimizer or parameters on host or NVMe) on each --hardware (a "
      "comma-separated list; default: every GPU preset), with time and cost per million tokens and per run")(
      "price-gpu-hour", po::value(&p.prices.gpu_hour)->default_value(0),
      "--compare: price of one device for an hour")("price-node-hour",
                                                    po::value(&p.prices.node_hour)->default_value(0),
                                                    "--compare: price of one node for an hour")(
      "price-nvme-tb-hour", po::value(&p.prices.nvme_tb_hour)->default_value(0),
      "--compare: price of 1 TB of NVMe store for an hour")(
      "csv", po::value(&p.csv)->default_value(""), "--compare: also write the table as CSV to this file")(
      "json", po::bool_switch(&p.json),
      "print JSON: the plan's totals per rank and the prediction (with --compare: the table)");
  add_train_flags(desc, p.f);
  return desc;
}

}  // namespace

std::vector<FlagTable> plan_flag_tables() { return {flag_table("plan", plan_options, "train")}; }

int plan_command(const std::vector<std::string>& args) {
  PlanFlags p;
  po::options_description desc = plan_options(p);
  TrainFlags& f = p.f;
  int &world = p.world, &rank = p.rank, &ranks_per_node = p.ranks_per_node,
      &threads_per_rank = p.threads_per_rank;
  std::string &hardware = p.hardware, &csv = p.csv;
  bool &compare = p.compare, &json = p.json;
  Prices& prices = p.prices;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "plan")) return 0;
  resolve_train_flags(f, vm);
  TZ_CHECK(world >= 1 && world <= kMaxWorld, "--world must be in [1, ", kMaxWorld, "], got ", world);
  TZ_CHECK(ranks_per_node >= 0, "--ranks-per-node must be >= 0, got ", ranks_per_node);
  TZ_CHECK(ranks_per_node <= kMaxWorld, "--ranks-per-node must be at most ", kMaxWorld, ", got ", ranks_per_node);
  TZ_CHECK(threads_per_rank >= 0 && threads_per_rank <= (1 << 20), "--threads-per-rank must be in [0, ", 1 << 20,
           "], got ", threads_per_rank);
  derive_batch(f.o, world);
  TZ_CHECK(rank >= -1 && rank < world, "--rank must be in [0, ", world, ") or -1, got ", rank);
  for (const std::string& line : f.o.config_lines) std::printf("%s\n", line.c_str());
  // Every rank's shards have the same sizes (groups are padded to a multiple of the world), so the
  // ranks' plans can differ only through an edge case: look at the first 64 ranks and the last.
  std::vector<int> ranks;
  if (rank >= 0) ranks = {rank};
  for (int r = 0; rank < 0 && r < std::min(world, 64); ++r) ranks.push_back(r);
  if (rank < 0 && world > 64) ranks.push_back(world - 1);
  if (compare) {
    for (double p : {prices.gpu_hour, prices.node_hour, prices.nvme_tb_hour})
      TZ_CHECK(std::isfinite(p) && p >= 0 && p <= 1e9, "prices must be numbers in [0, 1e9], got ", p);
    std::vector<Hardware> hws;
    std::string list = hardware.empty() ? "h100-80g,h200-141g,gh200,a100-40g,v100-32g" : hardware;
    // The CSV may not replace what the plan reads (a hardware file, the config), nor a device or FIFO:
    // refused before anything is computed, and again by the writer before its rename.
    std::vector<ProtectedInput> inputs;
    inputs.emplace_back(f.o.config, "--config");
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      const std::string name = list.substr(at, comma - at);
      if (std::filesystem::exists(name)) inputs.emplace_back(name, "--hardware file");
      at = comma + 1;
    }
    check_planned_outputs({{"--csv", csv, PlannedKind::file}});
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      hws.push_back(load_hardware(list.substr(at, comma - at)));
      if (ranks_per_node > 0) hws.back().ranks_per_node = ranks_per_node;
      hws.back().threads_per_rank = threads_per_rank;
      at = comma + 1;
    }
    // In floating point first: each factor is bounded, their product is not. Refused before any option is
    // planned (each is a plan of every rank's buffers).
    const double tokens = double(f.o.micro_batch) * f.o.seq_len * f.o.grad_accum * world * f.o.steps;
    TZ_CHECK(tokens < 9.2e18, "a run of --steps ", f.o.steps, " x --micro-batch ", f.o.micro_batch, " x --seq-len ",
             f.o.seq_len, " x --grad-accum ", f.o.grad_accum, " x --world ", world,
             " tokens is beyond 2^63 tokens; lower them");
    const long long run_tokens = (long long)tokens;
    const std::vector<CompareRow> rows = compare_options(f.o, world, hws, prices);
    if (json)
      std::printf("%s\n", compare_json(rows).dump(1).c_str());
    else
      std::printf("%s\n", compare_table(rows, prices, run_tokens).c_str());
    if (!csv.empty()) {
      const std::string text = compare_csv(rows);
      AtomicOutputFile out(csv, "CSV file");
      out.write(text.data(), text.size());
      out.commit();
    }
    return 0;
  }
  f.o.ranks_per_node = ranks_per_node;
  std::optional<Hardware> hw;
  if (!hardware.empty()) {
    hw = load_hardware(hardware);
    if (ranks_per_node > 0) hw->ranks_per_node = ranks_per_node;
    hw->threads_per_rank = threads_per_rank;
    f.o.measured_memory = hw->memory;  // the machine planned for: its measured lines
    f.o.measured_memory_source = hardware;
    f.o.ranks_per_node = hw->ranks_per_node;  // nodes of this many ranks (--ranks-per-node, else the file's)
    // Budgets not given on the command line are the hardware's: each device's memory, and each rank's
    // share of its node's host memory and NVMe.
    // Plan for the hardware's device (a GPU: no CPU matmul workspace), as train will allocate there.
    f.o.device = hw->device;
    const std::size_t rpn = std::size_t(std::min(world, hw->ranks_per_node));
    if (vm["device-mem"].defaulted() && hw->device_bytes) f.o.device_mem = hw->device_bytes;
    if (vm["host-mem"].defaulted() && hw->host_bytes) f.o.offload.mem[Tier::host] = hw->host_bytes / rpn;
    if (vm["nvme-mem"].defaulted() && hw->nvme_bytes) f.o.offload.mem[Tier::nvme] = hw->nvme_bytes / rpn;
  }
  bool fits = true;
  std::set<std::string> printed;
  std::string advice;
  // The model as its family counts it (parameters: as Hugging Face counts them, vocabulary rows unpadded).
  const ModelConfig& model = f.o.model;
  nlohmann::json out = {{"world", world},
                        {"model",
                         {{"name", f.o.model_name},
                          {"family", model.family},
                          {"description", model.describe()},
                          {"parameters", model.num_parameters_unpadded()},
                          {"parameters_trained", model.num_parameters()}}},
                        {"ranks", nlohmann::json::array()}};
  if (!json)
    std::printf("model %s: %s, %zu parameters (%zu trained, with the padded vocabulary rows)\n",
                f.o.model_name.c_str(), model.describe().c_str(), model.num_parameters_unpadded(),
                model.num_parameters());
  for (int r : ranks) {
    const MemoryPlan plan = plan_memory(plan_inputs(f.o, world, r));
    std::string table = plan.table();
    // Ranks own shards of the same sizes: print a rank's plan only when no rank's before was the same.
    const bool first = printed.insert(table.substr(table.find('\n'))).second;
    if (first && !json) std::printf("%s\n", table.c_str());
    const std::string problem = plan.fit_problem();
    nlohmann::json bytes = nlohmann::json::object();  // per tier, by name
    for (Tier t : tiers()) bytes[tier_name(t)] = plan.held(t);
    nlohmann::json lines = nlohmann::json::array();
    for (const PlanLine& l : plan.outside)
      lines.push_back({{"what", l.what}, {"tier", tier_name(l.tier)}, {"bytes", l.bytes}, {"source", l.source}});
    if (json && first)
      out["ranks"].push_back(
          {{"rank", r}, {"fits", problem.empty()}, {"problem", problem}, {"bytes", bytes}, {"outside_buffers", lines}});
    if (hw && first && problem.empty()) {
      const StepPrediction pred = predict_step(plan, *hw, f.o.grad_accum);
      if (json && !out.contains("prediction")) out["prediction"] = prediction_json(pred);
      if (!json) std::printf("%s\n", prediction_table(pred).c_str());
      const int rpn = std::min(world, hw->ranks_per_node);
      if (!json && hw->cores > 0 && hw->threads_per_rank > 0 && hw->threads_per_rank * rpn > hw->cores)
        std::printf("note: %d ranks x %d threads on a node whose rates were measured on %d cores: oversubscribed, "
                    "which the prediction does not model (a run of 2 ranks x 2 threads on 2 cores took 2.6 times the "
                    "prediction: perf/README.md)\n",
                    rpn, hw->threads_per_rank, hw->cores);
    }
    if (problem.empty()) continue;
    fits = false;
    if (!json) std::printf("rank %d does not fit: %s\n", r, problem.c_str());
    if (advice.empty()) advice = advice_text(plan, hw ? &*hw : nullptr, f.o.grad_accum);  // the first that does not fit
  }
  // What this machine lacks of what the settings name: the plan may be for another machine, so it is said,
  // not refused; `train` here would refuse it.
  const std::vector<std::string> missing = missing_on_this_machine(f.o);
  if (json) {
    out["fits"] = fits;
    out["missing_on_this_machine"] = missing;
    if (!advice.empty()) out["advice"] = advice;
    std::printf("%s\n", out.dump(1).c_str());
    return fits ? 0 : 1;
  }
  if (!advice.empty()) std::printf("%s\n", advice.c_str());
  for (const std::string& m : missing) std::printf("note: not on this machine: %s\n", m.c_str());
  std::printf("%s%s\n", fits ? "the plan fits every budget" : "the plan does not fit (see above)",
              missing.empty() ? ""
                              : "; it names things this machine lacks (noted above): `tierzero train` here would refuse "
                                "it, a machine that has them would run it");
  return fits ? 0 : 1;
}

}  // namespace tz
