// DeepSpeed JSON config -> TrainOptions. Each object's keys are checked against its table (ds_keys.h):
// read here, accepted with no effect (a printed line says why), or refused; every other key is a typo we
// can correct. "auto" is resolved where the Hugging Face Trainer fills it in (from the flags, or from the
// model's width) and where DeepSpeed itself reads it as the key's default; each resolution is printed.
#include "launch/ds_config.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/ds_reader.h"
#include "launch/ds_scheduler.h"
#include "model/file_io.h"
#include "model/json_bounded.h"

namespace tz {
namespace {

using json = nlohmann::json;

constexpr long long kIntMax = std::numeric_limits<int>::max();

// DeepSpeed's offload device name for a tier.
std::string offload_name(Tier t) { return tier_traits(t).offload_names.front(); }

class Reader {
 public:
  Reader(const std::string& source, const FlagGiven& flag_given) : r_(source, flag_given) {}

  void apply(const json& doc, TrainOptions& opt) {
    if (!doc.is_object())
      TZ_FAIL(r_.source(), ": the top level is ", json_kind(doc),
              "; a DeepSpeed config is a JSON object {...}");
    r_.check_keys(doc, "", top_level_keys());
    batch(doc, opt);
    if (auto* v = find(doc, "gradient_clipping")) {
      if (DsReader::is_auto(*v)) {
        r_.resolved("gradient_clipping", show_number(opt.adam.grad_clip), "--grad-clip");
      } else {
        float c = r_.real(*v, "gradient_clipping", "a number >= 0 (0 turns clipping off)",
                          [](double x) { return x >= 0; });
        if (!given("grad-clip")) opt.adam.grad_clip = c;
      }
    }
    if (auto* v = find(doc, "steps_per_print")) {
      int n = int(r_.integer(*v, "steps_per_print", 1, kIntMax,
                             "an integer >= 1 (a progress line every this many steps)"));
      if (!given("log-every")) opt.log_every = n;
    }
    precision(doc, opt);
    const json* optimizer_lr = nullptr;
    if (auto* v = find(doc, "optimizer")) optimizer_lr = optimizer(*v, opt);
    if (auto* v = find(doc, "scheduler")) read_scheduler(r_, *v, opt, optimizer_lr);
    if (auto* v = find(doc, "zero_optimization")) zero(*v, opt);
    if (auto* v = find(doc, "aio")) aio(*v, opt.offload);
    opt.config_lines.insert(opt.config_lines.end(), r_.lines().begin(), r_.lines().end());
  }

 private:
  bool given(const char* flag) const { return r_.given(flag); }
  static const json* find(const json& obj, const char* key) { return DsReader::find(obj, key); }

  // The three batch sizes; "auto" takes the flag's value (as Hugging Face takes its own arguments), and
  // train_batch_size "auto" is left unchecked: it is their product, as Hugging Face computes it.
  void batch(const json& doc, TrainOptions& opt) {
    if (auto* v = find(doc, "train_micro_batch_size_per_gpu")) {
      if (DsReader::is_auto(*v)) {
        r_.resolved("train_micro_batch_size_per_gpu", std::to_string(opt.micro_batch), "--micro-batch");
      } else {
        int n = int(r_.integer(*v, "train_micro_batch_size_per_gpu", 1, kIntMax,
                               "an integer >= 1 (sequences per rank)"));
        if (!given("micro-batch")) opt.micro_batch = n;
      }
    }
    if (auto* v = find(doc, "gradient_accumulation_steps")) {
      if (DsReader::is_auto(*v)) {
        r_.resolved("gradient_accumulation_steps", std::to_string(opt.grad_accum), "--grad-accum");
      } else {
        int n = int(r_.integer(*v, "gradient_accumulation_steps", 1, kIntMax, "an integer >= 1"));
        if (!given("grad-accum")) opt.grad_accum = n;
      }
    }
    if (auto* v = find(doc, "train_batch_size")) {
      if (DsReader::is_auto(*v)) {
        opt.train_batch_size = 0;  // nothing to check: it is the product
        r_.resolved("train_batch_size",
                    std::to_string(opt.micro_batch) + " x " + std::to_string(opt.grad_accum) + " x the ranks",
                    "micro batch x gradient accumulation x ranks, as Hugging Face computes it");
      } else {
        // Checked against micro_batch x grad_accum x world once the world is known (derive_batch).
        opt.train_batch_size = int(r_.integer(*v, "train_batch_size", 1, kIntMax,
                                              "an integer >= 1 (sequences per optimizer step, all ranks)"));
        // DeepSpeed derives what neither the file nor a flag gives: 0 marks it for derive_batch.
        const bool micro = given("micro-batch") || find(doc, "train_micro_batch_size_per_gpu");
        const bool accum = given("grad-accum") || find(doc, "gradient_accumulation_steps");
        if (!accum) opt.grad_accum = micro ? 0 : 1;
        if (!micro) opt.micro_batch = 0;
      }
    }
  }

