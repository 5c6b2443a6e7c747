// The training flags and their resolution (see train_flags.h).
#include "launch/train_flags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/device.h"
#include "core/error.h"
#include "launch/ds_config.h"
#include "launch/ds_reader.h"
#include "launch/hardware_file.h"
#include "launch/parse_args.h"
#include "perf/calibrate.h"
#include "zero/numa_tier.h"

namespace po = boost::program_options;

namespace tz {

void add_train_flags(po::options_description& desc, TrainFlags& f) {
  add_model_flags(desc, f.mf);
  desc.add_options()("help,h", "print this help")(
      "data", po::value(&f.o.data)->default_value(f.o.data),
      "training tokens: an llm.c token file (uint16, magic 20240520; or uint32, magic 20240801 version "
      "7) or a raw uint16 file (read as raw only when its first bytes match no known format: "
      "docs/data.md#the-header-rule); 'default' is the built-in byte-level corpus (the license texts in "
      "/usr/share/common-licenses, first 90%; docs/data.md)")(
      "val-data", po::value(&f.o.val_data)->default_value(""),
      "validation tokens; left out, the corpus' last 10% with --data default, else no validation. A "
      "validation runs forward only from the first batch with --micro-batch and --seq-len, each rank "
      "over its own windows; val_loss is the mean over ranks, and the data must hold ranks x B x T + 1 "
      "tokens")(
      "init-from", po::value(&f.o.init_from)->default_value(""),
      "start from a Hugging Face model folder (config.json and model.safetensors or its shards: Llama, "
      "Mistral, Qwen2, GPT-2; F32, F16 or BF16), whose config sets the model, or a GPT-2 safetensors "
      "file, which sets the sizes except the head count: --n-head, or the GPT-2 preset of the same "
      "depth and width (docs/data.md#safetensors)")(
      "save-safetensors", po::value(&f.o.save_safetensors)->default_value(""),
      "after training, write the fp32 master weights as one safetensors file with Hugging Face's names "
      "(F32), gathered from every rank and written by rank 0")(
      "save-hf", po::value(&f.o.save_hf)->default_value(""),
      "after training, write a Hugging Face model folder into this new or empty folder: config.json "
      "(--init-from's own when it was a folder, else the model's shape as transformers writes it), "
      "model.safetensors or shards with their index, and --init-from's tokenizer and generation files; "
      "written a group at a time, atomically (docs/data.md)")(
      "save-hf-dtype", po::value(&f.save_hf_dtype)->default_value(f.save_hf_dtype),
      "the dtype --save-hf writes the weights in: fp32, bf16 or fp16, rounded to nearest even from the "
      "fp32 master (config.json's torch_dtype)")(
      "save-hf-shard-size", po::value(&f.save_hf_shard)->default_value(f.save_hf_shard),
      "--save-hf: the most bytes of weights per safetensors file (5e9, as Hugging Face's max_shard_size); a "
      "larger tensor gets a file of its own")(
      "metrics", po::value(&f.o.metrics)->default_value(""),
      "rank 0 appends one JSON object per line to this file as each is made: the run's start (or resume), "
      "every step (with every rank's phase times and bytes), every validation and the end; a new run "
      "refuses a file holding another run's records, a resumed run appends to its own (docs/metrics.md)")(
      "prometheus-textfile", po::value(&f.o.prometheus_textfile)->default_value(""),
      "rank 0 rewrites this file atomically with the latest step's figures in Prometheus' text format "
      "every --prometheus-every steps and after the last, for node_exporter's textfile collector (name it "
      "*.prom; docs/metrics.md#prometheus)")(
      "prometheus-every", po::value(&f.o.prometheus_every)->default_value(f.o.prometheus_every),
      "steps between --prometheus-textfile writes (the last step is always written)")(
      "straggler-threshold",
      po::value(&f.o.straggler_threshold)
          ->default_value(f.o.straggler_threshold, show_number(f.o.straggler_threshold)),
      "a rank whose own work (step time less comm wait) over the last 10 steps exceeds this x the median "
      "rank's is named, with its host, on the progress line and in --metrics (docs/metrics.md#every-rank)")(
      "straggler-test-delay-ms", po::value(&f.straggler_delay)->default_value(""),
      "a test hook: R:MS makes rank R sleep MS ms in the data phase of every step, a planted straggler "
      "(empty: off)")(
      "steps", po::value(&f.o.steps)->default_value(f.o.steps),
      "optimizer steps, at least 1, each of --grad-accum micro-steps; the run's total, also when "
      "resuming")(
      "micro-batch", po::value(&f.o.micro_batch)->default_value(f.o.micro_batch),
      "sequences per micro-step on each rank (B); a step trains on B x T x grad-accum x ranks tokens")(
      "lr", po::value(&f.o.lr.lr)->default_value(f.o.lr.lr, show_number(f.o.lr.lr)),
      "peak learning rate, in [0, 10]")(
      "min-lr", po::value(&f.o.lr.min_lr)->default_value(f.o.lr.min_lr, show_number(f.o.lr.min_lr)),
      "the learning rate the cosine schedule ends at (constant ignores it); warmup_min_lr of "
      "DeepSpeed's schedules")("warmup", po::value(&f.o.lr.warmup)->default_value(f.o.lr.warmup),
                               "linear warm-up steps (scheduler.params.warmup_num_steps)")(
      "lr-schedule", po::value(&f.schedule)->default_value(f.schedule),
      "after warm-up: constant or cosine; or DeepSpeed's warmup (WarmupLR), warmup-decay "
      "(WarmupDecayLR), warmup-cosine (WarmupCosineLR), for which --warmup is warmup_num_steps, "
      "--min-lr warmup_min_lr and --steps total_num_steps (docs/optimizer.md). Given, it replaces "
      "--config's whole scheduler object")(
      "weight-decay",
      po::value(&f.o.adam.weight_decay)
          ->default_value(f.o.adam.weight_decay, show_number(f.o.adam.weight_decay)),
      "AdamW decoupled weight decay (matrices and embeddings; not biases or LayerNorm)")(
      "beta1", po::value(&f.o.adam.beta1)->default_value(f.o.adam.beta1, show_number(f.o.adam.beta1)),
      "AdamW beta1")(
      "beta2", po::value(&f.o.adam.beta2)->default_value(f.o.adam.beta2, show_number(f.o.adam.beta2)),
      "AdamW beta2")("eps", po::value(&f.o.adam.eps)->default_value(f.o.adam.eps, show_number(f.o.adam.eps)),
                     "AdamW epsilon")(
      "grad-clip",
      po::value(&f.o.adam.grad_clip)->default_value(f.o.adam.grad_clip, show_number(f.o.adam.grad_clip)),
      "clip the global norm of the gradient (averaged over ranks and micro-steps) to this (0: off)")(
      "seed", po::value(&f.seed)->default_value(f.seed),
      "seed for the initialisation and the shuffle; every rank computes the same initial parameters "
      "from it")("shuffle", po::bool_switch(&f.o.shuffle),
                 "visit the batches of each epoch in a seeded random order (docs/data.md)")(
      "dtype", po::value(&f.dtype)->default_value(f.dtype),
      "compute dtype: fp32; bf16 (bf16 working parameters and matmul inputs, fp32 accumulation, fp32 "
      "master weights, gradients and Adam states); fp16 (the same in fp16, with loss scaling: "
      "docs/optimizer.md). On cpu, fp16 matmuls and the bf16 ones the CPU has no instructions for "
      "(transposed ones without AMX-BF16, all without AVX-512) are computed in fp32 in a planned "
      "workspace")(
      "activation-dtype", po::value(&f.activation_dtype)->default_value(f.activation_dtype),
      "the dtype activations and their gradients are stored in: auto (the compute dtype: bf16 activations "
      "in a bf16 run, as DeepSpeed's and Hugging Face's bf16 training keep them; normalisation "
      "statistics, the softmax, the loss and every parameter gradient stay fp32) or fp32 (fp32 "
      "activations with 16-bit parameters: each product's inputs are cast first; twice the activation "
      "memory)")("checkpoint-activations", po::bool_switch(&f.ckpt),
                   "keep only each block's input; recompute in backward")(
      "device", po::value(&f.device)->default_value(f.device),
      "cpu, or cuda (also gpu): each rank on the GPU of its local rank (docs/launching.md#gpu-jobs); "
      "needs a build with the CUDA backend (tierzero doctor says whether this one has it), refused "
      "before anything loads otherwise")(
      "attention-math", po::value(&f.o.attention_math)->default_value(f.o.attention_math),
      "cuda: the fused attention: fp32 (SIMT cores, within ~1e-6 of the cpu backend), bf16 (the "
      "project's tensor-core kernels; q, k, v, P and dS rounded to bf16; head sizes up to 128, larger "
      "ones keep fp32), cudnn (cuDNN's fused flash attention for bf16 and fp16 activations, head sizes "
      "multiples of 8 up to 128; anything it cannot run, or a machine without cuDNN, runs bf16's kernels "
      "with one line saying why), or auto (cudnn with --dtype bf16 or fp16, else fp32)")(
      "tf32", po::bool_switch(&f.o.tf32),
      "cuda: let fp32 matrix products round their inputs to TF32 (faster on tensor cores; results then "
      "differ from the cpu backend's by ~1e-3 relative). Off by default")(
      "device-mem", po::value(&f.device_mem)->default_value(f.device_mem),
      "each rank's device memory budget, e.g. 512M, 8G, 1.5G (B, K, M, G, T: powers of 1024; unlimited "
      "or none: no limit). On cpu it is the host memory the rank's buffers may use; on a GPU, "
      "unlimited is its free memory less 1 GiB + 2% of its total "
      "(docs/planning.md#what-the-budgets-count)")(
      "bind-cores", po::value(&f.bind_cores)->default_value(f.bind_cores),
      "none, or auto: bind each rank's compute threads (and with 3+ cores its I/O threads, on a core "
      "of their own) to its share of the node's cores, from the launcher's binding or the local rank "
      "(docs/launching.md#--bind-cores-auto)")(
      "save-dir", po::value(&f.o.save_dir)->default_value(""),
      "folder for training checkpoints (fp32 master, Adam states, step, loss scaler, data position: "
      "step-NNNNNNNN folders and a `latest` pointer); the last step is always saved "
      "(docs/checkpoints.md)")(
      "save-every", po::value(&f.o.save_every)->default_value(f.o.save_every),
      "also save a checkpoint every N steps (0: only at the end and on SIGTERM/SIGINT)")(
      "keep-last", po::value(&f.o.keep_last)->default_value(f.o.keep_last),
      "keep the N newest checkpoints in --save-dir, pruning older ones after each save (0: keep all)")(
      "resume", po::value(&f.o.resume)->default_value(""),
      "continue from a checkpoint: latest (the newest in --save-dir; none yet: start at step 1; a "
      "damaged one is refused, naming the newest intact one) or a checkpoint folder; at any world "
      "size, stage and offload setting")("val-every", po::value(&f.o.val_every)->default_value(f.o.val_every),
                                         "validate every N steps (0: only after the last step)")(
      "val-batches", po::value(&f.o.val_batches)->default_value(f.o.val_batches),
      "micro-batches per validation (at most what the validation data holds)")(
      "log-every", po::value(&f.o.log_every)->default_value(f.o.log_every),
      "print a progress line every N steps on rank 0, the first and last always (0: none; "
      "steps_per_print)")(
      "profile-ops", po::value(&f.o.profile_ops)->default_value(f.o.profile_ops),
      "time every kernel, product, copy and collective of N steps after the first (which warms up) and "
      "print, on rank 0 after them, a table per op: calls and ms per step, share of the step, and "
      "TFLOP/s or GB/s against --profile-hardware's peaks; timed by CUDA events on a GPU, by the wall "
      "clock on the cpu; written to --metrics as a \"profile\" record (0: off; docs/metrics.md)")(
      "profile-hardware", po::value(&f.profile_hardware)->default_value(""),
      "the peaks --profile-ops sets achieved rates against: a preset (h200-141g, h100-80g, ...), local "
      "(this machine's tierzero bench calibrate) or a hardware JSON file (as plan --hardware)")(
      "config", po::value(&f.config)->default_value(""),
      "a DeepSpeed JSON config (docs/deepspeed.md; its keys: docs/configuration.md); flags typed on "
      "the command line override it")(
      "zero-stage", po::value(&f.o.zero.stage)->default_value(f.o.zero.stage),
      "ZeRO stage: 0 data parallel (gradients all-reduced), 1 shard the fp32 master and Adam states, 2 "
      "also the gradients, 3 also the working parameters; any stage at any world size "
      "(zero_optimization.stage)")(
      "grad-accum", po::value(&f.o.grad_accum)->default_value(f.o.grad_accum),
      "micro-steps per optimizer step; stages 0-1 reduce the gradients once per step, stages 2-3 after "
      "every micro-step (gradient_accumulation_steps)")(
      "reduce-bucket-size", po::value(&f.reduce_bucket)->default_value("5e8"),
      "gradient elements reduced per collective (zero_optimization.reduce_bucket_size): whole "
      "consecutive groups in the order backward finishes them, up to this many, raised to the largest "
      "flat group (0: each group on its own). Two fp32 bucket buffers (one when the whole model fits "
      "one collective) each hold the largest collective (docs/tuning.md#gradient-buckets)")(
      "comm-piece-bytes", po::value(&f.comm_piece)->default_value(f.comm_piece),
      "the largest message the MPI communicator (the cpu device's) reduces in one call: a larger "
      "reduce-scatter or all-reduce runs as pieces of this size, one after another, so that what Open MPI "
      "allocates for it stays within the plan's communication lines (0: whole messages, unplanned; at most "
      "1T; docs/planning.md#communication)")(
      "allgather-bucket-size", po::value(&f.allgather_bucket)->default_value("5e8"),
      "parameter elements all-gathered at once after the step, stages 1-2 and stage 3's persistent "
      "groups (allgather_bucket_size; 0: each group on its own)")(
      "prefetch-bucket-size", po::value(&f.prefetch_bucket)->default_value("5e7"),
      "stage 3: parameter elements of upcoming groups gathered ahead of use, which sets the gather "
      "slots: 1 + this / the largest group but the embedding (stage3_prefetch_bucket_size; 0: no "
      "prefetch)")(
      "max-live-parameters", po::value(&f.max_live)->default_value("1e9"),
      "stage 3: gathered parameter elements alive at once, which limits the gather slots; below the "
      "embedding plus the largest other group, one slot beside the embedding's "
      "(stage3_max_live_parameters)")(
      "param-persistence-threshold", po::value(&f.persistence)->default_value("1e5"),
      "stage 3: a flat group (one block, the embeddings, the final norm) smaller than this stays whole "
      "on every rank and is never gathered (stage3_param_persistence_threshold, applied per group, not "
      "per tensor; 0: shard every group)")(
      "loss-scale", po::value(&f.o.fp16.loss_scale)->default_value(f.o.fp16.loss_scale),
      "fp16: static loss scale (0: dynamic)")(
      "initial-scale-power",
      po::value(&f.o.fp16.initial_scale_power)->default_value(f.o.fp16.initial_scale_power),
      "fp16: the dynamic scale starts at 2^this")(
      "loss-scale-window", po::value(&f.o.fp16.loss_scale_window)->default_value(f.o.fp16.loss_scale_window),
      "fp16: steps without overflow before the scale doubles")(
      "hysteresis", po::value(&f.o.fp16.hysteresis)->default_value(f.o.fp16.hysteresis),
      "fp16: with h, the first h - 1 overflows after the start or a growth only skip the step; from "
      "the h-th on, each also halves the scale")(
      "min-loss-scale", po::value(&f.o.fp16.min_loss_scale)->default_value(f.o.fp16.min_loss_scale),
      "fp16: the scale never drops below this")(
      "offload-optimizer", po::value(&f.offload_opt)->default_value("none"),
      "where the fp32 master weights and Adam states (and at stages 2-3 the fp32 gradient shards) "
      "live: none (the device), cpu (the host tier; the vectorised CPU Adam updates them), numa:N (NUMA "
      "node N's memory, as a CXL memory expander or a CPU-less node appears: a host tier of its own, "
      "budgeted by --numa-mem, updated in place by the CPU Adam on the node's nearest CPUs) or nvme (the "
      "NVMe store, streamed through host staging in sub-groups); any stage; device and host mean none "
      "and cpu (zero_optimization.offload_optimizer.device)")(
      "offload-param", po::value(&f.offload_param)->default_value("none"),
      "stage 3 only: where the working-parameter shards of the sharded groups live between uses: none, "
      "cpu, numa:N or nvme; persistent groups stay on the device (zero_optimization.offload_param.device)")(
      "offload-ratio", po::value(&f.ratio)->default_value(1.0),
      "with --offload-optimizer cpu or numa:N: the share of each optimizer state class (master, m, v) on that "
      "tier; the rest stays on the device, in whole flat groups in group order. A group with any "
      "of them on the host is updated there by the CPU Adam (offload_optimizer.ratio)")(
      "offload-ratio-master", po::value(&f.ratio_master)->default_value(-1.0),
      "the same for the fp32 master weights only (-1: --offload-ratio)")(
      "offload-ratio-m", po::value(&f.ratio_m)->default_value(-1.0),
      "the same for Adam m only (-1: --offload-ratio)")("offload-ratio-v",
                                                        po::value(&f.ratio_v)->default_value(-1.0),
                                                        "the same for Adam v only (-1: --offload-ratio)")(
      "overlap-optimizer", po::value(&f.overlap_opt)->default_value("auto"),
      "with --offload-optimizer cpu at stages 2-3: start each group's CPU Adam during backward, as "
      "soon as its reduced gradient is on the host, and roll it back exactly when clipping or an fp16 "
      "overflow then calls for it (the result is bitwise the step without it): auto (on with --device "
      "cuda), on or off. Costs 12 + 2 bytes of pinned host memory per offloaded optimizer element; "
      "groups kept on the device by --offload-ratio, or on NVMe, are not covered "
      "(docs/tuning.md#--overlap-optimizer)")(
      "overlap-optimizer-share", po::value(&f.o.offload.overlap_optimizer_share)->default_value(0.5),
      "the share of the offloaded optimizer elements --overlap-optimizer covers, from the groups backward "
      "finishes first (0 to 1; each covered element costs 12 + 2 bytes of pinned host memory)")(
      "optimizer-states", po::value(&f.optimizer_states)->default_value(f.optimizer_states),
      "the format of Adam m and v: fp32, bf16 (rounded to nearest) or int8 (blockwise, an absmax per 256 "
      "elements); tensors under 4096 elements keep fp32. Other than fp32: not with --offload-ratio below 1 "
      "(bf16.bf16_optimizer_states true: bf16; docs/optimizer.md#compressed-optimizer-states)")(
      "master-weights", po::value(&f.master_weights)->default_value(f.master_weights),
      "the format of the master weights: fp32 or bf16-sr (bf16 with stochastic rounding); bf16-sr on every "
      "tier (bf16.bf16_master_weights_and_grads true: bf16-sr)")(
      "offload-activations", po::value(&f.offload_act)->default_value("none"),
      "where the activation checkpoints (each block's input) live: none (the device) or cpu (the host "
      "tier, crossing on copy streams of their own while the blocks compute; the device then holds 3 "
      "staging buffers, 2 without --checkpoint-activations, instead of L + 1)")(
      "host-mem", po::value(&f.host_mem)->default_value("unlimited"),
      "each rank's budget of the host tier (pinned host memory: offloaded states and activations, "
      "staging between the tiers, a few scalars), e.g. 16G; the syntax of --device-mem")(
      "nvme-mem", po::value(&f.nvme_mem)->default_value("unlimited"),
      "each rank's budget of bytes in the NVMe store, e.g. 500G; checked before any file is created "
      "(the disk's free space is checked as well)")(
      "numa-mem", po::value(&f.numa_mem)->default_value(""),
      "each rank's budgets of the numa:N tiers, NODE=SIZE separated by commas, e.g. 1=64G,2=64G (the "
      "syntax of --device-mem for each size; nodes not listed: unlimited); checked before anything is "
      "allocated, and against the node's free memory")(
      "nvme-path", po::value(&f.o.offload.nvme_paths)->composing(),
      "a folder for the NVMe store, one file per rank in it; repeat to stripe over several drives "
      "(blocks round-robin). Needed by nvme offload; given, it replaces --config's nvme_path")(
      "pin-memory", po::bool_switch(&f.o.offload.pin_memory),
      "require the host tier to be locked in RAM (it is locked where the memlock limit allows anyway; "
      "with this flag a refused lock is an error naming the limit, unless --allow-unpinned; root is "
      "not limited) (pin_memory)")(
      "allow-unpinned", po::bool_switch(&f.o.offload.allow_unpinned),
      "with --pin-memory: keep going with unlocked memory when the memlock limit refuses")(
      "comm-timeout", po::value(&f.comm_timeout)->default_value(f.comm_timeout),
      "seconds a collective may wait for the other ranks (0.001 to 604800) before the communicator "
      "fails with one message naming it and the job is aborted (docs/launching.md#when-a-rank-fails)");
}

namespace {

// Values that would train on garbage (NaN, Inf, out of range) or that no run can honour are refused before
// anything starts, each in its own unit and before any conversion, whether it came from a flag or from
// --config (every comparison below is false for NaN, so NaN fails each range).
// Whole numbers in full (2147483647, not 2.14748e+09), others with 6 significant digits.
std::string num(double x) {
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string((long long)x);
  return show_number(x);
}

void check_range(double x, double lo, double hi, const char* flag, const char* unit) {
  TZ_CHECK(x >= lo && x <= hi, "--", flag, " must be in [", num(lo), ", ", num(hi), "]", unit, ", got ", num(x),
           "; give a value in that range (the flag or its --config key)");
}

void check_numbers(const TrainFlags& f) {
  const TrainOptions& o = f.o;
  constexpr double kIntMax = std::numeric_limits<int>::max();
  // A collective's deadline, in seconds; converted to milliseconds only after this check.
  check_range(f.comm_timeout, 0.001, kMaxCommTimeoutSeconds, "comm-timeout", " seconds (1 ms to 7 days)");
  check_range(o.lr.lr, 0, 10, "lr", "");
  check_range(o.lr.min_lr, 0, o.lr.lr, "min-lr", " (0 to --lr)");
  check_range(o.lr.warmup, 0, kIntMax, "warmup", " steps");
  check_lr_config(o.lr, o.steps, f.config.empty() ? "--lr-schedule" : f.config);
  TZ_CHECK(o.adam.beta1 >= 0 && o.adam.beta1 < 1, "--beta1 must be in [0, 1), got ", show_number(o.adam.beta1));
  TZ_CHECK(o.adam.beta2 >= 0 && o.adam.beta2 < 1, "--beta2 must be in [0, 1), got ", show_number(o.adam.beta2));
  TZ_CHECK(o.adam.eps > 0 && o.adam.eps <= 1, "--eps must be in (0, 1], got ", show_number(o.adam.eps));
  check_range(o.adam.weight_decay, 0, 100, "weight-decay", "");
  check_range(o.adam.grad_clip, 0, std::numeric_limits<float>::max(), "grad-clip", " (0: off)");
  check_range(o.steps, 1, kIntMax, "steps", "");
  // 0 only where --config gives train_batch_size without them: derived once the world size is known.
  if (o.micro_batch != 0 || o.train_batch_size == 0)
    check_range(o.micro_batch, 1, kMaxMicroBatch, "micro-batch", " sequences");
  if (o.grad_accum != 0 || o.train_batch_size == 0) check_range(o.grad_accum, 1, kMaxGradAccum, "grad-accum", "");
  TZ_CHECK(o.save_every >= 0, "--save-every must be a number of steps >= 0 (0: only at the end), got ", o.save_every);
  TZ_CHECK(o.keep_last >= 0, "--keep-last must be a number of checkpoints >= 0 (0: keep all), got ", o.keep_last);
  check_range(o.val_every, 0, kIntMax, "val-every", " steps (0: only after the last step)");
  check_range(o.val_batches, 1, kIntMax, "val-batches", " micro-batches");
  check_range(o.log_every, 0, kIntMax, "log-every", " steps (0: none)");
  check_range(o.profile_ops, 0, kIntMax, "profile-ops", " steps (0: off)");
  check_range(o.prometheus_every, 1, kIntMax, "prometheus-every", " steps");
  check_range(o.straggler_threshold, 1, 1e6, "straggler-threshold", " (x the median rank's work)");
  TZ_CHECK(o.resume != "latest" || !o.save_dir.empty(),
           "--resume latest needs --save-dir: the folder to look for checkpoints in");
  TZ_CHECK(!o.save_dir.empty() || (o.save_every == 0 && o.keep_last == 0),
           "--save-every and --keep-last need --save-dir: the folder the checkpoints go to");
  // fp16: the scales must stay finite floats.
  check_range(o.fp16.loss_scale, 0, std::ldexp(1.0, 127), "loss-scale", " (0: dynamic)");
  check_range(o.fp16.min_loss_scale, std::numeric_limits<float>::min(), std::ldexp(1.0, 127), "min-loss-scale", "");
  check_range(o.fp16.initial_scale_power, 0, 127, "initial-scale-power", " (the scale must be a finite float)");
  check_range(o.fp16.loss_scale_window, 1, kIntMax, "loss-scale-window", " steps");
  check_range(o.fp16.hysteresis, 1, kIntMax, "hysteresis", " overflows");
}

// --device-mem, --host-mem, --nvme-mem: parse_bytes, with the flag named in the message.
std::size_t bytes_flag(const char* flag, const std::string& text) {
  try {
    return parse_bytes(text);
  } catch (const Error&) {
    TZ_FAIL("--", flag, " '", text, "' is not a byte size: a number below 16 EiB with an optional unit K, M, G ",
            "or T (powers of 1024, e.g. 512M or 8G), or unlimited");
  }
}

// --seed: a whole number in [0, 2^64); Boost would read "-1" into an unsigned as 2^64 - 1.
std::uint64_t parse_seed(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  errno = 0;
  const unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  TZ_CHECK(digits && errno == 0, "--seed must be a whole number in [0, 2^64 - 1], got '", text, "'");
  return v;
}

// --offload-ratio and its per-class forms: a share in [0, 1]; the per-class ones also -1 (take --offload-ratio).
void check_ratio(double r, const char* flag, bool minus_one) {
  if (minus_one && r == -1) return;
  TZ_CHECK(r >= 0 && r <= 1, "--", flag, " must be in [0, 1]", minus_one ? " or -1 (--offload-ratio)" : "",
           ", got ", show_number(r));
}

// The same --nvme-path twice (also spelt differently: a trailing slash, a symlink, "a/../a") would stripe
// two stores over one folder; each path is compared with every other, resolved as far as it exists.
void check_nvme_paths(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<fs::path> resolved;
  for (const std::string& p : paths) {
    TZ_CHECK(!p.empty(), "--nvme-path is empty; give a folder");
    std::error_code ec;
    fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
    if (ec) r = fs::absolute(p).lexically_normal();
    if (!r.empty() && !r.has_filename()) r = r.parent_path();  // "dir/" is "dir"
    for (std::size_t i = 0; i < resolved.size(); ++i) {
      std::error_code eq;
      if (resolved[i] == r || fs::equivalent(resolved[i], r, eq))
        TZ_FAIL("--nvme-path '", p, "' is given twice: it is the same folder as --nvme-path '", paths[i],
                "'; give each folder once (a repeated --nvme-path stripes the store over several drives)");
    }
    resolved.push_back(std::move(r));
  }
}

// --straggler-test-delay-ms R:MS: a rank in [0, 2^31) and milliseconds in [1, 10^6].
void parse_straggler_delay(const std::string& text, TrainOptions& o) {
  if (text.empty()) return;
  const std::size_t colon = text.find(':');
  auto whole = [](const std::string& t) {
    return !t.empty() && t.size() <= 9 &&
           std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const std::string r = colon == std::string::npos ? "" : text.substr(0, colon);
  const std::string ms = colon == std::string::npos ? "" : text.substr(colon + 1);
  TZ_CHECK(whole(r) && whole(ms) && std::stoi(ms) >= 1 && std::stoi(ms) <= 1000000,
           "--straggler-test-delay-ms '", text,
           "' is not RANK:MS (a rank and a delay of 1 to 1000000 ms, e.g. 1:200)");
  o.straggler_delay_rank = std::stoi(r);
  o.straggler_delay_ms = std::stoi(ms);
}

}  // namespace

void derive_batch(TrainOptions& o, int world) {
  derive_batch(o, world, o.config);
  check_range(o.micro_batch, 1, kMaxMicroBatch, "micro-batch", " sequences (train_micro_batch_size_per_gpu)");
  check_range(o.grad_accum, 1, kMaxGradAccum, "grad-accum", " (gradient_accumulation_steps)");
}

void resolve_train_flags(TrainFlags& f, const po::variables_map& vm) {
  // `plan` may plan a cuda run in any build (a pure function); `train` checks that this build can run it.
  f.o.device = parse_device_kind(f.device);
  f.o.model_name = resolve_model_name(f.mf);
  if (!f.o.init_from.empty()) {
    f.o.model = model_from_file(f.mf, f.o.init_from);
    f.o.model_name = f.o.init_from;
  } else {
    f.o.model = resolve_model(f.mf);
  }
  f.o.seq_len = f.mf.seq_len;
  f.o.dtype = parse_compute_dtype(f.dtype);
  TZ_CHECK(f.activation_dtype == "auto" || f.activation_dtype == "fp32", "--activation-dtype '", f.activation_dtype,
           "' is not one of auto, fp32");
  f.o.fp32_activations = f.activation_dtype == "fp32";
  f.o.save_hf_dtype = parse_compute_dtype(f.save_hf_dtype);
  f.o.save_hf_shard_bytes = parse_count("save-hf-shard-size", f.save_hf_shard);
  TZ_CHECK(f.o.save_hf_shard_bytes >= 1, "--save-hf-shard-size must be at least 1 byte, got ", f.save_hf_shard);
  f.o.lr.schedule = parse_lr_schedule(f.schedule);
  f.o.device_mem = bytes_flag("device-mem", f.device_mem);
  f.o.seed = parse_seed(f.seed);
  f.o.checkpointing = f.ckpt ? ActivationCheckpointing::per_block : ActivationCheckpointing::off;
  f.o.zero.reduce_bucket_size = parse_count("reduce-bucket-size", f.reduce_bucket);
  f.o.zero.allgather_bucket_size = parse_count("allgather-bucket-size", f.allgather_bucket);
  f.o.zero.comm_piece_bytes = bytes_flag("comm-piece-bytes", f.comm_piece);
  TZ_CHECK(f.o.zero.comm_piece_bytes <= (std::size_t(1) << 40), "--comm-piece-bytes '", f.comm_piece,
           "' is beyond 1T: give a piece of at most 1T, or 0 to reduce whole messages");
  f.o.zero.prefetch_bucket_size = parse_count("prefetch-bucket-size", f.prefetch_bucket);
  f.o.zero.max_live_parameters = parse_count("max-live-parameters", f.max_live);
  f.o.zero.param_persistence_threshold = parse_count("param-persistence-threshold", f.persistence);
  f.o.offload.optimizer = parse_offload_device(f.offload_opt, "--offload-optimizer");
  f.o.offload.param = parse_offload_device(f.offload_param, "--offload-param");
  f.o.offload.activations = parse_offload_device(f.offload_act, "--offload-activations");
  f.o.offload.overlap_optimizer = parse_optimizer_overlap(f.overlap_opt);
  TZ_CHECK(f.o.offload.overlap_optimizer_share >= 0 && f.o.offload.overlap_optimizer_share <= 1,
           "--overlap-optimizer-share ", f.o.offload.overlap_optimizer_share, " is not between 0 and 1");
  f.o.offload.optimizer_states = parse_moment_format(f.optimizer_states, "--optimizer-states");
  f.o.offload.master_weights = parse_master_format(f.master_weights, "--master-weights");
  check_ratio(f.ratio, "offload-ratio", false);
  check_ratio(f.ratio_master, "offload-ratio-master", true);
  check_ratio(f.ratio_m, "offload-ratio-m", true);
  check_ratio(f.ratio_v, "offload-ratio-v", true);
  attention_kernels(f.o.attention_math, f.o.dtype);  // refuses a name that is none of them
  f.o.offload.mem[Tier::host] = bytes_flag("host-mem", f.host_mem);
  f.o.offload.host_ratio_master = f.o.offload.host_ratio_m = f.o.offload.host_ratio_v = f.ratio;
  f.o.offload.mem[Tier::nvme] = bytes_flag("nvme-mem", f.nvme_mem);
  for (const auto& [node, bytes] : parse_numa_mem(f.numa_mem)) {
    f.o.offload.mem[numa_tier(node)] = bytes;
    f.o.offload.numa_budget_nodes.push_back(node);
  }
  f.o.config = f.config;
  // The file fills what the command line left at its defaults.
  if (!f.config.empty())
    load_ds_config(f.config, f.o,
                   [&](const std::string& flag) { return vm.count(flag) && !vm[flag].defaulted(); });
  TZ_CHECK(f.o.zero.stage >= 0 && f.o.zero.stage <= 3, "--zero-stage must be 0, 1, 2 or 3, got ",
           f.o.zero.stage);
  // Per-class ratios override the common one (from the flag or the file).
  if (f.ratio_master >= 0) f.o.offload.host_ratio_master = f.ratio_master;
  if (f.ratio_m >= 0) f.o.offload.host_ratio_m = f.ratio_m;
  if (f.ratio_v >= 0) f.o.offload.host_ratio_v = f.ratio_v;
  check_numbers(f);
  parse_straggler_delay(f.straggler_delay, f.o);
  check_nvme_paths(f.o.offload.nvme_paths);
  TZ_CHECK(f.bind_cores == "none" || f.bind_cores == "auto", "--bind-cores must be none or auto, got '",
           f.bind_cores, "'");
  TZ_CHECK(f.profile_hardware.empty() || f.o.profile_ops > 0, "--profile-hardware '", f.profile_hardware,
           "' sets the peaks of --profile-ops's table, and --profile-ops is 0 (off): give --profile-ops N");
  if (!f.profile_hardware.empty()) f.o.profile_peaks = profile_peaks(load_hardware(f.profile_hardware), f.o.dtype);
  // The memory plan's measured lines: this machine's calibration, where it has one (plan --hardware FILE
  // replaces them with that file's).
  if (const std::string local = local_hardware_path(); std::filesystem::exists(local)) {
    f.o.measured_memory = load_hardware("local").memory;
    f.o.measured_memory_source = local;
  }
}

ProfilePeaks profile_peaks(const Hardware& h, DType dtype) {
  const int i = dtype == DType::bf16 ? 1 : dtype == DType::f16 ? 2 : 0;
  ProfilePeaks p{h.peak_tflops[i], h.device_gbs, h.intra_gbs, h.name};
  char b[160];
  std::snprintf(b, sizeof b, " (%g TFLOP/s %s dense, memory %g GB/s, collectives %g GB/s)", p.tflops,
                std::string(dtype_name(dtype)).c_str(), p.memory_gbs, p.comm_gbs);
  p.source += b;
  if (!h.source.empty()) p.source += ": " + h.source;
  return p;
}

}  // namespace tz
