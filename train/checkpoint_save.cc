// Saving a checkpoint: every rank's data file into a temporary folder, rank 0's manifest, the rename,
// the `latest` pointer, then pruning (train/checkpoint.h gives the protocol).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/host_ops.h"
#include "model/file_io.h"
#include "model/json_bounded.h"
#include "train/checkpoint.h"
#include "train/collective_util.h"
#include "train/rank_agreement.h"
#include "train/save_dir.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

std::string rank_file(int rank) {
  char b[32];
  std::snprintf(b, sizeof b, "rank-%05d.bin", rank);
  return b;
}

// This rank's share of the states: the elements of its shard of each group that lie in the group (the
// shard map's own rank slice, so at stage 0, where every rank holds every state, each writes 1/N).
CheckpointFile write_rank_file(const std::string& tmp, Engine& engine, int rank, int step) {
  const MemoryPlan& plan = engine.plan();
  CheckpointFileWriter w(tmp, rank_file(rank));
  Progress progress("saving checkpoint " + tmp.substr(tmp.rfind("/.tmp-") + 6) + (plan.map.world() > 1 ? " (rank 0's states)" : ""),
                    3 * sizeof(float) * owned_state_elements(plan, rank));
  engine.visit_states(
      [&](int g, std::size_t b, std::size_t n, float* master, float* m, float* v) {
        const std::uint64_t start = plan.placement.groups[g].opt_range.offset + b;
        const Shard own = plan.map.shard_of(g, rank);
        const std::uint64_t lo = std::max<std::uint64_t>(start, own.offset);
        const std::uint64_t hi = std::min<std::uint64_t>(
            {start + n, own.offset + own.count, std::uint64_t(plan.layout.groups[g].count)});
        if (lo >= hi) return;
        const std::size_t k = lo - start;
        TZ_CHECK(host_all_finite(master + k, hi - lo), "the weights of ", plan.layout.groups[g].name,
                 " are not finite after step ", step,
                 ": training diverged, so no checkpoint was written (the previous one is kept); "
                 "lower --lr or raise --warmup");
        w.append(g, lo, hi - lo, master + k, m + k, v + k);
        progress.advance(3 * sizeof(float) * (hi - lo));
      },
      StateWrite::none);
  return w.finish();
}

CheckpointFile file_from_json(const std::string& text) {
  nlohmann::json j = parse_json_bounded(text, "a checkpoint file entry");
  CheckpointFile f;
  f.name = j.at("name").get<std::string>();
  f.bytes = j.at("bytes").get<std::uint64_t>();
  f.xxh3 = j.at("xxh3").get<std::uint64_t>();
  for (const auto& s : j.at("sections"))
    f.sections.push_back({s[0].get<int>(), s[1].get<std::uint64_t>(), s[2].get<std::uint64_t>(),
                          s[3].get<std::uint64_t>()});
  return f;
}

std::string file_to_json(const CheckpointFile& f) {
  nlohmann::json secs = nlohmann::json::array();
  for (const auto& s : f.sections) secs.push_back({s.group, s.begin, s.count, s.offset});
  return nlohmann::json{{"name", f.name}, {"bytes", f.bytes}, {"xxh3", f.xxh3}, {"sections", secs}}.dump();
}

CheckpointManifest make_manifest(const TrainOptions& opt, Engine& engine, int world, const CheckpointProgress& p,
                                 std::vector<CheckpointFile> files) {
  const MemoryPlan& plan = engine.plan();
  CheckpointManifest m;
  m.step = p.step;
  m.run_id = p.run_id;
  m.engine = engine.state();
  m.data_epoch = p.data_epoch;
  m.data_batch = p.data_batch;
  m.global_batch_tokens = std::uint64_t(world) * opt.micro_batch * opt.seq_len;
  m.data_identity = data_identity(opt.data);
  m.seed = opt.seed;
  m.shuffle = opt.shuffle;
  m.model = opt.model;
  m.dtype = std::string(dtype_name(opt.dtype));
  m.world = world;
  m.stage = opt.zero.stage;
  m.offload_optimizer = tier_name(opt.offload.optimizer);
  m.offload_param = tier_name(opt.offload.param);
  m.optimizer_states = moment_format_name(opt.offload.optimizer_states);
  m.master_weights = master_format_name(opt.offload.master_weights);
  m.schedule = {{"lr", opt.lr.lr},
                {"min_lr", opt.lr.min_lr},
                {"warmup", opt.lr.warmup},
                {"schedule", lr_schedule_name(opt.lr.schedule)},
                {"steps", opt.steps}};
  for (const GroupSpec& g : plan.layout.groups) {
    CheckpointGroup cg;
    cg.name = g.name, cg.count = g.count;
    for (const TensorSpec& t : g.tensors)
      cg.tensors.push_back({{"name", "transformer." + t.name}, {"shape", t.shape}, {"offset", t.offset}});
    m.groups.push_back(std::move(cg));
  }
  m.files = std::move(files);
  return m;
}