  void precision(const json& doc, TrainOptions& opt) {
    const json* fp16 = find(doc, "fp16");
    const json* bf16 = find(doc, "bf16");
    const json* bf16_old = find(doc, "bfloat16");
    if (bf16 && bf16_old)
      TZ_FAIL(
          r_.source(),
          ": both bf16 and bfloat16 are given; bfloat16 is DeepSpeed's old name for bf16: keep only bf16");
    std::string bf16_name = bf16 ? "bf16" : "bfloat16";
    if (!bf16) bf16 = bf16_old;
    const std::string dtype = std::string(dtype_name(opt.dtype));
    // "enabled": "auto" follows --dtype, as Hugging Face's follows its --fp16 / --bf16.
    auto enabled = [&](const json& v, const std::string& path, DType mine) {
      if (!DsReader::is_auto(v)) return r_.boolean(v, path);
      const bool on = opt.dtype == mine;
      r_.resolved(path, on ? "true" : "false", "--dtype " + dtype);
      return on;
    };

    bool fp16_on = false, bf16_on = false;
    if (fp16) {
      r_.object(*fp16, "fp16");
      r_.check_keys(*fp16, "fp16", fp16_keys());
      // The file's values are checked always, applied only where no flag was given.
      LossScaleOptions ls = opt.fp16;
      if (auto* v = find(*fp16, "enabled")) fp16_on = enabled(*v, "fp16.enabled", DType::f16);
      if (auto* v = find(*fp16, "loss_scale"))
        ls.loss_scale =
            r_.real(*v, "fp16.loss_scale", "a number >= 0 (0: dynamic loss scaling; > 0: this static scale)",
                    [](double x) { return x >= 0; });
      if (auto* v = find(*fp16, "initial_scale_power"))
        ls.initial_scale_power =
            int(r_.integer(*v, "fp16.initial_scale_power", 0, 127,
                           "an integer 0..127 (the dynamic scale starts at 2^this, a finite float)"));
      if (auto* v = find(*fp16, "loss_scale_window"))
        ls.loss_scale_window =
            int(r_.integer(*v, "fp16.loss_scale_window", 1, kIntMax,
                           "an integer >= 1 (steps without overflow before the scale doubles)"));
      if (auto* v = find(*fp16, "hysteresis"))
        ls.hysteresis = int(r_.integer(*v, "fp16.hysteresis", 1, kIntMax,
                                       "an integer >= 1 (overflows tolerated before the scale halves)"));
      if (auto* v = find(*fp16, "min_loss_scale"))
        ls.min_loss_scale = r_.real(*v, "fp16.min_loss_scale", "a number > 0 (the dynamic scale's floor)",
                                    [](double x) { return x > 0; });
      if (!given("loss-scale")) opt.fp16.loss_scale = ls.loss_scale;
      if (!given("initial-scale-power")) opt.fp16.initial_scale_power = ls.initial_scale_power;
      if (!given("loss-scale-window")) opt.fp16.loss_scale_window = ls.loss_scale_window;
      if (!given("hysteresis")) opt.fp16.hysteresis = ls.hysteresis;
      if (!given("min-loss-scale")) opt.fp16.min_loss_scale = ls.min_loss_scale;
    }
    if (bf16) {
      r_.object(*bf16, bf16_name);
      r_.check_keys(*bf16, bf16_name, bf16_keys());
      if (auto* v = find(*bf16, "enabled")) bf16_on = enabled(*v, bf16_name + ".enabled", DType::bf16);
      state_formats(*bf16, bf16_name, opt.offload);
    }
    if (fp16_on && bf16_on)
      TZ_FAIL(r_.source(), ": fp16.enabled and ", bf16_name,
              ".enabled are both true; enable at most one of them");
    // "enabled": false leaves the dtype alone, as DeepSpeed's default (fp32) does not override a flag.
    if (given("dtype")) return;
    if (fp16_on) opt.dtype = DType::f16;
    if (bf16_on) opt.dtype = DType::bf16;
  }

