// `tierzero train`: flags -> TrainOptions -> train().
#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/model_options.h"
#include "launch/parse_args.h"
#include "model/safetensors.h"
#include "comm/communicator.h"
#include "comm/world.h"
#include "launch/ds_config.h"
#include "zero/trainer.h"

namespace po = boost::program_options;

namespace tz {

int train_command(const std::vector<std::string>& args) {
  TrainOptions o;
  ModelFlags mf;
  std::string dtype = "fp32", schedule = "constant", device = "cpu", device_mem = "unlimited";
  bool ckpt = false;
  std::string config, reduce_bucket, allgather_bucket, prefetch_bucket, max_live, persistence;
  double comm_timeout = 300;
  std::string offload_opt, offload_param, offload_act, host_mem, nvme_mem;
  double ratio = 1.0, ratio_master = -1, ratio_m = -1, ratio_v = -1;
  po::options_description desc("tierzero train: train a GPT-2 model\n\nflags (default in parentheses)");
  add_model_flags(desc, mf);
  desc.add_options()
      ("help,h", "print this help")
      ("data", po::value(&o.data)->default_value(o.data),
       "training tokens: an llm.c .bin file (magic 20240520) or a raw uint16 file; 'default' is the built-in "
       "byte-level corpus (the license texts in /usr/share/common-licenses, first 90%)")
      ("val-data", po::value(&o.val_data)->default_value(""),
       "validation tokens (with --data default: the corpus' last 10%)")
      ("init-from", po::value(&o.init_from)->default_value(""),
       "start from a Hugging Face GPT-2 safetensors file (F32, F16 or BF16); the file sets the sizes, the "
       "head count comes from --n-head or the GPT-2 preset of the same width")
      ("save-safetensors", po::value(&o.save_safetensors)->default_value(""),
       "after training, write the model as GPT2LMHeadModel safetensors (F32)")
      ("metrics", po::value(&o.metrics)->default_value(""),
       "write one JSON object per step (and per validation) to this JSONL file, created anew")
      ("steps", po::value(&o.steps)->default_value(o.steps), "optimizer steps")
      ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch), "sequences per micro-batch on each rank")
      ("lr", po::value(&o.lr.lr)->default_value(o.lr.lr), "peak learning rate")
      ("min-lr", po::value(&o.lr.min_lr)->default_value(o.lr.min_lr), "final learning rate of the cosine schedule")
      ("warmup", po::value(&o.lr.warmup)->default_value(o.lr.warmup), "linear warm-up steps")
      ("lr-schedule", po::value(&schedule)->default_value(schedule), "after warm-up: constant or cosine")
      ("weight-decay", po::value(&o.adam.weight_decay)->default_value(o.adam.weight_decay),
       "AdamW decoupled weight decay (matrices and embeddings; not biases or LayerNorm)")
      ("beta1", po::value(&o.adam.beta1)->default_value(o.adam.beta1), "AdamW beta1")
      ("beta2", po::value(&o.adam.beta2)->default_value(o.adam.beta2), "AdamW beta2")
      ("eps", po::value(&o.adam.eps)->default_value(o.adam.eps), "AdamW epsilon")
      ("grad-clip", po::value(&o.adam.grad_clip)->default_value(o.adam.grad_clip),
       "clip the global gradient norm to this (0: off)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed for initialisation and shuffling")
      ("shuffle", po::bool_switch(&o.shuffle), "visit the batches of each epoch in a seeded random order")
      ("dtype", po::value(&dtype)->default_value(dtype),
       "compute dtype: fp32; bf16 (bf16 matmul inputs, fp32 accumulation, fp32 master weights); fp16 (the same "
       "with dynamic loss scaling)")
      ("checkpoint-activations", po::bool_switch(&ckpt), "keep only each block's input; recompute in backward")
      ("device", po::value(&device)->default_value(device), "cpu (cuda training arrives with the CUDA backend)")
      ("device-mem", po::value(&device_mem)->default_value(device_mem),
       "device memory budget, e.g. 512M, 8G (powers of 1024; on cpu: host memory the run may use)")
      ("val-every", po::value(&o.val_every)->default_value(o.val_every),
       "validate every N steps (0: only after the last step)")
      ("val-batches", po::value(&o.val_batches)->default_value(o.val_batches), "micro-batches per validation")
      ("log-every", po::value(&o.log_every)->default_value(o.log_every), "print a progress line every N steps (0: none)")
      ("config", po::value(&config)->default_value(""),
       "DeepSpeed-style JSON config (train_micro_batch_size_per_gpu, zero_optimization, fp16, bf16, optimizer, ...); "
       "flags given on the command line override it (docs/configuration.md)")
      ("zero-stage", po::value(&o.zero.stage)->default_value(o.zero.stage),
       "ZeRO stage: 0 data parallel, 1 shard optimizer states, 2 + gradients, 3 + parameters")
      ("grad-accum", po::value(&o.grad_accum)->default_value(o.grad_accum), "micro-steps per optimizer step")
      ("reduce-bucket-size", po::value(&reduce_bucket)->default_value("5e8"),
       "gradient elements reduced per collective (zero_optimization.reduce_bucket_size)")
      ("allgather-bucket-size", po::value(&allgather_bucket)->default_value("5e8"),
       "parameter elements all-gathered per batch after the step, stages 1-2 (allgather_bucket_size)")
      ("prefetch-bucket-size", po::value(&prefetch_bucket)->default_value("5e7"),
       "stage 3: parameter elements gathered ahead of use (stage3_prefetch_bucket_size)")
      ("max-live-parameters", po::value(&max_live)->default_value("1e9"),
       "stage 3: gathered parameter elements alive at once (stage3_max_live_parameters)")
      ("param-persistence-threshold", po::value(&persistence)->default_value("1e5"),
       "stage 3: a flat group (one block, the embeddings, the final norm) smaller than this stays whole on every "
       "rank (stage3_param_persistence_threshold, applied per group)")
      ("loss-scale", po::value(&o.fp16.loss_scale)->default_value(o.fp16.loss_scale),
       "fp16: static loss scale (0: dynamic)")
      ("initial-scale-power", po::value(&o.fp16.initial_scale_power)->default_value(o.fp16.initial_scale_power),
       "fp16: the dynamic scale starts at 2^this")
      ("loss-scale-window", po::value(&o.fp16.loss_scale_window)->default_value(o.fp16.loss_scale_window),
       "fp16: steps without overflow before the scale doubles")
      ("hysteresis", po::value(&o.fp16.hysteresis)->default_value(o.fp16.hysteresis),
       "fp16: overflows before the scale halves")
      ("min-loss-scale", po::value(&o.fp16.min_loss_scale)->default_value(o.fp16.min_loss_scale),
       "fp16: the scale never drops below this")
      ("offload-optimizer", po::value(&offload_opt)->default_value("none"),
       "where the fp32 master weights and Adam states live: none (the device), cpu (the host tier; Adam runs "
       "there, vectorised) or nvme (zero_optimization.offload_optimizer.device)")
      ("offload-param", po::value(&offload_param)->default_value("none"),
       "stage 3: where the parameter shards live between uses: none, cpu or nvme "
       "(zero_optimization.offload_param.device)")
      ("offload-ratio", po::value(&ratio)->default_value(1.0),
       "with --offload-optimizer cpu: the share of the optimizer states on the host tier; the rest stays on the "
       "device, in whole flat groups (offload_optimizer.ratio)")
      ("offload-ratio-master", po::value(&ratio_master)->default_value(-1.0),
       "the same for the fp32 master weights only (-1: --offload-ratio)")
      ("offload-ratio-m", po::value(&ratio_m)->default_value(-1.0), "the same for Adam m only (-1: --offload-ratio)")
      ("offload-ratio-v", po::value(&ratio_v)->default_value(-1.0), "the same for Adam v only (-1: --offload-ratio)")
      ("offload-activations", po::value(&offload_act)->default_value("none"),
       "where the activation checkpoints (each block's input) live: none (the device) or cpu")
      ("host-mem", po::value(&host_mem)->default_value("unlimited"), "budget of the host tier, e.g. 16G")
      ("nvme-mem", po::value(&nvme_mem)->default_value("unlimited"), "budget of the nvme tier, e.g. 500G")
      ("nvme-path", po::value(&o.offload.nvme_paths)->composing(),
       "a folder for the nvme tier's swap files (repeat to stripe over several drives)")
      ("pin-memory", po::bool_switch(&o.offload.pin_memory), "pin host-tier buffers (fails if the memlock limit is "
       "too low, unless --allow-unpinned)")
      ("allow-unpinned", po::bool_switch(&o.offload.allow_unpinned),
       "fall back to pageable host memory when pinning fails")
      ("comm-timeout", po::value(&comm_timeout)->default_value(comm_timeout),
       "seconds a collective may wait for the other ranks before the job is stopped");

  po::variables_map vm;
  if (!parse_args(args, desc, vm, "train")) return 0;
  o.device = parse_device_kind(device);
  TZ_CHECK(o.device == DeviceKind::cpu, "--device cuda: this build trains on the cpu only; the CUDA training ",
           "backend is not implemented yet (use --device cpu)");
  o.model_name = resolve_model_name(mf);
  if (!o.init_from.empty()) {
    o.model = infer_gpt_config_from_safetensors(o.init_from, 1);
    o.model = infer_gpt_config_from_safetensors(o.init_from, head_count_for(o.model, mf, o.init_from));
    if (mf.seq_len > o.model.max_seq_len)
      TZ_FAIL("--seq-len ", mf.seq_len, " exceeds the position table of ", o.init_from, " (", o.model.max_seq_len,
              " rows)");
    o.model_name = o.init_from;
  } else {
    o.model = resolve_model(mf);
  }
  o.seq_len = mf.seq_len;
  o.dtype = parse_compute_dtype(dtype);
  o.lr.schedule = parse_lr_schedule(schedule);
  o.device_mem = parse_bytes(device_mem);
  o.checkpointing = ckpt ? ActivationCheckpointing::per_block : ActivationCheckpointing::off;
  o.zero.reduce_bucket_size = parse_count("reduce-bucket-size", reduce_bucket);
  o.zero.allgather_bucket_size = parse_count("allgather-bucket-size", allgather_bucket);
  o.zero.prefetch_bucket_size = parse_count("prefetch-bucket-size", prefetch_bucket);
  o.zero.max_live_parameters = parse_count("max-live-parameters", max_live);
  o.zero.param_persistence_threshold = parse_count("param-persistence-threshold", persistence);
  o.offload.optimizer = parse_offload_device(offload_opt, "--offload-optimizer");
  o.offload.param = parse_offload_device(offload_param, "--offload-param");
  o.offload.activations = parse_offload_device(offload_act, "--offload-activations");
  o.offload.host_mem = parse_bytes(host_mem);
  o.offload.host_ratio_master = o.offload.host_ratio_m = o.offload.host_ratio_v = ratio;
  o.offload.nvme_mem = parse_bytes(nvme_mem);
  // The file fills what the command line left at its defaults.
  if (!config.empty())
    load_ds_config(config, o, [&](const std::string& f) { return vm.count(f) && !vm[f].defaulted(); });
  TZ_CHECK(o.zero.stage >= 0 && o.zero.stage <= 3, "--zero-stage must be 0, 1, 2 or 3, got ", o.zero.stage);
  // Per-class ratios override the common one (from the flag or the file).
  if (ratio_master >= 0) o.offload.host_ratio_master = ratio_master;
  if (ratio_m >= 0) o.offload.host_ratio_m = ratio_m;
  if (ratio_v >= 0) o.offload.host_ratio_v = ratio_v;
  for (double r : {o.offload.host_ratio_master, o.offload.host_ratio_m, o.offload.host_ratio_v})
    TZ_CHECK(r >= 0 && r <= 1, "offload ratios must be in [0, 1], got ", r);
  TZ_CHECK(comm_timeout > 0, "--comm-timeout must be positive, got ", comm_timeout);
  TZ_CHECK(o.lr.lr > 0, "--lr must be positive, got ", o.lr.lr);
  TZ_CHECK(o.adam.beta1 >= 0 && o.adam.beta1 < 1 && o.adam.beta2 >= 0 && o.adam.beta2 < 1,
           "--beta1 and --beta2 must be in [0, 1), got ", o.adam.beta1, " and ", o.adam.beta2);
  TZ_CHECK(o.adam.eps > 0, "--eps must be positive, got ", o.adam.eps);
  TZ_CHECK(o.adam.grad_clip >= 0, "--grad-clip must be >= 0 (0: off), got ", o.adam.grad_clip);
  TZ_CHECK(o.zero.reduce_bucket_size >= 1 && o.zero.allgather_bucket_size >= 1,
           "--reduce-bucket-size and --allgather-bucket-size must be at least 1 element");
  TZ_CHECK(o.fp16.initial_scale_power >= 0 && o.fp16.initial_scale_power <= 127,
           "--initial-scale-power must be in 0..127 (the scale must be a finite float), got ",
           o.fp16.initial_scale_power);
  TZ_CHECK(o.fp16.min_loss_scale > 0, "--min-loss-scale must be positive, got ", o.fp16.min_loss_scale);

  // One process per rank: under mpirun or srun --mpi=pmix the ranks talk over MPI; alone, no MPI.
  WorldInfo world = discover_world();
  std::unique_ptr<Communicator> comm = world.source == "single" ? make_self_comm() : make_mpi_world();
  comm->set_timeout(std::chrono::milliseconds(std::int64_t(comm_timeout * 1000)));
  if (comm->size() != world.size) {
    TZ_FAIL("the launcher says this is rank ", world.rank, " of ", world.size, " (from ", world.source,
            " variables) but MPI sees ", comm->size(), " process(es): under Slurm use srun --mpi=pmix (Debian's ",
            "Open MPI needs PMIx), or start the job with mpirun");
  }
  try {
    train(o, *comm);
  } catch (const std::exception& e) {
    // Stop every rank now: the others may be waiting in a collective for this one.
    std::fprintf(stderr, "tierzero train failed: %s\n", e.what());
    std::fflush(stderr);
    if (comm->size() > 1) comm->abort(1);
    return 1;
  }
  return 0;
}

}  // namespace tz
