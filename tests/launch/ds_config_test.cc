// Tests launch/ds_config.h: every DeepSpeed key tierzero reads lands in TrainOptions, flags given on the
// command line win, and typos, unimplemented keys, "auto", wrong types and ranges, missing files and bad
// JSON fail with a message naming the file and the key.
#include "launch/ds_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include "core/error.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

using json = nlohmann::json;

const FlagGiven kNoFlags = [](const std::string&) { return false; };

// The tz::Error message of applying `doc`, or "" when it succeeds.
std::string error_of(const json& doc, const FlagGiven& flags = kNoFlags) {
  TrainOptions o;
  try {
    apply_ds_config(doc, "cfg.json", o, flags);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string load_error(const std::string& path) {
  TrainOptions o;
  try {
    load_ds_config(path, o, kNoFlags);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Every key tierzero reads, each at a value that differs from TrainOptions' default.
json every_key() {
  return json::parse(R"({
    "train_batch_size": 96,
    "train_micro_batch_size_per_gpu": 8,
    "gradient_accumulation_steps": 3,
    "gradient_clipping": 0.5,
    "fp16": {"enabled": true, "loss_scale": 128, "initial_scale_power": 12, "loss_scale_window": 500,
             "hysteresis": 3, "min_loss_scale": 0.25},
    "bf16": {"enabled": false},
    "optimizer": {"type": "AdamW",
                  "params": {"lr": 1e-4, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.1}},
    "zero_optimization": {"stage": 3, "overlap_comm": false, "contiguous_gradients": true,
                          "reduce_bucket_size": 1000, "allgather_bucket_size": 2000,
                          "stage3_prefetch_bucket_size": 3000, "stage3_max_live_parameters": 4000,
                          "stage3_param_persistence_threshold": 5000}
  })");
}

TEST(DsConfig, EveryKeyLandsInTrainOptions) {
  TrainOptions o;
  apply_ds_config(every_key(), "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.train_batch_size, 96);
  EXPECT_EQ(o.micro_batch, 8);
  EXPECT_EQ(o.grad_accum, 3);
  EXPECT_FLOAT_EQ(o.adam.grad_clip, 0.5f);
  EXPECT_EQ(o.dtype, DType::f16);
  EXPECT_FLOAT_EQ(o.fp16.loss_scale, 128.f);
  EXPECT_EQ(o.fp16.initial_scale_power, 12);
  EXPECT_EQ(o.fp16.loss_scale_window, 500);
  EXPECT_EQ(o.fp16.hysteresis, 3);
  EXPECT_FLOAT_EQ(o.fp16.min_loss_scale, 0.25f);
  EXPECT_FLOAT_EQ(o.lr.lr, 1e-4f);
  EXPECT_FLOAT_EQ(o.adam.beta1, 0.8f);
  EXPECT_FLOAT_EQ(o.adam.beta2, 0.95f);
  EXPECT_FLOAT_EQ(o.adam.eps, 1e-6f);
  EXPECT_FLOAT_EQ(o.adam.weight_decay, 0.1f);
  EXPECT_EQ(o.zero.stage, 3);
  EXPECT_FALSE(o.zero.overlap_comm);
  EXPECT_TRUE(o.zero.contiguous_gradients);
  EXPECT_EQ(o.zero.reduce_bucket_size, 1000u);
  EXPECT_EQ(o.zero.allgather_bucket_size, 2000u);
  EXPECT_EQ(o.zero.prefetch_bucket_size, 3000u);
  EXPECT_EQ(o.zero.max_live_parameters, 4000u);
  EXPECT_EQ(o.zero.param_persistence_threshold, 5000u);
}

TEST(DsConfig, Bf16EnabledSetsBf16AndTheOldNameBfloat16MeansTheSame) {
  for (const char* name : {"bf16", "bfloat16"}) {
    TrainOptions o;
    apply_ds_config(json{{name, {{"enabled", true}}}}, "cfg.json", o, kNoFlags);
    EXPECT_EQ(o.dtype, DType::bf16) << name;
  }
  EXPECT_TRUE(has(error_of(json{{"bf16", {{"enabled", true}}}, {"bfloat16", {{"enabled", true}}}}),
                  "keep only bf16"));
}

TEST(DsConfig, EnabledFalseLeavesTheDtypeAlone) {
  TrainOptions o;
  o.dtype = DType::bf16;
  apply_ds_config(json{{"fp16", {{"enabled", false}}}, {"bf16", {{"enabled", false}}}}, "cfg.json", o,
                  kNoFlags);
  EXPECT_EQ(o.dtype, DType::bf16);
}

TEST(DsConfig, StageThreeNamesWithoutThePrefixAreDeepSpeedAliases) {
  TrainOptions o;
  apply_ds_config(json::parse(R"({"zero_optimization": {"prefetch_bucket_size": 7, "max_live_parameters": 8,
                                   "param_persistence_threshold": 9}})"),
                  "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.zero.prefetch_bucket_size, 7u);
  EXPECT_EQ(o.zero.max_live_parameters, 8u);
  EXPECT_EQ(o.zero.param_persistence_threshold, 9u);
  std::string e = error_of(
      json::parse(R"({"zero_optimization": {"stage3_max_live_parameters": 1, "max_live_parameters": 2}})"));
  EXPECT_TRUE(has(e, "both stage3_max_live_parameters and max_live_parameters")) << e;
}

TEST(DsConfig, KeysTheFileDoesNotGiveKeepTheirValues) {
  TrainOptions o, before;
  apply_ds_config(json::object(), "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.micro_batch, before.micro_batch);
  EXPECT_EQ(o.zero.stage, before.zero.stage);
  EXPECT_EQ(o.zero.reduce_bucket_size, before.zero.reduce_bucket_size);
  EXPECT_FLOAT_EQ(o.adam.grad_clip, before.adam.grad_clip);
  EXPECT_FLOAT_EQ(o.lr.lr, before.lr.lr);
  EXPECT_EQ(o.dtype, before.dtype);
}

TEST(DsConfig, EveryFlagGivenOnTheCommandLineWinsOverTheFile) {
  const std::set<std::string> flags{"micro-batch",
                                    "grad-accum",
                                    "grad-clip",
                                    "dtype",
                                    "lr",
                                    "beta1",
                                    "beta2",
                                    "eps",
                                    "weight-decay",
                                    "zero-stage",
                                    "reduce-bucket-size",
                                    "allgather-bucket-size",
                                    "prefetch-bucket-size",
                                    "max-live-parameters",
                                    "param-persistence-threshold",
                                    "loss-scale",
                                    "initial-scale-power",
                                    "loss-scale-window",
                                    "hysteresis",
                                    "min-loss-scale"};
  TrainOptions o;  // as the flags left it: the defaults, which every_key() changes
  const TrainOptions flagged = o;
  std::set<std::string> asked;
  apply_ds_config(every_key(), "cfg.json", o, [&](const std::string& f) {
    asked.insert(f);
    return flags.count(f) > 0;
  });
  EXPECT_EQ(asked, flags);  // every implemented key consults its flag, and no other flag is asked
  EXPECT_EQ(o.micro_batch, flagged.micro_batch);
  EXPECT_EQ(o.grad_accum, flagged.grad_accum);
  EXPECT_FLOAT_EQ(o.adam.grad_clip, flagged.adam.grad_clip);
  EXPECT_EQ(o.dtype, flagged.dtype);
  EXPECT_FLOAT_EQ(o.lr.lr, flagged.lr.lr);
  EXPECT_FLOAT_EQ(o.adam.beta1, flagged.adam.beta1);
  EXPECT_FLOAT_EQ(o.adam.beta2, flagged.adam.beta2);
  EXPECT_FLOAT_EQ(o.adam.eps, flagged.adam.eps);
  EXPECT_FLOAT_EQ(o.adam.weight_decay, flagged.adam.weight_decay);
  EXPECT_EQ(o.zero.stage, flagged.zero.stage);
  EXPECT_EQ(o.zero.reduce_bucket_size, flagged.zero.reduce_bucket_size);
  EXPECT_EQ(o.zero.allgather_bucket_size, flagged.zero.allgather_bucket_size);
  EXPECT_EQ(o.zero.prefetch_bucket_size, flagged.zero.prefetch_bucket_size);
  EXPECT_EQ(o.zero.max_live_parameters, flagged.zero.max_live_parameters);
  EXPECT_EQ(o.zero.param_persistence_threshold, flagged.zero.param_persistence_threshold);
  EXPECT_EQ(o.fp16.hysteresis, flagged.fp16.hysteresis);
  EXPECT_EQ(o.fp16.loss_scale_window, flagged.fp16.loss_scale_window);
  // Keys without a flag still come from the file.
  EXPECT_EQ(o.train_batch_size, 96);
  EXPECT_FALSE(o.zero.overlap_comm);
}

TEST(DsConfig, OneFlagGivenOverridesOnlyItsKey) {
  TrainOptions o;
  o.micro_batch = 2;  // --micro-batch 2
  apply_ds_config(every_key(), "cfg.json", o, [](const std::string& f) { return f == "micro-batch"; });
  EXPECT_EQ(o.micro_batch, 2);
  EXPECT_EQ(o.grad_accum, 3);
  EXPECT_EQ(o.zero.stage, 3);
}

TEST(DsConfig, AFlagDoesNotExcuseABadValueInTheFile) {
  std::string e =
      error_of(json{{"zero_optimization", {{"stage", 7}}}}, [](const std::string&) { return true; });
  EXPECT_TRUE(has(e, "zero_optimization.stage is 7")) << e;
}

TEST(DsConfig, UnknownKeyFailsWithTheNearestKnownKey) {
  std::string e = error_of(json{{"zero_optimisation", {{"stage", 1}}}});
  EXPECT_TRUE(has(e, "unknown key 'zero_optimisation' in cfg.json; did you mean 'zero_optimization'?")) << e;
  e = error_of(json{{"zero_optimization", {{"reduce_bucket_sise", 5}}}});
  EXPECT_TRUE(has(e,
                  "unknown key 'zero_optimization.reduce_bucket_sise' in cfg.json; did you mean "
                  "'zero_optimization.reduce_bucket_size'?"))
      << e;
  e = error_of(json::parse(R"({"optimizer": {"type": "AdamW", "params": {"weight_decy": 0.1}}})"));
  EXPECT_TRUE(has(e, "did you mean 'optimizer.params.weight_decay'?")) << e;
  e = error_of(json{{"fp16", {{"enable", true}}}});
  EXPECT_TRUE(has(e, "unknown key 'fp16.enable' in cfg.json; did you mean 'fp16.enabled'?")) << e;
  // The nearest key may be one tierzero does not implement: the suggestion still names it.
  e = error_of(json{{"zero_optimization", {{"offload_optimiser", json::object()}}}});
  EXPECT_TRUE(has(e, "did you mean 'zero_optimization.offload_optimizer'?")) << e;
  // A section's key at the top level points into its section.
  e = error_of(json{{"stage", 3}});
  EXPECT_TRUE(has(e, "unknown key 'stage' in cfg.json; did you mean 'zero_optimization.stage'?")) << e;
  e = error_of(json{{"lr", 0.1}});
  EXPECT_TRUE(has(e, "did you mean 'optimizer.params.lr'?")) << e;
  e = error_of(json{{"Train_Batch_Size", 8}});
  EXPECT_TRUE(has(e, "did you mean 'train_batch_size'?")) << e;
}

TEST(DsConfig, EveryUnimplementedDeepSpeedKeyFailsNamingIt) {
  const char* top[] = {"offload_optimizer",  // DeepSpeed reads these inside zero_optimization
                       "offload_param",
                       "sub_group_size",
                       "scheduler",
                       "activation_checkpointing",
                       "wall_clock_breakdown",
                       "steps_per_print",
                       "prescale_gradients",
                       "gradient_predivide_factor",
                       "communication_data_type",
                       "sparse_gradients",
                       "amp",
                       "flops_profiler",
                       "tensorboard",
                       "wandb",
                       "csv_monitor",
                       "checkpoint",
                       "data_types",
                       "compression_training",
                       "zero_allow_untested_optimizer",
                       "elasticity",
                       "autotuning",
                       "memory_breakdown",
                       "dump_state"};
  for (const char* k : top) {
    std::string e =
        error_of(json{{k, true}});  // true: wall_clock_breakdown/memory_breakdown accept only false
    EXPECT_TRUE(has(
        e, std::string("'") + k + "' is a DeepSpeed key that tierzero does not implement in this version"))
        << k << ": " << e;
    EXPECT_TRUE(has(e, "cfg.json")) << e;
  }
  const char* zero[] = {"reduce_scatter",
                        "allgather_partitions",
                        "round_robin_gradients",
                        "stage3_gather_16bit_weights_on_model_save",
                        "stage3_max_reuse_distance",
                        "elastic_checkpoint",
                        "load_from_fp32_weights",
                        "ignore_unused_parameters",
                        "zero_hpz_partition_size",
                        "zero_quantized_weights",
                        "zero_quantized_gradients",
                        "mics_shard_size"};
  for (const char* k : zero) {
    std::string e = error_of(json{{"zero_optimization", {{k, 1}}}});
    EXPECT_TRUE(has(
        e, std::string("'zero_optimization.") + k + "' is a DeepSpeed key that tierzero does not implement"))
        << k << ": " << e;
  }
  for (const char* k : {"auto_cast", "consecutive_hysteresis"}) {
    std::string e = error_of(json{{"fp16", {{k, true}}}});
    EXPECT_TRUE(has(e, std::string("'fp16.") + k + "' is a DeepSpeed key")) << k << ": " << e;
  }
  // Each at the value tierzero cannot honour (amsgrad false and adam_w_mode true are accepted, below).
  for (auto [k, value] : {std::pair{"amsgrad", true}, {"torch_adam", false}, {"adam_w_mode", false}}) {
    std::string e = error_of(json{{"optimizer", {{"type", "Adam"}, {"params", {{k, value}}}}}});
    EXPECT_TRUE(has(e, std::string("'optimizer.params.") + k + "' is a DeepSpeed key")) << k << ": " << e;
  }
}

TEST(DsConfig, OffloadSectionsAndAioRoundTripIntoTheOptions) {
  TrainOptions o;
  apply_ds_config(json::parse(R"({"zero_optimization": {"stage": 3, "sub_group_size": 1e6,
      "offload_optimizer": {"device": "cpu", "pin_memory": true, "buffer_count": 5},
      "offload_param": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 6, "buffer_size": 1e8,
                        "max_in_cpu": 1e9}},
      "aio": {"block_size": 262144, "queue_depth": 32, "intra_op_parallelism": 1, "single_submit": false,
              "overlap_events": true}})"),
                  "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.offload.optimizer, Tier::host);
  EXPECT_EQ(o.offload.param, Tier::nvme);
  EXPECT_EQ(o.offload.nvme_paths, std::vector<std::string>{"/local_nvme"});
  EXPECT_TRUE(o.offload.pin_memory);
  EXPECT_EQ(o.offload.buffer_count, 5);  // the optimizer's ring; offload_param's is only checked
  EXPECT_EQ(o.offload.sub_group_size, 1000000u);
  EXPECT_EQ(o.offload.aio_block_size, 262144u);
  EXPECT_EQ(o.offload.aio_queue_depth, 32);
  // Flags win over the file.
  TrainOptions f;
  f.offload.optimizer = Tier::device;
  apply_ds_config(json::parse(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})"), "cfg.json", f,
                  [](const std::string& flag) { return flag == "offload-optimizer"; });
  EXPECT_EQ(f.offload.optimizer, Tier::device);
  std::string e = error_of(json::parse(R"({"zero_optimization": {"offload_optimizer": {"device": "gpu"}}})"));
  EXPECT_TRUE(has(e, "'gpu' is not an offload device")) << e;
  e = error_of(json::parse(R"({"aio": {"block_size": 1000}})"));
  EXPECT_TRUE(has(e, "multiple of 4096")) << e;
}

TEST(DsConfig, UnimplementedKeysWhoseValueMeansWhatTierzeroDoesAreAccepted) {
  EXPECT_EQ(error_of(json::parse(R"({"wall_clock_breakdown": false, "memory_breakdown": false,
      "optimizer": {"type": "Adam", "params": {"adam_w_mode": true, "amsgrad": false, "bias_correction": true}}})")),
            "");
  std::string e =
      error_of(json::parse(R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})"));
  EXPECT_TRUE(has(e, "only true is accepted, and the file gives false")) << e;
  EXPECT_TRUE(has(e, "decouples the weight decay")) << e;
}

TEST(DsConfig, WrongTypeFailsNamingKeyValueAndWhatIsAllowed) {
  std::string e = error_of(json{{"zero_optimization", {{"stage", "three"}}}});
  EXPECT_TRUE(has(e, "cfg.json: zero_optimization.stage is \"three\" (a string); expected an integer 0..3"))
      << e;
  e = error_of(json{{"zero_optimization", {{"overlap_comm", 1}}}});
  EXPECT_TRUE(has(e, "zero_optimization.overlap_comm is 1; allowed: true or false")) << e;
  e = error_of(json{{"fp16", true}});
  EXPECT_TRUE(has(e, "fp16 is true (a boolean); expected an object")) << e;
  e = error_of(json{{"train_micro_batch_size_per_gpu", nullptr}});
  EXPECT_TRUE(has(e, "train_micro_batch_size_per_gpu is null (null); expected an integer >= 1")) << e;
  e = error_of(json::parse("[1, 2]"));
  EXPECT_TRUE(has(e, "the top level is an array")) << e;
  e = error_of(json{{"zero_optimization", true}});
  EXPECT_TRUE(has(e, "deprecated")) << e;
  EXPECT_TRUE(has(e, "{\"stage\": 1}")) << e;
}

TEST(DsConfig, OutOfRangeFailsNamingKeyValueAndWhatIsAllowed) {
  struct Case {
    const char* doc;
    const char* message;
  };
  const Case cases[] = {
      {R"({"zero_optimization": {"stage": 4}})", "zero_optimization.stage is 4; allowed: an integer 0..3"},
      {R"({"zero_optimization": {"stage": -1}})", "zero_optimization.stage is -1; allowed: an integer 0..3"},
      {R"({"zero_optimization": {"reduce_bucket_size": -5}})",
       "zero_optimization.reduce_bucket_size is -5; allowed: a whole number of elements >= 1"},
      {R"({"zero_optimization": {"allgather_bucket_size": 5.5e0}})",
       "zero_optimization.allgather_bucket_size is 5.5; allowed: a whole number of elements >= 1"},
      {R"({"zero_optimization": {"reduce_bucket_size": 0}})", "zero_optimization.reduce_bucket_size is 0"},
      {R"({"zero_optimization": {"stage3_max_live_parameters": -1e9}})",
       "zero_optimization.stage3_max_live_parameters is -1000000000.0; allowed: a whole number of elements "
       ">= 0"},
      {R"({"zero_optimization": {"contiguous_gradients": false}})",
       "zero_optimization.contiguous_gradients false is not implemented"},
      {R"({"fp16": {"hysteresis": 0}})", "fp16.hysteresis is 0; allowed: an integer >= 1"},
      {R"({"fp16": {"loss_scale": -1}})", "fp16.loss_scale is -1; allowed: a number >= 0"},
      {R"({"fp16": {"loss_scale_window": 0}})", "fp16.loss_scale_window is 0; allowed: an integer >= 1"},
      {R"({"fp16": {"initial_scale_power": 200}})",
       "fp16.initial_scale_power is 200; allowed: an integer 0..127"},
      {R"({"fp16": {"min_loss_scale": 0}})", "fp16.min_loss_scale is 0; allowed: a number > 0"},
      {R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})",
       "fp16.enabled and bf16.enabled are both true; enable at most one"},
      {R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.9]}}})",
       "optimizer.params.betas is [0.9] (an array); expected two numbers [beta1, beta2], each in [0, 1)"},
      {R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.9, 1.0]}}})",
       "optimizer.params.betas[1] is 1.0; allowed: two numbers [beta1, beta2], each in [0, 1)"},
      {R"({"optimizer": {"type": "AdamW", "params": {"betas": [-0.1, 0.9]}}})",
       "optimizer.params.betas[0] is -0.1"},
      {R"({"optimizer": {"type": "AdamW", "params": {"lr": 0}}})",
       "optimizer.params.lr is 0; allowed: a number > 0"},
      {R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e60}}})", "optimizer.params.lr is 1e+60"},
      {R"({"optimizer": {"type": "AdamW", "params": {"eps": 0}}})",
       "optimizer.params.eps is 0; allowed: a number > 0"},
      {R"({"optimizer": {"type": "AdamW", "params": {"weight_decay": -0.1}}})",
       "optimizer.params.weight_decay is -0.1; allowed: a number >= 0"},
      {R"({"gradient_clipping": -1.0})",
       "gradient_clipping is -1.0; allowed: a number >= 0 (0 turns clipping off)"},
      {R"({"train_micro_batch_size_per_gpu": 0})",
       "train_micro_batch_size_per_gpu is 0; allowed: an integer >= 1"},
      {R"({"gradient_accumulation_steps": 2.5})",
       "gradient_accumulation_steps is 2.5; allowed: an integer >= 1"},
      {R"({"train_batch_size": 1e12})", "train_batch_size is 1000000000000.0; allowed: an integer >= 1"},
  };
  for (const Case& c : cases) {
    std::string e = error_of(json::parse(c.doc));
    EXPECT_TRUE(has(e, c.message)) << c.doc << "\n  gave: " << e;
    EXPECT_TRUE(has(e, "cfg.json")) << e;
  }
}

