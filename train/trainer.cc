// train(): the job around a Run (train/run_setup.h) and its Loop (train/train_loop.h): the option and
// rank checks, the save-dir lease, resume, the checkpoint cadence, stop signals, the plan-vs-peak report
// and the safetensors and Hugging Face folder exports.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/backend.h"
#include "core/error.h"
#include "core/host_ops.h"
#include "model/hf_folder.h"
#include "model/hf_folder_writer.h"
#include "model/model_family.h"
#include "train/checkpoint.h"
#include "train/collective_util.h"
#include "train/metrics_file.h"
#include "train/output_checks.h"
#include "train/rank_agreement.h"
#include "core/resident_memory.h"
#include "train/run_records.h"
#include "train/run_setup.h"
#include "train/save_dir.h"
#include "train/setting_checks.h"
#include "train/stop_signals.h"
#include "train/train_loop.h"
#include "zero/numa_tier.h"

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
  TZ_CHECK(opt.straggler_delay_rank < world, "--straggler-test-delay-ms names rank ",
           opt.straggler_delay_rank, ", and the job has ", world, " rank", world == 1 ? "" : "s", " (0 to ",
           world - 1, "); name one of them");
  if (opt.train_batch_size > 0)
    TZ_CHECK(opt.train_batch_size == opt.micro_batch * opt.grad_accum * world, "train_batch_size ",
             opt.train_batch_size, " must equal train_micro_batch_size_per_gpu (", opt.micro_batch,
             ") x gradient_accumulation_steps (", opt.grad_accum, ") x world size (", world,
             ") = ", opt.micro_batch * opt.grad_accum * world);
}


std::string startup_line(const TrainOptions& opt, const MemoryPlan& plan, int world) {
  const ModelConfig& cfg = opt.model;
  char line[768];
  std::snprintf(
      line, sizeof line,
      "model %s: %s, %.2fM params | %s | %d rank%s, ZeRO "
      "stage %d | micro-batch %d x seq %d x accum %d | per rank: device %s of %s (states %s), host %s of "
      "%s (states %s), nvme %s",
      opt.model_name.c_str(), cfg.describe().c_str(), cfg.num_parameters_unpadded() / 1e6, std::string(dtype_name(opt.dtype)).c_str(), world,
      world == 1 ? "" : "s", opt.zero.stage, opt.micro_batch, opt.seq_len, opt.grad_accum,
      format_bytes(plan.total(Tier::device)).c_str(), format_bytes(opt.device_mem).c_str(),
      format_bytes(plan.state_bytes(Tier::device)).c_str(), format_bytes(plan.total(Tier::host)).c_str(),
      format_bytes(opt.offload.mem[Tier::host]).c_str(), format_bytes(plan.state_bytes(Tier::host)).c_str(),
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


// The job's signals so far, the same on every rank (collective): the highest first signal any rank
// received, and the most signals any one rank received, with that rank.
struct JobSignals {
  int signal = 0, most = 0, rank = -1;
};
JobSignals job_signals(Communicator& comm, const StopSignals* stop) {
  // One all-reduce (max) of the first signal and count x N + (N - 1 - rank): the most signals, on the lowest
  // rank that had them.
  const double n = comm.size();
  double v[2] = {stop ? double(stop->first.load()) : 0.0,
                 (stop ? double(stop->count.load()) : 0.0) * n + (n - 1 - comm.rank())};
  if (comm.size() > 1) comm.all_reduce(v, 2, DType::f64, ReduceOp::max)->wait();
  JobSignals j;
  j.signal = int(v[0]);
  j.most = int(v[1] / n);
  j.rank = j.most > 0 ? int(n - 1 - (v[1] - j.most * n)) : -1;
  return j;
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
      model_family(opt.model).save_safetensors(opt.save_safetensors, run.plan.layout, groups, DType::f32);
    } catch (const std::exception& e) {
      if (checkpoint.empty()) throw;
      TZ_FAIL(e.what(), "; the trained weights are safe in checkpoint ", checkpoint, " (tierzero ckpt export ",
              checkpoint, " --to FILE writes them)");
    }
    log("saved " + opt.save_safetensors);
  }
  if (comm.size() > 1) comm.barrier()->wait();
}

