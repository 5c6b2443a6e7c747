// Resuming from a checkpoint: finding it (`latest`), checking it fits this run, verifying its files,
// and restoring what the engine's construction from its master values does not (m, v, counters), in
// the run's state formats when the checkpoint's differ (converted once, at load).
#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "model/file_io.h"
#include "train/checkpoint.h"
#include "train/checkpoint_find.h"
#include "train/collective_util.h"
#include "train/rank_agreement.h"
#include "zero/state_format_convert.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

// The formats the checkpoint's states had (its manifest's names were checked as it was read).
StateFormats checkpoint_formats(const CheckpointManifest& m) {
  return {parse_moment_format(m.optimizer_states, "the manifest's writer.optimizer_states"),
          parse_master_format(m.master_weights, "the manifest's writer.master_weights")};
}

StateFormats run_formats(const TrainOptions& opt) {
  return {opt.offload.optimizer_states, opt.offload.master_weights};
}

}  // namespace

std::string resume_checkpoint(const TrainOptions& opt, Communicator& comm,
                              const std::function<void(const std::string&)>& log) {
  if (opt.resume.empty()) return "";
  std::string chosen;
  on_every_rank(comm, "find the checkpoint --resume names", [&] {
    if (comm.rank() != 0) return;
    std::string note;
    if (opt.resume == "latest") {
      TZ_CHECK(!opt.save_dir.empty(), "--resume latest needs --save-dir: the folder to look for checkpoints in");
      chosen = latest_checkpoint(opt.save_dir, &note);
      if (!note.empty()) log(note);
      if (chosen.empty()) log("--resume latest: no checkpoint in " + opt.save_dir + " yet; starting from step 1");
      return;
    }
    std::error_code ec;
    // A step folder is a checkpoint even with its manifest gone: it is then refused as damaged (naming the
    // newest intact one beside it), not searched for checkpoints inside.
    if (fs::exists(fs::symlink_status(opt.resume + "/manifest.json", ec)) ||
        (is_checkpoint_name(fs::path(opt.resume).filename().string()) && fs::is_directory(opt.resume, ec))) {
      chosen = opt.resume;
      return;
    }
    TZ_CHECK(fs::is_directory(opt.resume, ec), "--resume ", opt.resume,
             ": no such checkpoint folder; give a step-NNNNNNNN folder, a --save-dir folder, or latest");
    chosen = latest_checkpoint(opt.resume, &note);
    TZ_CHECK(!chosen.empty(), "--resume ", opt.resume,
             ": neither a checkpoint (no manifest.json) nor a folder holding a complete one");
    if (!note.empty()) log(note);
  });
  return all_gather_strings(comm, chosen)[0];
}

