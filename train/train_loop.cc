// The Loop's step (micro-steps, the optimizer step, the stop flag), its report (the progress line and
// the metrics record) and validation; the fp16 outcome check at a run's end.
#include "train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/backend.h"
#include "core/error.h"
#include "model/model_family.h"
#include "train/prometheus_file.h"
#include "zero/tier.h"

namespace tz {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// "45s", "1m23s", "2h05m".
std::string short_duration(double s) {
  char b[32];
  const long long t = std::llround(std::max(0.0, s));
  if (t < 60)
    std::snprintf(b, sizeof b, "%llds", t);
  else if (t < 3600)
    std::snprintf(b, sizeof b, "%lldm%02llds", t / 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%lldh%02lldm", t / 3600, t / 60 % 60);
  return b;
}

}  // namespace

Loop::Loop(const TrainOptions& opt, Communicator& comm, const LogFn& log, const TrainHooks& hooks, Run& run,
           const StopSignals* stop, int start, MetricsFile& metrics, const RunIdentity& id)
    : opt_(opt),
      comm_(comm),
      log_(log),
      hooks_(hooks),
      run_(run),
      stop_(stop),
      metrics_(metrics),
      id_(id),
      ranks_(id.hosts, opt.straggler_threshold),
      plan_peaks_({{"device", run.plan.total(Tier::device)},
                   {"host", run.plan.total(Tier::host)},
                   {"nvme", run.plan.total(Tier::nvme)}}),
      clock_(*run.dev, opt.grad_accum),
      BT_(std::size_t(opt.micro_batch) * opt.seq_len),
      window_(profile_window(opt.profile_ops, start, opt.steps)) {
  if (window_.first == 0) return;
  profile_ = std::make_unique<OpProfile>(*run.dev);
  profile_->name_gemms(
      model_family(opt.model).gemm_shapes(opt.model, run.model->shape(), opt.precision().act));
  report_.window = window_;
  report_.clock = run.dev->traits().event_clock;
  report_.peaks = opt.profile_peaks;
}

Loop::~Loop() {
  if (profile_) run_.dev->set_op_profile(nullptr);
}

void Loop::profile_begin(int s) {
  if (s == window_.first) comm_at_window_ = run_.dcomm->stats();
  run_.dev->set_op_profile(profile_.get());
}

void Loop::profile_end(int s, const StepTimes& t) {
  run_.dev->set_op_profile(nullptr);
  profile_->collect();
  report_.step_ms += t.step / report_.steps();
  report_.forward_ms += t.forward / report_.steps();
  report_.backward_ms += t.backward / report_.steps();
  report_.optimizer_ms += t.optimizer / report_.steps();
  if (s != window_.last) return;
  report_.ops = profile_->rows();
  report_.comm = comm_difference(run_.dcomm->stats(), comm_at_window_);
  log(report_.table());
  if (comm_.rank() == 0) metrics_.write(report_.record());
}

void Loop::step(int s, TrainResult& result) {
  if (profiling(s)) profile_begin(s);
  const CommStats before = run_.dcomm->stats();
  StepTimes t;
  const auto t0 = Clock::now();
  const float dscale = run_.engine->dloss_scale();
  Stream& stream = *run_.stream;
  for (int micro = 0; micro < opt_.grad_accum; ++micro) {
    // Loading the batch is the host's own work: a host timer measures it.
    const auto ta = Clock::now();
    if (micro == 0 && comm_.rank() == opt_.straggler_delay_rank)  // the planted straggler (a test hook)
      std::this_thread::sleep_for(std::chrono::milliseconds(opt_.straggler_delay_ms));
    const auto [inputs, targets] = run_.next_tokens(BT_);
    run_.train_loader->next_batch(inputs, targets);
    t.data += ms_since(ta);
    clock_.forward_begin(stream, micro);
    run_.engine->begin_micro_step(micro == opt_.grad_accum - 1);
    run_.model->forward(*run_.engine, inputs, targets, dscale, run_.losses.data(), stream);
    run_.tokens_copied(stream);
    clock_.backward_begin(stream, micro);
    run_.model->backward(*run_.engine, stream);
    run_.engine->end_micro_step();
    clock_.backward_end(stream, micro);
    if (hooks_.before_step && micro == opt_.grad_accum - 1) hooks_.before_step(s, *run_.engine);
  }
  clock_.optimizer_begin(stream);
  const StepStats st = run_.engine->step();
  clock_.optimizer_end(stream);
  const double tokens = double(BT_) * opt_.grad_accum * comm_.size();
  // The stop flag rides with the loss: a signal seen by any rank stops every rank after the same step.
  run_.readback.data()[kStopSlot] = stop_ && stop_->first.load() ? 1.0 : 0.0;
  run_.dev->backend().copy_async(stream, run_.losses.data() + kStopSlot, run_.readback.data() + kStopSlot,
                                 sizeof(double));
  run_.reduce_scalars(0, 2);  // waits for the stream: every phase event has completed
  const PhaseClock::Phases ph = clock_.read();
  t.forward = ph.forward, t.backward = ph.backward, t.optimizer = ph.optimizer;
  const float loss = float(run_.readback.data()[0] / tokens);
  if (run_.readback.data()[kStopSlot] > 0) stop_requested_ = true;
  // fp16: an overflowing step is skipped (no update), so its loss may be non-finite; the run's end checks
  // that something was trained (check_fp16_outcome).
  TZ_CHECK(std::isfinite(loss) || (opt_.dtype == DType::f16 && st.skipped), "the training loss is ", loss,
           " at step ", s, ": training diverged; lower --lr or raise --warmup");
  t.step = ms_since(t0);  // to the readback, which waited for everything the step enqueued
  if (profiling(s)) profile_end(s, t);
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
  if (st.speculated != st.speculate_next)
    log(st.speculate_next
            ? "step " + std::to_string(s) + ": the speculative CPU Adam resumes (at most " +
                  std::to_string(SpeculationPolicy::kResumeBad) + " of the last " +
                  std::to_string(SpeculationPolicy::kWindow) + " steps were clipped or skipped)"
            : "step " + std::to_string(s) + ": the speculative CPU Adam stops: most recent steps were clipped or "
                  "skipped, so their updates would be rolled back and redone (it resumes once at most " +
                  std::to_string(SpeculationPolicy::kResumeBad) + " of " + std::to_string(SpeculationPolicy::kWindow) +
                  " steps are; raise --grad-clip or warm up longer to keep it)");
  const CommStats after = run_.dcomm->stats();
  const double wait_ms = comm_wait_ms(after, before);
  const double tok_s = double(BT_) * opt_.grad_accum * comm_.size() / (t.step / 1000.0);
  MemoryBudget& dev = run_.dev->budget(MemoryKind::device);
  MemoryBudget& host = run_.dev->budget(MemoryKind::pinned_host);
  const std::size_t nvme_used = run_.engine->nvme_budget().used();
  // Every rank's figures reach rank 0 (and every rank) in one small all-gather.
  RankSample mine;
  mine.ms = {t.data, t.forward, t.backward, t.optimizer, wait_ms, t.step};
  mine.bytes = {double(dev.used()), double(host.used()), double(nvme_used)};
  const CommStats before_gather = run_.dcomm->stats();
  ranks_.gather(comm_, mine);
  // A --profile-ops window counts the step's own collectives only: a gather inside it (on the same
  // communicator, as on the cpu) moves the window's starting snapshot up by what it added.
  if (profile_ && s >= window_.first && s < window_.last)
    comm_add(comm_at_window_, comm_difference(run_.dcomm->stats(), before_gather));
  const double eta = eta_seconds(s, t.step);
  const nlohmann::json straggler = ranks_.straggler_record();
  if (opt_.log_every > 0 && (s % opt_.log_every == 0 || s == 1 || s == opt_.steps)) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %8.1f ms (comm wait %.1f) | %.0f tok/s | "
                  "device %s | "
                  "host %s | optimizer %.1f ms | eta %s",
                  s, opt_.steps, loss, st.lr, st.grad_norm, t.step, wait_ms, tok_s,
                  format_bytes(dev.used()).c_str(), format_bytes(host.used()).c_str(), t.optimizer,
                  short_duration(eta).c_str());
    std::string text = line;
    if (!straggler.is_null()) {
      char b[64];
      std::snprintf(b, sizeof b, " %.1fx the median rank's work", straggler["ratio"].get<double>());
      text += " | straggler: rank " + std::to_string(straggler["rank"].get<int>()) + " on " +
              straggler["host"].get<std::string>() + b;
    }
    log(text);
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
      // Which clock each figure of "ms" is read from: the host's, or the compute stream's timing events.
      {"ms_clock",
       {{"data", "host"},
        {"forward", clock_.clock()},
        {"backward", clock_.clock()},
        {"optimizer", clock_.clock()},
        {"comm_wait", "host"},
        {"step", "host"}}},
      {"comm", comm_record(after, before)},
      {"comm_overlap", comm_overlap_record(after, before)},
      {"offload", offload_record(*run_.engine, t)},
      {"speculative_optimizer",
       {{"kept", st.speculative_kept},
        {"rolled_back", st.speculative_rolled_back},
        {"speculated", st.speculated},
        {"rollback_rate", st.speculative_rollback_rate}}},
      {"bytes", {{"device", dev.used()}, {"host", host.used()}, {"nvme", nvme_used}}},
      {"peak_bytes",
       {{"device", dev.peak()}, {"host", host.peak()}, {"nvme", run_.engine->nvme_budget().peak()}}},
      // A resumed run counts on from the checkpoint's step at this run's tokens per step.
      {"tokens", id_.tokens_per_step * std::uint64_t(s)},
      {"eta_s", eta},
      {"ranks", ranks_.record()},
      {"straggler", straggler}};
  if (comm_.rank() == 0) {
    metrics_.write(rec);
    last_record_ = rec;
    const bool prometheus = s % opt_.prometheus_every == 0 || s == opt_.steps;
    if (!opt_.prometheus_textfile.empty() && prometheus) write_prometheus();
  }
  result.metrics.push_back(std::move(rec));
}

