// The training loop: a Run holds what one job allocates; train() drives it step by step.
#include "train/trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include <xxhash.h>

#include "comm/device_comm.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/host_ops.h"
#include "train/metrics_file.h"
#include "model/data_loader.h"
#include "model/gpt.h"
#include "model/gpt_init.h"
#include "model/safetensors.h"
#include "train/checkpoint.h"
#include "train/collective_util.h"
#include "train/corpus_data.h"
#include "train/output_checks.h"
#include "train/collective_util.h"
#include "train/rank_agreement.h"
#include "train/save_dir.h"
#include "train/step_metrics.h"
#include "train/stop_signals.h"
#include "zero/engine.h"
#include "zero/plan_advice.h"

namespace tz {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void check_options(const TrainOptions& opt, int world) {
  TZ_CHECK(opt.steps >= 1, "--steps must be at least 1, got ", opt.steps);
  TZ_CHECK(opt.micro_batch >= 1, "--micro-batch must be at least 1, got ", opt.micro_batch);
  TZ_CHECK(opt.grad_accum >= 1, "--grad-accum must be at least 1, got ", opt.grad_accum);
  if (opt.train_batch_size > 0)
    TZ_CHECK(opt.train_batch_size == opt.micro_batch * opt.grad_accum * world, "train_batch_size ",
             opt.train_batch_size, " must equal train_micro_batch_size_per_gpu (", opt.micro_batch,
             ") x gradient_accumulation_steps (", opt.grad_accum, ") x world size (", world,
             ") = ", opt.micro_batch * opt.grad_accum * world);
}

DeviceOptions device_options(const TrainOptions& opt) {
  DeviceOptions d;
  d.device_mem = opt.device_mem;
  d.host_mem = opt.offload.host_mem;
  d.gpu = opt.gpu;
  d.tf32 = opt.tf32;
  d.attention_bf16 = opt.attention_math == "bf16" || (opt.attention_math == "auto" && opt.dtype != DType::f32);
  d.pinning =
      opt.offload.pin_memory && !opt.offload.allow_unpinned ? Pinning::required : Pinning::best_effort;
  return d;
}

// Loads --init-from on every rank, then the ranks compare the XXH3-64 of every byte each read, before
// anything uses the values: ranks given different weights stop on every rank, naming --init-from.
void load_init_from(const TrainOptions& opt, Communicator& comm, const ParamLayout& layout,
                    std::vector<std::vector<float>>& loaded) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> h(XXH3_createState(), &XXH3_freeState);
  TZ_CHECK(h && XXH3_64bits_reset(h.get()) == XXH_OK, "cannot start a hash of --init-from");
  std::uint64_t bytes = 0;
  on_every_rank(comm, "load --init-from " + opt.init_from, [&] {
    load_gpt_safetensors(opt.init_from, layout, loaded, [&](const void* p, std::size_t n) {
      XXH3_64bits_update(h.get(), p, n);
      bytes += n;
    });
  });
  char b[80];
  std::snprintf(b, sizeof b, "%llu bytes read, xxh3 %016llx", static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(XXH3_64bits_digest(h.get())));
  check_settings_agree({{"the contents of --init-from", b}}, comm);
}

