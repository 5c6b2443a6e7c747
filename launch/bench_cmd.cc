// `tierzero bench <name>`: benchmarks; each prints a table, or one JSON object with --json.
#include <cstdio>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/model_options.h"
#include "launch/parse_args.h"
#include "perf/step_bench.h"

namespace po = boost::program_options;

namespace tz {
namespace {

int bench_step(const std::vector<std::string>& args) {
  StepBenchOptions o;
  ModelFlags mf;
  mf.preset = "gpt2";
  std::string dtypes = "fp32,bf16";
  bool json = false, ckpt = false;
  po::options_description desc("tierzero bench step: one training step on synthetic tokens\n\nflags");
  add_model_flags(desc, mf);
  desc.add_options()
      ("help,h", "print this help")
      ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch), "sequences per step")
      ("dtype", po::value(&dtypes)->default_value(dtypes), "comma-separated compute dtypes to measure")
      ("steps", po::value(&o.steps)->default_value(o.steps), "timed steps (the median is reported)")
      ("warmup-steps", po::value(&o.warmup_steps)->default_value(o.warmup_steps), "untimed steps first")
      ("checkpoint-activations", po::bool_switch(&ckpt), "recompute activations in backward")
      ("json", po::bool_switch(&json), "print one JSON object instead of the table");
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench step")) return 0;
  o.model = resolve_model(mf);
  o.model_name = mf.preset;
  o.seq_len = mf.seq_len;
  o.checkpointing = ckpt ? ActivationCheckpointing::per_block : ActivationCheckpointing::off;
  o.dtypes.clear();
  std::stringstream ss(dtypes);
  for (std::string d; std::getline(ss, d, ',');) o.dtypes.push_back(parse_compute_dtype(d));
  TZ_CHECK(o.steps >= 1, "--steps must be at least 1");
  auto result = run_step_bench(o, json);
  if (json) std::cout << result.dump() << "\n";
  return 0;
}

}  // namespace

int bench_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: tierzero bench <name> [flags]\n\nbenchmarks:\n  step   one training step: ms, tokens/s, "
                "GFLOP/s next to the matmul rate\n");
    return args.empty() ? 2 : 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "step") return bench_step(rest);
  TZ_FAIL("unknown benchmark '", args[0], "': use step (see tierzero bench --help)");
}

}  // namespace tz
