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

// What a read key sets, where the same text serves several keys or objects.
const char* const kPrefetch =
    "stage 3: parameter elements gathered ahead of use, >= 0 (0: no prefetch); \"auto\": int(0.9 n_embd^2), "
    "Hugging Face's value";
const char* const kMaxLive = "stage 3: gathered parameter elements alive at once, >= 0";
const char* const kPersistence =
    "stage 3: a flat group with fewer elements stays whole on every rank, >= 0; DeepSpeed applies it per "
    "tensor, "
    "tierzero per flat group; \"auto\": 10 n_embd, Hugging Face's value";
const char* const kAlias =
    "the key above without its stage3_ prefix, as DeepSpeed allows; giving both is an error";
const char* const kNvmePath =
    "a folder for the NVMe store, a non-empty string. offload_optimizer and offload_param share one list of "
    "paths: "
    "the first given (offload_optimizer's, then offload_param's) is used, the other ignored, and both state "
    "classes go into one store per rank. --nvme-path replaces it (nothing is created under the file's path, "
    "usually DeepSpeed's /local_nvme); repeat the flag to stripe over several drives";
const char* const kPinMemory =
    "true requires the host tier to be locked in RAM (see the flag); one setting for both objects: when both "
    "give "
    "it, offload_param's wins";
const char* const kWarmupMinLr =
    "WarmupLR, WarmupDecayLR: the lr the warm-up starts from (and WarmupDecayLR decays back to), >= 0, at "
    "most "
    "warmup_max_lr; default 0; \"auto\": 0";
const char* const kWarmupMaxLr =
    "WarmupLR, WarmupDecayLR: the peak lr, > 0, replacing optimizer.params.lr (a printed line says so when "
    "both "
    "are given and differ); default 0.001; \"auto\": the optimizer's lr";
const char* const kWarmupSteps =
    "warm-up steps, an integer >= 0, which DeepSpeed raises to at least 2; default 1000; \"auto\": --warmup";
const char* const kWarmupType =
    "\"log\" (DeepSpeed's default) or \"linear\"; DeepSpeed falls back to log for other names, tierzero "
    "refuses "
    "them";
const char* const kTotalSteps =
    "WarmupDecayLR, WarmupCosineLR: the step the decay ends at, an integer >= 1 (required); \"auto\": "
    "--steps";

}  // namespace

bool KeyLevel::reads(const std::string& key) const {
  return std::any_of(read.begin(), read.end(), [&](const ReadKey& k) { return key == k.name; });
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
  for (const auto& k : read) consider(k.name);
  for (const auto& k : no_effect) consider(k.name);
  for (const auto& k : refused) consider(k.name);
  return best;
}

