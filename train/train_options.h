// Everything a training run is configured with, filled once by launch/ from the command line and a
// DeepSpeed-style JSON config; nothing below launch/ reads the environment or argv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "model/activation_checkpoints.h"
#include "model/model.h"
#include "model/model_config.h"
#include "train/op_profile_report.h"
#include "zero/hardware.h"
#include "zero/lr_schedule.h"
#include "zero/zero_options.h"

namespace tz {

// The built-in corpus: the English license texts under /usr/share/common-licenses, byte-tokenised.
inline constexpr const char* kDefaultData = "default";

struct TrainOptions {
  ModelConfig model;  // resolved preset + size overrides
  std::string model_name = "tiny";
  std::string data = kDefaultData;
  std::string val_data;   // empty: the last 10% of the default corpus when data is default, else none
  std::string init_from;  // safetensors file
  std::string save_safetensors;
  // A Hugging Face model folder written after training (model/hf_folder_writer.h): its weights' dtype and
  // the most bytes of weights per file.
  std::string save_hf;
  DType save_hf_dtype = DType::f32;
  std::uint64_t save_hf_shard_bytes = 5'000'000'000;
  std::string metrics;  // JSONL path, appended to as records are made (train/metrics_file.h)
  // --prometheus-textfile: the latest step's figures rewritten every prometheus_every steps and after the
  // last (train/prometheus_file.h); "" writes none.
  std::string prometheus_textfile;
  int prometheus_every = 10;
  // A rank whose own work over 10 steps exceeds this x the median rank's is named a straggler.
  double straggler_threshold = 1.5;
  // Test hook (--straggler-test-delay-ms R:MS): rank straggler_delay_rank sleeps straggler_delay_ms in the
  // data phase of every step; -1: off.
  int straggler_delay_rank = -1;
  int straggler_delay_ms = 0;
  // Training checkpoints (train/checkpoint.h): a folder of step-NNNNNNNN checkpoints and a `latest`
  // pointer; every save_every steps (0: only at the end and on a stop signal), keep_last newest kept
  // (0: all). resume: "" (start fresh), "latest" (the newest in save_dir; none yet: start fresh), or
  // a checkpoint folder.
  std::string save_dir;
  int save_every = 0;
  int keep_last = 0;
  std::string resume;
  std::string job_id;  // the launcher's job id (SLURM_JOB_ID), recorded in the save-dir's lock
  std::string config;         // the DeepSpeed config it was read from, if any (an input: never an output)
  // What --config resolved ("auto") or accepted with no effect, one line each; rank 0 prints them.
  std::vector<std::string> config_lines;
  int steps = 200;
  int micro_batch = 4;       // sequences per rank per micro-step
  int grad_accum = 1;        // micro-steps per optimizer step
  int train_batch_size = 0;  // if > 0: must equal micro_batch x grad_accum x world size (checked)
  int seq_len = 64;
  int val_every = 0;  // 0: validate only after the last step
  int val_batches = 8;
  int log_every = 1;
  bool shuffle = false;
  std::uint64_t seed = 1337;
  DType dtype = DType::f32;
  // Activations and their gradients in fp32 rather than in dtype (--activation-dtype fp32; only a bf16
  // or fp16 run has the choice).
  bool fp32_activations = false;
  Precision precision() const { return fp32_activations ? Precision{dtype, DType::f32} : Precision{dtype}; }
  ActivationCheckpointing checkpointing = ActivationCheckpointing::off;
  // --profile-ops N: every backend call of N steps after the first timed (train/op_profile_report.h), the
  // table printed after them; 0: off. The peaks its rates are set against (--profile-hardware).
  int profile_ops = 0;
  ProfilePeaks profile_peaks;
  // The memory plan's lines only a measurement can say (`tierzero bench calibrate`'s hardware file), and
  // the file they came from; not measured: lines of 0, said so in the plan.
  MemoryLines measured_memory;
  std::string measured_memory_source;
  int ranks_per_node = 0;  // the launcher's ranks on this node (0: unknown, planned as one node)
  DeviceKind device = DeviceKind::cpu;
  bool tf32 = false;  // cuda: fp32 products may use TF32 (--tf32)
  // cuda: the attention's arithmetic (--attention-math): "auto" is bf16 tensor cores when the compute
  // dtype is bf16 or fp16 (whose matmul inputs are 16-bit anyway), else fp32.
  std::string attention_math = "auto";
  int gpu = -1;  // cuda: the rank's local rank (launch/ sets it; the device takes it modulo the GPU count)
  std::size_t device_mem = kUnlimited;
  AdamConfig adam;
  LrConfig lr;
  ZeroOptions zero;
  LossScaleOptions fp16;  // used when dtype is f16
  OffloadOptions offload;
};

}  // namespace tz