TEST(DsConfig, OptimizerTypeIsAdamOrAdamWInAnyCase) {
  for (const char* t : {"AdamW", "adamw", "ADAM", "Adam"}) {
    TrainOptions o;
    apply_ds_config(json{{"optimizer", {{"type", t}, {"params", {{"lr", 0.01}}}}}}, "cfg.json", o, kNoFlags);
    EXPECT_FLOAT_EQ(o.lr.lr, 0.01f) << t;
  }
  std::string e = error_of(json{{"optimizer", {{"type", "Lamb"}}}});
  EXPECT_TRUE(has(e, "optimizer.type \"Lamb\" is a DeepSpeed optimizer that tierzero does not implement"))
      << e;
  EXPECT_TRUE(has(e, "\"AdamW\" or \"Adam\"")) << e;
  e = error_of(json{{"optimizer", {{"type", "SGDX"}}}});
  EXPECT_TRUE(has(e, "optimizer.type \"SGDX\" is not an optimizer tierzero knows")) << e;
  e = error_of(json{{"optimizer", {{"params", {{"lr", 0.1}}}}}});
  EXPECT_TRUE(has(e, "optimizer.type is missing")) << e;
}

TEST(DsConfig, AutoValuesFailAskingForANumber) {
  for (const char* doc :
       {R"({"train_batch_size": "auto"})", R"({"gradient_clipping": "auto"})",
        R"({"fp16": {"enabled": "auto"}})", R"({"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}})",
        R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}})"}) {
    std::string e = error_of(json::parse(doc));
    EXPECT_TRUE(has(e, "is \"auto\"")) << doc << ": " << e;
    EXPECT_TRUE(has(e, "Hugging Face")) << e;
    EXPECT_TRUE(has(e, "replace it with")) << e;
  }
  std::string e = error_of(json::parse(R"({"zero_optimization": {"stage3_prefetch_bucket_size": "auto"}})"));
  EXPECT_TRUE(has(e, "zero_optimization.stage3_prefetch_bucket_size is \"auto\"")) << e;
}

