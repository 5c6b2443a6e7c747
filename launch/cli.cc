// Subcommand dispatch, the process's log context, and the top-level error handler.
#include "launch/cli.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "comm/world.h"
#include "core/error.h"
#include "launch/commands.h"

namespace tz {
namespace {

const char* kUsage =
    "tierzero: ZeRO data-parallel GPT training on CPUs and GPUs\n"
    "\n"
    "usage: tierzero <command> [flags]     (tierzero <command> --help lists a command's flags)\n"
    "\n"
    "commands:\n"
    "  train   train a GPT-2 model (presets tiny, gpt2, gpt2-medium, gpt2-large, gpt2-xl, or free sizes)\n"
    "  plan    print the memory plan of a training run per rank and tier, without allocating it\n"
    "  ckpt    checkpoints: `tierzero ckpt inspect PATH` (summary, checksums verified),\n"
    "          `tierzero ckpt export PATH --to model.safetensors` (Hugging Face GPT-2 weights)\n"
    "  doctor  what this machine offers: CPU ISA, GPUs, CUDA libraries, locked memory, NVMe paths, MPI\n"
    "  data    prepare token files: `tierzero data prepare --input FILE... --output train.bin`\n"
    "  bench   benchmarks: `tierzero bench step` (training step time, tokens/s, GFLOP/s vs matmul rate),\n"
    "          `tierzero bench comm` (collectives: time, algbw, busbw vs the same call through MPI),\n"
    "          `bench adam` (CPU Adam vs its memory limit), `bench io` (NVMe store vs fio),\n"
    "          `bench offload` (pipelined NVMe optimizer step vs max(IO, Adam))\n"
    "\n"
    "docs: README.md, docs/configuration.md, docs/ARCHITECTURE.md, perf/README.md\n";

}  // namespace

int run_cli(int argc, char** argv) {
  WorldInfo world;
  try {
    world = discover_world();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tierzero: %s\n", e.what());
    return 2;
  }
  set_log_context(LogContext{world.rank, world.size, world.host, "cpu"});
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (cmd == "train") return train_command(args);
    if (cmd == "plan") return plan_command(args);
    if (cmd == "data") return data_command(args);
    if (cmd == "bench") return bench_command(args);
    if (cmd == "ckpt") return ckpt_command(args);
    if (cmd == "doctor") return doctor_command(args);
    std::fprintf(stderr, "tierzero: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "tierzero %s failed: %s\n", cmd.c_str(), e.what());  // tz::Error names the rank
    return 1;
  } catch (const std::exception& e) {
    log_line(std::string("tierzero ") + cmd + " failed: " + e.what());
    return 1;
  }
}

}  // namespace tz