// Everything one job allocates, in dependency order: the plan first, then what is allocated from it.
struct Run {
  // With `ckpt`, the initial values are the checkpoint's master weights.
  Run(const TrainOptions& opt, Communicator& comm, const TrainHooks& hooks, const CheckpointReader* ckpt)
      : plan(plan_memory(plan_inputs(opt, comm.size(), comm.rank()))) {
    check_fits_with_advice(plan);  // a refusal names the smallest changes that fit
    dev = make_device(opt.device, device_options(opt));
    if (opt.device == DeviceKind::cuda) {
      // Planned again against what the GPU can give: its budget (--device-mem, or the free memory less
      // the reserve) less what the device took when it started (the cuBLASLt workspace).
      const MemoryBudget& b = dev->budget(MemoryKind::device);
      PlanInputs in = plan.in;
      in.budget[0] = std::min(in.budget[0], b.budget() - b.used());
      plan = plan_memory(in);
      check_fits_with_advice(plan);
    }
    stream = dev->create_stream();
    // Device buffers travel over NCCL on a cuda device (bootstrapped over `comm`, which keeps the host
    // collectives); collectives wait for the compute stream's work, not for the host.
    device_comm_owned = make_device_comm(comm, *dev);
    dcomm = device_comm_owned ? device_comm_owned.get() : &comm;
    dcomm->set_producer_stream(stream.get());
    done = dev->create_event();
    planned = std::make_unique<PlannedBuffers>(*dev, plan.buffers);
    CorpusData corpus = load_corpus(opt);
    train_loader = std::make_unique<DataLoader>(std::move(corpus.train), opt.micro_batch, opt.seq_len,
                                                comm.rank(), comm.size(), opt.seed, opt.shuffle,
                                                opt.model.vocab_size, corpus.train_name);
    if (!corpus.val.empty())
      val_loader =
          std::make_unique<DataLoader>(std::move(corpus.val), opt.micro_batch, opt.seq_len, comm.rank(),
                                       comm.size(), opt.seed, false, opt.model.vocab_size, corpus.val_name);
    EngineConfig ec{opt.adam, opt.lr, opt.fp16, opt.grad_accum};
    ec.lr.total_steps = opt.steps;
    std::vector<std::vector<float>> loaded;  // --init-from: the file's groups, handed out one by one
    if (!opt.init_from.empty()) load_init_from(opt, comm, plan.layout, loaded);
    auto init = [&](int g, std::vector<float>& values) {
      if (ckpt) {
        values.resize(plan.layout.groups[g].count);
        return ckpt->read(g, StateArray::master, 0, values.size(), values.data());
      }
      if (loaded.empty()) return init_gpt_group(opt.model, plan.layout, opt.seed, g, values);
      values = std::move(loaded[g]);
      loaded[g] = {};
    };
    engine = std::make_unique<Engine>(*dev, *stream, *dcomm, plan, *planned, ec, init, hooks.engine);
    engine->set_host_comm(comm);
    const MemoryKind act_home =
        opt.offload.activations == Tier::host ? MemoryKind::pinned_host : MemoryKind::device;
    model = std::make_unique<Gpt>(*dev, opt.model, GptShape{opt.micro_batch, opt.seq_len}, opt.dtype,
                                  opt.checkpointing, *planned, act_home);
    losses = planned->take<double>(kLossSums);
    readback = planned->take<double>(kLossReadback);
    tokens = planned->take<std::int32_t>(kTokenStaging);
    for (auto& e : tokens_used) e = dev->create_event();
    dev->backend().memset_async(*stream, losses.data(), 0, losses.bytes());
    planned->expect_all_taken();  // what was allocated is exactly what the plan lists
  }

  // The sums over ranks of slots [i, i + n) of the scalars, read back to the host (readback[i..]), and
  // the slots zeroed.
  void reduce_scalars(int i, int n, ReduceOp op = ReduceOp::sum) {
    Backend& be = dev->backend();
    if (dcomm->size() > 1) dcomm->all_reduce(losses.data() + i, n, DType::f64, op)->wait(*stream);
    be.copy_async(*stream, readback.data() + i, losses.data() + i, n * sizeof(double));
    be.memset_async(*stream, losses.data() + i, 0, n * sizeof(double));
    done->record(*stream);
    done->synchronize();
  }

  ~Run() {
    if (dcomm) dcomm->set_producer_stream(nullptr);  // the stream goes before `comm` does
  }

  MemoryPlan plan;
  std::unique_ptr<Device> dev;
  std::unique_ptr<Communicator> device_comm_owned;
  Communicator* dcomm = nullptr;  // device buffers: NCCL on a cuda device, else the host communicator
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> done;
  std::unique_ptr<PlannedBuffers> planned;
  std::unique_ptr<DataLoader> train_loader, val_loader;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Gpt> model;
  Buffer<double> losses, readback;
  // Two sets of [inputs | targets] in pinned memory (a copy from pageable memory would block the host on
  // a GPU), each with the event recorded after the forward that copied it up.
  Buffer<std::int32_t> tokens;
  std::unique_ptr<Event> tokens_used[2];
  int token_set = 0;

  // The next set to fill: waits until the forward that last used it has copied it up.
  std::pair<std::int32_t*, std::int32_t*> next_tokens(std::size_t BT) {
    token_set ^= 1;
    tokens_used[token_set]->synchronize();
    std::int32_t* in = tokens.data() + std::size_t(token_set) * 2 * BT;
    return {in, in + BT};
  }
  void tokens_copied(Stream& s) { tokens_used[token_set]->record(s); }
};

