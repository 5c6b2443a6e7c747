// The key tables of a DeepSpeed config (see ds_keys.h). A key is "no effect" only when, whatever its
// value, tierzero computes what DeepSpeed computes with it; a key that would change the numbers keeps
// being refused, except at the value that means what tierzero does. docs/configuration.md lists them all.
#include "launch/ds_keys.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace tz {
namespace {

using V = ValueKind;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

const char* const kMetrics = "tierzero writes every step's numbers as JSONL with --metrics instead";
const char* const kSave =
    "it applies to DeepSpeed's save_16bit_model(); tierzero saves with --save-safetensors, which always "
    "gathers the full fp32 master weights";
const char* const kReuse =
    "it tells DeepSpeed how long to keep a gathered parameter for reuse; tierzero's stage-3 gathers are "
    "planned once (--prefetch-bucket-size, --max-live-parameters), and the values are the same";
const char* const kModelPersistence =
    "it caps the parameters DeepSpeed keeps unpartitioned; tierzero applies "
    "stage3_param_persistence_threshold per flat group, and the values are the same";
const char* const kGranularity =
    "it groups DeepSpeed's small modules into one fetch; tierzero always fetches whole flat groups";
const char* const kFetchAllReduce =
    "it picks the collective DeepSpeed fetches parameters with; the values are the same";
const char* const kPipeline =
    "tierzero always overlaps the NVMe reads and writes of neighbouring sub-groups with the optimizer step";

}  // namespace

bool KeyLevel::reads(const std::string& key) const {
  return std::find(read.begin(), read.end(), key) != read.end();
}

const NoEffectKey* KeyLevel::find_no_effect(const std::string& key) const {
  for (const auto& k : no_effect)
    if (key == k.name) return &k;
  return nullptr;
}

const RefusedKey* KeyLevel::find_refused(const std::string& key) const {
  for (const auto& k : refused)
    if (key == k.name) return &k;
  return nullptr;
}

bool KeyLevel::knows(const std::string& key) const {
  return reads(key) || find_no_effect(key) || find_refused(key);
}

std::string KeyLevel::nearest(const std::string& key) const {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  auto consider = [&](const std::string& name) {
    std::size_t d = levenshtein(lower(key), lower(name));
    if (d < best_d) best_d = d, best = name;
  };
  for (const auto& n : read) consider(n);
  for (const auto& k : no_effect) consider(k.name);
  for (const auto& k : refused) consider(k.name);
  return best;
}

const KeyLevel& top_level_keys() {
  static const KeyLevel l{
      {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
       "gradient_clipping", "steps_per_print", "fp16", "bf16", "bfloat16", "optimizer", "scheduler",
       "zero_optimization", "aio"},
      {{"wall_clock_breakdown", V::boolean,
        "tierzero always times forward, backward and the optimizer step (the progress lines and --metrics)"},
       {"memory_breakdown", V::boolean,
        "tierzero always reports each tier's memory (the memory plan, the progress lines and --metrics)"},
       {"dump_state", V::boolean,
        "tierzero prints its memory plan at start-up instead of DeepSpeed's state dump"},
       {"tensorboard", V::object, kMetrics},
       {"wandb", V::object, kMetrics},
       {"csv_monitor", V::object, kMetrics},
       {"comet", V::object, kMetrics},
       {"comms_logger", V::object,
        "the --metrics JSONL records each collective kind's calls, bytes and wait time instead"},
       {"flops_profiler", V::object,
        "tierzero has no FLOPs profiler; its progress lines report tokens/s and the time of each phase"},
       {"zero_allow_untested_optimizer", V::boolean, "tierzero's optimizer is always its own AdamW"},
       {"zero_force_ds_cpu_optimizer", V::boolean,
        "tierzero always runs its own CPU Adam on offloaded states"}},
      {{"offload_optimizer", "DeepSpeed reads it inside zero_optimization"},
       {"offload_param", "DeepSpeed reads it inside zero_optimization"},
       {"sub_group_size", "DeepSpeed reads it inside zero_optimization"},
       {"activation_checkpointing", "use the --checkpoint-activations flag"},
       {"prescale_gradients", "tierzero averages gradients after reducing them", "false"},
       {"gradient_predivide_factor", "tierzero averages gradients after reducing them", "1.0"},
       {"communication_data_type", "tierzero reduces gradients in fp32", "null"},
       {"seq_parallel_communication_data_type"},
       {"sparse_gradients", "", "false"},
       {"amp", "use fp16 or bf16"},
       {"checkpoint"},
       {"data_types"},
       {"compression_training"},
       {"elasticity"},
       {"autotuning"},
       {"disable_allgather", "", "false"},
       {"fp32_allreduce"},
       {"sparse_attention"},
       {"pipeline"},
       {"progressive_layer_drop"},
       {"curriculum_learning"},
       {"data_efficiency"},
       {"eigenvalue"},
       {"dataloader_drop_last"},
       {"vocabulary_size"},
       {"hybrid_engine"},
       {"weight_quantization"},
       {"compile"},
       {"nebula"}}};
  return l;
}

