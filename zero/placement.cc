// place(): the only function that reads the stage; everything downstream reads the per-group facts.
#include "zero/placement.h"

#include "core/error.h"
#include "zero/numa_tier.h"

namespace tz {

bool Placement::any(bool GroupPlacement::*flag) const {
  for (const GroupPlacement& g : groups)
    if (g.*flag) return true;
  return false;
}


namespace {

// Compressed states (issue 36) live on any tier: updated by the device's backend (adamw_compressed) on the
// device, by the CPU Adam in host memory (the host tier, numa:N) or streamed from NVMe. What is not built is
// refused by name, never run in fp32.
void check_state_formats(const OffloadOptions& o) {
  if (!o.compressed_states()) return;
  const std::string flag = o.optimizer_states != MomentFormat::fp32
                               ? "--optimizer-states " + std::string(moment_format_name(o.optimizer_states))
                               : "--master-weights " + std::string(master_format_name(o.master_weights));
  TZ_CHECK(!on_device(o.optimizer) || !in_file(o.param), flag,
           " with the optimizer on the device is not yet supported with the parameters on nvme; keep the "
           "parameters on the device or the host, or put the optimizer on nvme too");
  TZ_CHECK(on_device(o.optimizer) || (o.host_ratio_master == 1 && o.host_ratio_m == 1 && o.host_ratio_v == 1),
           flag,
           " needs every optimizer state on one tier; --offload-ratio below 1 (offload_optimizer.ratio) would "
           "split a group's states between the device and ",
           tier_name(o.optimizer), ": give ratio 1");
  TZ_CHECK(o.overlap_optimizer != OptimizerOverlap::on, flag,
           " is not yet supported with --overlap-optimizer on (the speculative CPU Adam is fp32): give off or auto");
}

void check_options(int stage, const OffloadOptions& o) {
  TZ_CHECK(stage >= 0 && stage <= 3, "ZeRO stage must be 0, 1, 2 or 3, got ", stage);
  TZ_CHECK(on_device(o.param) || stage == 3, "offload_param needs ZeRO stage 3 (parameters are only ",
           "partitioned there); got stage ", stage);
  TZ_CHECK(
      (!in_file(o.optimizer) && !in_file(o.param)) || !o.nvme_paths.empty(),
      "offloading to nvme needs at least one --nvme-path (zero_optimization.offload_optimizer.nvme_path)");
  TZ_CHECK(!in_file(o.activations), "activation checkpoints can be offloaded to cpu, not ", tier_name(o.activations));
  for (double r : {o.host_ratio_master, o.host_ratio_m, o.host_ratio_v})
    TZ_CHECK(r >= 0 && r <= 1, "an offload ratio must be in [0, 1], got ", r);
  check_state_formats(o);
}

// Per optimizer class, which groups live on the offload tier: whole groups in order until the class's
// share (offload_optimizer.ratio) of this rank's optimizer elements is reached.
std::vector<bool> host_groups(const std::vector<GroupPlacement>& gp, double ratio) {
  double total = 0, placed = 0;
  for (const GroupPlacement& g : gp) total += double(g.opt_range.count);
  std::vector<bool> on_host(gp.size(), false);
  for (std::size_t i = 0; i < gp.size(); ++i) {
    const double c = double(gp[i].opt_range.count);
    if (placed + 0.5 * c <= ratio * total) on_host[i] = true, placed += c;
  }
  return on_host;
}

void place_optimizer(std::vector<GroupPlacement>& gp, const OffloadOptions& o) {
  if (on_device(o.optimizer)) return;
  if (in_file(o.optimizer)) {
    for (GroupPlacement& g : gp) g.master_home = g.m_home = g.v_home = o.optimizer;
    return;
  }
  const auto master = host_groups(gp, o.host_ratio_master), m = host_groups(gp, o.host_ratio_m),
             v = host_groups(gp, o.host_ratio_v);
  for (std::size_t i = 0; i < gp.size(); ++i) {
    gp[i].master_home = master[i] ? o.optimizer : Tier::device;
    gp[i].m_home = m[i] ? o.optimizer : Tier::device;
    gp[i].v_home = v[i] ? o.optimizer : Tier::device;
  }
}

}  // namespace

Placement place(const ParamLayout& layout, const ShardMap& map, DType working, const ZeroOptions& zero,
                const OffloadOptions& o) {
  const int stage = zero.stage;
  check_options(stage, o);
  Placement p;
  p.world = map.world();
  p.rank = map.rank();
  p.working = working;
  p.reduce_scatter = stage >= 1;
  p.reduce = map.world() > 1 || stage >= 1;
  p.embedding_group = layout.embedding_group();
  p.groups.resize(layout.groups.size());
  for (int g = 0; g < map.groups(); ++g) {
    GroupPlacement& gp = p.groups[g];
    gp.params_sharded = stage == 3 && layout.groups[g].count >= zero.param_persistence_threshold;
    gp.params_home = gp.params_sharded ? o.param : Tier::device;
    gp.grads_sharded = stage >= 2;
    gp.opt_range = stage == 0 ? Shard{0, map.group(g).padded} : map.shard(g);
    gp.regather_after_step = stage >= 1 && !gp.params_sharded && map.world() > 1;
  }
  place_optimizer(p.groups, o);
  // The host memory the CPU Adam works in: the optimizer's tier, or the host tier's when the states are
  // swapped from a file.
  const Tier host_side = in_host_memory(o.optimizer) ? o.optimizer : Tier::host;
  for (GroupPlacement& gp : p.groups) {
    const bool host_update = !on_device(gp.master_home) || !on_device(gp.m_home) || !on_device(gp.v_home);
    gp.update_on = host_update ? host_side : Tier::device;
    // The optimizer reads the reduced shard where it runs (stages 2-3).
    gp.grad_home = gp.grads_sharded ? gp.update_on : Tier::device;
    // fp32 working params on the device serve as the master unless another tier updates it or the
    // shard lives off the device (then the master must outlive the working copy's write-back).
    gp.master_is_params = working == DType::f32 && !host_update && on_device(gp.params_home);
  }
  return p;
}

}  // namespace tz