// --save-hf: the folder written one group at a time (every rank gathers group g; rank 0 writes it), so no
// rank holds more than one group's fp32 values. Every rank learns of a failure after each group.
void export_hf(const TrainOptions& opt, Communicator& comm, Run& run, const LogFn& log, int last,
               const std::string& checkpoint) {
  const auto t0 = Clock::now();
  std::unique_ptr<HfFolderWriter> out;
  try {
    on_every_rank(comm, "start --save-hf " + opt.save_hf, [&] {
      if (comm.rank() != 0) return;
      HfFolderOptions o;
      o.dtype = opt.save_hf_dtype, o.shard_bytes = opt.save_hf_shard_bytes;
      if (!opt.init_from.empty() && is_hf_folder(opt.init_from)) {
        o.config = read_hf_config_json(opt.init_from);  // the input's own fields, torch_dtype aside
        o.copy_from = opt.init_from;
      } else {
        o.config = model_family(opt.model).hf_config(opt.model);
      }
      out = std::make_unique<HfFolderWriter>(opt.save_hf, run.plan.layout, std::move(o));
    });
    for (std::size_t g = 0; g < run.plan.layout.groups.size(); ++g) {
      const std::vector<float> values = run.engine->gather_master(int(g));
      on_every_rank(comm, "write --save-hf " + opt.save_hf, [&] {
        if (comm.rank() != 0) return;
        TZ_CHECK(host_all_finite(values.data(), values.size()), "the weights of ", run.plan.layout.groups[g].name,
                 " are not finite after step ", last, ": training diverged and ", opt.save_hf,
                 " was not written; lower --lr or raise --warmup");
        out->put_group(int(g), values.data());
      });
    }
    on_every_rank(comm, "finish --save-hf " + opt.save_hf, [&] {
      if (comm.rank() == 0) out->commit();
    });
  } catch (const std::exception& e) {
    if (checkpoint.empty()) throw;
    TZ_FAIL(e.what(), "; the trained weights are safe in checkpoint ", checkpoint, " (tierzero ckpt export ",
            checkpoint, " --format hf --to DIR writes them)");
  }
  if (comm.rank() == 0) {
    char b[160];
    std::snprintf(b, sizeof b, " (%zu file%s, %s, %.0f ms)", out->plan().files.size(),
                  out->plan().files.size() == 1 ? "" : "s", std::string(dtype_name(opt.save_hf_dtype)).c_str(), ms_since(t0));
    log("saved Hugging Face folder " + opt.save_hf + b);
  }
}

}  // namespace