std::unique_ptr<CheckpointReader> open_resume(const std::string& dir, const TrainOptions& opt, Communicator& comm,
                                              const std::function<void(const std::string&)>& log) {
  std::unique_ptr<CheckpointReader> r;
  on_every_rank(comm, "open checkpoint " + dir, [&] {
    try {
      r = std::make_unique<CheckpointReader>(dir);
    } catch (const Error& e) {
      refuse_damaged_checkpoint(dir, e.what());
    }
    const CheckpointManifest& m = r->manifest();
    TZ_CHECK(opt.model == m.model, "checkpoint ", dir, " holds a model of ", m.model.describe(),
             ", but this run's model is ", opt.model.describe(),
             "; resume with the model flags it was trained with");
    const ParamLayout layout = ParamLayout::build(opt.model);
    TZ_CHECK(layout.groups.size() == m.groups.size(), "checkpoint ", dir, " has ", m.groups.size(),
             " parameter groups; this model has ", layout.groups.size());
    // Its groups' sizes may differ from the layout's: the manifest's tensors were checked against the model
    // as it was read, and the reader reads them from where they are (CheckpointReader::read).
    for (std::size_t g = 0; g < m.groups.size(); ++g)
      TZ_CHECK(layout.groups[g].name == m.groups[g].name, "checkpoint ", dir, " group ", g, " is ",
               m.groups[g].name, "; this model's is ", layout.groups[g].name);
    // A checkpoint written before the sampled identity is compared in its own (first and last MiB) form.
    const std::string data = data_identity_as_recorded(m.data_identity, opt.data);
    TZ_CHECK(data == m.data_identity, "checkpoint ", dir, " was trained on data (", m.data_identity,
             ") other than --data ", opt.data, " (", data,
             "); a resumed run continues on the same data. To train these weights on new data, export them "
             "(tierzero ckpt export) and start a run with --init-from");
  });
  // Each rank verifies every world-th file, so the check costs one read of the checkpoint in all.
  on_every_rank(comm, "verify the checksums of checkpoint " + dir, [&] {
    const std::vector<CheckpointFile>& files = r->manifest().files;
    std::uint64_t mine = 0;
    for (std::size_t f = std::size_t(comm.rank()); f < files.size(); f += std::size_t(comm.size())) mine += files[f].bytes;
    Progress progress("verifying checkpoint " + dir + (comm.size() > 1 ? " (rank 0's files)" : ""), mine);
    for (std::size_t f = std::size_t(comm.rank()); f < files.size(); f += std::size_t(comm.size()))
      try {
        r->verify_file(f, &progress);
      } catch (const Error& e) {
        refuse_damaged_checkpoint(dir, e.what());
      }
  });
  const CheckpointManifest& m = r->manifest();
  if (comm.rank() == 0) {
    log("resuming from " + dir + " (step " + std::to_string(m.step) + ", written by " + std::to_string(m.world) +
        " rank" + (m.world == 1 ? "" : "s") + " at ZeRO stage " + std::to_string(m.stage) + ", optimizer on " +
        m.offload_optimizer + ", params on " + m.offload_param + "; checksums verified)");
    if (r->relaid())
      log("checkpoint " + dir +
          " was written under an earlier alignment of the parameter layout: its tensors are "
          "read from where its manifest puts them");
    const std::string converting = conversion_note(dir, checkpoint_formats(m), run_formats(opt));
    if (!converting.empty()) log(converting);
    if (m.dtype != std::string(dtype_name(opt.dtype)))
      log("the checkpoint was trained in " + m.dtype + ", this run uses " + std::string(dtype_name(opt.dtype)) +
          ": the fp32 master and Adam states carry over" +
          (opt.dtype == DType::f16 ? ", and the fp16 loss scale starts afresh" : ""));
    if (m.seed != opt.seed || m.shuffle != opt.shuffle)
      log("the checkpoint was trained with --seed " + std::to_string(m.seed) + (m.shuffle ? " and --shuffle" : "") +
          "; this run's data order follows its own --seed and --shuffle from here");
  }
  return r;
}

void restore_engine(const CheckpointReader& ckpt, const TrainOptions& opt, Engine& engine) {
  const MemoryPlan& plan = engine.plan();
  Progress progress("restoring the Adam moments from " + ckpt.dir(), 2 * sizeof(float) * owned_state_elements(plan));
  engine.visit_states(
      [&](int g, std::size_t b, std::size_t n, float*, float* m, float* v) {
        const std::uint64_t start = plan.placement.groups[g].opt_range.offset + b, count = plan.layout.groups[g].count;
        const std::size_t valid = start >= count ? 0 : std::size_t(std::min<std::uint64_t>(n, count - start));
        if (valid) {
          ckpt.read(g, StateArray::m, start, valid, m);
          ckpt.read(g, StateArray::v, start, valid, v);
        }
        progress.advance(2 * sizeof(float) * valid);
        std::fill(m + valid, m + n, 0.0f);  // the shard padding past the group's end
        std::fill(v + valid, v + n, 0.0f);
      },
      // The master was taken into the run's format as the engine was built (rounded to nearest even into
      // bf16, or bf16's values kept in fp32); the moments convert here when their format changes.
      resume_write(checkpoint_formats(ckpt.manifest()), run_formats(opt)));
  const CheckpointManifest& mf = ckpt.manifest();
  EngineState s = engine.state();
  s.optimizer_steps = mf.engine.optimizer_steps;
  s.computing = mf.engine.computing;
  if (opt.dtype == DType::f16 && mf.dtype == std::string(dtype_name(DType::f16))) s.scaler = mf.engine.scaler;
  engine.restore(s);
}

CheckpointProgress resume_position(const CheckpointManifest& m, std::uint64_t global_batch_tokens) {
  CheckpointProgress p{m.step, m.data_epoch, m.data_batch};
  if (global_batch_tokens != m.global_batch_tokens && global_batch_tokens > 0)
    p.data_batch = m.data_batch * m.global_batch_tokens / global_batch_tokens;  // the same tokens consumed
  return p;
}

}  // namespace tz
