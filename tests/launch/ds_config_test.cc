// Tests launch/ds_config.h: every DeepSpeed key tierzero reads lands in TrainOptions, flags given on the
// command line win, "auto" and keys with no effect print one line each, and typos, unimplemented keys,
// unresolvable "auto", wrong types and ranges fail with a message naming the key. Reading files (the
// tutorial-shaped configs, missing, hostile and malformed files) is ds_config_file_test.cc; the scheduler
// section is ds_scheduler_test.cc.
#include "launch/ds_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
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

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Every key tierzero reads, each at a value that differs from TrainOptions' default.
json every_key() {
  return json::parse(R"({
    "train_batch_size": 96,
    "train_micro_batch_size_per_gpu": 8,
    "gradient_accumulation_steps": 3,
    "gradient_clipping": 0.5,
    "steps_per_print": 7,
    "fp16": {"enabled": true, "loss_scale": 128, "initial_scale_power": 12, "loss_scale_window": 500,
             "hysteresis": 3, "min_loss_scale": 0.25},
    "bf16": {"enabled": false},
    "optimizer": {"type": "AdamW",
                  "params": {"lr": 1e-4, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 1e-5, "warmup_max_lr": 1e-4,
                  "warmup_num_steps": 6, "total_num_steps": 60, "warmup_type": "linear"}},
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
  EXPECT_EQ(o.log_every, 7);
  EXPECT_EQ(o.lr.schedule, LrSchedule::warmup_decay);
  EXPECT_FLOAT_EQ(o.lr.min_lr, 1e-5f);
  EXPECT_EQ(o.lr.warmup, 6);
  EXPECT_EQ(o.lr.total_num_steps, 60);
  EXPECT_EQ(o.lr.warmup_type, WarmupType::linear);
  EXPECT_TRUE(o.config_lines.empty());  // every key is read, none resolved from "auto"
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
                                    "min-loss-scale",
                                    "log-every",
                                    "lr-schedule"};  // given, it keeps --warmup, --min-lr from being asked
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
  EXPECT_EQ(o.log_every, flagged.log_every);
  EXPECT_EQ(o.lr.schedule, flagged.lr.schedule);  // --lr-schedule: the file's scheduler is not applied
  EXPECT_EQ(o.lr.warmup, flagged.lr.warmup);
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
                       "activation_checkpointing",
                       "prescale_gradients",  // true: only false (DeepSpeed's default) is accepted
                       "gradient_predivide_factor",
                       "communication_data_type",
                       "sparse_gradients",
                       "amp",
                       "checkpoint",
                       "data_types",
                       "compression_training",
                       "elasticity",
                       "autotuning"};
  for (const char* k : top) {
    std::string e = error_of(json{{k, true}});
    EXPECT_TRUE(has(
        e, std::string("'") + k + "' is a DeepSpeed key that tierzero does not implement in this version"))
        << k << ": " << e;
    EXPECT_TRUE(has(e, "cfg.json")) << e;
  }
  // Each would change the numbers, so only DeepSpeed's default (what tierzero does) is accepted.
  const std::pair<const char*, json> zero[] = {{"zero_quantized_weights", true},
                                               {"zero_quantized_gradients", true},
                                               {"zero_quantized_nontrainable_weights", true},
                                               {"mics_shard_size", 4},
                                               {"legacy_stage1", true}};
  for (const auto& [k, value] : zero) {
    std::string e = error_of(json{{"zero_optimization", {{k, value}}}});
    EXPECT_TRUE(has(
        e, std::string("'zero_optimization.") + k + "' is a DeepSpeed key that tierzero does not implement"))
        << k << ": " << e;
  }
  for (const char* k : {"auto_cast", "consecutive_hysteresis", "fp16_master_weights_and_grads"}) {
    std::string e = error_of(json{{"fp16", {{k, true}}}});
    EXPECT_TRUE(has(e, std::string("'fp16.") + k + "' is a DeepSpeed key")) << k << ": " << e;
    EXPECT_TRUE(has(e, "only false is accepted")) << e;
  }
  std::string e = error_of(json{{"bf16", {{"check_grad_overflow", true}}}});
  EXPECT_TRUE(has(e, "'bf16.check_grad_overflow' is a DeepSpeed key")) << e;
  e = error_of(json{{"aio", {{"use_gds", true}}}});
  EXPECT_TRUE(has(e, "GPUDirect Storage is not implemented")) << e;
  // Each at the value tierzero cannot honour (amsgrad false and adam_w_mode true are accepted, below).
  for (auto [k, value] : {std::pair{"amsgrad", true}, {"bias_correction", false}, {"adam_w_mode", false}}) {
    e = error_of(json{{"optimizer", {{"type", "Adam"}, {"params", {{k, value}}}}}});
    EXPECT_TRUE(has(e, std::string("'optimizer.params.") + k + "' is a DeepSpeed key")) << k << ": " << e;
  }
}