std::string startup_line(const TrainOptions& opt, const MemoryPlan& plan, int world) {
  const GptConfig& cfg = opt.model;
  char line[640];
  std::snprintf(
      line, sizeof line,
      "model %s: %d layers, %d heads, %d embd, vocab %d (padded %d), %.2fM params | %s | %d rank%s, ZeRO "
      "stage %d | micro-batch %d x seq %d x accum %d | per rank: device %s of %s (states %s), host %s of "
      "%s (states %s), nvme %s",
      opt.model_name.c_str(), cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.vocab_size, cfg.padded_vocab_size,
      cfg.num_parameters_unpadded() / 1e6, std::string(dtype_name(opt.dtype)).c_str(), world,
      world == 1 ? "" : "s", opt.zero.stage, opt.micro_batch, opt.seq_len, opt.grad_accum,
      format_bytes(plan.total(Tier::device)).c_str(), format_bytes(opt.device_mem).c_str(),
      format_bytes(plan.state_bytes(Tier::device)).c_str(), format_bytes(plan.total(Tier::host)).c_str(),
      format_bytes(opt.offload.host_mem).c_str(), format_bytes(plan.state_bytes(Tier::host)).c_str(),
      format_bytes(plan.total(Tier::nvme)).c_str());
  return line;
}

// A fresh run's id, drawn by rank 0 and the same on every rank. A fresh run may not write into a
// save-dir that holds another run's checkpoints (its pruning and its `latest` would take them over).
std::string fresh_run_id(const TrainOptions& opt, Communicator& comm) {
  on_every_rank(comm, "check that --save-dir holds no earlier run's checkpoints", [&] {
    if (comm.rank() != 0 || opt.save_dir.empty()) return;
    const std::vector<std::string> steps = step_folders(opt.save_dir);
    TZ_CHECK(steps.empty(), "--save-dir ", opt.save_dir, " holds checkpoints of an earlier run (", steps.front(),
             steps.size() > 1 ? " and " + std::to_string(steps.size() - 1) + " more" : std::string(),
             ") and this run starts afresh: continue that run with --resume latest, or give another --save-dir");
  });
  return all_gather_strings(comm, comm.rank() == 0 ? new_run_id() : "")[0];
}

// Restores what the Run's construction from the checkpoint's master did not: m, v, the counters and the
// data position. Returns the step the checkpoint was taken after.
int resume_at(const TrainOptions& opt, Communicator& comm, const CheckpointReader& ckpt, Run& run, const LogFn& log) {
  restore_engine(ckpt, opt, *run.engine);
  const CheckpointManifest& m = ckpt.manifest();
  const std::uint64_t global = std::uint64_t(comm.size()) * opt.micro_batch * opt.seq_len;
  CheckpointProgress p = resume_position(m, global);
  if (p.data_batch >= run.train_loader->batches_per_epoch()) ++p.data_epoch, p.data_batch = 0;
  if (global != m.global_batch_tokens && comm.rank() == 0)
    log("the checkpoint's global batch was " + std::to_string(m.global_batch_tokens) + " tokens, this run's is " +
        std::to_string(global) + ": the data resumes at batch " + std::to_string(p.data_batch) + " of epoch " +
        std::to_string(p.data_epoch) + " (the same tokens consumed, rounded down to a whole batch)");
  run.train_loader->seek(p.data_epoch, p.data_batch);
  if (m.step >= opt.steps && comm.rank() == 0)
    log("the checkpoint is at step " + std::to_string(m.step) + ", not before --steps " + std::to_string(opt.steps) +
        ": nothing left to train");
  return m.step;
}

}  // namespace

PlanInputs plan_inputs(const TrainOptions& opt, int world, int rank) {
  PlanInputs in;
  in.device = opt.device;
  in.model = opt.model;
  in.shape = GptShape{opt.micro_batch, opt.seq_len};
  in.dtype = opt.dtype;
  in.checkpointing = opt.checkpointing;
  in.zero = opt.zero;
  in.offload = opt.offload;
  in.world = world;
  in.rank = rank;
  in.budget[0] = opt.device_mem;
  in.budget[1] = opt.offload.host_mem;
  in.budget[2] = opt.offload.nvme_mem;
  return in;
}