  // DeepSpeed's low-precision states (its PR 7700, in the bf16 section): true asks for bf16 Adam moments,
  // and for a bf16 master, which tierzero keeps with stochastic rounding (its gradients stay fp32); false
  // leaves the flag's format.
  void state_formats(const json& bf16, const std::string& section, OffloadOptions& off) {
    if (auto* v = find(bf16, "bf16_optimizer_states"))
      if (r_.boolean(*v, section + ".bf16_optimizer_states") && !given("optimizer-states"))
        off.optimizer_states = MomentFormat::bf16;
    if (auto* v = find(bf16, "bf16_master_weights_and_grads"))
      if (r_.boolean(*v, section + ".bf16_master_weights_and_grads") && !given("master-weights"))
        off.master_weights = MasterFormat::bf16_sr;
  }

  // Returns optimizer.params.lr when the file gives it as a number (the scheduler may override it).
  const json* optimizer(const json& v, TrainOptions& opt) {
    r_.object(v, "optimizer");
    r_.check_keys(v, "optimizer", optimizer_keys());
    const char* supported =
        "\"AdamW\" or \"Adam\" (either case; both are AdamW, with decoupled weight decay)";
    const json* type = find(v, "type");
    if (!type) TZ_FAIL(r_.source(), ": optimizer.type is missing; set it to ", supported);
    if (!type->is_string() || DsReader::is_auto(*type)) r_.fail_value(*type, "optimizer.type", supported);
    std::string name = type->get<std::string>();
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (name != "adamw" && name != "adam") {
      if (deepspeed_optimizer_names().count(name))
        TZ_FAIL(r_.source(), ": optimizer.type ", show_value(*type),
                " is a DeepSpeed optimizer that tierzero does not implement in this version; tierzero "
                "implements ",
                supported);
      TZ_FAIL(r_.source(), ": optimizer.type ", show_value(*type),
              " is not an optimizer tierzero knows; it implements ", supported);
    }
    const json* params = find(v, "params");
    if (!params) return nullptr;
    r_.object(*params, "optimizer.params");
    r_.check_keys(*params, "optimizer.params", adam_params_keys());
    const std::string p = "optimizer.params.";
    const json* lr_given = nullptr;
    // "auto" takes the flag's value, as Hugging Face takes its own learning_rate, adam_beta1/2, ...
    if (auto* x = find(*params, "lr")) {
      if (DsReader::is_auto(*x)) {
        r_.resolved(p + "lr", show_number(opt.lr.lr), "--lr");
      } else {
        float lr = r_.real(*x, p + "lr", "a number in [0, 10]", [](double d) { return d >= 0 && d <= 10; });
        if (!given("lr")) opt.lr.lr = lr;
        lr_given = x;
      }
    }
    if (auto* x = find(*params, "betas")) {
      if (DsReader::is_auto(*x)) {
        r_.resolved(p + "betas", "[" + show_number(opt.adam.beta1) + ", " + show_number(opt.adam.beta2) + "]",
                    "--beta1, --beta2");
      } else {
        const char* allowed = "two numbers [beta1, beta2], each in [0, 1), e.g. [0.9, 0.999]";
        if (!x->is_array() || x->size() != 2) r_.fail_value(*x, p + "betas", allowed);
        auto in01 = [](double d) { return d >= 0 && d < 1; };
        float b1 = r_.real((*x)[0], p + "betas[0]", allowed, in01);
        float b2 = r_.real((*x)[1], p + "betas[1]", allowed, in01);
        if (!given("beta1")) opt.adam.beta1 = b1;
        if (!given("beta2")) opt.adam.beta2 = b2;
      }
    }
    if (auto* x = find(*params, "eps")) {
      if (DsReader::is_auto(*x)) {
        r_.resolved(p + "eps", show_number(opt.adam.eps), "--eps");
      } else {
        float eps = r_.real(*x, p + "eps", "a number > 0", [](double d) { return d > 0; });
        if (!given("eps")) opt.adam.eps = eps;
      }
    }
    if (auto* x = find(*params, "weight_decay")) {
      if (DsReader::is_auto(*x)) {
        r_.resolved(p + "weight_decay", show_number(opt.adam.weight_decay), "--weight-decay");
      } else {
        float wd = r_.real(*x, p + "weight_decay", "a number >= 0", [](double d) { return d >= 0; });
        if (!given("weight-decay")) opt.adam.weight_decay = wd;
      }
    }
    return lr_given;
  }