const KeyLevel& top_level_keys() {
  static const KeyLevel l{
      {{"train_batch_size", "",
        "sequences per optimizer step over all ranks, an integer >= 1: micro batch x accumulation steps x "
        "ranks, "
        "checked at start-up, or the one of the two left out is derived from it (docs/deepspeed.md); "
        "\"auto\": "
        "not checked"},
       {"train_micro_batch_size_per_gpu", "--micro-batch",
        "sequences per rank per micro-step, an integer >= 1"},
       {"gradient_accumulation_steps", "--grad-accum", "micro-steps per optimizer step, an integer >= 1"},
       {"gradient_clipping", "--grad-clip",
        "clip the global gradient norm to this, a number >= 0 (0: off); left out, tierzero's 1.0, not "
        "DeepSpeed's 0"},
       {"steps_per_print", "--log-every",
        "print a progress line every this many steps, an integer >= 1 (the first and last are always "
        "printed)"},
       {"fp16", "--dtype", "an object (fp16 below): enabled trains in fp16 with loss scaling"},
       {"bf16", "--dtype", "an object (bf16 below): {\"enabled\": true} trains in bf16"},
       {"bfloat16", "--dtype", "DeepSpeed's old name for bf16; giving both is an error"},
       {"optimizer", "", "an object (optimizer below)"},
       {"scheduler", "--lr-schedule",
        "an object (scheduler below): DeepSpeed's WarmupLR, WarmupDecayLR or WarmupCosineLR; --lr-schedule "
        "replaces the whole object (the file's is then checked, not applied); without one the lr is "
        "constant, "
        "as in DeepSpeed"},
       {"zero_optimization", "",
        "an object (zero_optimization below); DeepSpeed's deprecated boolean form (true) is refused"},
       {"aio", "",
        "an object (aio below): the NVMe store's I/O; refused inside zero_optimization, as in DeepSpeed"}},
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
      {{"stage", "--zero-stage",
        "an integer 0-3: 0 data parallel, 1 partition the optimizer states, 2 also the gradients, 3 also the "
        "parameters"},
       {"overlap_comm", "",
        "true (tierzero's default at every stage; DeepSpeed's only at stage 3): each gradient bucket's "
        "collective "
        "runs while backward goes on and is waited for when its bucket is needed again; false: each is "
        "waited for "
        "as soon as it is launched"},
       {"contiguous_gradients", "",
        "only true: reduced gradients always land in one contiguous shard buffer"},
       {"reduce_bucket_size", "--reduce-bucket-size",
        "gradient elements per collective, >= 0 (0: each flat group on its own); \"auto\": n_embd^2, Hugging "
        "Face's value"},
       {"allgather_bucket_size", "--allgather-bucket-size",
        "parameter elements all-gathered at once after the step, >= 0 (0: each flat group on its own)"},
       {"stage3_prefetch_bucket_size", "--prefetch-bucket-size", kPrefetch},
       {"prefetch_bucket_size", "--prefetch-bucket-size", kAlias},
       {"stage3_max_live_parameters", "--max-live-parameters", kMaxLive},
       {"max_live_parameters", "--max-live-parameters", kAlias},
       {"stage3_param_persistence_threshold", "--param-persistence-threshold", kPersistence},
       {"param_persistence_threshold", "--param-persistence-threshold", kAlias},
       {"offload_optimizer", "--offload-optimizer",
        "an object (below): where the optimizer states live; refused at the top level"},
       {"offload_param", "--offload-param",
        "an object (below): where stage 3's parameter shards live; refused at the top level"},
       {"sub_group_size", "",
        "optimizer elements per piece of the optimizer step, a whole number >= 1 (default 1e9, as "
        "DeepSpeed's), "
        "rounded down to a multiple of aio.block_size / 2 elements with that as the least (524,288 with 1 "
        "MiB "
        "blocks), and capped at the largest group's optimizer range. With the optimizer on NVMe it is the "
        "swap "
        "pipeline's sub-group, and the staging ring holds buffer_count sub-groups of 12 bytes per element; "
        "at any "
        "placement it also sizes the staging of one piece between the tiers and the parameter write-back "
        "ring"},
       {"cpu_offload", "--offload-optimizer",
        "DeepSpeed's deprecated form: true means offload_optimizer {\"device\": \"cpu\"}; refused together "
        "with offload_optimizer, as DeepSpeed refuses it"},
       {"cpu_offload_param", "--offload-param",
        "DeepSpeed's deprecated form: true means offload_param {\"device\": \"cpu\"}; refused together with "
        "offload_param"}},
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
      {{"device", "--offload-optimizer",
        "\"none\", \"cpu\", \"numa:N\" (NUMA node N's memory; tierzero's own value) or \"nvme\" (also "
        "\"device\", \"host\"): where the fp32 master and Adam m and v live, and at stages 2-3 the fp32 "
        "gradient shards; any stage"},
       {"nvme_path", "--nvme-path", kNvmePath},
       {"pin_memory", "--pin-memory", kPinMemory},
       {"buffer_count", "",
        "slots in the optimizer's NVMe staging ring, one sub-group each, an integer 3-1024 (default 4: read "
        "ahead, update, write back)"},
       {"ratio", "--offload-ratio",
        "the share of every optimizer state class on the offload tier (host or numa:N), a number in [0, 1]"}},
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
      {{"device", "--offload-param",
        "the same choice for stage 3's working-parameter shards; anything but \"none\" is refused at stages "
        "0-2"},
       {"nvme_path", "--nvme-path", kNvmePath},
       {"pin_memory", "--pin-memory", kPinMemory},
       {"buffer_count", "",
        "checked as offload_optimizer's, not used: the parameter fetch staging has one buffer per gather "
        "slot "
        "and the write-back ring two"},
       {"buffer_size", "", "checked (a whole number >= 1), not used: the memory plan sizes the staging"},
       {"max_in_cpu", "", "checked (a whole number >= 0), not used"}},
      {},
      {}};
  return l;
}

const KeyLevel& aio_keys() {
  static const KeyLevel l{
      {{"block_size", "",
        "bytes per I/O request and the striping unit across nvme_paths, a multiple of 4096 "
        "from 4096 to 2^30 (default 1048576); every array in the store is rounded up to whole "
        "blocks, the optimizer's sub-groups to multiples of block_size / 2 elements"},
       {"queue_depth", "", "blocks in flight per rank at most, an integer 1-4096 (default 8)"},
       {"intra_op_parallelism", "",
        "checked (an integer 1-1024), no effect: one engine thread per store submits every "
        "request to io_uring"},
       {"single_submit", "", "checked (a boolean), no effect"},
       {"overlap_events", "", "checked (a boolean), no effect"},
       {"thread_count", "", "checked (an integer 1-1024), no effect"}},
      {},
      {{"use_gds", "GPUDirect Storage is not implemented", "false"}}};
  return l;
}