// DeepSpeed's low-precision states (its PR 7700) sit in the bf16 section: true asks for bf16 moments and a
// bf16 master (stochastic rounding here), false leaves the defaults; a flag given wins.
TEST(DsConfig, Bf16OptimizerStatesAndMasterWeightsKeysSetTheStateFormats) {
  TrainOptions o;
  apply_ds_config(json::parse(R"({"bf16": {"enabled": true, "bf16_optimizer_states": true,
                                            "bf16_master_weights_and_grads": true}})"),
                  "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.offload.optimizer_states, MomentFormat::bf16);
  EXPECT_EQ(o.offload.master_weights, MasterFormat::bf16_sr);
  TrainOptions off;
  apply_ds_config(json::parse(R"({"bf16": {"bf16_optimizer_states": false, "bf16_master_weights_and_grads": false}})"),
                  "cfg.json", off, kNoFlags);
  EXPECT_EQ(off.offload.optimizer_states, MomentFormat::fp32);
  EXPECT_EQ(off.offload.master_weights, MasterFormat::fp32);
  TrainOptions flags;
  flags.offload.optimizer_states = MomentFormat::int8;
  apply_ds_config(json::parse(R"({"bf16": {"bf16_optimizer_states": true}})"), "cfg.json", flags,
                  [](const std::string& f) { return f == "optimizer-states"; });
  EXPECT_EQ(flags.offload.optimizer_states, MomentFormat::int8);
  const std::string e = error_of(json::parse(R"({"bf16": {"bf16_optimizer_states": "yes"}})"));
  EXPECT_TRUE(has(e, "bf16.bf16_optimizer_states")) << e;
}

TEST(DsConfig, KeysThatWouldChangeTheNumbersAreAcceptedAtTheirDefaultSilently) {
  TrainOptions o;
  apply_ds_config(json::parse(R"({"prescale_gradients": false, "gradient_predivide_factor": 1.0,
      "sparse_gradients": false, "communication_data_type": null,
      "fp16": {"auto_cast": false, "consecutive_hysteresis": false, "fp16_master_weights_and_grads": false},
      "bf16": {"check_grad_overflow": false}, "aio": {"use_gds": false},
      "zero_optimization": {"zero_quantized_weights": false, "zero_quantized_gradients": false,
                            "zero_quantized_nontrainable_weights": false, "zeropp_loco_param": null,
                            "mics_shard_size": -1, "mics_hierarchical_params_gather": false, "legacy_stage1": false},
      "optimizer": {"type": "AdamW", "params": {"amsgrad": false, "adam_w_mode": true, "bias_correction": true}}})"),
                  "cfg.json", o, kNoFlags);
  EXPECT_TRUE(o.config_lines.empty()) << o.config_lines.front();
}