TEST(DsConfig, SizesAcceptIntegralFloatsAsDeepSpeedWritesThem) {
  TrainOptions o;
  apply_ds_config(
      json::parse(R"({"zero_optimization": {"reduce_bucket_size": 5e8, "allgather_bucket_size": 2e8,
                                   "stage3_max_live_parameters": 1e9, "stage3_param_persistence_threshold": 0}})"),
      "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.zero.reduce_bucket_size, 500'000'000u);
  EXPECT_EQ(o.zero.allgather_bucket_size, 200'000'000u);
  EXPECT_EQ(o.zero.max_live_parameters, 1'000'000'000u);
  EXPECT_EQ(o.zero.param_persistence_threshold, 0u);
}

// Modelled on DeepSpeed's ZeRO-3 tutorial and config-json docs, with offload and the stage-3 keys
// tierzero does not implement (sub_group_size, stage3_max_reuse_distance) left out.
TEST(DsConfig, ARealWorldZero3ConfigLoads) {
  testing::TestDir dir;
  std::string path = dir.file("ds_zero3.json");
  write(path, R"({
  "train_batch_size": 64,
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 2,
  "gradient_clipping": 1.0,
  "wall_clock_breakdown": false,
  "optimizer": {
    "type": "AdamW",
    "params": {
      "lr": 3e-5,
      "betas": [0.9, 0.999],
      "eps": 1e-8,
      "weight_decay": 3e-7
    }
  },
  "bf16": {
    "enabled": true
  },
  "zero_optimization": {
    "stage": 3,
    "overlap_comm": true,
    "contiguous_gradients": true,
    "reduce_bucket_size": 1e7,
    "stage3_prefetch_bucket_size": 1e7,
    "stage3_param_persistence_threshold": 1e5,
    "stage3_max_live_parameters": 1e9
  }
})");
  TrainOptions o;
  load_ds_config(path, o, kNoFlags);
  EXPECT_EQ(o.train_batch_size, 64);
  EXPECT_EQ(o.micro_batch, 4);
  EXPECT_EQ(o.grad_accum, 2);
  EXPECT_EQ(o.dtype, DType::bf16);
  EXPECT_FLOAT_EQ(o.lr.lr, 3e-5f);
  EXPECT_FLOAT_EQ(o.adam.weight_decay, 3e-7f);
  EXPECT_EQ(o.zero.stage, 3);
  EXPECT_EQ(o.zero.reduce_bucket_size, 10'000'000u);
  EXPECT_EQ(o.zero.prefetch_bucket_size, 10'000'000u);
  EXPECT_EQ(o.zero.param_persistence_threshold, 100'000u);
  EXPECT_EQ(o.zero.max_live_parameters, 1'000'000'000u);
}

TEST(DsConfig, MissingFileFailsNamingThePath) {
  testing::TestDir dir;
  std::string path = dir.file("nope.json");
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, "cannot open DeepSpeed config (--config) '" + path + "'")) << e;
  EXPECT_TRUE(has(e, "No such file")) << e;
  e = load_error(dir.path());
  EXPECT_TRUE(has(e, "is not a regular file (a directory)")) << e;
}