namespace {

constexpr int kStopSlot = 1, kValSlot = 2;  // in the scalars: [train loss sum, stop flag, val loss sum]

// One job's loop state on top of a Run: the step, validation, logging and metrics.
class Loop {
 public:
  Loop(const TrainOptions& opt, Communicator& comm, const LogFn& log, const TrainHooks& hooks, Run& run,
       const StopSignals* stop)
      : opt_(opt),
        comm_(comm),
        log_(log),
        hooks_(hooks),
        run_(run),
        stop_(stop),
        metrics_(comm.rank() == 0 ? opt.metrics : std::string()),
        BT_(std::size_t(opt.micro_batch) * opt.seq_len) {}

  void step(int s, TrainResult& result);
  void validate(int s, TrainResult& result);
  // Whether a rank saw a stop signal before the last step's reduction (the same on every rank).
  bool stop_requested() const { return stop_requested_; }

 private:
  void log(const std::string& line) const {
    if (comm_.rank() == 0) log_(line);
  }
  void report(int s, float loss, const StepStats& st, const StepTimes& t, const CommStats& before,
              TrainResult& result);

  const TrainOptions& opt_;
  Communicator& comm_;
  const LogFn& log_;
  const TrainHooks& hooks_;
  Run& run_;
  const StopSignals* stop_;
  bool stop_requested_ = false;
  MetricsFile metrics_;
  std::size_t BT_;
};

void Loop::step(int s, TrainResult& result) {
  const CommStats before = run_.dcomm->stats();
  StepTimes t;
  const auto t0 = Clock::now();
  const float dscale = run_.engine->dloss_scale();
  for (int micro = 0; micro < opt_.grad_accum; ++micro) {
    auto ta = Clock::now();
    const auto [inputs, targets] = run_.next_tokens(BT_);
    run_.train_loader->next_batch(inputs, targets);
    auto tb = Clock::now();
    run_.engine->begin_micro_step(micro == opt_.grad_accum - 1);
    run_.model->forward(*run_.engine, inputs, targets, dscale, run_.losses.data(), *run_.stream);
    run_.tokens_copied(*run_.stream);
    auto tc = Clock::now();
    run_.model->backward(*run_.engine, *run_.stream);
    run_.engine->end_micro_step();
    if (hooks_.before_step && micro == opt_.grad_accum - 1) hooks_.before_step(s, *run_.engine);
    t.data += std::chrono::duration<double, std::milli>(tb - ta).count();
    t.forward += std::chrono::duration<double, std::milli>(tc - tb).count();
    t.backward += ms_since(tc);
  }
  const auto t3 = Clock::now();
  const StepStats st = run_.engine->step();
  t.optimizer = ms_since(t3);
  const double tokens = double(BT_) * opt_.grad_accum * comm_.size();
  // The stop flag rides with the loss: a signal seen by any rank stops every rank after the same step.
  run_.readback.data()[kStopSlot] = stop_ && stop_->first.load() ? 1.0 : 0.0;
  run_.dev->backend().copy_async(*run_.stream, run_.losses.data() + kStopSlot, run_.readback.data() + kStopSlot,
                                 sizeof(double));
  run_.reduce_scalars(0, 2);
  const float loss = float(run_.readback.data()[0] / tokens);
  if (run_.readback.data()[kStopSlot] > 0) stop_requested_ = true;
  // fp16: an overflowing step is skipped (no update), so its loss may be non-finite; the run's end checks
  // that something was trained (check_fp16_outcome).
  TZ_CHECK(std::isfinite(loss) || (opt_.dtype == DType::f16 && st.skipped), "the training loss is ", loss,
           " at step ", s, ": training diverged; lower --lr or raise --warmup");
  t.step = ms_since(t0);
  report(s, loss, st, t, before, result);
}

void Loop::report(int s, float loss, const StepStats& st, const StepTimes& t, const CommStats& before,
                  TrainResult& result) {
  result.losses.push_back(loss);
  result.loss_scales.push_back(st.loss_scale);
  result.mean_step_ms += t.step / opt_.steps;
  if (st.skipped) {
    result.skipped_steps.push_back(s);
    char b[160];
    std::snprintf(b, sizeof b,
                  "step %d skipped on every rank: fp16 gradient overflow at loss scale %g (now %g)", s,
                  st.loss_scale, run_.engine->dloss_scale() * opt_.grad_accum);
    log(b);
  }
  const CommStats after = run_.dcomm->stats();
  const double wait_ms = comm_wait_ms(after, before);
  const double tok_s = double(BT_) * opt_.grad_accum * comm_.size() / (t.step / 1000.0);
  MemoryBudget& dev = run_.dev->budget(MemoryKind::device);
  MemoryBudget& host = run_.dev->budget(MemoryKind::pinned_host);
  if (opt_.log_every > 0 && (s % opt_.log_every == 0 || s == 1 || s == opt_.steps)) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %8.1f ms (comm wait %.1f) | %.0f tok/s | "
                  "device %s | "
                  "host %s | optimizer %.1f ms",
                  s, opt_.steps, loss, st.lr, st.grad_norm, t.step, wait_ms, tok_s,
                  format_bytes(dev.used()).c_str(), format_bytes(host.used()).c_str(), t.optimizer);
    log(line);
  }
  nlohmann::json rec = {
      {"step", s},
      {"loss", loss},
      {"lr", st.lr},
      {"grad_norm", st.grad_norm},
      {"loss_scale", st.loss_scale},
      {"skipped", st.skipped},
      {"tokens_per_s", tok_s},
      {"ms",
       {{"data", t.data},
        {"forward", t.forward},
        {"backward", t.backward},
        {"optimizer", t.optimizer},
        {"comm_wait", wait_ms},
        {"step", t.step}}},
      {"comm", comm_record(after, before)},
      {"comm_overlap", comm_overlap_record(after, before)},
      {"offload", offload_record(*run_.engine, t)},
      {"speculative_optimizer", {{"kept", st.speculative_kept}, {"rolled_back", st.speculative_rolled_back}}},
      {"bytes", {{"device", dev.used()}, {"host", host.used()}, {"nvme", run_.engine->nvme_budget().used()}}},
      {"peak_bytes",
       {{"device", dev.peak()}, {"host", host.peak()}, {"nvme", run_.engine->nvme_budget().peak()}}}};
  metrics_.write(rec);
  result.metrics.push_back(std::move(rec));
}

