// The flags `train` and `plan` share (every training setting), and their resolution into TrainOptions
// (a DeepSpeed JSON config fills what the command line left at its defaults).
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "launch/model_options.h"
#include "train/train_options.h"
#include "zero/hardware.h"

namespace tz {

// The longest --comm-timeout (seconds): beyond a week a stalled collective is not waited out but a hang.
inline constexpr double kMaxCommTimeoutSeconds = 7 * 24 * 3600;
// Sequences per micro-batch and micro-steps per optimizer step: bounded so that every token count and
// byte count of the plan fits in 64 bits.
inline constexpr int kMaxMicroBatch = 1 << 20;
inline constexpr int kMaxGradAccum = 1 << 20;

struct TrainFlags {
  TrainOptions o;
  ModelFlags mf;
  std::string dtype = "fp32", schedule = "constant", device = "cpu", device_mem = "unlimited";
  std::string activation_dtype = "auto";
  std::string profile_hardware;  // --profile-hardware: resolved into o.profile_peaks
  bool ckpt = false;
  std::string bind_cores = "none";  // none | auto (launch/train_cmd.cc applies it)
  std::string config, reduce_bucket, allgather_bucket, prefetch_bucket, max_live, persistence, comm_piece = "4M";
  double comm_timeout = 300;
  std::string seed = "1337";
  std::string save_hf_dtype = "fp32", save_hf_shard = "5e9";
  std::string straggler_delay;  // --straggler-test-delay-ms R:MS
  std::string offload_opt, offload_param, offload_act, host_mem, nvme_mem, numa_mem, overlap_opt;
  double ratio = 1.0, ratio_master = -1, ratio_m = -1, ratio_v = -1;
  std::string optimizer_states = "fp32", master_weights = "fp32";
};

// Adds every training flag to `desc`, bound to `f`.
void add_train_flags(boost::program_options::options_description& desc, TrainFlags& f);

// The peaks of --profile-hardware's machine for a run in `dtype` (the table's "% peak").
ProfilePeaks profile_peaks(const Hardware& h, DType dtype);

// Resolves the parsed flags (and --config) into f.o; throws naming the flag for a bad value.
void resolve_train_flags(TrainFlags& f, const boost::program_options::variables_map& vm);

// Once the world size is known (train: the launcher's; plan: --world): the micro batch or accumulation
// count --config's train_batch_size leaves to derive (launch/ds_config.h), each then range-checked.
void derive_batch(TrainOptions& o, int world);

}  // namespace tz