const KeyLevel& fp16_keys() {
  static const KeyLevel l{
      {{"enabled", "--dtype",
        "true trains in fp16 with loss scaling; false leaves the dtype as it is; \"auto\": whether --dtype "
        "is "
        "fp16; enabling both fp16 and bf16 is an error"},
       {"loss_scale", "--loss-scale", "a number >= 0: 0 dynamic loss scaling, > 0 that static scale"},
       {"initial_scale_power", "--initial-scale-power",
        "the dynamic scale starts at 2^this, an integer 0-127"},
       {"loss_scale_window", "--loss-scale-window",
        "steps without overflow before the scale doubles, an integer >= 1"},
       {"hysteresis", "--hysteresis", "overflows before the scale halves, an integer >= 1"},
       {"min_loss_scale", "--min-loss-scale", "the dynamic scale never goes below this, a number > 0"}},
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
      {{"enabled", "--dtype", "true trains in bf16; \"auto\": whether --dtype is bf16"},
       {"bf16_optimizer_states", "--optimizer-states",
        "true keeps Adam m and v in bf16 (--optimizer-states bf16); false "
        "leaves the flag's format"},
       {"bf16_master_weights_and_grads", "--master-weights",
        "true keeps the master weights in bf16 with stochastic rounding (--master-weights bf16-sr); "
        "the gradients stay fp32; false leaves the flag's format"}},
      {{"immediate_grad_update", V::boolean,
        "it picks when DeepSpeed's bf16 optimizer moves each gradient into its fp32 accumulator (at once or "
        "at the end of backward); the accumulated values are the same, and tierzero accumulates in fp32"},
       {"loss_scale", V::number, kBf16NoScaling},
       {"initial_scale_power", V::number, kBf16NoScaling},
       {"loss_scale_window", V::number, kBf16NoScaling},
       {"hysteresis", V::number, kBf16NoScaling},
       {"min_loss_scale", V::number, kBf16NoScaling}},
      {{"check_grad_overflow",
        "tierzero stops on a non-finite bf16 gradient norm instead of skipping the step", "false"}}};
  return l;
}

const KeyLevel& optimizer_keys() {
  static const KeyLevel l{
      {{"type", "",
        "\"AdamW\" or \"Adam\", in any case (required): both mean AdamW with decoupled "
        "weight decay, DeepSpeed's Adam with adam_w_mode true; DeepSpeed's other optimizers "
        "are refused"},
       {"params", "", "an object (optimizer.params below)"}},
      {{"legacy_fusion", V::boolean,
        "it picks a variant of DeepSpeed's fused Adam kernel; the update is the same"}},
      {}};
  return l;
}

const KeyLevel& adam_params_keys() {
  static const KeyLevel l{
      {{"lr", "--lr",
        "peak learning rate, a number in [0, 10] (left out: tierzero's 3e-4, not DeepSpeed's 1e-3); with a "
        "WarmupLR or WarmupDecayLR scheduler its warmup_max_lr; \"auto\": the flag's value, as Hugging Face "
        "fills "
        "it in (likewise the other three)"},
       {"betas", "--beta1, --beta2", "[beta1, beta2], each in [0, 1)"},
       {"eps", "--eps", "a number > 0"},
       {"weight_decay", "--weight-decay",
        "decoupled weight decay, a number >= 0 (left out: tierzero's 0.01, not DeepSpeed's 0)"}},
      {{"torch_adam", V::boolean,
        "it picks torch's Adam implementation over DeepSpeed's fused one; both compute the same update"}},
      {{"adam_w_mode", "tierzero's Adam always decouples the weight decay, as AdamW does", "true"},
       {"amsgrad", "tierzero's Adam has no AMSGrad variant", "false"},
       {"bias_correction", "tierzero's Adam always corrects the bias", "true"},
       {"max_grad_norm", "DeepSpeed refuses it too; use the top-level gradient_clipping"}}};
  return l;
}

const KeyLevel& scheduler_keys() {
  static const KeyLevel l{
      {{"type", "--lr-schedule",
        "\"WarmupLR\", \"WarmupDecayLR\" or \"WarmupCosineLR\" (required, case-sensitive as "
        "in DeepSpeed); LRRangeTest and OneCycle are refused as not implemented, and torch's "
        "schedulers too"},
       {"params", "",
        "an object (scheduler.params below): exactly the type's constructor parameters, as "
        "DeepSpeed passes them; one of another type is refused, naming those the type takes"}},
      {},
      {}};
  return l;
}

const KeyLevel& scheduler_params_keys(LrSchedule s) {
  // Resuming a schedule part-way (last_batch_iteration other than -1) is not implemented.
  static const RefusedKey resume{"last_batch_iteration", "a schedule always starts at its beginning", "-1"};
  static const ReadKey min_lr{"warmup_min_lr", "--min-lr", kWarmupMinLr},
      max_lr{"warmup_max_lr", "--lr", kWarmupMaxLr}, steps{"warmup_num_steps", "--warmup", kWarmupSteps},
      type{"warmup_type", "", kWarmupType}, total{"total_num_steps", "--steps", kTotalSteps};
  static const KeyLevel warmup{{min_lr, max_lr, steps, type}, {}, {resume}};
  static const KeyLevel decay{{total, min_lr, max_lr, steps, type}, {}, {resume}};
  static const KeyLevel cosine{
      {total,
       {"warmup_min_ratio", "",
        "WarmupCosineLR: the warm-up starts at this fraction of the optimizer's lr, in [0, 1] (default 0)"},
       steps,
       {"cos_min_ratio", "",
        "WarmupCosineLR: the cosine ends at this fraction of the optimizer's lr, in [0, 1] (default 0.0001)"},
       type},
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