void Loop::validate(int s, TrainResult& result) {
  DataLoader* val = run_.val_loader.get();
  if (!val) return;
  val->reset();
  const int n = std::max(1, std::min<int>(opt_.val_batches, int(val->batches_per_epoch())));
  for (int i = 0; i < n; ++i) {
    const auto [inputs, targets] = run_.next_tokens(BT_);
    val->next_batch(inputs, targets);
    run_.engine->begin_micro_step(false);
    run_.model->forward(*run_.engine, inputs, targets, 1.0f, run_.losses.data() + kValSlot, *run_.stream);
    run_.tokens_copied(*run_.stream);
  }
  run_.reduce_scalars(kValSlot, 1);
  result.val_loss = float(run_.readback.data()[kValSlot] / (double(BT_) * n * comm_.size()));
  if (SwapStats* pw = run_.engine->param_io_stats()) pw->reset();  // the next step's metrics count its own
  TZ_CHECK(std::isfinite(result.val_loss), "the validation loss is ", result.val_loss, " at step ", s,
           ": training diverged; lower --lr or raise --warmup");
  char b[128];
  std::snprintf(b, sizeof b, "step %d | val loss %.4f (%d batches x %d rank%s)", s, result.val_loss, n,
                comm_.size(), comm_.size() == 1 ? "" : "s");
  log(b);
  nlohmann::json rec = {{"step", s}, {"val_loss", result.val_loss}};
  metrics_.write(rec);
  result.metrics.push_back(rec);
}

