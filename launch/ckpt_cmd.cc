// `tierzero ckpt inspect PATH` and `tierzero ckpt export PATH --to FILE|DIR`: checkpoints outside training.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/flag_table.h"
#include "launch/model_options.h"
#include "launch/parse_args.h"
#include "train/checkpoint_export.h"

namespace po = boost::program_options;

namespace tz {
namespace {

const char* kUsage =
    "usage: tierzero ckpt inspect PATH              summary of a checkpoint, every checksum verified\n"
    "       tierzero ckpt export PATH --to FILE     its weights as one safetensors file, Hugging Face's names\n"
    "       tierzero ckpt export PATH --format hf --to DIR   a Hugging Face model folder\n"
    "PATH: a checkpoint folder (step-NNNNNNNN) or a --save-dir folder (the checkpoint --resume latest takes)\n";

const char* const kPathHelp =
    "PATH, also given as the first argument: a checkpoint folder (step-NNNNNNNN) or a --save-dir folder (its "
    "newest checkpoint; docs/checkpoints.md#inspect-and-export)";

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

struct InspectFlags {
  std::string path;
};

po::options_description inspect_options(InspectFlags& f) {
  po::options_description desc("tierzero ckpt inspect PATH: print a checkpoint's summary, verifying every file\n\nflags");
  desc.add_options()("help,h", "print this help")("path", po::value(&f.path), kPathHelp);
  return desc;
}

int inspect(const std::vector<std::string>& args) {
  InspectFlags f;
  po::options_description desc = inspect_options(f);
  const std::string& path = f.path;
  po::variables_map vm;
  if (!parse_with_path(args, desc, vm)) return 0;
  TZ_CHECK(!path.empty(), "tierzero ckpt inspect needs a PATH\n", kUsage);
  std::printf("%s\n", inspect_checkpoint(path).c_str());
  return 0;
}

struct ExportFlags {
  std::string path, to, dtype = "fp32", format = "safetensors", shard = "5e9", copy_from;
};

po::options_description export_options(ExportFlags& f) {
  po::options_description desc(
      "tierzero ckpt export PATH --to FILE|DIR: write a checkpoint's fp32 master weights by Hugging Face's "
      "names, one tensor in memory at a time: as one safetensors file, or (--format hf) as a model folder "
      "transformers' from_pretrained loads (config.json, model.safetensors or shards with their index)\n\nflags");
  desc.add_options()("help,h", "print this help")("path", po::value(&f.path), kPathHelp)(
      "to", po::value(&f.to),
      "the safetensors file, or with --format hf the new or empty folder, to write (atomically)")(
      "format", po::value(&f.format)->default_value(f.format),
      "safetensors (one file) or hf (a model folder)")(
      "dtype", po::value(&f.dtype)->default_value(f.dtype), "fp32, bf16 or fp16 (config.json's torch_dtype)")(
      "shard-size", po::value(&f.shard)->default_value(f.shard),
      "--format hf: the most bytes of weights per safetensors file (Hugging Face's max_shard_size)")(
      "copy-from", po::value(&f.copy_from)->default_value(""),
      "--format hf: the model folder training started from, whose config.json, tokenizer and generation files "
      "are carried over (its shape must be the checkpoint's)");
  return desc;
}

int export_cmd(const std::vector<std::string>& args) {
  ExportFlags f;
  po::options_description desc = export_options(f);
  const std::string &path = f.path, &to = f.to, &dtype = f.dtype, &format = f.format, &shard = f.shard,
                    &copy_from = f.copy_from;
  po::variables_map vm;
  if (!parse_with_path(args, desc, vm)) return 0;
  TZ_CHECK(!path.empty() && !to.empty(), "tierzero ckpt export needs a PATH and --to\n", kUsage);
  TZ_CHECK(format == "safetensors" || format == "hf", "--format '", format, "' is not one of safetensors, hf");
  TZ_CHECK(format == "hf" || (vm["shard-size"].defaulted() && copy_from.empty()),
           "--shard-size and --copy-from apply to --format hf only");
  const DType dt = parse_compute_dtype(dtype);
  std::string dir;
  if (format == "hf") {
    const std::size_t shard_bytes = parse_count("shard-size", shard);
    TZ_CHECK(shard_bytes >= 1, "--shard-size must be at least 1 byte, got ", shard);
    dir = export_checkpoint_hf(path, to, dt, shard_bytes, copy_from);
  } else {
    dir = export_checkpoint(path, to, dt);
  }
  std::printf("exported %s to %s (%s%s)\n", dir.c_str(), to.c_str(), dtype.c_str(),
              format == "hf" ? ", Hugging Face folder" : "");
  return 0;
}

}  // namespace

std::vector<FlagTable> ckpt_flag_tables() {
  return {flag_table("ckpt inspect", inspect_options), flag_table("ckpt export", export_options)};
}

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