TrainResult train(const TrainOptions& opt, Communicator& comm, const LogFn& log_fn, const TrainHooks& hooks,
                  StopSignals* stop) {
  check_options(opt, comm.size());
  check_ranks_agree(opt, comm);  // before anything depends on the settings being equal
  on_every_rank(comm, "check that its settings name things this machine has", [&] {
    std::string missing;
    for (const std::string& m : missing_on_this_machine(opt)) missing += (missing.empty() ? "" : "; ") + m;
    TZ_CHECK(missing.empty(), missing, ": give settings that name what this machine has (`tierzero plan` plans a run "
             "for another machine)");
  });
  const std::size_t resident_at_start = reset_resident_peak() ? resident_status_bytes("VmRSS") : 0;
  const LogFn log =
      log_fn ? log_fn
             : LogFn([](const std::string& s) { std::printf("%s\n", s.c_str()), std::fflush(stdout); });
  TZ_CHECK(opt.resume.empty() || opt.init_from.empty(), "--resume and --init-from both give the starting weights; ",
           "give one (--init-from starts a new run from a safetensors file, --resume continues a checkpointed one)");
  // What the run reads stays protected from what it writes until it returns (model/protected_inputs.h).
  std::vector<ProtectedInput> inputs = protect_inputs(opt);
  // Every output, before anything is created (the save-dir and its lock included); again below, once the
  // checkpoint being resumed is known and protected.
  on_every_rank(comm, "check the run's outputs", [&] {
    if (comm.rank() != 0) return;  // rank 0 writes them
    check_outputs(opt);
    // A run that cannot resume starts afresh: --metrics may hold nothing yet (checked again below, for a
    // --resume, once the run id is known).
    if (opt.resume.empty()) check_metrics_file(opt.metrics, "", false);
  });
  std::unique_ptr<SaveDirLease> lease;  // the save-dir is this run's until it returns
  if (!opt.save_dir.empty()) lease = std::make_unique<SaveDirLease>(opt.save_dir, comm, opt.job_id);
  const std::string resume_dir = resume_checkpoint(opt, comm, log);
  inputs.emplace_back(resume_dir, "the checkpoint being resumed");
  if (!opt.save_dir.empty()) inputs.emplace_back(opt.save_dir + "/latest", "the checkpoint pointer", "checkpoint pointer");
  on_every_rank(comm, "check the run's outputs against the checkpoint it resumes", [&] {
    if (comm.rank() == 0) check_outputs(opt);
  });
  std::unique_ptr<CheckpointReader> ckpt;
  if (!resume_dir.empty()) ckpt = open_resume(resume_dir, opt, comm, log);
  const std::string run_id = ckpt ? ckpt->manifest().run_id : fresh_run_id(opt, comm);
  const bool resumed = ckpt != nullptr;
  // --metrics belongs to one run: checked and opened (appending) by rank 0 before the run allocates.
  MetricsFile metrics;
  on_every_rank(comm, "open --metrics " + opt.metrics, [&] {
    if (comm.rank() != 0 || opt.metrics.empty()) return;
    check_metrics_file(opt.metrics, run_id, resumed);
    metrics = MetricsFile(opt.metrics);
  });
  if (metrics.cut_bytes() > 0)
    log("--metrics " + opt.metrics + ": cut off a partial last line (" + std::to_string(metrics.cut_bytes()) +
        " bytes, a record a kill interrupted mid-write)");
  RunIdentity id{run_id, all_gather_strings(comm, this_host()),
                 std::uint64_t(opt.micro_batch) * opt.seq_len * opt.grad_accum * comm.size()};
  if (lease && comm.rank() == 0)
    log("checkpoints go to " + opt.save_dir + " (run " + (run_id.empty() ? "id none: its checkpoint predates run ids" : run_id) +
        (ckpt ? ", continued" : ", new") + ")");
  Run run(opt, comm, hooks, ckpt.get());
  std::string numa_pages;  // where the numa:N tiers' pages are, asked of the kernel on every rank
  on_every_rank(comm, "check that the numa tiers' pages are on their nodes",
                [&] { numa_pages = check_numa_pages(*run.dev, run.plan); });
  if (comm.rank() == 0) {
    log(startup_line(opt, run.plan, comm.size()));
    for (std::size_t at = 0, end; at < numa_pages.size(); at = end + 1) {
      end = std::min(numa_pages.find('\n', at), numa_pages.size());
      log("rank 0's " + numa_pages.substr(at, end - at));
    }
    log(run.plan.table());
    if (!run.dev->pin_error().empty())
      log("the host tier is not locked in RAM (" + run.dev->pin_error() +
          "); continuing with pageable memory (--pin-memory makes this an error)");
  }
  TrainResult result;
  const int start = ckpt ? resume_at(opt, comm, *ckpt, run, log) : 0;
  ckpt.reset();
  metrics.write(run_marker_record(resumed ? "resume" : "start", start, id, opt, run.plan));
  Loop loop(opt, comm, log, hooks, run, stop, start, metrics, id);
  int last = start, saved = start;
  // Whether any rank has had a second signal (collective, on every rank alike): from then on the run
  // does nothing but finish its step and save it.
  bool now = false;
  auto insisted = [&] { return now = now || job_signals(comm, stop).most >= 2; };
  auto save = [&] {
    const auto t0 = Clock::now();
    result.checkpoint = save_checkpoint(opt, *run.engine, comm,
                                        {last, run.train_loader->epoch(), run.train_loader->batch_index(), run_id},
                                        hooks.checkpoint_phase);
    saved = last;
    char b[64];
    std::snprintf(b, sizeof b, " (%.0f ms)", ms_since(t0));
    if (comm.rank() == 0) log("saved checkpoint " + result.checkpoint + b);
  };
  for (int s = start + 1; s <= opt.steps && !loop.stop_requested() && !now; ++s) {
    loop.step(s, result);
    last = s;
    if (!opt.save_dir.empty() && opt.save_every > 0 && s % opt.save_every == 0 && !loop.stop_requested()) {
      save();
      insisted();  // a second signal during the save: stop after it
    }
    if (opt.val_every > 0 && s % opt.val_every == 0 && s != opt.steps && !loop.stop_requested() && !now)
      loop.validate(s, result);
  }
  check_fp16_outcome(opt, result, start, last, loop.stop_requested() || now);
  // The last step is always saved (a finished run, or one a signal stopped) before validation and export.
  if (!opt.save_dir.empty() && last > saved) save();
  if (loop.stop_requested() && !insisted() && comm.rank() == 0)
    log("stopped by a signal after step " + std::to_string(last) + " of " + std::to_string(opt.steps) +
        " on every rank: validating, saving and cleaning up");
  // Each phase after the checkpoint begins only while no rank has had a second signal.
  auto unless_insisted = [&](const std::string& what, const std::function<void()>& phase) {
    if (insisted())
      result.left_out.push_back(what);
    else
      phase();
  };
  unless_insisted("validation", [&] { loop.validate(last, result); });
  for (Tier t : tiers()) {
    result.plan_bytes[t] = run.plan.total(t);
    result.plan_held_bytes[t] = run.plan.held(t);
    result.peak_bytes[t] =
        in_file(t) ? run.engine->nvme_budget().peak() : run.dev->budget(tier_memory(t)).peak();
  }
  result.persistent_bytes = run.plan.state_bytes(Tier::device);
  result.host_persistent_bytes = run.plan.state_bytes(Tier::host);
  if (resident_at_start > 0)
    result.resident_growth_bytes = resident_status_bytes("VmHWM") - std::min(resident_at_start, resident_status_bytes("VmHWM"));
  if (comm.rank() == 0) {
    std::string cmp = "memory: planned vs allocated peak per rank:";
    for (Tier t : tiers())
      cmp.append(" ")
          .append(tier_name(t))
          .append(" ")
          .append(format_bytes(result.plan_bytes[t]))
          .append(" / ")
          .append(format_bytes(result.peak_bytes[t]));
    if (result.resident_growth_bytes > 0)
      cmp.append(" | rank 0's resident set (VmHWM) grew ")
          .append(format_bytes(result.resident_growth_bytes))
          .append(", its plan holds ")
          .append(format_bytes(result.plan_held_bytes[Tier::device] + result.plan_held_bytes[Tier::host]))
          .append(" on device + host with the lines outside the buffers");
    log(cmp);
  }
  if (!opt.save_safetensors.empty())
    unless_insisted("--save-safetensors", [&] { export_model(opt, comm, run, log, last, result.checkpoint); });
  if (!opt.save_hf.empty()) unless_insisted("--save-hf", [&] { export_hf(opt, comm, run, log, last, result.checkpoint); });
  // Every rank reports the same signals (the highest first signal any rank received), so the job's status
  // does not depend on which rank exits first; a signal after the last step is reported too.
  const JobSignals signals = job_signals(comm, stop);
  if (signals.signal > 0) {
    result.stopped_after = last;
    result.stop_signal = signals.signal;
    result.stop_signals = signals.most;
    result.stop_rank = signals.rank;
  }
  loop.finish();
  metrics.write(run_end_record(last, signals.signal));
  return result;
}

}  // namespace tz
