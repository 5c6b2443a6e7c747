// Everything a training run is configured with, filled once by launch/ from the command line (and,
// later, a DeepSpeed-style JSON config); nothing below launch/ reads the environment or argv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device.h"
#include "core/dtype.h"
#include "model/gpt.h"
#include "model/gpt_config.h"
#include "zero/engine.h"
#include "zero/lr_schedule.h"

namespace tz {

// The built-in corpus: the English license texts under /usr/share/common-licenses, byte-tokenised.
inline constexpr const char* kDefaultData = "default";

// ZeRO partitioning (DeepSpeed's zero_optimization section). Sizes count elements, as DeepSpeed's do.
struct ZeroOptions {
  int stage = 0;                        // 0: data parallel; 1: optimizer states; 2: + gradients; 3: + parameters
  bool overlap_comm = true;             // start each bucket's collective as soon as it is ready
  bool contiguous_gradients = true;     // reduced gradients land in one contiguous shard buffer (always true here)
  std::size_t reduce_bucket_size = 500'000'000;      // gradient elements per reduce-scatter / all-reduce
  std::size_t allgather_bucket_size = 500'000'000;   // parameter elements per all-gather after the step (stages 1-2)
  std::size_t prefetch_bucket_size = 50'000'000;     // stage 3: parameter elements gathered ahead of use
  std::size_t max_live_parameters = 1'000'000'000;   // stage 3: gathered parameter elements alive at once
  std::size_t param_persistence_threshold = 100'000; // stage 3: groups smaller than this stay whole on every rank
};

// Dynamic (or static) loss scaling for fp16, as DeepSpeed's fp16 section.
struct LossScaleOptions {
  float loss_scale = 0;           // 0: dynamic; > 0: this static scale
  int initial_scale_power = 16;   // dynamic scale starts at 2^this
  int loss_scale_window = 1000;   // steps without overflow before the scale doubles
  int hysteresis = 2;             // overflows tolerated before the scale halves
  float min_loss_scale = 1;       // the scale never goes below this
};

struct TrainOptions {
  GptConfig model;            // resolved preset + size overrides
  std::string model_name = "tiny";
  std::string data = kDefaultData;
  std::string val_data;       // empty: the last 10% of the default corpus when data is default, else none
  std::string init_from;      // safetensors file
  std::string save_safetensors;
  std::string metrics;        // JSONL path
  int steps = 200;
  int micro_batch = 4;        // sequences per rank per micro-step
  int grad_accum = 1;         // micro-steps per optimizer step
  int train_batch_size = 0;   // if > 0: must equal micro_batch x grad_accum x world size (checked)
  int seq_len = 64;
  int val_every = 0;          // 0: validate only after the last step
  int val_batches = 8;
  int log_every = 1;
  bool shuffle = false;
  std::uint64_t seed = 1337;
  DType dtype = DType::f32;
  ActivationCheckpointing checkpointing = ActivationCheckpointing::off;
  DeviceKind device = DeviceKind::cpu;
  std::size_t device_mem = kUnlimited;
  AdamConfig adam;
  LrConfig lr;
  ZeroOptions zero;
  LossScaleOptions fp16;      // used when dtype is f16
};

}  // namespace tz