// The keys DeepSpeed's tutorials and Hugging Face's tests write that change nothing tierzero computes.
TEST(DsConfig, NoEffectKeysAreAcceptedWithOnePrintedLineEach) {
  TrainOptions o;
  const TrainOptions before = o;
  apply_ds_config(json::parse(R"({
      "wall_clock_breakdown": true, "memory_breakdown": false, "dump_state": false,
      "tensorboard": {"enabled": true, "output_path": "logs/", "job_name": "x"}, "wandb": {"enabled": false},
      "csv_monitor": {"enabled": false}, "comet": {"enabled": false}, "comms_logger": {"enabled": true},
      "flops_profiler": {"enabled": false}, "zero_allow_untested_optimizer": true,
      "zero_force_ds_cpu_optimizer": false,
      "bf16": {"immediate_grad_update": true},
      "optimizer": {"type": "AdamW", "legacy_fusion": false, "params": {"torch_adam": true}},
      "zero_optimization": {"stage3_max_reuse_distance": 1e9, "max_reuse_distance": 0, "allgather_partitions": true,
        "reduce_scatter": false, "round_robin_gradients": true, "use_multi_rank_bucket_allreduce": true,
        "stage3_gather_16bit_weights_on_model_save": true, "gather_16bit_weights_on_model_save": false,
        "stage3_gather_fp16_weights_on_model_save": true, "stage3_model_persistence_threshold": 1e12,
        "stage3_module_granularity_threshold": 0, "stage3_use_all_reduce_for_fetch_params": true,
        "elastic_checkpoint": false, "load_from_fp32_weights": true, "pipeline_loading_checkpoint": false,
        "ignore_unused_parameters": true, "memory_efficient_linear": true, "override_module_apply": true,
        "log_trace_cache_warnings": false, "zero_hpz_partition_size": 8, "grad_hooks": true,
        "cpu_offload_use_pin_memory": true,
        "offload_optimizer": {"device": "cpu", "fast_init": true, "pipeline_read": true, "pipeline_write": false,
                              "pipeline": true},
        "offload_param": {"device": "cpu", "buffer_count": 5, "buffer_size": 1e8, "max_in_cpu": 1e9}},
      "aio": {"thread_count": 1, "intra_op_parallelism": 2, "single_submit": false, "overlap_events": true}})"),
                  "cfg.json", o, kNoFlags);
  const char* keys[] = {"wall_clock_breakdown",
                        "memory_breakdown",
                        "dump_state",
                        "tensorboard",
                        "wandb",
                        "csv_monitor",
                        "comet",
                        "comms_logger",
                        "flops_profiler",
                        "zero_allow_untested_optimizer",
                        "zero_force_ds_cpu_optimizer",
                        "bf16.immediate_grad_update",
                        "optimizer.legacy_fusion",
                        "optimizer.params.torch_adam",
                        "zero_optimization.stage3_max_reuse_distance",
                        "zero_optimization.max_reuse_distance",
                        "zero_optimization.allgather_partitions",
                        "zero_optimization.reduce_scatter",
                        "zero_optimization.round_robin_gradients",
                        "zero_optimization.use_multi_rank_bucket_allreduce",
                        "zero_optimization.stage3_gather_16bit_weights_on_model_save",
                        "zero_optimization.gather_16bit_weights_on_model_save",
                        "zero_optimization.stage3_gather_fp16_weights_on_model_save",
                        "zero_optimization.stage3_model_persistence_threshold",
                        "zero_optimization.stage3_module_granularity_threshold",
                        "zero_optimization.stage3_use_all_reduce_for_fetch_params",
                        "zero_optimization.elastic_checkpoint",
                        "zero_optimization.load_from_fp32_weights",
                        "zero_optimization.pipeline_loading_checkpoint",
                        "zero_optimization.ignore_unused_parameters",
                        "zero_optimization.memory_efficient_linear",
                        "zero_optimization.override_module_apply",
                        "zero_optimization.log_trace_cache_warnings",
                        "zero_optimization.zero_hpz_partition_size",
                        "zero_optimization.grad_hooks",
                        "zero_optimization.cpu_offload_use_pin_memory",
                        "zero_optimization.offload_optimizer.fast_init",
                        "zero_optimization.offload_optimizer.pipeline_read",
                        "zero_optimization.offload_optimizer.pipeline_write",
                        "zero_optimization.offload_optimizer.pipeline",
                        "zero_optimization.offload_param.buffer_count",
                        "zero_optimization.offload_param.buffer_size",
                        "zero_optimization.offload_param.max_in_cpu",
                        "aio.thread_count",
                        "aio.intra_op_parallelism",
                        "aio.single_submit",
                        "aio.overlap_events"};
  EXPECT_EQ(o.config_lines.size(), std::size(keys));
  for (const char* k : keys) {
    const std::string start = std::string("config: ") + k + " is accepted and has no effect in tierzero: ";
    int n = 0;
    for (const auto& line : o.config_lines) n += line.rfind(start, 0) == 0 && line.size() > start.size() + 10;
    EXPECT_EQ(n, 1) << k;
  }
  // Nothing they could mean changed a setting (offload_optimizer's device did, as it says).
  EXPECT_EQ(o.zero.reduce_bucket_size, before.zero.reduce_bucket_size);
  EXPECT_EQ(o.zero.prefetch_bucket_size, before.zero.prefetch_bucket_size);
  EXPECT_EQ(o.offload.buffer_count, before.offload.buffer_count);
  EXPECT_FALSE(o.offload.pin_memory);
  // Their values are still checked.
  std::string e = error_of(json{{"zero_optimization", {{"stage3_max_reuse_distance", "far"}}}});
  EXPECT_TRUE(
      has(e, "zero_optimization.stage3_max_reuse_distance is \"far\" (a string); expected a whole number"))
      << e;
  e = error_of(json{{"zero_optimization", {{"reduce_scatter", 1}}}});
  EXPECT_TRUE(has(e, "zero_optimization.reduce_scatter is 1; allowed: true or false")) << e;
  e = error_of(json{{"tensorboard", true}});
  EXPECT_TRUE(has(e, "tensorboard is true (a boolean); expected an object")) << e;
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
  apply_ds_config(json::parse(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})"),
                  "cfg.json", f, [](const std::string& flag) { return flag == "offload-optimizer"; });
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
       "zero_optimization.reduce_bucket_size is -5; allowed: a whole number of elements >= 0"},
      {R"({"zero_optimization": {"allgather_bucket_size": 5.5e0}})",
       "zero_optimization.allgather_bucket_size is 5.5; allowed: a whole number of elements >= 0"},
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
      {R"({"optimizer": {"type": "AdamW", "params": {"lr": 11}}})",
       "optimizer.params.lr is 11; allowed: a number in [0, 10]"},
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