  // DeepSpeed's zero_optimization, offload_optimizer and offload_param are pydantic models that drop every
  // "auto" value before reading, so the key takes its default. So here: a known key whose value is "auto"
  // is read as left out, and a line says what that gives (an unknown key is still an error). `keep` names
  // the keys whose "auto" Hugging Face fills in first, which the caller resolves itself.
  json drop_auto(const json& obj, const KeyLevel& level, std::initializer_list<const char*> keep,
                 std::vector<std::string>& dropped) const {
    json out = obj;
    for (const auto& [key, value] : obj.items()) {
      if (!DsReader::is_auto(value) || !level.knows(key)) continue;
      bool kept = false;
      for (const char* k : keep) kept = kept || key == k;
      if (kept) continue;
      out.erase(key);
      dropped.push_back(key);
    }
    return out;
  }

  // The line for a key whose "auto" was dropped: the value it now has and where that comes from.
  void resolved_as_absent(const std::string& section, const std::string& key, const KeyLevel& level,
                          const std::string& value, const char* flag) {
    const std::string why =
        "as if left out: DeepSpeed reads \"auto\" in " + section + " as the key's default";
    const std::string path = section + "." + key;
    if (const RefusedKey* k = level.find_refused(key)) {
      r_.resolved(path, k->accepted ? k->accepted : "DeepSpeed's default",
                  why + ", which is what tierzero does");
    } else if (level.find_no_effect(key)) {
      r_.resolved(path, "DeepSpeed's default", why + "; the key has no effect in tierzero");
    } else {
      r_.resolved(
          path, value,
          why + (flag ? std::string("; tierzero keeps ") + flag + "'s value" : "; tierzero keeps its own"));
    }
  }

  // The value of a stage-3 key DeepSpeed also accepts under its field name (stage3_x or x), or null.
  const json* aliased(const json& z, const char* name, const char* alias) const {
    const json* a = find(z, name);
    const json* b = find(z, alias);
    if (a && b)
      TZ_FAIL(r_.source(), ": zero_optimization gives both ", name, " and ", alias,
              ", which DeepSpeed reads as one setting; keep only ", name);
    return a ? a : b;
  }