// Keeps the `keep` newest step folders of run `run_id` (by step number) besides `current`, and removes
// what crashed saves left behind (.tmp-*, .old-*: the save-dir's lock says no other job is saving here).
// A step folder of another run, or one whose manifest cannot be read, is never removed.
void prune(const std::string& dir, int keep, const std::string& current, const std::string& run_id) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if ((name.rfind(".tmp-step-", 0) == 0 || name.rfind(".old-step-", 0) == 0) && e.is_directory())
      fs::remove_all(e.path());
  }
  if (keep <= 0) return;
  int kept = 1;  // current
  for (const std::string& name : step_folders(dir)) {
    if (name == current) continue;
    try {
      if (read_manifest(dir + "/" + name).run_id != run_id) continue;
    } catch (const std::exception&) {
      continue;
    }
    if (kept < keep) {
      ++kept;
      continue;
    }
    fs::remove_all(dir + "/" + name);
  }
}

}  // namespace

std::string save_checkpoint(const TrainOptions& opt, Engine& engine, Communicator& comm, const CheckpointProgress& p,
                            const PhaseHook& phase) {
  const std::string dir = opt.save_dir, name = checkpoint_name(p.step);
  const std::string tmp = dir + "/.tmp-" + name, final_dir = dir + "/" + name, old = dir + "/.old-" + name;
  try {
    on_every_rank(comm, "prepare checkpoint folder " + tmp, [&] {
      if (comm.rank() != 0) return;
      fs::create_directories(dir);
      fs::remove_all(tmp);  // a crashed save of the same step
      fs::create_directory(tmp);
    });
    CheckpointFile mine;
    on_every_rank(comm, "write its checkpoint file into " + tmp, [&] {
      mine = write_rank_file(tmp, engine, comm.rank(), p.step);
      if (phase) phase("files written");
    });
    std::vector<std::string> all = all_gather_strings(comm, file_to_json(mine));
    on_every_rank(comm, "commit checkpoint " + final_dir, [&] {
      if (comm.rank() != 0) return;
      std::vector<CheckpointFile> files;
      for (const auto& s : all) files.push_back(file_from_json(s));
      const CheckpointManifest m = make_manifest(opt, engine, comm.size(), p, std::move(files));
      const std::string text = manifest_to_json(m).dump(1);
      AtomicOutputFile out(tmp + "/manifest.json", "checkpoint manifest", OutputWriter::checkpoint);
      out.write(text.data(), text.size());
      out.commit();
      if (phase) phase("manifest written");
      sync_folder(tmp);
      // A step saved again: this run's own folder (a resume of an earlier step) is replaced; another
      // run's is never touched.
      const bool replacing = fs::exists(final_dir);
      if (replacing) {
        std::string owner = "an unreadable manifest";
        try {
          owner = "run " + read_manifest(final_dir).run_id;
        } catch (const std::exception&) {
        }
        TZ_CHECK(owner == "run " + p.run_id, "checkpoint ", final_dir, " already exists and belongs to ", owner,
                 ", not to this run (", p.run_id, "); it is left as it is: give another --save-dir");
        fs::remove_all(old), fs::rename(final_dir, old);
      }
      fs::rename(tmp, final_dir);
      sync_folder(dir);
      if (phase) phase("renamed");
      const std::string pointer = name + "\n";
      AtomicOutputFile latest(dir + "/latest", "checkpoint pointer", OutputWriter::checkpoint);
      latest.write(pointer.data(), pointer.size());
      latest.commit();
      prune(dir, opt.keep_last, name, p.run_id);
    });
  } catch (...) {
    // Every rank is past its writes (on_every_rank agrees first): nothing half-written stays behind.
    std::error_code ec;
    if (comm.rank() == 0) fs::remove_all(tmp, ec);
    throw;
  }
  return final_dir;
}

std::uint64_t owned_state_elements(const MemoryPlan& plan, int shard_of) {
  std::uint64_t n = 0;
  for (std::size_t g = 0; g < plan.layout.groups.size(); ++g) {
    const Shard r = plan.placement.groups[g].opt_range;
    std::uint64_t lo = r.offset, hi = std::min<std::uint64_t>(r.offset + r.count, plan.layout.groups[g].count);
    if (shard_of >= 0) {
      const Shard own = plan.map.shard_of(int(g), shard_of);
      lo = std::max<std::uint64_t>(lo, own.offset), hi = std::min<std::uint64_t>(hi, own.offset + own.count);
    }
    n += hi > lo ? hi - lo : 0;
  }
  return n;
}

}  // namespace tz
