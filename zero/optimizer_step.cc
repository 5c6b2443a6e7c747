// OptimizerStep: global norm, AdamW pieces on the device or the host, regather, zeroing.
#include "zero/optimizer_step.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/host_ops.h"
#include "core/numa.h"
#include "zero/group_adam.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

constexpr const char* kPartials = "gradient norm partials";
constexpr const char* kReadback = "gradient norm readback";

// Calls f(offset, count, decay) for each tensor's part of elements [lo, lo + n) of the padded group.
template <typename F>
void for_each_tensor(const GroupSpec& spec, std::size_t lo, std::size_t n, F&& f) {
  for (const TensorSpec& t : spec.tensors) {
    const std::size_t a = std::max(lo, t.offset), b = std::min(lo + n, t.offset + t.count);
    if (a < b) f(a - lo, b - a, t.decay);
  }
}

}  // namespace

std::vector<BufferSpec> OptimizerStep::buffers(const OptimizerPlan& p) {
  const std::size_t G = p.placement->groups.size(), chunk = p.update_chunk, es = dtype_size(p.dtype);
  std::vector<BufferSpec> v{{kPartials, "scalars", MemoryKind::device, (G + 1) * 8},
                            {kReadback, "scalars", MemoryKind::pinned_host, (G + 1) * 8}};
  bool grad = false, master = false, m = false, vv = false, up = false, down = false;
  for (const GroupPlacement& g : p.placement->groups) {
    if (in_host_memory(g.update_on)) {
      grad |= on_device(g.grad_home);
      master |= on_device(g.master_home);
      m |= on_device(g.m_home);
      vv |= on_device(g.v_home);
      up |= on_device(g.params_home);
    } else {
      down |= !on_device(g.params_home);
    }
  }
  auto stage = [&](bool need, const char* name, std::size_t bytes) {
    if (need) v.push_back({name, "host staging", MemoryKind::pinned_host, bytes});
  };
  stage(grad, "optimizer staging: gradients", chunk * 4);
  stage(master, "optimizer staging: fp32 master", chunk * 4);
  stage(m, "optimizer staging: adam m", chunk * 4);
  stage(vv, "optimizer staging: adam v", chunk * 4);
  stage(up, "optimizer staging: working params", chunk * es);
  if (down)
    v.push_back({"optimizer output: working params", "device staging", MemoryKind::device, chunk * es});
  for (BufferSpec& b : SpeculativeAdam::buffers(p)) v.push_back(std::move(b));
  return v;
}

OptimizerStep::OptimizerStep(Device& dev, Stream& stream, Communicator& comm, OptimizerPlan plan,
                             std::vector<GroupState>& groups, PlannedBuffers& planned,
                             OptimizerSwapper* optimizer_swap, ParamSwapper* param_swap,
                             std::size_t allgather_bucket)
    : dev_(dev),
      be_(dev.backend()),
      stream_(stream),
      comm_(comm),
      plan_(std::move(plan)),
      groups_(groups),
      optimizer_swap_(optimizer_swap),
      param_swap_(param_swap),
      allgather_bucket_(allgather_bucket),
      copied_(dev.create_event()),
      down_(dev.create_stream()),
      up_(dev.create_stream()),
      computed_(dev.create_event()),
      down_done_(dev.create_event()),
      up_done_(dev.create_event()) {
  partials_ = planned.take<double>(kPartials);
  readback_ = planned.take<double>(kReadback);
  auto take = [&](auto& buf, const char* name) {
    if (planned.has(name))
      buf = planned.take<typename std::remove_reference_t<decltype(buf)>::value_type>(name);
  };
  take(stage_grad_, "optimizer staging: gradients");
  take(stage_master_, "optimizer staging: fp32 master");
  take(stage_m_, "optimizer staging: adam m");
  take(stage_v_, "optimizer staging: adam v");
  take(stage_params_, "optimizer staging: working params");
  take(device_params_out_, "optimizer output: working params");
  if (SpeculativeAdam::enabled(plan_)) spec_ = std::make_unique<SpeculativeAdam>(plan_, groups, planned);
  // Buckets of up to allgather_bucket elements in group order (a larger group is a bucket of its own).
  std::size_t elems = 0;
  for (GroupState& g : groups_) {
    if (!g.place->regather_after_step) continue;
    if (regather_buckets_.empty() || elems + g.shards.padded > allgather_bucket_) {
      regather_buckets_.emplace_back();
      elems = 0;
    }
    regather_buckets_.back().push_back(g.index);
    elems += g.shards.padded;
  }
  updated_.assign(groups_.size(), 0);
  pieces_.resize(groups_.size());
  for (GroupState& g : groups_)
    if (g.packed) pieces_[g.index] = g.packed->split(plan_.update_chunk);
}