double Loop::eta_seconds(int s, double step_ms) {
  step_ends_.push_back(Clock::now());
  if (step_ends_.size() > 11) step_ends_.pop_front();
  const double span = std::chrono::duration<double>(step_ends_.back() - step_ends_.front()).count();
  const double per_step = step_ends_.size() >= 2 ? span / double(step_ends_.size() - 1) : step_ms / 1000.0;
  return std::max(0, opt_.steps - s) * per_step;
}

void Loop::write_prometheus() {
  if (last_record_.is_null()) return;
  write_prometheus_textfile(opt_.prometheus_textfile,
                            prometheus_text(last_record_, ranks_, id_.run_id, plan_peaks_));
  prometheus_step_ = last_record_["step"].get<int>();
}

void Loop::finish() {
  if (comm_.rank() != 0 || opt_.prometheus_textfile.empty() || last_record_.is_null()) return;
  if (prometheus_step_ != last_record_["step"].get<int>()) write_prometheus();
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
  if (comm_.rank() == 0) metrics_.write(rec);
  result.metrics.push_back(rec);
}

void check_fp16_outcome(const TrainOptions& opt, const TrainResult& r, int start, int last, bool stopped) {
  if (opt.dtype != DType::f16 || r.losses.empty()) return;
  std::string unsaved = opt.save_dir.empty() ? "" : "the final checkpoint";
  int outputs = !opt.save_dir.empty();
  for (const std::string& path : {opt.save_safetensors, opt.save_hf})
    if (!path.empty()) unsaved += (unsaved.empty() ? "" : " and ") + path, ++outputs;
  unsaved = unsaved.empty() ? "no model was written" : unsaved + (outputs == 1 ? " was" : " were") + " not written";
  TZ_CHECK(std::isfinite(r.losses.back()), "the training loss is ", r.losses.back(), " at step ", last,
           ", the last (fp16): training diverged and ", unsaved, "; lower --lr or raise --warmup, or train in bf16");
  TZ_CHECK(stopped || r.skipped_steps.size() < r.losses.size(), "every step of this run (", start + 1, " to ", last,
           ") was skipped: the fp16 gradients overflowed at every loss scale tried (the last ", r.loss_scales.back(),
           "), so nothing was trained and ", unsaved,
           "; lower --loss-scale (0: dynamic) or --initial-scale-power and --min-loss-scale, or train in bf16");
}

}  // namespace tz