const KeyLevel& zero_keys() {
  static const KeyLevel l{
      {"stage", "overlap_comm", "contiguous_gradients", "reduce_bucket_size", "allgather_bucket_size",
       "stage3_prefetch_bucket_size", "prefetch_bucket_size", "stage3_max_live_parameters",
       "max_live_parameters", "stage3_param_persistence_threshold", "param_persistence_threshold",
       "offload_optimizer", "offload_param", "sub_group_size", "cpu_offload", "cpu_offload_param"},
      {{"reduce_scatter", V::boolean,
        "tierzero reduce-scatters gradients at stages 1-3 and all-reduces them at stage 0 whatever this "
        "says; "
        "either way every rank gets the same averaged gradient"},
       {"allgather_partitions", V::boolean,
        "tierzero always all-gathers the updated parameters; DeepSpeed's broadcasts give the same values"},
       {"use_multi_rank_bucket_allreduce", V::boolean,
        "it picks how DeepSpeed groups its all-reduce buckets; the sums are the same"},
       {"round_robin_gradients", V::boolean,
        "it orders DeepSpeed's gradient copies to the CPU; the values are the same"},
       {"grad_hooks", V::boolean, "it picks when DeepSpeed reduces gradients, not what they are"},
       {"stage3_max_reuse_distance", V::count, kReuse},
       {"max_reuse_distance", V::count, kReuse},
       {"stage3_model_persistence_threshold", V::count, kModelPersistence},
       {"model_persistence_threshold", V::count, kModelPersistence},
       {"stage3_module_granularity_threshold", V::count, kGranularity},
       {"module_granularity_threshold", V::count, kGranularity},
       {"stage3_use_all_reduce_for_fetch_params", V::boolean, kFetchAllReduce},
       {"use_all_reduce_for_fetch_params", V::boolean, kFetchAllReduce},
       {"stage3_gather_16bit_weights_on_model_save", V::boolean, kSave},
       {"gather_16bit_weights_on_model_save", V::boolean, kSave},
       {"stage3_gather_fp16_weights_on_model_save", V::boolean, kSave},
       {"elastic_checkpoint", V::boolean,
        "it applies to loading DeepSpeed checkpoints, which tierzero does not read"},
       {"load_from_fp32_weights", V::boolean,
        "it applies to loading DeepSpeed checkpoints, which tierzero does not read"},
       {"pipeline_loading_checkpoint", V::boolean,
        "it applies to loading checkpoints under DeepSpeed's pipeline engine, which tierzero does not have"},
       {"ignore_unused_parameters", V::boolean,
        "every parameter of tierzero's GPT gets a gradient every step"},
       {"memory_efficient_linear", V::boolean,
        "it picks DeepSpeed's memory-saving stage-3 linear layer, which computes the same values"},
       {"override_module_apply", V::boolean,
        "it wraps torch's Module.apply under DeepSpeed's stage 3; tierzero has no torch modules"},
       {"log_trace_cache_warnings", V::boolean,
        "it logs DeepSpeed's stage-3 trace-cache warnings; tierzero plans its fetch order, with no trace "
        "cache"},
       {"cpu_offload_use_pin_memory", V::boolean,
        "DeepSpeed only warns that it is deprecated and reads pin_memory in offload_optimizer and "
        "offload_param"},
       {"zero_hpz_partition_size", V::count,
        "it adds a second, per-node partition of the parameters in DeepSpeed (ZeRO++ hpZ), which trades "
        "memory "
        "for inter-node traffic; the values are the same"}},
      {{"legacy_stage1", "", "false"},
       {"zero_quantized_weights", "ZeRO++ quantization changes the values; tierzero does not quantize",
        "false"},
       {"zero_quantized_nontrainable_weights", "tierzero does not quantize", "false"},
       {"zero_quantized_gradients", "ZeRO++ quantization changes the values; tierzero does not quantize",
        "false"},
       {"zeropp_loco_param", "tierzero does not quantize", "null"},
       {"mics_shard_size", "MiCS is not implemented", "-1"},
       {"mics_hierarchical_params_gather", "MiCS is not implemented", "false"}}};
  return l;
}

const KeyLevel& offload_optimizer_keys() {
  static const KeyLevel l{
      {"device", "nvme_path", "pin_memory", "buffer_count", "ratio"},
      {{"pipeline_read", V::boolean, kPipeline},
       {"pipeline_write", V::boolean, kPipeline},
       {"pipeline", V::boolean, kPipeline},
       {"fast_init", V::boolean,
        "it speeds up DeepSpeed's start-up with NVMe offload; tierzero fills its store once at "
        "start-up either way"}},
      {}};
  return l;
}