double OptimizerStep::global_norm_squared() {
  const std::size_t G = groups_.size();
  double* partial = partials_.data();
  double* total = partial + G;
  be_.memset_async(stream_, partial, 0, (G + 1) * sizeof(double));
  for (GroupState& g : groups_) {
    const std::size_t n = g.shard.count;
    if (g.grad.on_device()) {
      be_.sum_squares(stream_, partial + g.index, g.shard_grad(), n);
    } else {  // the same chunked sum on the host, then up into its slot
      readback_.data()[g.index] = host_sum_squares(g.shard_grad(), n);
      be_.copy_async(stream_, partial + g.index, readback_.data() + g.index, sizeof(double));
    }
  }
  be_.sum(stream_, total, partial, G);
  // A rank that updates a whole replica (no shard of the optimizer) reads every element of it: a
  // non-finite value outside its own shard, present on this rank only, must count too.
  for (GroupState& g : groups_)
    if (g.place->opt_range.count > g.shard.count)
      be_.check_finite(stream_, total, g.grad.data(), g.grad_count());
  if (comm_.size() > 1) comm_.all_reduce(total, 1, DType::f64)->wait(stream_);
  be_.copy_async(stream_, readback_.data() + G, total, sizeof(double));
  copied_->record(stream_);
  copied_->synchronize();  // the host decides the step from it
  return readback_.data()[G];
}

bool OptimizerStep::keep_speculative(GroupState& g, const AdamStep& a, float wd) {
  if (!spec_ || !spec_->started(g.index)) return false;
  if (!spec_->done_with(g.index, a, wd)) {
    spec_->roll_back(g.index);
    return false;
  }
  spec_->count_kept();
  if (const std::uint8_t* out = spec_->working_out(g.index)) {
    const GroupPlacement& gp = *g.place;
    be_.copy_async(*up_, g.params_at(gp.opt_range.offset), out, gp.opt_range.count * dtype_size(g.working));
  }
  return true;
}

void OptimizerStep::discard_speculation() {
  if (!spec_) return;
  spec_->finish();
  for (GroupState& g : groups_)
    if (spec_->started(g.index)) spec_->roll_back(g.index);
  spec_->reset();
}

void OptimizerStep::update(const AdamStep& adam, float wd) {
  if (spec_) spec_->finish();
  // What the down stream copies (gradients, device-resident states) was written on the compute stream.
  computed_->record(stream_);
  computed_->wait(*down_);
  if (optimizer_swap_ && optimizer_swap_->packed()) {
    // the same ring over compressed states: each record's pieces, cut on blocks
    optimizer_swap_->for_each_packed([&](const PackedUnit& u, const CompressedArrays& a) {
      for (const StatePiece& p : u.layout.pieces)
        update_piece(groups_[u.g], u.begin + p.begin, p, a, adam, wd);
    });
    flush_params_window();
  } else if (optimizer_swap_) {
    // read k+1 / update k / write k-1 through the staging ring
    optimizer_swap_->for_each([&](int g, std::size_t begin, std::size_t n, float* p, float* m, float* v) {
      update_on_host(groups_[g], begin, n, p, m, v, adam, wd);
    });
  } else {
    // ZeRO-Offload++'s twin flow: the device's AdamW of the groups kept there is enqueued first, so on a
    // GPU it runs while the host runs the CPU Adam of the others (each group's arithmetic is its own, so
    // the order does not change any bits).
    // Each group's all-gather bucket starts as soon as every group in it is updated.
    for (bool device_pass : {true, false})
      for (GroupState& g : groups_) {
        if (on_device(g.place->update_on) != device_pass) continue;  // where the AdamW runs, not a state
        if (g.packed) {
          for (const StatePiece& p : pieces_[g.index]) update_piece(g, p.begin, p, g.compressed(), adam, wd);
          flush_params_window();
        }
        if (!g.packed && !keep_speculative(g, adam, wd))
          for (std::size_t b = 0; b < g.place->opt_range.count; b += plan_.update_chunk) {
            const std::size_t n = std::min(plan_.update_chunk, g.place->opt_range.count - b);
            if (device_pass)
              update_on_device(g, b, n, adam, wd);
            else
              update_on_host(g, b, n, nullptr, nullptr, nullptr, adam, wd);
          }
        updated_[g.index] = 1;
        launch_regathers();
      }
  }
  if (spec_) {
    // The copies up read the arena; the next step's speculation writes it.
    up_done_->record(*up_);
    up_done_->synchronize();
    spec_->reset();
  }
  if (param_swap_) param_swap_->drain();
  std::fill(updated_.begin(), updated_.end(), 1);  // the swap pipeline's order: every group is done now
  launch_regathers();
  for (auto& w : regathers_) w->wait(stream_);
  regathers_.clear();
  std::fill(updated_.begin(), updated_.end(), 0);
  next_regather_ = 0;
}