TEST(DsConfig, AutoStaysAnErrorWhereNeitherHuggingFaceNorDeepSpeedResolvesIt) {
  for (
      const char* doc :
      {R"({"steps_per_print": "auto"})", R"({"fp16": {"loss_scale": "auto"}})",
       R"({"aio": {"block_size": "auto"}})", R"({"optimizer": {"type": "auto"}})",
       R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "auto"}}})",
       R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 9, "cos_min_ratio": "auto"}}})"}) {
    std::string e = error_of(json::parse(doc));
    EXPECT_TRUE(has(e, "is \"auto\"")) << doc << ": " << e;
    EXPECT_TRUE(has(e, "Hugging Face")) << e;
    EXPECT_TRUE(has(e, "replace it with")) << e;
  }
  // An unknown key is an error with or without "auto".
  std::string e = error_of(json::parse(R"({"zero_optimization": {"reduce_bucket_sise": "auto"}})"));
  EXPECT_TRUE(has(e, "did you mean 'zero_optimization.reduce_bucket_size'?")) << e;
}

// Hugging Face's ds_config_zero2.json / ds_config_zero3.json style: every "auto" the Trainer fills in
// takes the flag's value (or the model's width), with one printed line each.
TEST(DsConfig, AutoIsResolvedWhereHuggingFaceFillsItInWithOneLineEach) {
  TrainOptions o;
  o.model.n_embd = 768;
  o.micro_batch = 2;  // as --micro-batch 2 left it
  o.dtype = DType::f16;
  apply_ds_config(json::parse(R"({
      "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
      "gradient_clipping": "auto",
      "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"},
      "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
      "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                            "stage3_param_persistence_threshold": "auto"}})"),
                  "cfg.json", o, kNoFlags);
  const TrainOptions d;
  EXPECT_EQ(o.micro_batch, 2);
  EXPECT_EQ(o.grad_accum, d.grad_accum);
  EXPECT_EQ(o.train_batch_size, 0);  // not checked: the product, as Hugging Face computes it
  EXPECT_FLOAT_EQ(o.adam.grad_clip, d.adam.grad_clip);
  EXPECT_EQ(o.dtype, DType::f16);
  EXPECT_FLOAT_EQ(o.lr.lr, d.lr.lr);
  EXPECT_EQ(o.zero.reduce_bucket_size, 589'824u);         // 768^2
  EXPECT_EQ(o.zero.prefetch_bucket_size, 530'841u);       // int(0.9 * 768^2)
  EXPECT_EQ(o.zero.param_persistence_threshold, 7'680u);  // 10 * 768
  const std::vector<std::string> want{
      "config: train_micro_batch_size_per_gpu \"auto\" -> 2 (--micro-batch)",
      "config: gradient_accumulation_steps \"auto\" -> 1 (--grad-accum)",
      "config: train_batch_size \"auto\" -> 2 x 1 x the ranks (micro batch x gradient accumulation x ranks, "
      "as "
      "Hugging Face computes it)",
      "config: gradient_clipping \"auto\" -> 1 (--grad-clip)",
      "config: fp16.enabled \"auto\" -> true (--dtype fp16)",
      "config: bf16.enabled \"auto\" -> false (--dtype fp16)",
      "config: optimizer.params.lr \"auto\" -> 0.0003 (--lr)",
      "config: optimizer.params.betas \"auto\" -> [0.9, 0.999] (--beta1, --beta2)",
      "config: optimizer.params.eps \"auto\" -> 1e-08 (--eps)",
      "config: optimizer.params.weight_decay \"auto\" -> 0.01 (--weight-decay)",
      "config: zero_optimization.reduce_bucket_size \"auto\" -> 589824 (hidden_size^2 with hidden_size 768, "
      "as "
      "Hugging Face resolves it)",
      "config: zero_optimization.stage3_prefetch_bucket_size \"auto\" -> 530841 (int(0.9 x hidden_size^2) "
      "with "
      "hidden_size 768, as Hugging Face resolves it)",
      "config: zero_optimization.stage3_param_persistence_threshold \"auto\" -> 7680 (10 x hidden_size with "
      "hidden_size 768, as Hugging Face resolves it)"};
  EXPECT_EQ(o.config_lines, want);
  // A flag typed on the command line still wins, and the line says so.
  TrainOptions f;
  f.zero.reduce_bucket_size = 1000;
  apply_ds_config(json::parse(R"({"zero_optimization": {"reduce_bucket_size": "auto"}})"), "cfg.json", f,
                  [](const std::string& flag) { return flag == "reduce-bucket-size"; });
  EXPECT_EQ(f.zero.reduce_bucket_size, 1000u);
  EXPECT_EQ(f.config_lines,
            std::vector<std::string>{
                "config: zero_optimization.reduce_bucket_size \"auto\" -> 1000 (--reduce-bucket-size)"});
}

// DeepSpeed's zero_optimization and offload sections drop "auto" and take the key's default; tierzero
// reads such a key as left out.
TEST(DsConfig, AutoInZeroOptimizationIsReadAsLeftOutAsDeepSpeedDoes) {
  TrainOptions o;
  apply_ds_config(json::parse(R"({"zero_optimization": {"stage": "auto", "allgather_bucket_size": "auto",
      "stage3_max_reuse_distance": "auto", "zero_quantized_gradients": "auto",
      "offload_optimizer": {"device": "auto", "pin_memory": "auto"}}})"),
                  "cfg.json", o, [](const std::string& f) { return f == "zero-stage"; });
  EXPECT_EQ(o.zero.stage, 0);
  EXPECT_EQ(o.offload.optimizer, Tier::device);
  const std::string why =
      "as if left out: DeepSpeed reads \"auto\" in zero_optimization as the key's default";
  const std::vector<std::string> want{
      "config: zero_optimization.offload_optimizer.device \"auto\" -> none (as if left out: DeepSpeed reads "
      "\"auto\" in zero_optimization.offload_optimizer as the key's default; tierzero keeps "
      "--offload-optimizer's value)",
      "config: zero_optimization.offload_optimizer.pin_memory \"auto\" -> false (as if left out: DeepSpeed "
      "reads "
      "\"auto\" in zero_optimization.offload_optimizer as the key's default; tierzero keeps --pin-memory's "
      "value)",
      "config: zero_optimization.allgather_bucket_size \"auto\" -> 500000000 (" + why +
          "; tierzero keeps --allgather-bucket-size's value)",
      "config: zero_optimization.stage \"auto\" -> 0 (" + why + "; tierzero keeps --zero-stage's value)",
      "config: zero_optimization.stage3_max_reuse_distance \"auto\" -> DeepSpeed's default (" + why +
          "; the key has no effect in tierzero)",
      "config: zero_optimization.zero_quantized_gradients \"auto\" -> false (" + why +
          ", which is what tierzero does)"};
  EXPECT_EQ(o.config_lines, want);
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

// Modelled on DeepSpeed's ZeRO-3 tutorial and config-json docs, without offload (the tutorial-shaped
// files under ds_configs/ have it).
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

TEST(DsConfig, StepsPerPrintSetsTheProgressIntervalUnlessLogEveryIsGiven) {
  TrainOptions o;
  apply_ds_config(json{{"steps_per_print", 2000}}, "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.log_every, 2000);
  TrainOptions f;
  f.log_every = 5;  // --log-every 5
  apply_ds_config(json{{"steps_per_print", 2000}}, "cfg.json", f,
                  [](const std::string& flag) { return flag == "log-every"; });
  EXPECT_EQ(f.log_every, 5);
  std::string e = error_of(json{{"steps_per_print", 0}});
  EXPECT_TRUE(has(e, "steps_per_print is 0; allowed: an integer >= 1")) << e;
}

TEST(DsConfig, DeprecatedCpuOffloadMeansTheOptimizerOnTheCpuAsInDeepSpeed) {
  TrainOptions o;
  apply_ds_config(
      json{{"zero_optimization", {{"stage", 3}, {"cpu_offload", true}, {"cpu_offload_param", true}}}},
      "cfg.json", o, kNoFlags);
  EXPECT_EQ(o.offload.optimizer, Tier::host);
  EXPECT_EQ(o.offload.param, Tier::host);
  TrainOptions off;
  apply_ds_config(json{{"zero_optimization", {{"cpu_offload", false}}}}, "cfg.json", off, kNoFlags);
  EXPECT_EQ(off.offload.optimizer, Tier::device);
  std::string e = error_of(json::parse(R"({"zero_optimization": {"cpu_offload": true,
                                           "offload_optimizer": {"device": "cpu"}}})"));
  EXPECT_TRUE(has(e, "gives both cpu_offload and offload_optimizer, which DeepSpeed refuses together")) << e;
}

TEST(DsConfig, AioInsideZeroOptimizationIsMisplacedAsDeepSpeedSays) {
  std::string e =
      error_of(json::parse(R"({"zero_optimization": {"stage": 3, "aio": {"block_size": 262144}}})"));
  EXPECT_TRUE(has(e, "'zero_optimization.aio' is misplaced: DeepSpeed reads aio at the top level")) << e;
}

}  // namespace
}  // namespace tz