// An fp16 run whose last loss is not finite diverged, and one whose every step overflowed (and was
// skipped) trained nothing: either fails before its final checkpoint and model are written, as a
// diverged fp32 run does (every rank sees the same reduced losses and skips: all throw). A run a signal
// stopped after skipped steps only is not failed: its checkpoint holds the unchanged, finite weights.
void check_fp16_outcome(const TrainOptions& opt, const TrainResult& r, int start, int last, bool stopped) {
  if (opt.dtype != DType::f16 || r.losses.empty()) return;
  std::string unsaved = opt.save_dir.empty() ? "" : "the final checkpoint";
  if (!opt.save_safetensors.empty()) unsaved += (unsaved.empty() ? "" : " and ") + opt.save_safetensors;
  unsaved = unsaved.empty() ? "no model was written"
                            : unsaved + (opt.save_dir.empty() || opt.save_safetensors.empty() ? " was" : " were") +
                                  " not written";
  TZ_CHECK(std::isfinite(r.losses.back()), "the training loss is ", r.losses.back(), " at step ", last,
           ", the last (fp16): training diverged and ", unsaved, "; lower --lr or raise --warmup, or train in bf16");
  TZ_CHECK(stopped || r.skipped_steps.size() < r.losses.size(), "every step of this run (", start + 1, " to ", last,
           ") was skipped: the fp16 gradients overflowed at every loss scale tried (the last ", r.loss_scales.back(),
           "), so nothing was trained and ", unsaved,
           "; lower --loss-scale (0: dynamic) or --initial-scale-power and --min-loss-scale, or train in bf16");
}

// `checkpoint`: the final step's checkpoint (committed before this is written), or "" without --save-dir.
void export_model(const TrainOptions& opt, Communicator& comm, Run& run, const LogFn& log, int last,
                  const std::string& checkpoint) {
  std::vector<std::vector<float>> full;
  for (std::size_t g = 0; g < run.plan.layout.groups.size(); ++g)
    full.push_back(run.engine->gather_master(int(g)));
  if (comm.rank() == 0) {
    std::vector<const float*> groups;
    for (std::size_t g = 0; g < full.size(); ++g) {
      // A diverged model never replaces a good file (every rank holds the same values: all throw).
      TZ_CHECK(host_all_finite(full[g].data(), full[g].size()), "the weights of ", run.plan.layout.groups[g].name,
               " are not finite after step ", last, ": training diverged and ", opt.save_safetensors,
               " was not written; lower --lr or raise --warmup");
      groups.push_back(full[g].data());
    }
    try {
      save_gpt_safetensors(opt.save_safetensors, run.plan.layout, groups, DType::f32);
    } catch (const std::exception& e) {
      if (checkpoint.empty()) throw;
      TZ_FAIL(e.what(), "; the trained weights are safe in checkpoint ", checkpoint, " (tierzero ckpt export ",
              checkpoint, " --to FILE writes them)");
    }
    log("saved " + opt.save_safetensors);
  }
  if (comm.size() > 1) comm.barrier()->wait();
}

}  // namespace

