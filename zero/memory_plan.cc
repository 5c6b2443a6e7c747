// plan_memory(): every buffer of this rank, from the placement and each component's own plan.
#include "zero/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "core/blockwise_quant.h"
#include "core/device_traits.h"
#include "core/error.h"
#include "zero/numa_tier.h"
#include "zero/optimizer_step.h"

namespace tz {

namespace {

// A group's compressed master, m and v on the host tier, as their layout sizes them.
void add_compressed_states(std::vector<BufferSpec>& v, const GroupSpec& spec, const GroupPlacement& gp,
                           const CompressedLayout& l, MomentFormat moments) {
  const MemoryKind k = tier_memory(gp.master_home);
  v.push_back({master_buffer(spec.name), master_class(l.master), k, l.master_bytes()});
  v.push_back({adam_m_buffer(spec.name), moment_class("adam m", moments), k, l.moment_array_bytes()});
  v.push_back({adam_v_buffer(spec.name), moment_class("adam v", moments), k, l.moment_array_bytes()});
}

// A group's persistent states: working params, gradients, fp32 master, Adam m and v, where placed.
void add_states(std::vector<BufferSpec>& v, const GroupSpec& spec, const GroupShards& sh,
                const GroupPlacement& gp, DType working, const CompressedLayout& packed, MomentFormat moments) {
  const std::size_t es = dtype_size(working);
  if (!in_file(gp.params_home))
    v.push_back({params_buffer(spec.name), "working params", tier_memory(gp.params_home),
                 (gp.params_sharded ? sh.shard_count : sh.padded) * es});
  v.push_back({grad_buffer(spec.name), gp.grads_sharded ? "fp32 grad shards" : "fp32 grads",
               tier_memory(gp.grad_home), (gp.grads_sharded ? sh.shard_count : sh.padded) * 4});
  if (!packed.empty()) return add_compressed_states(v, spec, gp, packed, moments);
  const std::size_t n = gp.opt_range.count * 4;
  if (!in_file(gp.master_home) && !gp.master_is_params)
    v.push_back({master_buffer(spec.name), "fp32 master", tier_memory(gp.master_home), n});
  if (!in_file(gp.m_home)) v.push_back({adam_m_buffer(spec.name), "adam m", tier_memory(gp.m_home), n});
  if (!in_file(gp.v_home)) v.push_back({adam_v_buffer(spec.name), "adam v", tier_memory(gp.v_home), n});
}

// Backward's transient full-size gradients where groups are reduced every micro-step: the embedding's
// stays open through the whole backward (the tied LM head first, the encoder last) and has its own;
// every other group shares one.
void add_backward_grads(std::vector<BufferSpec>& v, const MemoryPlan& p) {
  std::size_t big = 0, small = 0;
  for (int g = 0; g < p.map.groups(); ++g) {
    if (!p.placement.groups[g].grads_sharded) continue;
    (g == p.placement.embedding_group ? big : small) =
        std::max(g == p.placement.embedding_group ? big : small, p.map.group(g).padded);
  }
  if (big)
    v.push_back({"backward gradient (embedding)", "backward gradient buffers", MemoryKind::device, big * 4});
  if (small)
    v.push_back(
        {"backward gradient (one block)", "backward gradient buffers", MemoryKind::device, small * 4});
}

void append(std::vector<BufferSpec>& v, const std::vector<BufferSpec>& more) {
  v.insert(v.end(), more.begin(), more.end());
}

// Before anything is sized: an upper bound, in floating point, of the largest buffers (the activations
// with every block's set kept, attention probabilities of T x T per head, logits and their low-precision
// copies; every state in fp32, unsharded). Refused beyond kMaxPlanBytes, so that no byte count the plan
// then computes in 64 bits can wrap. The model's sizes are bounded on their own (ModelConfig::validate).
void check_plan_size(const PlanInputs& in) {
  TZ_CHECK(in.shape.B >= 1 && in.shape.T >= 1, "--micro-batch and --seq-len must be at least 1, got ", in.shape.B,
           " and ", in.shape.T);
  in.model.validate();
  const ModelFamily& family = model_family(in.model);
  const double acts = family.activation_bytes_bound(in.model, in.shape);
  const double states = 20 * double(in.model.num_parameters());
  const double limit = kMaxPlanBytes;
  TZ_CHECK(acts <= limit, "the activations of --micro-batch ", in.shape.B, " x --seq-len ", in.shape.T,
           " on this model (", in.model.describe(), ") would take about ", format_bytes(std::size_t(acts)),
           " per rank, beyond the ", format_bytes(std::size_t(limit)), " any plan may hold; lower them");
  TZ_CHECK(states <= limit, "the states of this model (", in.model.describe(), ") would take about ",
           format_bytes(std::size_t(states)), ", beyond the ", format_bytes(std::size_t(limit)),
           " any plan may hold; lower them");
  TZ_CHECK(in.world >= 1 && in.world <= kMaxWorld && in.rank >= 0 && in.rank < in.world, "world size ", in.world,
           " and rank ", in.rank, ": the world must be in [1, ", kMaxWorld, "] and the rank in [0, world)");
}

// Compressed states: each group's layout over this rank's range, after every rank's range is checked (so
// that a shard cutting an int8 block is refused on every rank alike, naming the first).
void plan_compressed(MemoryPlan& p) {
  const OffloadOptions& o = p.in.offload;
  if (!o.compressed_states()) return;
  for (int g = 0; g < p.map.groups(); ++g) {
    const GroupSpec& spec = p.layout.groups[g];
    const bool sharded = p.placement.groups[g].opt_range.count < p.map.group(g).padded;
    for (int r = 0; sharded && o.optimizer_states == MomentFormat::int8 && r < p.map.world(); ++r)
      compressed_layout(spec, p.map.shard_of(g, r), o.optimizer_states, o.master_weights,
                        "rank " + std::to_string(r) + "'s shard of " + spec.name);
    p.compressed.push_back(compressed_layout(spec, p.placement.groups[g].opt_range, o.optimizer_states,
                                             o.master_weights, spec.name));
  }
}

bool is_state_class(const std::string& c) {
  for (const char* s : {"working params", "fp32 grads", "fp32 grad shards", "fp32 master", "bf16 master", "adam m",
                        "adam v"})
    if (c.rfind(s, 0) == 0) return true;
  return false;
}

}  // namespace

MemoryPlan plan_memory(const PlanInputs& in) {
  check_plan_size(in);
  MemoryPlan p;
  p.in = in;
  p.layout = ParamLayout::build(in.model);
  p.map = ShardMap(p.layout, in.world, in.rank,
                   in.offload.optimizer_states == MomentFormat::int8 ? kQuantBlock : kShardAlign);
  p.placement = place(p.layout, p.map, in.dtype, in.zero, in.offload);
  const Placement& pl = p.placement;
  const std::size_t block = in.offload.aio_block_size;
  std::vector<std::size_t> counts;
  std::size_t largest_range = 0;
  for (const GroupPlacement& gp : pl.groups) {
    counts.push_back(gp.opt_range.count);
    largest_range = std::max(largest_range, gp.opt_range.count);
  }
  p.update_chunk = std::min(optimizer_chunk_elems(in.offload.sub_group_size, block), largest_range);
  plan_compressed(p);
  if (in_file(in.offload.optimizer)) {
    p.optimizer_swap =
        p.compressed.empty()
            ? plan_optimizer_swap(counts, 0, in.offload.sub_group_size, in.offload.buffer_count, block)
            : plan_packed_swap(p.compressed, 0, in.offload.sub_group_size, in.offload.buffer_count, block);
    p.update_chunk = p.optimizer_swap.chunk;
  }
  // Compressed states are updated in pieces cut on blocks: a piece of the gradient staging holds whole
  // blocks.
  if (!p.compressed.empty() && p.update_chunk % kQuantBlock)
    p.update_chunk = (p.update_chunk / kQuantBlock + 1) * kQuantBlock;
  p.param_swap = plan_param_swap(p.map, pl, p.optimizer_swap.bytes, block, p.update_chunk);
  p.nvme_bytes = p.optimizer_swap.bytes + p.param_swap.bytes;
  if (pl.reduce)
    p.buckets =
        plan_buckets(p.map, pl.reduce_scatter, in.zero.reduce_bucket_size, model_family(in.model).gradient_order(p.layout));
  p.gathers = plan_gathers(p.map, pl, in.zero);

  for (int g = 0; g < p.map.groups(); ++g)
    add_states(
        p.buffers, p.layout.groups[g], p.map.group(g), pl.groups[g], in.dtype,
        p.compressed.empty() || in_file(pl.groups[g].master_home) ? CompressedLayout{} : p.compressed[g],
        in.offload.optimizer_states);
  add_backward_grads(p.buffers, p);
  bool host_grads = false;
  for (const GroupPlacement& gp : pl.groups) host_grads |= in_host_memory(gp.grad_home);
  if (pl.reduce) append(p.buffers, GradReducer::buffers(p.map, p.buckets, host_grads));
  append(p.buffers, ParamGatherer::buffers(p.gathers, in.dtype));
  if (!p.optimizer_swap.counts.empty()) append(p.buffers, OptimizerSwapper::buffers(p.optimizer_swap));
  append(p.buffers, ParamSwapper::buffers(p.param_swap));
  append(p.buffers, OptimizerStep::buffers(p.optimizer()));
  p.buffers.push_back({kLossSums, "scalars", MemoryKind::device, 3 * sizeof(double)});
  p.buffers.push_back({kLossReadback, "scalars", MemoryKind::pinned_host, 3 * sizeof(double)});
  p.buffers.push_back({kTokenStaging, "scalars", MemoryKind::pinned_host,
                       4 * std::size_t(in.shape.B) * in.shape.T * sizeof(std::int32_t)});
  const MemoryKind ckpt = tier_memory(in.offload.activations);
  append(p.buffers, model_family(in.model).buffers(in.model, in.shape, in.precision(), in.checkpointing, ckpt, in.device));
  p.outside = outside_lines(p);
  return p;
}

OptimizerPlan MemoryPlan::optimizer() const {
  OptimizerPlan o;
  o.placement = &placement;
  o.update_chunk = update_chunk;
  o.dtype = in.dtype;
  o.overlap = in.offload.overlap_optimizer;
  o.overlap_by_default = device_traits(in.device).overlap_optimizer;
  o.overlap_share = in.offload.overlap_optimizer_share;
  o.backward_order = buckets.order;
  o.compressed = &compressed;
  o.rounding_seed = in.offload.rounding_seed;
  // The speculative CPU Adam is fp32's: `automatic` does not start it over compressed states (and place()
  // refuses `on`).
  if (!compressed.empty()) o.overlap = OptimizerOverlap::off;
  return o;
}

std::size_t MemoryPlan::total(Tier t) const {
  if (in_file(t)) return nvme_bytes;
  std::size_t n = 0;
  for (const BufferSpec& b : buffers)
    if (memory_tier(b.kind) == t) n += b.bytes;
  return n;
}

std::size_t MemoryPlan::held(Tier t) const {
  std::size_t n = total(t);
  for (const PlanLine& l : outside)
    if (l.tier == t) n += l.bytes;
  return n;
}

std::size_t MemoryPlan::state_bytes(Tier t) const {
  std::size_t n = 0;
  for (const BufferSpec& b : buffers)
    if (memory_tier(b.kind) == t && is_state_class(b.cls))
      n += b.bytes;
  return n;
}

std::vector<PlanRow> MemoryPlan::rows() const {
  std::vector<PlanRow> r;
  auto add = [&](const std::string& what, Tier t, std::size_t bytes) {
    for (PlanRow& x : r)
      if (x.what == what && x.tier == t) return void(x.bytes += bytes);
    r.push_back({what, t, bytes});
  };
  for (const BufferSpec& b : buffers) add(b.cls, memory_tier(b.kind), b.bytes);
  if (optimizer_swap.bytes && optimizer_swap.packed.empty()) {
    // Three arrays per group (master, m, v), each block-aligned: a third of the range each.
    for (const char* c : {"fp32 master", "adam m", "adam v"}) add(c, in.offload.optimizer, optimizer_swap.bytes / 3);
  }
  // Compressed, a record per sub-group: its master, m and v, and the rest of its last block.
  const Tier nvme = in.offload.optimizer;
  const MomentFormat mf = in.offload.optimizer_states;
  for (std::size_t i = 0; i < optimizer_swap.packed.size(); ++i) {
    const PackedUnit& u = optimizer_swap.packed[i];
    const std::uint64_t end = i + 1 < optimizer_swap.packed.size()
                                  ? optimizer_swap.packed[i + 1].offset
                                  : optimizer_swap.base + optimizer_swap.bytes;
    add(master_class(u.layout.master), nvme, u.m_byte);
    add(moment_class("adam m", mf), nvme, u.v_byte - u.m_byte);
    add(moment_class("adam v", mf), nvme, u.bytes - u.v_byte);
    add("store block padding", nvme, std::size_t(end - u.offset) - u.bytes);
  }
  if (param_swap.bytes) add("working params", in.offload.param, param_swap.bytes);
  for (const PlanLine& l : outside) add(l.what, l.tier, l.bytes);
  return r;
}

std::string MemoryPlan::table() const {
  std::string t = "memory plan (rank " + std::to_string(in.rank) + " of " + std::to_string(in.world) + "):\n";
  char b[200];
  for (const PlanRow& r : rows()) {
    std::snprintf(b, sizeof b, "  %-40s %-6s %12s\n", r.what.c_str(), tier_name(r.tier).c_str(),
                  format_bytes(r.bytes).c_str());
    t += b;
  }
  for (Tier tier : tiers()) {
    std::snprintf(b, sizeof b, "  %-40s %-6s %12s of %s\n", "total", tier_name(tier).c_str(),
                  format_bytes(held(tier)).c_str(), format_bytes(in.budget[tier]).c_str());
    t += b;
  }
  for (const PlanLine& l : outside) t += "  (" + l.what + ": " + l.source + ")\n";
  t += compressed_line();
  t.pop_back();
  return t;
}

std::string MemoryPlan::compressed_line() const {
  if (compressed.empty()) return "";
  std::size_t packed = 0, fp32 = 0;
  for (std::size_t g = 0; g < compressed.size(); ++g) {
    packed += compressed[g].master_bytes() + 2 * compressed[g].moment_array_bytes();
    fp32 += 3 * sizeof(float) * compressed[g].range;
  }
  char b[240];
  // On NVMe these bytes are also what a step reads and writes back (each once).
  const Tier t = in.offload.optimizer;
  const std::string where = in_file(t)              ? "on nvme (read and written once a step)"
                            : on_device(t)          ? "on the device"
                            : tier_numa_node(t) < 0 ? "on the host tier"
                                                    : "on " + tier_name(t);
  std::snprintf(b, sizeof b, "  (optimizer states %s, master %s: %s %s, %s in fp32: %.3fx)\n",
                std::string(moment_format_name(in.offload.optimizer_states)).c_str(),
                std::string(master_format_name(in.offload.master_weights)).c_str(),
                format_bytes(packed).c_str(), where.c_str(), format_bytes(fp32).c_str(),
                fp32 ? double(packed) / double(fp32) : 0.0);
  return b;
}

std::string MemoryPlan::fit_problem() const {
  for (Tier t : tiers()) {
    const std::size_t need = held(t), budget = in.budget[t];
    if (need <= budget) continue;
    std::vector<PlanRow> r = rows();
    std::erase_if(r, [&](const PlanRow& x) { return x.tier != t; });
    std::sort(r.begin(), r.end(), [](const PlanRow& a, const PlanRow& b) { return a.bytes > b.bytes; });
    std::string largest;
    for (std::size_t k = 0; k < std::min<std::size_t>(3, r.size()); ++k)
      largest += (k ? ", " : "") + r[k].what + " " + format_bytes(r[k].bytes);
    return detail::concat("out of ", tier_name(t), " memory budget: the memory plan needs ", format_bytes(need),
                          " on the ", tier_name(t), " tier of rank ", in.rank, " but the budget is ",
                          format_bytes(budget), ", short by ", format_bytes(need - budget), " (largest: ", largest,
                          "); raise the budget (", tier_traits(t).budget_flag, ")",
                          on_device(t) ? ", use a smaller model, micro-batch, sequence length or --reduce-bucket-size, or "
                                   "offload states (--offload-optimizer, --offload-param, --offload-activations)"
                                 : ", or offload less to this tier");
  }
  return "";
}

void MemoryPlan::check_fits() const {
  const std::string p = fit_problem();
  if (!p.empty()) TZ_FAIL(p);
}

}  // namespace tz
