// Engine: construction from the plan, the ParamProvider protocol, and the step's decisions.
#include "zero/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <tuple>

#include "core/backend.h"
#include "core/error.h"
#include "core/host_ops.h"
#include "zero/device_pieces.h"

namespace tz {

Engine::Engine(Device& dev, Stream& stream, Communicator& comm, const MemoryPlan& plan,
               PlannedBuffers& planned, const EngineConfig& cfg, const GroupInit& init, EngineHooks hooks)
    : dev_(dev),
      stream_(stream),
      comm_(comm),
      plan_(plan),
      cfg_(cfg),
      hooks_(std::move(hooks)),
      fp16_(plan.in.dtype == DType::f16),
      reduce_every_micro_step_(plan.placement.any(&GroupPlacement::grads_sharded)),
      nvme_budget_("nvme", plan.in.budget[Tier::nvme]),
      done_(dev.create_event()) {
  TZ_CHECK(cfg.grad_accum >= 1, "gradient accumulation steps must be at least 1, got ", cfg.grad_accum);
  TZ_CHECK(comm.size() == plan.map.world() && comm.rank() == plan.map.rank(), "the memory plan is for rank ",
           plan.map.rank(), " of ", plan.map.world(), ", this is rank ", comm.rank(), " of ", comm.size());
  if (fp16_) scaler_ = LossScaler(cfg.fp16);
  const int G = plan.map.groups();
  groups_.resize(G);
  for (int g = 0; g < G; ++g) {
    GroupState& s = groups_[g];
    s.index = g;
    s.spec = &plan.layout.groups[g];
    s.shards = plan.map.group(g);
    s.shard = plan.map.shard(g);
    s.place = &plan.placement.groups[g];
    s.working = plan.in.dtype;
    // Compressed states in host memory; on NVMe they are the optimizer swapper's.
    if (!plan.compressed.empty() && !in_file(s.place->master_home)) s.packed = &plan.compressed[g];
    s.take(planned);
  }
  if (planned.has("backward gradient (embedding)"))
    backward_big_ = planned.take<float>("backward gradient (embedding)");
  if (planned.has("backward gradient (one block)"))
    backward_small_ = planned.take<float>("backward gradient (one block)");
  if (plan.nvme_bytes) open_store();
  if (!plan.optimizer_swap.counts.empty())
    optimizer_swap_ = std::make_unique<OptimizerSwapper>(*store_, plan.optimizer_swap, planned);
  if (plan.param_swap.any()) {
    param_swap_ = std::make_unique<ParamSwapper>(*store_, plan.param_swap, plan.in.dtype, planned);
    for (GroupState& g : groups_) g.params.held_by(param_swap_.get(), g.index);
  }
  if (plan.placement.reduce) make_reducer(planned);
  if (plan.gathers.any()) make_gatherer(planned);
  optimizer_ =
      std::make_unique<OptimizerStep>(dev, stream, comm, plan.optimizer(), groups_, planned, optimizer_swap_.get(),
                                      param_swap_.get(), plan.in.zero.allgather_bucket_size);
  if (reducer_ && optimizer_->speculation()) {
    // At the last micro-step a group's reduced gradient on the host is final: its CPU Adam can start
    // while backward goes on (validated, and kept or rolled back, in step()).
    reducer_->on_delivered([this](int g) {
      if (!last_micro_ || !spec_policy_.active()) return;
      const float unscale = 1.0f / (float(comm_.size()) * (fp16_ ? scaler_.scale() : 1.0f));
      const AdamStep a{learning_rate(cfg_.lr, step_ + 1), cfg_.adam.beta1, cfg_.adam.beta2, cfg_.adam.eps, 0.0f,
                       step_ + 1, unscale};
      optimizer_->speculation()->start(g, a, cfg_.adam.weight_decay);
    });
  }
  initialize(init);
  if (store_) {
    // The host buffers the store reads into and writes from, registered as io_uring fixed buffers
    // where the memlock limit allows (else plain reads and writes, said once).
    std::vector<std::span<std::byte>> regions;
    if (optimizer_swap_) regions = optimizer_swap_->regions();
    if (param_swap_)
      for (auto r : param_swap_->regions()) regions.push_back(r);
    if (gatherer_)
      for (auto r : gatherer_->staging_regions()) regions.push_back(r);
    const std::string why = store_->register_buffers(regions);
    if (!why.empty() && comm.rank() == 0) log_line("NVMe staging not registered with io_uring (" + why + ")");
  }
}

Engine::~Engine() = default;

void Engine::open_store() {
  // ZeRO-Infinity: this rank's optimizer states and/or parameter shards in the NVMe store,
  // preallocated now so a full disk is reported before step 1. Layout: [optimizer | params].
  nvme_reservation_ =
      nvme_budget_.reserve(plan_.nvme_bytes, "the NVMe store (optimizer states, parameter shards)");
  const OffloadOptions& o = plan_.in.offload;
  NvmeStoreOptions so;
  so.paths = o.nvme_paths;
  so.rank = comm_.rank();
  so.block_size = o.aio_block_size;
  so.queue_depth = unsigned(o.aio_queue_depth);
  so.completion_filter = hooks_.nvme_completion_filter;
  so.bytes = plan_.nvme_bytes;
  so.run_id = default_run_id();
  store_ = std::make_unique<NvmeStore>(so);
}

void Engine::make_reducer(PlannedBuffers& planned) {
  std::vector<GradReducer::Destination> dest(groups_.size());
  for (GroupState& g : groups_) {
    GradReducer::Destination& d = dest[g.index];
    d.on_host = g.grad.in_host_memory();
    // Sharded gradients add every micro-step's reduced shard; a whole accumulator gets the reduced sum
    // over the whole group (all-reduce) or over this rank's shard (reduce-scatter).
    d.how = g.place->grads_sharded ? GradReducer::Deliver::add : GradReducer::Deliver::copy;
    d.ptr = g.grad.data() + (g.place->grads_sharded || !plan_.placement.reduce_scatter ? 0 : g.shard.offset);
  }
  reducer_ = std::make_unique<GradReducer>(dev_, stream_, comm_, plan_.map, plan_.buckets, std::move(dest),
                                           planned, plan_.in.zero.overlap_comm);
}

void Engine::make_gatherer(PlannedBuffers& planned) {
  std::vector<const PlacedArray<std::uint8_t>*> params(groups_.size(), nullptr);
  for (GroupState& g : groups_) params[g.index] = &g.params;
  gatherer_ = std::make_unique<ParamGatherer>(dev_, stream_, comm_, plan_.map, plan_.placement, plan_.gathers,
                                              std::move(params), plan_.in.zero.prefetch_bucket_size, planned);
}

void Engine::initialize(const GroupInit& init) {
  Backend& be = dev_.backend();
  std::vector<float> values;
  std::vector<std::uint8_t> cast;
  for (GroupState& g : groups_) {
    init(g.index, values);
    TZ_CHECK(values.size() == g.shards.count, "group ", g.spec->name, " has ", values.size(),
             " initial values, expected ", g.shards.count);
    values.resize(g.shards.padded, 0.0f);
    const GroupPlacement& gp = *g.place;
    const std::size_t p0 = gp.params_sharded ? g.shard.offset : 0,
                      pn = gp.params_sharded ? g.shard.count : g.shards.padded;
    g.params.initialize(be, stream_, values.data() + p0, pn, g.working, cast);
    const float* range = values.data() + gp.opt_range.offset;
    const std::size_t n = gp.opt_range.count;
    if (optimizer_swap_) optimizer_swap_->initialize(g.index, range);
    if (g.packed && on_device(g.place->master_home))
      init_device_compressed(be, stream_, *done_, g.compressed(), range);
    else if (g.packed)
      init_compressed(g.compressed(), range);
    if (!g.master.empty()) be.copy_async(stream_, g.master.data(), range, n * sizeof(float));
    if (!g.m.empty()) be.memset_async(stream_, g.m.data(), 0, n * sizeof(float));
    if (!g.v.empty()) be.memset_async(stream_, g.v.data(), 0, n * sizeof(float));
    done_->record(stream_);
    done_->synchronize();  // `values` and `cast` are reused by the next group
  }
  optimizer_->zero_grads();
}

CView Engine::acquire(int g, Pass pass) {
  if (gatherer_) {
    CView v = gatherer_->acquire(g, pass);
    if (v.ptr) return v;
  }
  return {groups_[g].params.data(), plan_.in.dtype};
}

void Engine::release(int g, Pass pass) {
  if (gatherer_) gatherer_->release(g, pass);
}

float* Engine::grad(int g) {
  GroupState& s = groups_[g];
  if (!s.place->grads_sharded) return s.grad.data();  // the whole accumulator
  // Sharded: a zeroed full-size buffer for this micro-step's backward of the group, reduced into the
  // shard at grad_ready and reused.
  const bool big = g == plan_.placement.embedding_group;
  int& owner = big ? big_owner_ : small_owner_;
  float* buf = big ? backward_big_.data() : backward_small_.data();
  if (owner == g) return buf;
  TZ_CHECK(owner < 0, "the model asked for the gradients of group ", g, " while group ", owner,
           "'s are still open; backward must finish one block before the next");
  owner = g;
  dev_.backend().memset_async(stream_, buf, 0, s.shards.padded * sizeof(float));
  return buf;
}

void Engine::grad_ready(int g) {
  GroupState& s = groups_[g];
  if (!s.place->grads_sharded && !last_micro_) return;  // accumulating: reduced once, at the last micro-step
  float* buf = grad(g);
  if (hooks_.before_reduce) hooks_.before_reduce(computing_, g, buf, stream_);
  if (reducer_) reducer_->push(g, buf);  // copies into the bucket, so the buffer is free again
  if (s.place->grads_sharded) (g == plan_.placement.embedding_group ? big_owner_ : small_owner_) = -1;
}

void Engine::end_micro_step() {
  if (reducer_ && (reduce_every_micro_step_ || last_micro_)) reducer_->flush();
}

float Engine::dloss_scale() const { return (fp16_ ? scaler_.scale() : 1.0f) / float(cfg_.grad_accum); }

StepStats Engine::step() {
  if (reducer_) reducer_->flush();
  StepStats st;
  const bool speculated = optimizer_->speculation() && spec_policy_.active();
  st.loss_scale = fp16_ ? scaler_.scale() : 1.0f;
  const double total = optimizer_->global_norm_squared();
  // The sum over ranks becomes a mean, and the fp16 loss scale comes off.
  const float unscale = 1.0f / (float(comm_.size()) * st.loss_scale);
  const bool overflow = !std::isfinite(total);
  st.grad_norm = std::sqrt(total) * unscale;
  if (fp16_ ? scaler_.update(overflow) : overflow) {
    optimizer_->discard_speculation();
    TZ_CHECK(fp16_, "the gradient norm is not finite at step ", step_ + 1,
             ": training diverged (NaN/Inf); lower --lr or raise --warmup");
    st.skipped = true;  // on every rank: they all saw the same total
    st.step = step_;
    st.lr = learning_rate(cfg_.lr, std::max(step_, 1));
    optimizer_->zero_grads();
    ++computing_;
    count_speculation(st, speculated, false);
    return st;
  }
  st.step = ++step_;
  ++computing_;
  float clip = 1.0f;
  if (cfg_.adam.grad_clip > 0 && st.grad_norm > cfg_.adam.grad_clip)
    clip = float(cfg_.adam.grad_clip / (st.grad_norm + 1e-6));
  st.lr = learning_rate(cfg_.lr, st.step);
  const AdamStep a{st.lr, cfg_.adam.beta1, cfg_.adam.beta2, cfg_.adam.eps, 0.0f, st.step, unscale * clip};
  optimizer_->update(a, cfg_.adam.weight_decay);
  optimizer_->zero_grads();
  count_speculation(st, speculated, clip == 1.0f);
  return st;
}

void Engine::count_speculation(StepStats& st, bool speculated, bool would_keep) {
  SpeculativeAdam* spec = optimizer_->speculation();
  if (!spec) return;
  std::tie(st.speculative_kept, st.speculative_rolled_back) = spec->take_counts();
  spec_policy_.record(would_keep, speculated);
  st.speculated = speculated;
  st.speculate_next = spec_policy_.active();
  st.speculative_rollback_rate = spec_policy_.rollback_rate();
}

std::vector<float> Engine::gather_master(int g) {
  GroupState& s = groups_[g];
  const GroupPlacement& gp = *s.place;
  std::vector<float> full(s.shards.padded);
  float* mine = full.data() + gp.opt_range.offset;
  if (optimizer_swap_) {
    optimizer_swap_->read_master(g, mine);
  } else if (s.packed && on_device(gp.master_home)) {
    std::vector<float> m, v;
    for_each_device_piece(dev_.backend(), stream_, *done_, s.compressed(), kStatePiece, false,
                          [&](std::size_t begin, const CompressedArrays& a, const StatePiece& p) {
                            m.resize(p.span), v.resize(p.span);
                            decode_piece(a, p, mine + begin, m.data(), v.data());
                          });
  } else if (s.packed) {
    std::vector<float> m, v;
    for (const StatePiece& p : s.packed->pieces) {
      m.resize(p.span), v.resize(p.span);
      decode_piece(s.compressed(), p, mine + p.begin, m.data(), v.data());
    }
  } else {
    dev_.backend().copy_async(stream_, mine, s.master_at(0), gp.opt_range.count * sizeof(float));
    done_->record(stream_);
    done_->synchronize();
  }
  if (gp.opt_range.count < s.shards.padded && comm_.size() > 1) {
    TZ_CHECK(dev_.traits().collectives == DeviceCollectives::host || host_comm_ != &comm_,
             "gather_master on a ", dev_.traits().name,
             " device, whose collectives take device memory, needs the host communicator (Engine::set_host_comm)");
    host_comm_->all_gather(mine, full.data(), gp.opt_range.count, DType::f32)->wait();
  }
  full.resize(s.shards.count);
  return full;
}

SwapStats* Engine::param_io_stats() {
  if (!param_swap_) return nullptr;
  param_swap_->stats().wait_seconds += gatherer_ ? gatherer_->fetch_wait_seconds() : 0.0;
  if (gatherer_) gatherer_->reset_fetch_wait();
  return &param_swap_->stats();
}

}  // namespace tz