  // offload_optimizer / offload_param: {device: none|cpu|nvme, nvme_path, pin_memory, buffer_count, ...}.
  void offload_section(const json& given_v, const std::string& path, bool params, OffloadOptions& off) {
    r_.object(given_v, path);
    const KeyLevel& level = params ? offload_param_keys() : offload_optimizer_keys();
    std::vector<std::string> dropped;
    const json v = drop_auto(given_v, level, {}, dropped);
    r_.check_keys(v, path, level);
    const std::string p = path + ".";
    const char* device_flag = params ? "--offload-param" : "--offload-optimizer";
    const char* device_flag_name = device_flag + 2;  // without the dashes, as FlagGiven takes it
    if (auto* x = find(v, "device")) {
      if (!x->is_string())
        r_.fail_value(*x, p + "device", "\"none\", \"cpu\", \"nvme\" or \"numa:N\" (NUMA node N's memory)");
      Tier t = parse_offload_device(x->get<std::string>(), r_.source() + ": " + p + "device");
      if (!given(device_flag_name)) (params ? off.param : off.optimizer) = t;
    }
    if (auto* x = find(v, "nvme_path")) {
      if (!x->is_string() || x->get<std::string>().empty())
        r_.fail_value(*x, p + "nvme_path", "a folder path");
      if (!given("nvme-path") && off.nvme_paths.empty()) off.nvme_paths.push_back(x->get<std::string>());
    }
    if (auto* x = find(v, "pin_memory")) {
      bool b = r_.boolean(*x, p + "pin_memory");
      if (!given("pin-memory")) off.pin_memory = b;
    }
    if (auto* x = find(v, "buffer_count")) {
      // Only the optimizer's swap ring is sized by it; offload_param's is checked (its staging is per slot).
      int n = int(r_.integer(*x, p + "buffer_count", 3, 1024, "an integer 3..1024 (staging buffers)"));
      if (!params) off.buffer_count = n;
      if (params)
        r_.no_effect(p + "buffer_count",
                     "the parameter staging has one buffer per gather slot and two for the write-back");
    }
    if (auto* x = find(v, "ratio")) {
      float ratio = r_.real(*x, p + "ratio", "a number in [0, 1] (the share of optimizer states on the host)",
                            [](double d) { return d >= 0 && d <= 1; });
      if (!given("offload-ratio")) off.host_ratio_master = off.host_ratio_m = off.host_ratio_v = ratio;
    }
    if (params) {
      if (auto* x = find(v, "buffer_size")) {
        r_.count(*x, p + "buffer_size", 1);
        r_.no_effect(p + "buffer_size", "the staging sizes come from the memory plan (the largest shard)");
      }
      if (auto* x = find(v, "max_in_cpu")) {
        r_.count(*x, p + "max_in_cpu", 0);
        r_.no_effect(p + "max_in_cpu",
                     "with --offload-param nvme every parameter shard lives in the NVMe store");
      }
    }
    for (const std::string& key : dropped) {
      std::string value = "DeepSpeed's default";
      const char* flag = nullptr;
      if (key == "device") value = offload_name(params ? off.param : off.optimizer), flag = device_flag;
      if (key == "nvme_path")
        value = off.nvme_paths.empty() ? "none" : off.nvme_paths[0], flag = "--nvme-path";
      if (key == "pin_memory") value = off.pin_memory ? "true" : "false", flag = "--pin-memory";
      if (key == "buffer_count" && !params) value = std::to_string(off.buffer_count);
      if (key == "ratio") value = show_number(off.host_ratio_master), flag = "--offload-ratio";
      resolved_as_absent(path, key, level, value, flag);
    }
  }

  void aio(const json& v, OffloadOptions& off) {
    r_.object(v, "aio");
    r_.check_keys(v, "aio", aio_keys());
    if (auto* x = find(v, "block_size")) {
      const char* allowed = "a multiple of 4096 bytes (O_DIRECT alignment), e.g. 1048576";
      off.aio_block_size = std::size_t(r_.integer(*x, "aio.block_size", 4096, 1ll << 30, allowed));
      if (off.aio_block_size % 4096 != 0) r_.fail_value(*x, "aio.block_size", allowed);
    }
    if (auto* x = find(v, "queue_depth"))
      off.aio_queue_depth = int(r_.integer(*x, "aio.queue_depth", 1, 4096, "an integer 1..4096"));
    // One submitting thread, io_uring's own asynchrony: these DeepSpeed knobs are checked, not needed.
    const char* one_thread = "one engine thread per store submits every request to io_uring";
    for (const char* key : {"intra_op_parallelism", "thread_count"})
      if (auto* x = find(v, key)) {
        r_.integer(*x, std::string("aio.") + key, 1, 1024, "an integer >= 1");
        r_.no_effect(std::string("aio.") + key, one_thread);
      }
    for (const char* key : {"single_submit", "overlap_events"})
      if (auto* x = find(v, key)) {
        r_.boolean(*x, std::string("aio.") + key);
        r_.no_effect(std::string("aio.") + key,
                     std::string(one_thread) + ", keeping up to queue_depth in flight");
      }
  }

  // DeepSpeed's deprecated cpu_offload / cpu_offload_param: true means offload_optimizer / offload_param
  // {"device": "cpu"}; DeepSpeed refuses either together with its replacement.
  void deprecated_cpu_offload(const json& z, const char* key, const char* replacement, const char* flag,
                              Tier& tier) {
    const json* x = find(z, key);
    if (!x) return;
    const bool on = r_.boolean(*x, std::string("zero_optimization.") + key);
    if (find(z, replacement))
      TZ_FAIL(r_.source(), ": zero_optimization gives both ", key, " and ", replacement,
              ", which DeepSpeed refuses together; ", key, " is the deprecated form: keep only ",
              replacement);
    if (on && !given(flag)) tier = Tier::host;
  }