TrainResult train(const TrainOptions& opt, Communicator& comm, const LogFn& log_fn, const TrainHooks& hooks,
                  StopSignals* stop) {
  check_options(opt, comm.size());
  check_ranks_agree(opt, comm);  // before anything depends on the settings being equal
  const LogFn log =
      log_fn ? log_fn
             : LogFn([](const std::string& s) { std::printf("%s\n", s.c_str()), std::fflush(stdout); });
  TZ_CHECK(opt.resume.empty() || opt.init_from.empty(), "--resume and --init-from both give the starting weights; ",
           "give one (--init-from starts a new run from a safetensors file, --resume continues a checkpointed one)");
  // What the run reads stays protected from what it writes until it returns (model/protected_inputs.h).
  std::vector<ProtectedInput> inputs = protect_inputs(opt);
  std::unique_ptr<SaveDirLease> lease;  // the save-dir is this run's until it returns
  if (!opt.save_dir.empty()) lease = std::make_unique<SaveDirLease>(opt.save_dir, comm, opt.job_id);
  const std::string resume_dir = resume_checkpoint(opt, comm, log);
  inputs.emplace_back(resume_dir, "the checkpoint being resumed");
  if (!opt.save_dir.empty()) inputs.emplace_back(opt.save_dir + "/latest", "the checkpoint pointer", "checkpoint pointer");
  on_every_rank(comm, "check the run's outputs", [&] {
    if (comm.rank() == 0) check_outputs(opt);  // rank 0 writes them
  });
  std::unique_ptr<CheckpointReader> ckpt;
  if (!resume_dir.empty()) ckpt = open_resume(resume_dir, opt, comm, log);
  const std::string run_id = ckpt ? ckpt->manifest().run_id : fresh_run_id(opt, comm);
  if (lease && comm.rank() == 0)
    log("checkpoints go to " + opt.save_dir + " (run " + (run_id.empty() ? "id none: its checkpoint predates run ids" : run_id) +
        (ckpt ? ", continued" : ", new") + ")");
  Run run(opt, comm, hooks, ckpt.get());
  if (comm.rank() == 0) {
    log(startup_line(opt, run.plan, comm.size()));
    log(run.plan.table());
    if (!run.dev->pin_error().empty())
      log("the host tier is not locked in RAM (" + run.dev->pin_error() +
          "); continuing with pageable memory (--pin-memory makes this an error)");
  }
  TrainResult result;
  const int start = ckpt ? resume_at(opt, comm, *ckpt, run, log) : 0;
  ckpt.reset();
  Loop loop(opt, comm, log, hooks, run, stop);
  int last = start, saved = start;
  // Saves after step `last`; returns whether any rank received a second signal during the save (then
  // every rank stops at once: the checkpoint is complete, nothing else is done).
  auto save = [&] {
    const auto t0 = Clock::now();
    if (stop) stop->saving = true;
    struct Saved {
      StopSignals* s;
      ~Saved() {
        if (s) s->saving = false;
      }
    } saving{stop};
    result.checkpoint = save_checkpoint(opt, *run.engine, comm,
                                        {last, run.train_loader->epoch(), run.train_loader->batch_index(), run_id},
                                        hooks.checkpoint_phase);
    saved = last;
    char b[64];
    std::snprintf(b, sizeof b, " (%.0f ms)", ms_since(t0));
    if (comm.rank() == 0) log("saved checkpoint " + result.checkpoint + b);
    bool again = false;
    for (const std::string& c : all_gather_strings(comm, stop && stop->count.load() >= 2 ? "1" : "0"))
      again = again || c == "1";
    return again;
  };
  bool now = false;
  for (int s = start + 1; s <= opt.steps && !loop.stop_requested() && !now; ++s) {
    loop.step(s, result);
    last = s;
    if (!opt.save_dir.empty() && opt.save_every > 0 && s % opt.save_every == 0 && !loop.stop_requested())
      now = save();
    if (opt.val_every > 0 && s % opt.val_every == 0 && s != opt.steps && !loop.stop_requested() && !now)
      loop.validate(s, result);
  }
  check_fp16_outcome(opt, result, start, last, loop.stop_requested() || now);
  // The last step is always saved (a finished run, or one a signal stopped) before validation and export.
  if (!now && !opt.save_dir.empty() && last > saved) now = save();
  if (loop.stop_requested() || now) {
    // Every rank reports the same signal (the highest any rank received), so the job's status does not
    // depend on which rank exits first.
    result.stopped_after = last;
    run.readback.data()[kStopSlot] = stop ? double(stop->first.load()) : 0.0;
    run.dev->backend().copy_async(*run.stream, run.losses.data() + kStopSlot, run.readback.data() + kStopSlot,
                                  sizeof(double));
    run.reduce_scalars(kStopSlot, 1, ReduceOp::max);
    result.stop_signal = int(run.readback.data()[kStopSlot]);
    if (comm.rank() == 0 && now)
      log("a second signal came while checkpoint " + result.checkpoint + " was saved: it is complete; stopping " +
          "after step " + std::to_string(last) + " without validation or export");
    if (now) return result;
    if (comm.rank() == 0)
      log("stopped by a signal after step " + std::to_string(last) + " of " + std::to_string(opt.steps) +
          " on every rank: validating, saving and cleaning up");
  }
  loop.validate(last, result);
  for (int i = 0; i < 3; ++i) {
    result.plan_bytes[i] = run.plan.total(Tier(i));
    result.peak_bytes[i] =
        i == 2 ? run.engine->nvme_budget().peak()
               : run.dev->budget(i == 0 ? MemoryKind::device : MemoryKind::pinned_host).peak();
  }
  result.persistent_bytes = run.plan.state_bytes(Tier::device);
  result.host_persistent_bytes = run.plan.state_bytes(Tier::host);
  if (comm.rank() == 0) {
    std::string cmp = "memory: planned vs allocated peak per rank:";
    for (int i = 0; i < 3; ++i)
      cmp.append(" ")
          .append(tier_name(Tier(i)))
          .append(" ")
          .append(format_bytes(result.plan_bytes[i]))
          .append(" / ")
          .append(format_bytes(result.peak_bytes[i]));
    log(cmp);
  }
  if (!opt.save_safetensors.empty()) export_model(opt, comm, run, log, last, result.checkpoint);
  return result;
}

}  // namespace tz