void OptimizerStep::update_piece(GroupState& g, std::size_t begin, const StatePiece& p,
                                 const CompressedArrays& a, const AdamStep& adam, float wd) {
  if (on_device(g.place->update_on)) {
    if (p.count) update_packed_on_device(g, begin, p, a, adam, wd);
    return;
  }
  if (p.count) update_on_host(g, begin, p.count, nullptr, nullptr, nullptr, adam, wd, &p, &a);
  // A piece of padding alone has no update, but its params' bytes in the store are written with the window.
  if (!p.count && g.params.in_file()) write_params_window(g, begin, p.span, a, p.begin);
}

void OptimizerStep::write_params_window(GroupState& g, std::size_t begin, std::size_t n,
                                        const CompressedArrays& a, std::size_t from) {
  const std::size_t chunk = plan_.update_chunk, es = dtype_size(g.working);
  while (n) {
    if (!window_ || window_g_ != g.index || begin < window_lo_ || begin >= window_lo_ + chunk) {
      flush_params_window();
      window_g_ = g.index;
      window_lo_ = begin / chunk * chunk;
      window_ = static_cast<std::uint8_t*>(param_swap_->writeback_buffer());
    }
    const std::size_t k = std::min(n, window_lo_ + chunk - begin);
    master_to_working(a, from, k, window_ + (begin - window_lo_) * es, g.working);
    begin += k, from += k, n -= k;
  }
}

void OptimizerStep::flush_params_window() {
  if (!window_) return;
  const std::size_t count = groups_[window_g_].place->opt_range.count;
  param_swap_->commit(window_g_, window_lo_, std::min(plan_.update_chunk, count - window_lo_));
  window_ = nullptr;
}

void OptimizerStep::update_packed_on_device(GroupState& g, std::size_t begin, const StatePiece& p,
                                            const CompressedArrays& a, const AdamStep& adam, float wd) {
  const GroupPlacement& gp = *g.place;
  const std::size_t lo = gp.opt_range.offset + begin, n = p.count, es = dtype_size(g.working);
  be_.adamw_compressed(stream_, piece_step(p, adam, wd), piece_states(a, p), g.grad_at(begin), n,
                       piece_position(p, plan_.rounding_seed, g.index));
  // The working params from the master, on the device too.
  std::uint8_t* at = g.params_at(lo);
  std::uint8_t* out = g.params.device_out(at, device_params_out_.data());
  const std::uint8_t* master = a.master + piece_bytes(*a.layout, p).master_at;
  const DType md = a.layout->master == MasterFormat::bf16_sr ? DType::bf16 : DType::f32;
  if (md == g.working)
    be_.copy_async(stream_, out, master, n * es);
  else
    be_.cast(stream_, out, g.working, master, md, n);
  if (out != at) params_down(g, begin, n, out);  // staged on the device: down to where they live
}

void OptimizerStep::params_down(GroupState& g, std::size_t begin, std::size_t n, const std::uint8_t* out) {
  const std::size_t lo = g.place->opt_range.offset + begin, es = dtype_size(g.working);
  std::uint8_t* at = g.params_at(lo);
  std::uint8_t* dst = g.params.host_out(at, nullptr);  // off the device: host memory or the store's window
  computed_->record(stream_);
  computed_->wait(*down_);
  be_.copy_async(*down_, dst, out, n * es);
  down_done_->record(*down_);
  down_done_->synchronize();  // `out` is reused by the next piece; the write-back reads `dst`
  g.params.host_wrote(be_, *up_, at, dst, n * es, begin, n);
}

void OptimizerStep::update_on_device(GroupState& g, std::size_t begin, std::size_t n, const AdamStep& adam,
                                     float wd) {
  const GroupPlacement& gp = *g.place;
  const std::size_t lo = gp.opt_range.offset + begin, es = dtype_size(g.working);
  std::uint8_t* at = g.params_at(lo);
  std::uint8_t* out = gp.master_is_params ? nullptr : g.params.device_out(at, device_params_out_.data());
  for_each_tensor(*g.spec, lo, n, [&](std::size_t off, std::size_t cnt, bool decay) {
    AdamStep s = adam;
    s.weight_decay = decay ? wd : 0.0f;
    be_.adamw(stream_, g.master_at(begin + off), g.m.data() + begin + off, g.v.data() + begin + off,
              g.grad_at(begin + off), cnt, s, out ? out + off * es : nullptr, g.working);
  });
  // Staged on the device (the shard lives off it): bring the updated working params down to it.
  if (out && out != at) params_down(g, begin, n, out);
}