// Hostile inputs are refused before any read: /dev/zero would be read until memory runs out, a FIFO
// would block forever, and an oversized file is not a config.
TEST(DsConfig, ADeviceAFifoAndAnOversizedFileAreRefusedNamingThePath) {
  testing::TestDir dir;
  std::string e = load_error("/dev/zero");
  EXPECT_TRUE(has(e, "'/dev/zero' is not a regular file (a character device)")) << e;
  const std::string fifo = dir.file("cfg.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  e = load_error(fifo);  // returns at once: no writer is ever opened
  EXPECT_TRUE(has(e, "'" + fifo + "' is not a regular file (a FIFO)")) << e;
  const std::string big = dir.file("big.json");
  write(big, "{\"x\": \"" + std::string(kMaxConfigBytes, 'a') + "\"}");
  e = load_error(big);
  EXPECT_TRUE(has(e, big + "' is " + std::to_string(kMaxConfigBytes + 9) + " bytes, more than the")) << e;
  // A symlink to a real config is fine (it names a regular file).
  const std::string real = dir.file("real.json"), link = dir.file("link.json");
  write(real, R"({"train_micro_batch_size_per_gpu": 3})");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  TrainOptions o;
  load_ds_config(link, o, kNoFlags);
  EXPECT_EQ(o.micro_batch, 3);
}

TEST(DsConfig, MalformedJsonFailsWithThePathAndPosition) {
  testing::TestDir dir;
  std::string path = dir.file("bad.json");
  write(path, "{\n  \"train_batch_size\": 8,\n  \"gradient_clipping\": 1.0,\n}\n");  // trailing comma
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, path + " is not valid JSON: parse error at line 4, column 1")) << e;
  write(path, "");
  e = load_error(path);
  EXPECT_TRUE(has(e, path + " is not valid JSON")) << e;
}

TEST(DsConfig, RepeatedKeyFailsAsInDeepSpeed) {
  testing::TestDir dir;
  std::string path = dir.file("dup.json");
  write(path, R"({"zero_optimization": {"stage": 1, "reduce_bucket_size": 5, "stage": 2}, "optimizer": {}})");
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, path + ": key 'zero_optimization.stage' is given twice")) << e;
  // The same key in two different objects is fine.
  write(path, R"({"fp16": {"enabled": false}, "bf16": {"enabled": true}})");
  EXPECT_EQ(load_error(path), "");
}

TEST(DsConfig, LoadedFileErrorsNameThePath) {
  testing::TestDir dir;
  std::string path = dir.file("cfg.json");
  write(path, R"({"zero_optimisation": {"stage": 2}})");
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, "unknown key 'zero_optimisation' in " + path + "; did you mean 'zero_optimization'?"))
      << e;
}

}  // namespace
}  // namespace tz
