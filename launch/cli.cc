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
#include "launch/help_markdown.h"

namespace tz {
namespace {

const char* kUsage =
    "tierzero: ZeRO data-parallel training of GPT-2 and the Llama family (Llama 3.x, Qwen2.5, Mistral)\n"
    "on CPUs and GPUs, with states offloaded to host memory or NVMe\n"
    "\n"
    "usage: tierzero <command> [flags]     (tierzero <command> --help lists a command's flags)\n"
    "\n"
    "commands:\n"
    "  train   train a model: a preset (tiny, gpt2 ... gpt2-xl, llama3.2-1b ... llama3.1-70b,\n"
    "          qwen2.5-*, mistral-7b), free sizes or a Hugging Face folder (--init-from);\n"
    "          a DeepSpeed JSON config with --config\n"
    "  plan    print the memory plan of a training run per rank and tier, without allocating it;\n"
    "          with --hardware the predicted step time, with --compare the options' time and cost\n"
    "  ckpt    checkpoints: `tierzero ckpt inspect PATH` (summary, checksums verified),\n"
    "          `tierzero ckpt export PATH --to model.safetensors` (one file, Hugging Face's names),\n"
    "          `tierzero ckpt export PATH --format hf --to DIR` (a Hugging Face model folder)\n"
    "  report  plots of a --metrics file as PNG and one HTML page: `tierzero report run.jsonl`\n"
    "  doctor  what this machine offers: CPU ISA, GPUs, CUDA libraries, locked memory, NVMe paths, MPI\n"
    "  data    prepare token files: `tierzero data prepare --input FILE... --output train.bin`\n"
    "  bench   benchmarks: step, comm, adam, io, offload, calibrate, gpu-matmul, gpu-attention,\n"
    "          gpu-copy, mfu (`tierzero bench --help`)\n"
    "  help    this text; `tierzero help --markdown` prints docs/configuration.md: every command's\n"
    "          flags and every DeepSpeed config key\n"
    "\n"
    "docs: README.md, docs/configuration.md, docs/ARCHITECTURE.md, perf/README.md\n";

}  // namespace

int run_cli(int argc, char** argv) {
  WorldInfo world;
  try {
    world = discover_world();
  } catch (const std::exception& e) {
    std::fputs(error_report(e).c_str(), stderr);
    return 2;
  }
  set_log_context(LogContext{world.rank, world.size, world.host, "cpu"});
  if (argc == 3 && !std::strcmp(argv[1], "help") && !std::strcmp(argv[2], "--markdown")) {
    std::fputs(help_markdown().c_str(), stdout);
    return 0;
  }
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args;
  // --debug, anywhere after the command: errors print where in tierzero they were raised (as TZ_DEBUG=1).
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--debug"))
      set_debug_errors(true);
    else
      args.emplace_back(argv[i]);
  }
  try {
    if (cmd == "train") return train_command(args);
    if (cmd == "plan") return plan_command(args);
    if (cmd == "data") return data_command(args);
    if (cmd == "bench") return bench_command(args);
    if (cmd == "ckpt") return ckpt_command(args);
    if (cmd == "doctor") return doctor_command(args);
    if (cmd == "report") return report_command(args);
    std::fprintf(stderr, "tierzero: error: unknown command '%s'; the commands are below\n\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fputs(error_report(e).c_str(), stderr);
    return 1;
  }
}

}  // namespace tz