void OptimizerStep::update_on_host(GroupState& g, std::size_t begin, std::size_t n, float* p, float* m,
                                   float* v, const AdamStep& adam, float wd, const StatePiece* piece,
                                   const CompressedArrays* arrays) {
  const GroupPlacement& gp = *g.place;
  const std::size_t lo = gp.opt_range.offset + begin, es = dtype_size(g.working);
  // Host pointers to every array the CPU Adam reads: each array's own, or staged down by it.
  bool staged = false;
  const float* gr = g.grad.for_host(be_, *down_, g.grad_at(begin), n, stage_grad_.data(), staged);
  if (!p && !piece) {  // not streamed from NVMe, nor compressed (held in host memory)
    p = g.master.for_host(be_, *down_, g.master_at(begin), n, stage_master_.data(), staged);
    m = g.m.for_host(be_, *down_, g.m.data() + begin, n, stage_m_.data(), staged);
    v = g.v.for_host(be_, *down_, g.v.data() + begin, n, stage_v_.data(), staged);
  }
  if (staged) {
    down_done_->record(*down_);
    down_done_->synchronize();
  }
  // Compressed pieces write params in the store through block-aligned windows (write_params_window).
  std::uint8_t* at = g.params_at(lo);
  std::uint8_t* out = piece && g.params.in_file() ? nullptr : g.params.host_out(at, stage_params_.data());
  {
    // States on a numa:N tier are updated in place by threads on the node's nearest CPUs.
    const int node = tier_numa_node(gp.master_home);
    std::optional<OmpTeamOnCpus> near;
    if (node >= 0) near.emplace(nearest_cpus(node));
    if (piece) {  // the piece's arrays: the group's in host memory, or a record in the NVMe ring
      const CompressedArrays a = arrays ? *arrays : g.compressed();
      update_compressed(a, *piece, gr, adam, wd, plan_.rounding_seed, g.index);
      if (out)
        master_to_working(a, piece->begin, n, out, g.working);
      else  // its whole span: the padding's params in the store are written too
        write_params_window(g, begin, piece->span, a, piece->begin);
    } else {
      group_adamw(*g.spec, lo, n, p, m, v, gr, out, g.working, adam, wd);
    }
  }
  // Staged arrays go back up, the working params to where they live.
  bool up = false;
  if (!optimizer_swap_) {  // states streamed from NVMe go back through the swapper's ring
    up |= g.master.back_from_host(be_, *up_, g.master_at(begin), p, n);
    up |= g.m.back_from_host(be_, *up_, g.m.data() + begin, m, n);
    up |= g.v.back_from_host(be_, *up_, g.v.data() + begin, v, n);
  }
  if (out) up |= g.params.host_wrote(be_, *up_, at, out, n * es, begin, n);
  if (up) {  // the staging is reused by the next piece, and the compute stream reads what went up
    up_done_->record(*up_);
    up_done_->synchronize();
  }
}

void OptimizerStep::launch_regathers() {
  bool ordered = false;
  while (next_regather_ < regather_buckets_.size()) {
    const std::vector<int>& bucket = regather_buckets_[next_regather_];
    for (int g : bucket)
      if (!updated_[g]) return;
    if (!ordered) {
      // The collectives read working params the compute stream (the device AdamW) and the up stream (host
      // updates, kept speculation) wrote: the compute stream waits for the up stream, and the collective
      // for the compute stream (as its producer stream, or by the host here).
      up_done_->record(*up_);
      up_done_->wait(stream_);
      if (!comm_.follows_producer_stream()) {
        computed_->record(stream_);
        computed_->synchronize();
      }
      ordered = true;
    }
    CollectiveGroup group(comm_);
    for (int g : bucket) {
      GroupState& s = groups_[g];
      regathers_.push_back(comm_.all_gather(s.params_at(s.shard.offset), s.params.data(), s.shard.count, s.working));
    }
    group.end();
    ++next_regather_;
  }
}

void OptimizerStep::zero_grads() {
  for (GroupState& g : groups_) g.grad.zero(be_, stream_, g.grad_count());
}

}  // namespace tz
