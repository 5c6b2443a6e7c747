// DeepSpeed JSON config -> TrainOptions. Each object level lists the keys tierzero reads and the
// DeepSpeed keys it knows but does not implement yet, so every other key is a typo we can correct.
#include "launch/ds_config.h"

#include "model/file_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace tz {
namespace {

using json = nlohmann::json;

// A DeepSpeed key tierzero knows but does not implement in this version. `accepted` (JSON text), when
// set, is the one value whose DeepSpeed meaning is exactly what tierzero always does; it is allowed.
struct Unimplemented {
  const char* name;
  const char* note = "";
  const char* accepted = nullptr;
};

// The keys of one JSON object: those tierzero reads and those it knows but refuses.
struct Level {
  std::vector<std::string> implemented;
  std::vector<Unimplemented> unimplemented;
};

const char* const kDocs = "docs/configuration.md, section \"JSON config (--config)\"";

const Level& top_level() {
  static const Level l{
      {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
       "gradient_clipping", "fp16", "bf16", "bfloat16", "optimizer", "zero_optimization", "aio"},
      {{"offload_optimizer", "DeepSpeed reads it inside zero_optimization"},
       {"offload_param", "DeepSpeed reads it inside zero_optimization"},
       {"sub_group_size", "DeepSpeed reads it inside zero_optimization"},
       {"scheduler", "use the --lr-schedule, --warmup and --min-lr flags"},
       {"activation_checkpointing", "use the --checkpoint-activations flag"},
       {"wall_clock_breakdown", "", "false"},
       {"memory_breakdown", "", "false"},
       {"steps_per_print", "use the --log-every flag"},
       {"prescale_gradients"},
       {"gradient_predivide_factor"},
       {"communication_data_type"},
       {"seq_parallel_communication_data_type"},
       {"sparse_gradients"},
       {"amp", "use fp16 or bf16"},
       {"flops_profiler"},
       {"tensorboard", "use the --metrics flag (JSONL)"},
       {"wandb", "use the --metrics flag (JSONL)"},
       {"csv_monitor", "use the --metrics flag (JSONL)"},
       {"comet", "use the --metrics flag (JSONL)"},
       {"comms_logger"},
       {"checkpoint"},
       {"data_types"},
       {"compression_training"},
       {"zero_allow_untested_optimizer"},
       {"zero_force_ds_cpu_optimizer"},
       {"elasticity"},
       {"autotuning"},
       {"dump_state"},
       {"disable_allgather"},
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

const Level& offload_optimizer_level() {
  static const Level l{{"device", "nvme_path", "pin_memory", "buffer_count", "ratio"},
                       {{"pipeline_read"}, {"pipeline_write"}, {"fast_init"}, {"pipeline"}}};
  return l;
}

const Level& offload_param_level() {
  static const Level l{{"device", "nvme_path", "pin_memory", "buffer_count", "buffer_size", "max_in_cpu"}, {}};
  return l;
}

const Level& aio_level() {
  static const Level l{
      {"block_size", "queue_depth", "intra_op_parallelism", "single_submit", "overlap_events", "thread_count"},
      {{"use_gds", "GPUDirect Storage is not implemented"}}};
  return l;
}

const Level& fp16_level() {
  static const Level l{
      {"enabled", "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale"},
      {{"auto_cast"}, {"consecutive_hysteresis"}, {"fp16_master_weights_and_grads"}}};
  return l;
}

const Level& bf16_level() {
  static const Level l{{"enabled"}, {{"immediate_grad_update"}, {"check_grad_overflow"}}};
  return l;
}

const Level& optimizer_level() {
  static const Level l{{"type", "params"}, {{"legacy_fusion"}}};
  return l;
}

const Level& adam_params_level() {
  static const Level l{
      {"lr", "betas", "eps", "weight_decay"},
      {{"adam_w_mode", "tierzero's Adam always decouples the weight decay, as AdamW does", "true"},
       {"amsgrad", "tierzero's Adam has no AMSGrad variant", "false"},
       {"bias_correction", "tierzero's Adam always corrects the bias", "true"},
       {"torch_adam"},
       {"max_grad_norm", "DeepSpeed refuses it too; use the top-level gradient_clipping"}}};
  return l;
}

const Level& zero_level() {
  static const Level l{
      {"stage", "overlap_comm", "contiguous_gradients", "reduce_bucket_size", "allgather_bucket_size",
       "stage3_prefetch_bucket_size", "prefetch_bucket_size", "stage3_max_live_parameters",
       "max_live_parameters", "stage3_param_persistence_threshold", "param_persistence_threshold",
       "offload_optimizer", "offload_param", "sub_group_size"},
      {
       {"reduce_scatter"},
       {"allgather_partitions"},
       {"round_robin_gradients"},
       {"use_multi_rank_bucket_allreduce"},
       {"stage3_gather_16bit_weights_on_model_save", "use --save-safetensors"},
       {"gather_16bit_weights_on_model_save", "use --save-safetensors"},
       {"stage3_gather_fp16_weights_on_model_save", "use --save-safetensors"},
       {"stage3_max_reuse_distance"},
       {"max_reuse_distance"},
       {"stage3_model_persistence_threshold"},
       {"model_persistence_threshold"},
       {"stage3_module_granularity_threshold"},
       {"stage3_use_all_reduce_for_fetch_params"},
       {"elastic_checkpoint"},
       {"load_from_fp32_weights"},
       {"ignore_unused_parameters"},
       {"legacy_stage1"},
       {"cpu_offload"},
       {"cpu_offload_param"},
       {"cpu_offload_use_pin_memory"},
       {"zero_hpz_partition_size"},
       {"zero_quantized_weights"},
       {"zero_quantized_nontrainable_weights"},
       {"zero_quantized_gradients"},
       {"zeropp_loco_param"},
       {"mics_shard_size"},
       {"mics_hierarchical_params_gather"},
       {"memory_efficient_linear"},
       {"override_module_apply"},
       {"pipeline_loading_checkpoint"}}};
  return l;
}

// DeepSpeed's optimizer names (lower case, as DeepSpeed compares them) that tierzero does not implement.
const std::set<std::string>& deepspeed_optimizers() {
  static const std::set<std::string> s{"adagrad", "lamb",   "onebitadam", "onebitlamb", "zerooneadam",
                                       "lion",    "muadam", "muadamw",    "musgd",      "muon"};
  return s;
}

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

std::string join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// How a value reads in a message: JSON text, cut short for big objects and arrays.
std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

const char* kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported JSON value";
  }
}

class Reader {
 public:
  Reader(const std::string& source, const FlagGiven& flag_given) : src_(source), given_(flag_given) {}

  void apply(const json& doc, TrainOptions& opt) {
    if (!doc.is_object())
      TZ_FAIL(src_, ": the top level is ", kind_of(doc), "; a DeepSpeed config is a JSON object {...}");
    check_keys(doc, "", top_level());

    if (auto* v = find(doc, "train_micro_batch_size_per_gpu")) {
      int n = int(
          integer(*v, "train_micro_batch_size_per_gpu", 1, kIntMax, "an integer >= 1 (sequences per rank)"));
      if (!given("micro-batch")) opt.micro_batch = n;
    }
    if (auto* v = find(doc, "gradient_accumulation_steps")) {
      int n = int(integer(*v, "gradient_accumulation_steps", 1, kIntMax, "an integer >= 1"));
      if (!given("grad-accum")) opt.grad_accum = n;
    }
    if (auto* v = find(doc, "train_batch_size")) {
      // Stored as given: the caller checks it against micro_batch x grad_accum x world, which only it knows.
      opt.train_batch_size = int(integer(*v, "train_batch_size", 1, kIntMax,
                                         "an integer >= 1 (sequences per optimizer step, all ranks)"));
    }
    if (auto* v = find(doc, "gradient_clipping")) {
      float c = real(*v, "gradient_clipping", "a number >= 0 (0 turns clipping off)",
                     [](double x) { return x >= 0; });
      if (!given("grad-clip")) opt.adam.grad_clip = c;
    }
    precision(doc, opt);
    if (auto* v = find(doc, "optimizer")) optimizer(*v, opt);
    if (auto* v = find(doc, "zero_optimization")) zero(*v, opt.zero, opt.offload);
    if (auto* v = find(doc, "aio")) aio(*v, opt.offload);
  }

 private:
  static constexpr long long kIntMax = std::numeric_limits<int>::max();

  bool given(const char* flag) const { return given_ && given_(flag); }

  static const json* find(const json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  // Every key of `obj` must be one tierzero reads, or a known DeepSpeed key with its accepted value.
  void check_keys(const json& obj, const std::string& path, const Level& level) const {
    for (const auto& [key, value] : obj.items()) {
      if (std::find(level.implemented.begin(), level.implemented.end(), key) != level.implemented.end())
        continue;
      auto un = std::find_if(level.unimplemented.begin(), level.unimplemented.end(),
                             [&](const Unimplemented& u) { return key == u.name; });
      std::string full = join(path, key);
      if (un != level.unimplemented.end()) {
        if (un->accepted && value == json::parse(un->accepted)) continue;
        std::ostringstream os;
        os << src_ << ": '" << full
           << "' is a DeepSpeed key that tierzero does not implement in this version";
        if (un->accepted)
          os << "; only " << un->accepted << " is accepted, and the file gives " << show(value);
        if (*un->note) os << " (" << un->note << ")";
        if (un->accepted)
          os << "; set it to " << un->accepted << " or remove it (see " << kDocs << ")";
        else
          os << "; remove it from the config (see " << kDocs << ")";
        TZ_FAIL(os.str());
      }
      TZ_FAIL("unknown key '", full, "' in ", src_, "; did you mean '", suggestion(key, path, level), "'?");
    }
  }

  // A section's key written at the top level (say "stage") is most likely misplaced: point into the
  // section. Otherwise the nearest known key at the same level.
  static std::string suggestion(const std::string& key, const std::string& path, const Level& level) {
    if (path.empty()) {
      const std::pair<const char*, const Level*> sections[] = {{"zero_optimization", &zero_level()},
                                                               {"optimizer.params", &adam_params_level()},
                                                               {"fp16", &fp16_level()}};
      for (const auto& [section, sub] : sections)
        if (std::find(sub->implemented.begin(), sub->implemented.end(), key) != sub->implemented.end())
          return join(section, key);
    }
    return join(path, nearest(key, level));
  }

  // The known key (read or refused) nearest to `key` by edit distance, ignoring case; ties go to the
  // keys tierzero reads, then to the order they are listed in.
  static std::string nearest(const std::string& key, const Level& level) {
    std::string best;
    std::size_t best_d = std::numeric_limits<std::size_t>::max();
    auto consider = [&](const std::string& name) {
      std::size_t d = levenshtein(lower(key), lower(name));
      if (d < best_d) best_d = d, best = name;
    };
    for (const auto& n : level.implemented) consider(n);
    for (const auto& u : level.unimplemented) consider(u.name);
    return best;
  }

  [[noreturn]] void fail_value(const json& v, const std::string& path, const std::string& allowed) const {
    if (v.is_string() && v.get<std::string>() == "auto")
      TZ_FAIL(src_, ": ", path,
              " is \"auto\"; \"auto\" is filled in by the Hugging Face Trainer's DeepSpeed "
              "integration before DeepSpeed sees the config, and tierzero reads the file itself: replace it "
              "with ",
              allowed);
    if (v.is_number()) TZ_FAIL(src_, ": ", path, " is ", show(v), "; allowed: ", allowed);
    TZ_FAIL(src_, ": ", path, " is ", show(v), " (", kind_of(v), "); expected ", allowed);
  }

  bool boolean(const json& v, const std::string& path) const {
    if (!v.is_boolean()) fail_value(v, path, "true or false");
    return v.get<bool>();
  }

  // An integer in [lo, hi]; a JSON float is accepted when it is whole (DeepSpeed configs write 5e8).
  long long integer(const json& v, const std::string& path, long long lo, long long hi,
                    const std::string& allowed) const {
    if (v.is_number_unsigned()) {
      auto u = v.get<std::uint64_t>();
      if ((lo > 0 && u < std::uint64_t(lo)) || u > std::uint64_t(hi)) fail_value(v, path, allowed);
      return (long long)u;  // <= hi, so it fits
    }
    if (v.is_number_integer()) {
      long long i = v.get<long long>();
      if (i < lo || i > hi) fail_value(v, path, allowed);
      return i;
    }
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (!std::isfinite(d) || std::floor(d) != d || d < double(lo) || d > double(hi))
        fail_value(v, path, allowed);
      return (long long)d;
    }
    fail_value(v, path, allowed);
  }

  // An element count: a whole number >= lo (integral floats such as 5e8 included).
  std::size_t count(const json& v, const std::string& path, std::size_t lo) const {
    std::string allowed = "a whole number of elements >= " + std::to_string(lo) + ", e.g. 500000000 or 5e8";
    return std::size_t(integer(v, path, (long long)lo, std::numeric_limits<long long>::max(), allowed));
  }

  // A number satisfying `ok`, stored as float: it must stay finite (and keep `ok`) in single precision.
  template <typename Ok>
  float real(const json& v, const std::string& path, const std::string& allowed, Ok ok) const {
    if (!v.is_number()) fail_value(v, path, allowed);
    double d = v.get<double>();
    float f = float(d);
    if (!std::isfinite(d) || !ok(d) || !std::isfinite(f) || !ok(double(f))) fail_value(v, path, allowed);
    return f;
  }

  const json& object(const json& v, const std::string& path) const {
    if (!v.is_object()) fail_value(v, path, "an object {...}");
    return v;
  }

  void precision(const json& doc, TrainOptions& opt) const {
    const json* fp16 = find(doc, "fp16");
    const json* bf16 = find(doc, "bf16");
    const json* bf16_old = find(doc, "bfloat16");
    if (bf16 && bf16_old)
      TZ_FAIL(
          src_,
          ": both bf16 and bfloat16 are given; bfloat16 is DeepSpeed's old name for bf16: keep only bf16");
    std::string bf16_name = bf16 ? "bf16" : "bfloat16";
    if (!bf16) bf16 = bf16_old;

    bool fp16_on = false, bf16_on = false;
    if (fp16) {
      object(*fp16, "fp16");
      check_keys(*fp16, "fp16", fp16_level());
      // The file's values are checked always, applied only where no flag was given.
      LossScaleOptions file = opt.fp16;
      LossScaleOptions& ls = file;
      if (auto* v = find(*fp16, "enabled")) fp16_on = boolean(*v, "fp16.enabled");
      if (auto* v = find(*fp16, "loss_scale"))
        ls.loss_scale =
            real(*v, "fp16.loss_scale", "a number >= 0 (0: dynamic loss scaling; > 0: this static scale)",
                 [](double x) { return x >= 0; });
      if (auto* v = find(*fp16, "initial_scale_power"))
        ls.initial_scale_power =
            int(integer(*v, "fp16.initial_scale_power", 0, 127,
                        "an integer 0..127 (the dynamic scale starts at 2^this, a finite float)"));
      if (auto* v = find(*fp16, "loss_scale_window"))
        ls.loss_scale_window =
            int(integer(*v, "fp16.loss_scale_window", 1, kIntMax,
                        "an integer >= 1 (steps without overflow before the scale doubles)"));
      if (auto* v = find(*fp16, "hysteresis"))
        ls.hysteresis = int(integer(*v, "fp16.hysteresis", 1, kIntMax,
                                    "an integer >= 1 (overflows tolerated before the scale halves)"));
      if (auto* v = find(*fp16, "min_loss_scale"))
        ls.min_loss_scale = real(*v, "fp16.min_loss_scale", "a number > 0 (the dynamic scale's floor)",
                                 [](double x) { return x > 0; });
      if (!given("loss-scale")) opt.fp16.loss_scale = file.loss_scale;
      if (!given("initial-scale-power")) opt.fp16.initial_scale_power = file.initial_scale_power;
      if (!given("loss-scale-window")) opt.fp16.loss_scale_window = file.loss_scale_window;
      if (!given("hysteresis")) opt.fp16.hysteresis = file.hysteresis;
      if (!given("min-loss-scale")) opt.fp16.min_loss_scale = file.min_loss_scale;
    }
    if (bf16) {
      object(*bf16, bf16_name);
      check_keys(*bf16, bf16_name, bf16_level());
      if (auto* v = find(*bf16, "enabled")) bf16_on = boolean(*v, bf16_name + ".enabled");
    }
    if (fp16_on && bf16_on)
      TZ_FAIL(src_, ": fp16.enabled and ", bf16_name, ".enabled are both true; enable at most one of them");
    // "enabled": false leaves the dtype alone, as DeepSpeed's default (fp32) does not override a flag.
    if (given("dtype")) return;
    if (fp16_on) opt.dtype = DType::f16;
    if (bf16_on) opt.dtype = DType::bf16;
  }

  void optimizer(const json& v, TrainOptions& opt) const {
    object(v, "optimizer");
    check_keys(v, "optimizer", optimizer_level());
    const char* supported =
        "\"AdamW\" or \"Adam\" (either case; both are AdamW, with decoupled weight decay)";
    const json* type = find(v, "type");
    if (!type) TZ_FAIL(src_, ": optimizer.type is missing; set it to ", supported);
    if (!type->is_string() || type->get<std::string>() == "auto")
      fail_value(*type, "optimizer.type", supported);
    std::string name = lower(type->get<std::string>());
    if (name != "adamw" && name != "adam") {
      if (deepspeed_optimizers().count(name))
        TZ_FAIL(src_, ": optimizer.type ", show(*type),
                " is a DeepSpeed optimizer that tierzero does not implement "
                "in this version; tierzero implements ",
                supported);
      TZ_FAIL(src_, ": optimizer.type ", show(*type), " is not an optimizer tierzero knows; it implements ",
              supported);
    }
    const json* params = find(v, "params");
    if (!params) return;
    object(*params, "optimizer.params");
    check_keys(*params, "optimizer.params", adam_params_level());
    if (auto* p = find(*params, "lr")) {
      float lr = real(*p, "optimizer.params.lr", "a number > 0", [](double x) { return x > 0; });
      if (!given("lr")) opt.lr.lr = lr;
    }
    if (auto* p = find(*params, "betas")) {
      const char* allowed = "two numbers [beta1, beta2], each in [0, 1), e.g. [0.9, 0.999]";
      if (!p->is_array() || p->size() != 2) fail_value(*p, "optimizer.params.betas", allowed);
      auto in01 = [](double x) { return x >= 0 && x < 1; };
      float b1 = real((*p)[0], "optimizer.params.betas[0]", allowed, in01);
      float b2 = real((*p)[1], "optimizer.params.betas[1]", allowed, in01);
      if (!given("beta1")) opt.adam.beta1 = b1;
      if (!given("beta2")) opt.adam.beta2 = b2;
    }
    if (auto* p = find(*params, "eps")) {
      float eps = real(*p, "optimizer.params.eps", "a number > 0", [](double x) { return x > 0; });
      if (!given("eps")) opt.adam.eps = eps;
    }
    if (auto* p = find(*params, "weight_decay")) {
      float wd = real(*p, "optimizer.params.weight_decay", "a number >= 0", [](double x) { return x >= 0; });
      if (!given("weight-decay")) opt.adam.weight_decay = wd;
    }
  }

  // The value of a stage-3 key DeepSpeed also accepts under its field name (stage3_x or x), or null.
  const json* aliased(const json& z, const char* name, const char* alias) const {
    const json* a = find(z, name);
    const json* b = find(z, alias);
    if (a && b)
      TZ_FAIL(src_, ": zero_optimization gives both ", name, " and ", alias,
              ", which DeepSpeed reads as one "
              "setting; keep only ",
              name);
    return a ? a : b;
  }

  // offload_optimizer / offload_param: {device: none|cpu|nvme, nvme_path, pin_memory, buffer_count, ...}.
  void offload_section(const json& v, const std::string& path, const Level& level, bool params,
                       OffloadOptions& off) const {
    object(v, path);
    check_keys(v, path, level);
    const std::string p = path + ".";
    if (auto* x = find(v, "device")) {
      if (!x->is_string()) fail_value(*x, p + "device", "\"none\", \"cpu\" or \"nvme\"");
      Tier t = parse_offload_device(x->get<std::string>(), src_ + ": " + p + "device");
      if (!given(params ? "offload-param" : "offload-optimizer")) (params ? off.param : off.optimizer) = t;
    }
    if (auto* x = find(v, "nvme_path")) {
      if (!x->is_string() || x->get<std::string>().empty()) fail_value(*x, p + "nvme_path", "a folder path");
      if (!given("nvme-path") && off.nvme_paths.empty()) off.nvme_paths.push_back(x->get<std::string>());
    }
    if (auto* x = find(v, "pin_memory")) {
      bool b = boolean(*x, p + "pin_memory");
      if (!given("pin-memory")) off.pin_memory = b;
    }
    if (auto* x = find(v, "buffer_count")) {
      // Only the optimizer's swap ring is sized by it; offload_param's is checked (its staging is per slot).
      int n = int(integer(*x, p + "buffer_count", 3, 1024, "an integer 3..1024 (staging buffers)"));
      if (!params) off.buffer_count = n;
    }
    if (auto* x = find(v, "ratio")) {
      float r = real(*x, p + "ratio", "a number in [0, 1] (the share of optimizer states on the host)",
                     [](double d) { return d >= 0 && d <= 1; });
      if (!given("offload-ratio")) off.host_ratio_master = off.host_ratio_m = off.host_ratio_v = r;
    }
    if (params) {
      if (auto* x = find(v, "buffer_size")) count(*x, p + "buffer_size", 1);  // checked; sizes come from the plan
      if (auto* x = find(v, "max_in_cpu")) count(*x, p + "max_in_cpu", 0);
    }
  }

  void aio(const json& v, OffloadOptions& off) const {
    object(v, "aio");
    check_keys(v, "aio", aio_level());
    if (auto* x = find(v, "block_size")) {
      const char* allowed = "a multiple of 4096 bytes (O_DIRECT alignment), e.g. 1048576";
      off.aio_block_size = std::size_t(integer(*x, "aio.block_size", 4096, 1ll << 30, allowed));
      if (off.aio_block_size % 4096 != 0) fail_value(*x, "aio.block_size", allowed);
    }
    if (auto* x = find(v, "queue_depth"))
      off.aio_queue_depth = int(integer(*x, "aio.queue_depth", 1, 4096, "an integer 1..4096"));
    // One submitting thread, io_uring's own asynchrony: these DeepSpeed knobs are checked, not needed.
    if (auto* x = find(v, "intra_op_parallelism")) integer(*x, "aio.intra_op_parallelism", 1, 1024, "an integer >= 1");
    if (auto* x = find(v, "thread_count")) integer(*x, "aio.thread_count", 1, 1024, "an integer >= 1");
    if (auto* x = find(v, "single_submit")) boolean(*x, "aio.single_submit");
    if (auto* x = find(v, "overlap_events")) boolean(*x, "aio.overlap_events");
  }

  void zero(const json& v, ZeroOptions& z, OffloadOptions& off) const {
    if (v.is_boolean())
      TZ_FAIL(src_, ": zero_optimization is ", show(v),
              "; the boolean form is DeepSpeed's deprecated one: write an "
              "object such as {\"stage\": ",
              v.get<bool>() ? 1 : 0, "}");
    object(v, "zero_optimization");
    check_keys(v, "zero_optimization", zero_level());
    const std::string p = "zero_optimization.";
    if (auto* x = find(v, "stage")) {
      int s = int(integer(
          *x, p + "stage", 0, 3,
          "an integer 0..3 (0: data parallel; 1: + optimizer states; 2: + gradients; 3: + parameters)"));
      if (!given("zero-stage")) z.stage = s;
    }
    if (auto* x = find(v, "overlap_comm")) z.overlap_comm = boolean(*x, p + "overlap_comm");
    if (auto* x = find(v, "contiguous_gradients")) {
      if (!boolean(*x, p + "contiguous_gradients"))
        TZ_FAIL(src_, ": ", p,
                "contiguous_gradients false is not implemented in this version: tierzero always "
                "reduces gradients into one contiguous shard buffer; set it to true or remove it");
      z.contiguous_gradients = true;
    }
    auto size_key = [&](const json* x, const char* key, const char* flag, std::size_t lo, std::size_t& out) {
      if (!x) return;
      std::size_t n = count(*x, p + key, lo);
      if (!given(flag)) out = n;
    };
    // A bucket of zero elements could never fill; the stage-3 limits may be 0, as in DeepSpeed.
    size_key(find(v, "reduce_bucket_size"), "reduce_bucket_size", "reduce-bucket-size", 1,
             z.reduce_bucket_size);
    size_key(find(v, "allgather_bucket_size"), "allgather_bucket_size", "allgather-bucket-size", 1,
             z.allgather_bucket_size);
    auto name_of = [&](const char* name, const char* alias) { return find(v, name) ? name : alias; };
    size_key(aliased(v, "stage3_prefetch_bucket_size", "prefetch_bucket_size"),
             name_of("stage3_prefetch_bucket_size", "prefetch_bucket_size"), "prefetch-bucket-size", 0,
             z.prefetch_bucket_size);
    size_key(aliased(v, "stage3_max_live_parameters", "max_live_parameters"),
             name_of("stage3_max_live_parameters", "max_live_parameters"), "max-live-parameters", 0,
             z.max_live_parameters);
    size_key(aliased(v, "stage3_param_persistence_threshold", "param_persistence_threshold"),
             name_of("stage3_param_persistence_threshold", "param_persistence_threshold"),
             "param-persistence-threshold", 0, z.param_persistence_threshold);
    if (auto* x = find(v, "offload_optimizer"))
      offload_section(*x, p + "offload_optimizer", offload_optimizer_level(), false, off);
    if (auto* x = find(v, "offload_param")) offload_section(*x, p + "offload_param", offload_param_level(), true, off);
    if (auto* x = find(v, "sub_group_size")) off.sub_group_size = count(*x, p + "sub_group_size", 1);
  }

  std::string src_;
  FlagGiven given_;
};

// Rejects a key repeated within one object while parsing, as DeepSpeed does (nlohmann would keep the
// last one silently). Tracks the path of the object being read for the message.
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(std::string path) : path_(std::move(path)) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        frames_.push_back({child_path(), {}, false});
        break;
      case json::parse_event_t::array_start:
        frames_.push_back({child_path(), {}, true});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        last_key_.clear();
        break;
      case json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (!frames_.empty() && !frames_.back().keys.insert(key).second)
          TZ_FAIL(path_, ": key '", join(frames_.back().path, key),
                  "' is given twice; DeepSpeed refuses repeated "
                  "keys: keep one");
        last_key_ = key;
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  }

