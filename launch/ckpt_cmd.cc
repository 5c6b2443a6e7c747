// `tierzero ckpt inspect PATH` and `tierzero ckpt export PATH --to FILE`: checkpoints outside training.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/model_options.h"
#include "launch/parse_args.h"
#include "train/checkpoint_export.h"

namespace po = boost::program_options;

namespace tz {
namespace {

const char* kUsage =
    "usage: tierzero ckpt inspect PATH              summary of a checkpoint, every checksum verified\n"
    "       tierzero ckpt export PATH --to FILE     its weights as Hugging Face GPT-2 safetensors\n"
    "PATH: a checkpoint folder (step-NNNNNNNN) or a --save-dir folder (the checkpoint --resume latest takes)\n";

// Parses `args` with PATH as the one positional argument; false when --help was given (printed).
bool parse_with_path(const std::vector<std::string>& args, const po::options_description& desc, po::variables_map& vm) {
  po::positional_options_description pos;
  pos.add("path", 1);
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (!vm.count("help")) return true;
  std::cout << kUsage << "\n" << desc;
  return false;
}

int inspect(const std::vector<std::string>& args) {
  std::string path;
  po::options_description desc("tierzero ckpt inspect PATH: print a checkpoint's summary, verifying every file\n\nflags");
  desc.add_options()("help,h", "print this help")("path", po::value(&path), "checkpoint or --save-dir folder");
  po::variables_map vm;
  if (!parse_with_path(args, desc, vm)) return 0;
  TZ_CHECK(!path.empty(), "tierzero ckpt inspect needs a PATH\n", kUsage);
  std::printf("%s\n", inspect_checkpoint(path).c_str());
  return 0;
}

int export_cmd(const std::vector<std::string>& args) {
  std::string path, to, dtype = "fp32";
  po::options_description desc(
      "tierzero ckpt export PATH --to FILE: write a checkpoint's fp32 master weights as a Hugging Face GPT-2 "
      "safetensors file (GPT2LMHeadModel names), one tensor in memory at a time\n\nflags");
  desc.add_options()("help,h", "print this help")("path", po::value(&path), "checkpoint or --save-dir folder")(
      "to", po::value(&to), "the safetensors file to write (atomically)")(
      "dtype", po::value(&dtype)->default_value(dtype), "fp32, bf16 or fp16");
  po::variables_map vm;
  if (!parse_with_path(args, desc, vm)) return 0;
  TZ_CHECK(!path.empty() && !to.empty(), "tierzero ckpt export needs a PATH and --to FILE\n", kUsage);
  const std::string dir = export_checkpoint(path, to, parse_compute_dtype(dtype));
  std::printf("exported %s to %s (%s)\n", dir.c_str(), to.c_str(), dtype.c_str());
  return 0;
}

}  // namespace

int ckpt_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") return std::printf("%s", kUsage), args.empty() ? 2 : 0;
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "inspect") return inspect(rest);
    if (args[0] == "export") return export_cmd(rest);
  } catch (const po::error& e) {
    TZ_FAIL("tierzero ckpt ", args[0], ": ", e.what());
  }
  TZ_FAIL("unknown ckpt command '", args[0], "': use inspect or export");
}

}  // namespace tz