  void zero(const json& given_v, TrainOptions& opt) {
    if (given_v.is_boolean())
      TZ_FAIL(r_.source(), ": zero_optimization is ", show_value(given_v),
              "; the boolean form is DeepSpeed's deprecated one: write an object such as {\"stage\": ",
              given_v.get<bool>() ? 1 : 0, "}");
    r_.object(given_v, "zero_optimization");
    if (find(given_v, "aio"))
      TZ_FAIL(
          r_.source(),
          ": 'zero_optimization.aio' is misplaced: DeepSpeed reads aio at the top level of the "
          "config (and refuses it inside zero_optimization); move the aio object out of zero_optimization");
    ZeroOptions& z = opt.zero;
    OffloadOptions& off = opt.offload;
    std::vector<std::string> dropped;
    const json v = drop_auto(given_v, zero_keys(),
                             {"reduce_bucket_size", "stage3_prefetch_bucket_size", "prefetch_bucket_size",
                              "stage3_param_persistence_threshold", "param_persistence_threshold"},
                             dropped);
    r_.check_keys(v, "zero_optimization", zero_keys());
    const std::string p = "zero_optimization.";
    if (auto* x = find(v, "stage")) {
      int s = int(r_.integer(
          *x, p + "stage", 0, 3,
          "an integer 0..3 (0: data parallel; 1: + optimizer states; 2: + gradients; 3: + parameters)"));
      if (!given("zero-stage")) z.stage = s;
    }
    if (auto* x = find(v, "overlap_comm")) z.overlap_comm = r_.boolean(*x, p + "overlap_comm");
    if (auto* x = find(v, "contiguous_gradients")) {
      if (!r_.boolean(*x, p + "contiguous_gradients"))
        TZ_FAIL(r_.source(), ": ", p,
                "contiguous_gradients false is not implemented in this version: tierzero always "
                "reduces gradients into one contiguous shard buffer; set it to true or remove it");
      z.contiguous_gradients = true;
    }
    // "auto" in the three sizes Hugging Face derives from the model's width (its hidden_size, here n_embd).
    const std::size_t h = std::size_t(opt.model.n_embd);
    auto size_key = [&](const json* x, const std::string& key, const char* flag, std::size_t lo,
                        std::size_t& out, std::size_t auto_value, const char* rule) {
      if (!x) return;
      if (DsReader::is_auto(*x)) {
        if (!given(flag)) out = auto_value;
        r_.resolved(p + key, std::to_string(out),
                    given(flag) ? std::string("--") + flag
                                : std::string(rule) + " with hidden_size " + std::to_string(h) +
                                      ", as Hugging Face resolves it");
        return;
      }
      std::size_t n = r_.count(*x, p + key, lo);
      if (!given(flag)) out = n;
    };
    auto name_of = [&](const char* name, const char* alias) { return find(v, name) ? name : alias; };
    // Every size may be 0, as in DeepSpeed: a bucket of 0 holds one flat group per collective (DeepSpeed
    // reduces each gradient on its own), a prefetch of 0 prefetches nothing, a persistence threshold of 0
    // keeps nothing whole (docs/configuration.md lists them).
    size_key(find(v, "reduce_bucket_size"), "reduce_bucket_size", "reduce-bucket-size", 0,
             z.reduce_bucket_size, h * h, "hidden_size^2");
    size_key(find(v, "allgather_bucket_size"), "allgather_bucket_size", "allgather-bucket-size", 0,
             z.allgather_bucket_size, 0, "");
    size_key(aliased(v, "stage3_prefetch_bucket_size", "prefetch_bucket_size"),
             name_of("stage3_prefetch_bucket_size", "prefetch_bucket_size"), "prefetch-bucket-size", 0,
             z.prefetch_bucket_size, std::size_t(0.9 * double(h) * double(h)), "int(0.9 x hidden_size^2)");
    size_key(aliased(v, "stage3_max_live_parameters", "max_live_parameters"),
             name_of("stage3_max_live_parameters", "max_live_parameters"), "max-live-parameters", 0,
             z.max_live_parameters, 0, "");
    size_key(aliased(v, "stage3_param_persistence_threshold", "param_persistence_threshold"),
             name_of("stage3_param_persistence_threshold", "param_persistence_threshold"),
             "param-persistence-threshold", 0, z.param_persistence_threshold, 10 * h, "10 x hidden_size");
    deprecated_cpu_offload(v, "cpu_offload", "offload_optimizer", "offload-optimizer", off.optimizer);
    deprecated_cpu_offload(v, "cpu_offload_param", "offload_param", "offload-param", off.param);
    if (auto* x = find(v, "offload_optimizer")) offload_section(*x, p + "offload_optimizer", false, off);
    if (auto* x = find(v, "offload_param")) offload_section(*x, p + "offload_param", true, off);
    if (auto* x = find(v, "sub_group_size")) off.sub_group_size = r_.count(*x, p + "sub_group_size", 0);
    for (const std::string& key : dropped) {
      std::string value = "DeepSpeed's default";
      const char* flag = nullptr;
      if (key == "stage") value = std::to_string(z.stage), flag = "--zero-stage";
      if (key == "overlap_comm") value = z.overlap_comm ? "true" : "false";
      if (key == "contiguous_gradients") value = "true";
      if (key == "allgather_bucket_size")
        value = std::to_string(z.allgather_bucket_size), flag = "--allgather-bucket-size";
      if (key == "stage3_max_live_parameters" || key == "max_live_parameters")
        value = std::to_string(z.max_live_parameters), flag = "--max-live-parameters";
      if (key == "sub_group_size") value = std::to_string(off.sub_group_size);
      if (key == "cpu_offload" || key == "cpu_offload_param") value = "false";
      if (key == "offload_optimizer") value = offload_name(off.optimizer), flag = "--offload-optimizer";
      if (key == "offload_param") value = offload_name(off.param), flag = "--offload-param";
      resolved_as_absent("zero_optimization", key, zero_keys(), value, flag);
    }
  }