 private:
  struct Frame {
    std::string path;
    std::set<std::string> keys;
    bool array;
  };
  std::string child_path() const {
    if (frames_.empty()) return "";
    if (frames_.back().array) return frames_.back().path + "[]";
    return join(frames_.back().path, last_key_);
  }

  std::string path_;
  std::vector<Frame> frames_;
  std::string last_key_;
};

}  // namespace

void apply_ds_config(const nlohmann::json& doc, const std::string& source, TrainOptions& opt,
                     const FlagGiven& flag_given) {
  Reader(source, flag_given).apply(doc, opt);
}

void load_ds_config(const std::string& path, TrainOptions& opt, const FlagGiven& flag_given) {
  // A regular file of bounded size: /dev/zero, a FIFO or a directory are refused before any read.
  InputFile file(path, "DeepSpeed config (--config)");
  TZ_CHECK(file.size() <= kMaxConfigBytes, "the DeepSpeed config '", path, "' is ", file.size(),
           " bytes, more than the ", kMaxConfigBytes, " a config may have; --config takes a JSON file");
  std::string text(file.size(), '\0');
  file.read_at(text.data(), text.size(), 0);
  json doc;
  try {
    doc = json::parse(text, DuplicateKeyCheck(path));
  } catch (const json::parse_error& e) {
    // e.what() carries "parse error at line L, column C: ..." after an "[json.exception...]" tag.
    std::string what = e.what();
    auto at = what.find("] ");
    TZ_FAIL(path, " is not valid JSON: ", at == std::string::npos ? what : what.substr(at + 2), " (byte ",
            e.byte, "); DeepSpeed configs are plain JSON, without comments or trailing commas");
  } catch (const json::exception& e) {  // e.g. a number beyond a double's range
    std::string what = e.what();
    auto at = what.find("] ");
    TZ_FAIL(path, " is not valid JSON: ", at == std::string::npos ? what : what.substr(at + 2));
  }
  apply_ds_config(doc, path, opt, flag_given);
}

}  // namespace tz