const KeyLevel& offload_param_keys() {
  static const KeyLevel l{
      {"device", "nvme_path", "pin_memory", "buffer_count", "buffer_size", "max_in_cpu"}, {}, {}};
  return l;
}

const KeyLevel& aio_keys() {
  static const KeyLevel l{{"block_size", "queue_depth", "intra_op_parallelism", "single_submit",
                           "overlap_events", "thread_count"},
                          {},
                          {{"use_gds", "GPUDirect Storage is not implemented", "false"}}};
  return l;
}

const KeyLevel& fp16_keys() {
  static const KeyLevel l{
      {"enabled", "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale"},
      {},
      {{"auto_cast", "tierzero's inputs are token ids, never cast", "false"},
       {"consecutive_hysteresis",
        "tierzero's hysteresis counts overflows since the last growth, as DeepSpeed's default", "false"},
       {"fp16_master_weights_and_grads", "tierzero keeps fp32 master weights and gradients", "false"}}};
  return l;
}

namespace {

// DeepSpeed reads only `enabled` and `immediate_grad_update` from bf16 and ignores every other key; its
// tutorials (DeepSpeedExamples' cifar ds_config.json) copy fp16's loss-scaling keys into bf16.
const char* const kBf16NoScaling = "bf16 trains without loss scaling; DeepSpeed reads this key only in fp16";

}  // namespace

const KeyLevel& bf16_keys() {
  static const KeyLevel l{
      {"enabled"},
      {{"immediate_grad_update", V::boolean,
        "it picks when DeepSpeed's bf16 optimizer moves each gradient into its fp32 accumulator (at once or "
        "at the end of backward); the accumulated values are the same, and tierzero accumulates in fp32"},
       {"loss_scale", V::number, kBf16NoScaling},
       {"initial_scale_power", V::number, kBf16NoScaling},
       {"loss_scale_window", V::number, kBf16NoScaling},
       {"hysteresis", V::number, kBf16NoScaling},
       {"min_loss_scale", V::number, kBf16NoScaling}},
      {{"check_grad_overflow",
        "tierzero stops on a non-finite bf16 gradient norm instead of skipping the step", "false"},
       {"bf16_master_weights_and_grads", "tierzero keeps fp32 master weights and gradients", "false"}}};
  return l;
}

const KeyLevel& optimizer_keys() {
  static const KeyLevel l{{"type", "params"},
                          {{"legacy_fusion", V::boolean,
                            "it picks a variant of DeepSpeed's fused Adam kernel; the update is the same"}},
                          {}};
  return l;
}

const KeyLevel& adam_params_keys() {
  static const KeyLevel l{
      {"lr", "betas", "eps", "weight_decay"},
      {{"torch_adam", V::boolean,
        "it picks torch's Adam implementation over DeepSpeed's fused one; both compute the same update"}},
      {{"adam_w_mode", "tierzero's Adam always decouples the weight decay, as AdamW does", "true"},
       {"amsgrad", "tierzero's Adam has no AMSGrad variant", "false"},
       {"bias_correction", "tierzero's Adam always corrects the bias", "true"},
       {"max_grad_norm", "DeepSpeed refuses it too; use the top-level gradient_clipping"}}};
  return l;
}

const KeyLevel& scheduler_keys() {
  static const KeyLevel l{{"type", "params"}, {}, {}};
  return l;
}

const KeyLevel& scheduler_params_keys(LrSchedule s) {
  // Resuming a schedule part-way (last_batch_iteration other than -1) is not implemented.
  static const RefusedKey resume{"last_batch_iteration", "a schedule always starts at its beginning", "-1"};
  static const KeyLevel warmup{
      {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type"}, {}, {resume}};
  static const KeyLevel decay{
      {"total_num_steps", "warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type"}, {}, {resume}};
  static const KeyLevel cosine{
      {"total_num_steps", "warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type"},
      {},
      {resume}};
  if (s == LrSchedule::warmup_cosine) return cosine;
  return s == LrSchedule::warmup_decay ? decay : warmup;
}

const std::set<std::string>& deepspeed_optimizer_names() {
  static const std::set<std::string> s{"adagrad", "lamb",   "onebitadam", "onebitlamb", "zerooneadam",
                                       "lion",    "muadam", "muadamw",    "musgd",      "muon"};
  return s;
}

const std::set<std::string>& unimplemented_deepspeed_schedulers() {
  static const std::set<std::string> s{"LRRangeTest", "OneCycle"};
  return s;
}

}  // namespace tz
