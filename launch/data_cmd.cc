// `tierzero data prepare`: text files -> byte-level token files (llm.c format) for training.
#include <cstdio>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/flag_table.h"
#include "launch/parse_args.h"
#include "model/corpus.h"
#include "model/output_set.h"
#include "model/protected_inputs.h"

namespace po = boost::program_options;

namespace tz {
namespace {

struct PrepareFlags {
  std::vector<std::string> inputs;
  std::string output = "train.bin", val_output;
  double val_fraction = 0.1;
};

po::options_description prepare_options(PrepareFlags& f) {
  po::options_description desc(
      "tierzero data prepare: byte-level tokenise text files (vocab 256) into llm.c token files "
      "(docs/data.md)\n\nflags");
  desc.add_options()
      ("help,h", "print this help")
      ("input", po::value(&f.inputs)->multitoken(),
       "text files, concatenated in order (default: the license texts in /usr/share/common-licenses)")
      ("output", po::value(&f.output)->default_value(f.output), "training token file")
      ("val-output", po::value(&f.val_output)->default_value(""),
       "validation token file (the last --val-fraction)")
      ("val-fraction", po::value(&f.val_fraction)->default_value(f.val_fraction, "0.1"),
       "share of tokens held out for validation when --val-output is given");
  return desc;
}

int data_prepare(const std::vector<std::string>& args) {
  PrepareFlags f;
  po::options_description desc = prepare_options(f);
  std::vector<std::string>& inputs = f.inputs;
  const std::string &output = f.output, &val_output = f.val_output;
  const double& val_fraction = f.val_fraction;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "data prepare")) return 0;
  TZ_CHECK(val_fraction >= 0 && val_fraction < 1, "--val-fraction must be in [0, 1), got ", val_fraction);
  if (inputs.empty()) inputs = default_corpus_files();
  // The token files may not replace (or be written inside) a text file they are made from.
  std::vector<ProtectedInput> protect;
  for (const std::string& in : inputs) protect.emplace_back(in, "--input");
  check_planned_outputs({{"--output", output, PlannedKind::file}, {"--val-output", val_output, PlannedKind::file}});
  PreparedCorpus c = prepare_byte_corpus(inputs, output, val_output, val_output.empty() ? 0.0 : val_fraction);
  std::printf("wrote %zu tokens to %s", c.train_tokens, output.c_str());
  if (!val_output.empty()) std::printf(" and %zu to %s", c.val_tokens, val_output.c_str());
  std::printf(" (byte-level, vocab 256, from %zu files)\n", inputs.size());
  return 0;
}

}  // namespace

std::vector<FlagTable> data_flag_tables() { return {flag_table("data prepare", prepare_options)}; }

int data_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: tierzero data prepare [flags]   (tierzero data prepare --help)\n");
    return args.empty() ? 2 : 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "prepare") return data_prepare(rest);
  TZ_FAIL("unknown data command '", args[0], "': use prepare");
}

}  // namespace tz
