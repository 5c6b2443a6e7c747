// The flags `train` and `plan` share (every training setting), and their resolution into TrainOptions
// (a DeepSpeed JSON config fills what the command line left at its defaults).
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "launch/model_options.h"
#include "train/train_options.h"

namespace tz {

struct TrainFlags {
  TrainOptions o;
  ModelFlags mf;
  std::string dtype = "fp32", schedule = "constant", device = "cpu", device_mem = "unlimited";
  bool ckpt = false;
  std::string bind_cores = "none";  // none | auto (launch/train_cmd.cc applies it)
  std::string config, reduce_bucket, allgather_bucket, prefetch_bucket, max_live, persistence;
  double comm_timeout = 300;
  std::string offload_opt, offload_param, offload_act, host_mem, nvme_mem, overlap_opt;
  double ratio = 1.0, ratio_master = -1, ratio_m = -1, ratio_v = -1;
};

// Adds every training flag to `desc`, bound to `f`.
void add_train_flags(boost::program_options::options_description& desc, TrainFlags& f);

// Resolves the parsed flags (and --config) into f.o; throws naming the flag for a bad value.
void resolve_train_flags(TrainFlags& f, const boost::program_options::variables_map& vm);

}  // namespace tz