  DsReader r_;
};

}  // namespace

void apply_ds_config(const nlohmann::json& doc, const std::string& source, TrainOptions& opt,
                     const FlagGiven& flag_given) {
  Reader(source, flag_given).apply(doc, opt);
}

void derive_batch(TrainOptions& opt, int world, const std::string& source) {
  if (opt.train_batch_size <= 0) return;
  const long long tbs = opt.train_batch_size, w = world;
  auto refuse = [&](const char* what, long long per) {
    TZ_FAIL(source, ": train_batch_size ", tbs, " is not a multiple of ", what, " = ", per, " at ", world,
            " rank(s), so DeepSpeed's rule (train_batch_size = train_micro_batch_size_per_gpu x "
            "gradient_accumulation_steps x ranks) derives no whole ",
            opt.grad_accum == 0 ? "gradient_accumulation_steps" : "train_micro_batch_size_per_gpu",
            "; change train_batch_size, or give both (--micro-batch, --grad-accum)");
  };
  if (opt.grad_accum == 0) {
    const long long per = (long long)opt.micro_batch * w;
    if (tbs % per != 0) refuse("micro batch x ranks", per);
    opt.grad_accum = int(tbs / per);
  } else if (opt.micro_batch == 0) {
    const long long per = (long long)opt.grad_accum * w;
    if (tbs % per != 0) refuse("gradient accumulation x ranks", per);
    opt.micro_batch = int(tbs / per);
  }
  const long long product = (long long)opt.micro_batch * opt.grad_accum * w;
  TZ_CHECK(product == tbs, source, ": train_batch_size ", tbs, " must equal train_micro_batch_size_per_gpu (",
           opt.micro_batch, ") x gradient_accumulation_steps (", opt.grad_accum, ") x ranks (", world, ") = ",
           product);
}

void load_ds_config(const std::string& path, TrainOptions& opt, const FlagGiven& flag_given) {
  // A regular file of bounded size: /dev/zero, a FIFO or a directory are refused before any read.
  const std::string text = read_small_file(path, "DeepSpeed config (--config)", kMaxConfigBytes,
                                           "--config takes a JSON file");
  const json doc = parse_json_bounded(
      text, path, "DeepSpeed configs are plain JSON, without comments, trailing commas or repeated keys");
  apply_ds_config(doc, path, opt, flag_given);
}

}  // namespace tz
