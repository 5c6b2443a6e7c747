// Engine: per-stage buffers, the micro-step protocol, and the optimizer step over this rank's shards.
#include "zero/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"
#include "model/gpt_init.h"
#include "offload/cpu_adam.h"

namespace tz {

Engine::Engine(Device& dev, Device& host, Communicator& comm, const ParamLayout& layout, DType working,
               const std::vector<std::vector<float>>& init, AdamConfig adam, LrConfig lr,
               const ZeroOptions& zero, const LossScaleOptions& fp16, int grad_accum,
               const OffloadOptions& offload)
    : dev_(dev),
      host_(host),
      comm_(comm),
      layout_(layout),
      map_(layout, comm.size(), comm.rank()),
      working_(working),
      adam_(adam),
      lr_(lr),
      stage_(zero.stage),
      grad_accum_(grad_accum),
      allgather_bucket_(zero.allgather_bucket_size),
      fp16_(working == DType::f16),
      offload_(offload),
      nvme_budget_("nvme", offload.nvme_mem) {
  TZ_CHECK(offload.param == Tier::device || stage_ == 3,
           "offload_param needs ZeRO stage 3 (parameters are only ", "partitioned there); got stage ",
           stage_);
  TZ_CHECK(
      (offload.optimizer != Tier::nvme && offload.param != Tier::nvme) || !offload.nvme_paths.empty(),
      "offloading to nvme needs at least one --nvme-path (zero_optimization.offload_optimizer.nvme_path)");
  param_nvme_ = stage_ == 3 && offload.param == Tier::nvme;
  // fp32 working params on the device are their own master, unless the optimizer lives elsewhere or
  // the shards go to NVMe (then the master must outlive the write-back).
  separate_master_ = !(working == DType::f32 && offload.optimizer == Tier::device && !param_nvme_);
  TZ_CHECK(stage_ >= 0 && stage_ <= 3, "ZeRO stage must be 0, 1, 2 or 3, got ", stage_);
  TZ_CHECK(grad_accum >= 1, "gradient accumulation steps must be at least 1, got ", grad_accum);
  TZ_CHECK(init.size() == layout.groups.size(), "initial values for ", init.size(), " groups, the model has ",
           layout.groups.size());
  if (fp16_) scaler_ = LossScaler(fp16);
  const int G = int(layout.groups.size());
  persistent_.assign(G, false);
  for (int g = 0; g < G; ++g)
    persistent_[g] = stage_ == 3 && layout.groups[g].count < zero.param_persistence_threshold;

  Backend& be = dev.backend();
  const std::size_t es = dtype_size(working);
  std::size_t before = dev.memory().used(), host_before = host.memory().used();
  // Where each state class lives: optimizer states (and, at stages 2-3, the fp32 gradient shards they
  // read) on the host tier with offload_optimizer=cpu; stage 3's parameter shards with offload_param=cpu.
  Device& opt_dev = offload.optimizer == Tier::device ? dev : host;
  const Tier opt_tier = offload.optimizer == Tier::device ? Tier::device : Tier::host;
  // Per class, which groups' states go to the host tier: whole groups in order until the class's
  // host share (offload_optimizer.ratio) is reached; the rest stay on the device.
  auto host_groups = [&](double ratio) {
    std::vector<bool> on_host(G, false);
    if (offload.optimizer != Tier::host) return on_host;
    TZ_CHECK(ratio >= 0 && ratio <= 1, "an offload ratio must be in [0, 1], got ", ratio);
    double total = 0, placed = 0;
    for (int g = 0; g < G; ++g) total += double(opt_count(g));
    for (int g = 0; g < G; ++g)
      if (placed + 0.5 * double(opt_count(g)) <= ratio * total) on_host[g] = true, placed += double(opt_count(g));
    return on_host;
  };
  const std::vector<bool> master_host = host_groups(offload.host_ratio_master),
                          m_host = host_groups(offload.host_ratio_m), v_host = host_groups(offload.host_ratio_v);
  auto where = [&](const std::vector<bool>& on_host, int g) -> Device& { return on_host[g] ? host : dev; };
  auto tier_of = [&](const std::vector<bool>& on_host, int g) { return on_host[g] ? Tier::host : Tier::device; };
  const bool nvme_opt = offload.optimizer == Tier::nvme;
  std::vector<std::vector<float>> nvme_init;   // this rank's master values, written to the store below
  std::vector<std::vector<float>> param_init;  // NVMe-resident param shards, written to the store below
  std::vector<float> padded;
  for (int g = 0; g < G; ++g) {
    const GroupSpec& gs = layout.groups[g];
    const GroupShards& sh = map_.group(g);
    TZ_CHECK(init[g].size() == gs.count, "group ", gs.name, " has ", init[g].size(),
             " initial values, expected ", gs.count);
    padded.assign(sh.padded, 0.0f);
    std::copy(init[g].begin(), init[g].end(), padded.begin());
    const Shard mine = map_.shard(g);
    // Working params: whole, or this rank's shard (stage 3).
    std::size_t wcount = full_params(g) ? sh.padded : sh.shard_count;
    const float* wsrc = full_params(g) ? padded.data() : padded.data() + mine.offset;
    if (param_nvme_ && !full_params(g)) {  // the shard lives in the NVMe store (written below)
      work_.emplace_back();
      param_init.emplace_back(wsrc, wsrc + wcount);
    } else {
      Device& wdev = (!full_params(g) && offload.param == Tier::host) ? host : dev;
      work_.emplace_back(wdev, wcount * es, "params " + gs.name);
      note("working params", &wdev == &host ? Tier::host : Tier::device, wcount * es);
      be.cast(work_.back().data(), working, wsrc, DType::f32, wcount);
      param_init.emplace_back();
    }
    // fp32 master: the fp32 working params themselves, or a separate copy of this rank's range.
    std::size_t ocount = stage_ == 0 ? sh.padded : sh.shard_count;
    const float* osrc = stage_ == 0 ? padded.data() : padded.data() + mine.offset;
    // fp32 working params on the device are their own master unless the optimizer lives elsewhere.
    if (nvme_opt) {
      master_.emplace_back();
      m_.emplace_back();
      v_.emplace_back();
      nvme_init.emplace_back(osrc, osrc + ocount);
    } else {
      if (!separate_master_) {
        master_.emplace_back();
      } else {
        master_.emplace_back(where(master_host, g), ocount, "fp32 master " + gs.name);
        note("fp32 master", tier_of(master_host, g), ocount * 4);
        std::memcpy(master_.back().data(), osrc, ocount * sizeof(float));
      }
      m_.emplace_back(where(m_host, g), ocount, "adam m " + gs.name);
      v_.emplace_back(where(v_host, g), ocount, "adam v " + gs.name);
      note("adam m", tier_of(m_host, g), ocount * 4);
      note("adam v", tier_of(v_host, g), ocount * 4);
      be.fill(m_.back().data(), 0.0f, ocount);
      be.fill(v_.back().data(), 0.0f, ocount);
    }
    if (stage_ <= 1) {
      grad_full_.emplace_back(dev, sh.padded, "grads " + gs.name);
      note("fp32 grads", Tier::device, sh.padded * 4);
      be.fill(grad_full_.back().data(), 0.0f, sh.padded);
      grad_shard_.emplace_back();
    } else {
      grad_full_.emplace_back();
      grad_shard_.emplace_back(opt_dev, sh.shard_count, "grad shard " + gs.name);
      note("fp32 grad shards", opt_tier, sh.shard_count * 4);
      be.fill(grad_shard_.back().data(), 0.0f, sh.shard_count);
    }
  }
  persistent_bytes_ = dev.memory().used() - before;
  host_persistent_bytes_ = host.memory().used() - host_before;

  if (nvme_opt || param_nvme_) {
    // ZeRO-Infinity: this rank's optimizer states and/or parameter shards in the NVMe store,
    // preallocated now so a full disk is reported before step 1. Layout: [optimizer | params].
    std::vector<std::size_t> counts;
    for (int g = 0; g < G; ++g) counts.push_back(opt_count(g));
    NvmeStoreOptions so;
    so.paths = offload.nvme_paths;
    so.rank = comm.rank();
    so.block_size = offload.aio_block_size;
    so.queue_depth = unsigned(offload.aio_queue_depth);
    so.completion_filter = offload.nvme_completion_filter;
    const std::uint64_t opt_bytes = nvme_opt ? OptimizerSwapper::store_bytes(counts, so.block_size) : 0;
    std::uint64_t off = opt_bytes;
    param_off_.assign(G, 0);
    std::size_t largest_shard = 0;
    for (int g = 0; g < G; ++g) {
      if (!param_nvme_ || full_params(g)) continue;
      param_off_[g] = off;
      off += round_up(map_.group(g).shard_count * es, so.block_size);
      largest_shard = std::max(largest_shard, map_.group(g).shard_count);
    }
    so.bytes = off;
    so.run_id = default_run_id();
    if (opt_bytes) nvme_budget_.reserve(opt_bytes, "optimizer states (fp32 master, Adam m and v)");
    if (off > opt_bytes) nvme_budget_.reserve(off - opt_bytes, "parameter shards");
    store_ = std::make_unique<NvmeStore>(so);
    Pinning pin = !offload.pin_memory      ? Pinning::none
                  : offload.allow_unpinned ? Pinning::best_effort
                                           : Pinning::required;
    if (nvme_opt) {
      swapper_ = std::make_unique<OptimizerSwapper>(*store_, 0, counts, offload.sub_group_size,
                                                    offload.buffer_count, host.memory(), pin);
      for (int g = 0; g < G; ++g) swapper_->initialize(g, nvme_init[g].data());
      std::uint64_t per_array = opt_bytes / 3;
      note("fp32 master", Tier::nvme, per_array);
      note("adam m", Tier::nvme, per_array);
      note("adam v", Tier::nvme, per_array);
      note("nvme staging ring (transient)", Tier::host, swapper_->staging_bytes());
    }
    if (param_nvme_) {
      // The optimizer writes each updated shard (or sub-group of it) back from this scratch.
      std::size_t bytes = round_up(largest_shard * es, kDirectIoAlign);
      host.memory().reserve(bytes, "parameter write-back buffer");
      param_scratch_ = AlignedBuffer(bytes, pin);
      param_scratch_budget_ = &host.memory();
      note("nvme parameter write-back buffer", Tier::host, bytes);
      note("working params", Tier::nvme, off - opt_bytes);
      for (int g = 0; g < G; ++g) {
        if (param_init[g].empty()) continue;
        std::size_t n = param_init[g].size();
        be.cast(param_scratch_.data(), working, param_init[g].data(), DType::f32, n);
        store_->write_sync(param_off_[g], param_scratch_.data(), round_up(n * es, kDirectIoAlign));
      }
    }
  }

  // Transient buffers, counted apart: buckets, gathered params, backward's full gradients.
  before = dev.memory().used();
  if (stage_ >= 2) {
    // The embedding's gradient stays open through the whole backward (the tied LM head first, the
    // token/position scatter last): it gets its own buffer; every other group shares one.
    grad_big_group_ = layout.embedding_group();
    std::size_t big = map_.group(grad_big_group_).padded, small = 0;
    for (int g = 0; g < G; ++g)
      if (g != grad_big_group_) small = std::max(small, map_.group(g).padded);
    grad_big_ = Buffer<float>(dev, big, "backward gradient (embedding)");
    if (small) grad_small_ = Buffer<float>(dev, small, "backward gradient (one block)");
  }
  if (comm.size() > 1 || stage_ >= 1) {
    ReduceMode mode = stage_ == 0 ? ReduceMode::all_reduce : ReduceMode::reduce_scatter;
    Deliver deliver = stage_ >= 2 ? Deliver::add : Deliver::copy;
    auto dest = [this](int g) -> float* {
      if (stage_ == 0) return grad_full_[g].data();
      if (stage_ == 1) return grad_full_[g].data() + map_.shard(g).offset;
      return grad_shard_[g].data();
    };
    reducer_ = std::make_unique<GradReducer>(dev, comm, map_, mode, zero.reduce_bucket_size, dest, deliver,
                                             zero.overlap_comm);
  }
  if (stage_ == 3) {
    gatherer_ = std::make_unique<ParamGatherer>(
        dev, comm, map_, working, [this](int g) -> const void* { return work_[g].data(); }, persistent_,
        layout.embedding_group(), zero.prefetch_bucket_size, zero.max_live_parameters);
    if (param_nvme_) {
      std::size_t largest = 0;
      for (int g = 0; g < G; ++g)
        if (!full_params(g)) largest = std::max(largest, map_.group(g).shard_count);
      // Staging of a fetched shard, on the host tier (it is where the bytes land from NVMe).
      std::size_t staging = round_up(largest * es, kDirectIoAlign);
      gatherer_->set_fetch(
          [this, es](int g, void* dst) {
            std::size_t bytes = round_up(map_.group(g).shard_count * es, kDirectIoAlign);
            param_io_.read_bytes += double(bytes);
            return store_->read(param_off_[g], dst, bytes);
          },
          staging);
      host.memory().reserve(gatherer_->staging_bytes(), "staging of parameter shards fetched from NVMe");
      fetch_staging_bytes_ = gatherer_->staging_bytes();
      note("nvme parameter fetch staging (transient)", Tier::host, fetch_staging_bytes_);
    }
  }
  transient_bytes_ = dev.memory().used() - before;
  if (store_) {
    // Every host buffer the NVMe store reads into or writes from, registered as io_uring fixed buffers
    // where the memlock limit allows (else plain reads and writes, said once).
    std::vector<std::span<std::byte>> regions;
    if (swapper_) regions = swapper_->regions();
    if (!param_scratch_.empty()) regions.emplace_back(param_scratch_.data(), param_scratch_.bytes());
    if (gatherer_)
      for (auto r : gatherer_->staging_regions()) regions.push_back(r);
    std::string why = store_->register_buffers(regions);
    if (!why.empty() && comm.rank() == 0) log_line("NVMe staging not registered with io_uring (" + why + ")");
    if (swapper_ && !swapper_->pin_error().empty() && comm.rank() == 0)
      log_line("NVMe staging buffers are not pinned: " + swapper_->pin_error() + "; continuing with pageable "
               "memory as --allow-unpinned permits");
  }
  if (grad_big_.bytes() + grad_small_.bytes())
    note("backward gradient buffers (transient)", Tier::device, grad_big_.bytes() + grad_small_.bytes());
  if (reducer_) note("gradient buckets (transient)", Tier::device, reducer_->staging_bytes());
  if (gatherer_ && gatherer_->slot_bytes())
    note("gathered parameters (transient)", Tier::device, gatherer_->slot_bytes());
}

Engine::~Engine() {
  if (param_scratch_budget_) param_scratch_budget_->release(param_scratch_.bytes());
  if (fetch_staging_bytes_) host_.memory().release(fetch_staging_bytes_);
}

SwapStats* Engine::param_io_stats() {
  if (!param_nvme_) return nullptr;
  param_io_.wait_seconds += gatherer_->fetch_wait_seconds();
  gatherer_->reset_fetch_wait();
  return &param_io_;
}

void Engine::note(const std::string& what, Tier tier, std::size_t bytes) {
  for (PlanRow& r : plan_)
    if (r.what == what && r.tier == tier) {
      r.bytes += bytes;
      return;
    }
  plan_.push_back({what, tier, bytes});
}

void* Engine::work_ptr(int g) { return work_[g].data(); }

std::size_t Engine::opt_begin(int g) const { return stage_ == 0 ? 0 : map_.shard(g).offset; }
std::size_t Engine::opt_count(int g) const {
  return stage_ == 0 ? map_.group(g).padded : map_.group(g).shard_count;
}

float* Engine::master_ptr(int g) {
  TZ_CHECK(!swapper_, "master values of NVMe-resident optimizer states are read through the swapper");
  if (!master_[g].empty()) return master_[g].data();
  float* w = reinterpret_cast<float*>(work_[g].data());
  return full_params(g) ? w + opt_begin(g) : w;
}

float* Engine::reduced_grad_ptr(int g) {
  if (stage_ == 0) return grad_full_[g].data();
  if (stage_ == 1) return grad_full_[g].data() + map_.shard(g).offset;
  return grad_shard_[g].data();
}

void Engine::progress() {
  if (reducer_) reducer_->progress();
  if (gatherer_) gatherer_->progress();
}

CView Engine::acquire(int g, Pass pass) {
  if (gatherer_) {
    CView v = gatherer_->acquire(g, pass);
    if (v.ptr) return v;
  } else {
    progress();
  }
  return {work_[g].data(), working_};
}

void Engine::release(int g, Pass pass) {
  if (gatherer_) gatherer_->release(g, pass);
  progress();
}

float* Engine::grad(int g) {
  if (stage_ <= 1) return grad_full_[g].data();
  // Stages 2-3: a zeroed full-size buffer for this micro-step's backward of the group; it is reduced
  // into the shard at grad_ready and reused.
  float* buf;
  if (g == grad_big_group_) {
    TZ_CHECK(grad_big_owner_ < 0 || grad_big_owner_ == g, "backward gradient buffer already in use");
    if (grad_big_owner_ == g) return grad_big_.data();
    grad_big_owner_ = g;
    buf = grad_big_.data();
  } else {
    if (grad_small_owner_ == g) return grad_small_.data();
    TZ_CHECK(grad_small_owner_ < 0, "the model asked for the gradients of group ", g, " while group ",
             grad_small_owner_, "'s are still open; backward must finish one block before the next");
    grad_small_owner_ = g;
    buf = grad_small_.data();
  }
  dev_.backend().fill(buf, 0.0f, map_.group(g).padded);
  return buf;
}

void Engine::grad_ready(int g) {
  if (stage_ <= 1) {
    // One reduction per optimizer step: only the last micro-step's backward starts it.
    if (last_micro_ && reducer_) reducer_->push(g, grad_full_[g].data());
  } else {
    float* buf = g == grad_big_group_ ? grad_big_.data() : grad_small_.data();
    reducer_->push(g, buf);  // copies into the bucket, so the buffer is free again
    (g == grad_big_group_ ? grad_big_owner_ : grad_small_owner_) = -1;
  }
  progress();
}

void Engine::begin_micro_step(bool last) { last_micro_ = last; }

void Engine::end_micro_step() {
  // Stages 2-3 keep only shards: every micro-step's gradient is reduced before the next begins.
  if (reducer_ && (stage_ >= 2 || last_micro_)) reducer_->flush();
}

float Engine::dloss_scale() const { return (fp16_ ? scaler_.scale() : 1.0f) / float(grad_accum_); }

StepStats Engine::step() {
  Backend& be = dev_.backend();
  const int G = map_.groups();
  if (reducer_) reducer_->flush();
  StepStats st;
  st.loss_scale = fp16_ ? scaler_.scale() : 1.0f;

  // Global norm: every rank sums squares over its own shard range of every group (the same ranges at
  // every stage, so the arithmetic, and the result, do not depend on the stage), then one all-reduce.
  double sq = 0;
  for (int g = 0; g < G; ++g) {
    const Shard s = map_.shard(g);
    const float* r = stage_ <= 1 ? grad_full_[g].data() + s.offset : grad_shard_[g].data();
    sq += be.sum_squares(r, s.count);
  }
  // Stage 0 updates whole groups from its replica of the gradient, so a non-finite value anywhere in
  // it must count, not only in this rank's range (which every other rank would then not see).
  if (stage_ == 0)
    for (int g = 0; g < G && std::isfinite(sq); ++g)
      if (be.has_non_finite(grad_full_[g].data(), map_.group(g).padded)) sq = NAN;
  float total = float(sq);
  if (comm_.size() > 1) comm_.all_reduce(&total, 1, DType::f32)->wait();
  const float unscale =
      1.0f / (float(comm_.size()) * st.loss_scale);  // sum over ranks -> mean, remove loss scale
  const bool overflow = !std::isfinite(total);
  if (fp16_ ? scaler_.update(overflow) : overflow) {
    if (!fp16_)
      TZ_FAIL("the gradient norm is not finite at step ", step_ + 1,
              ": training diverged (NaN/Inf); lower --lr or raise --warmup");
    st.skipped = true;
    st.step = step_;
    st.grad_norm = std::sqrt(double(total)) * unscale;
    st.lr = learning_rate(lr_, std::max(step_, 1));
    for (int g = 0; g < G; ++g) {
      if (stage_ <= 1)
        be.fill(grad_full_[g].data(), 0.0f, map_.group(g).padded);
      else
        be.fill(grad_shard_[g].data(), 0.0f, map_.group(g).shard_count);
    }
    return st;
  }
  st.step = ++step_;
  st.grad_norm = std::sqrt(double(total)) * unscale;
  float clip = 1.0f;
  if (adam_.grad_clip > 0 && st.grad_norm > adam_.grad_clip)
    clip = float(adam_.grad_clip / (st.grad_norm + 1e-6));
  st.lr = learning_rate(lr_, st.step);

  // AdamW over elements [lo + begin, lo + begin + n) of group g's optimizer range, tensor by tensor
  // (weight decay is per tensor); p, m, v point at element lo + begin.
  const bool separate = separate_master_;
  auto update = [&](int g, std::size_t begin, std::size_t n, float* p, float* m, float* v) {
    const std::size_t lo = opt_begin(g) + begin, hi = lo + n;
    const float* gr = reduced_grad_ptr(g) + begin;
    // Where this rank's updated working params go: its slice of the whole group, its shard, or the
    // write-back buffer of an NVMe-resident shard.
    const bool to_nvme = param_nvme_ && !full_params(g);
    std::uint8_t* wbase = to_nvme ? reinterpret_cast<std::uint8_t*>(param_scratch_.data())
                                  : work_[g].data() + (full_params(g) ? lo : begin) * dtype_size(working_);
    for (const TensorSpec& t : layout_.groups[g].tensors) {
      std::size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.count);
      if (a >= b) continue;
      std::size_t off = a - lo;
      AdamStep s{st.lr,   adam_.beta1,   adam_.beta2, adam_.eps, is_decayed(t) ? adam_.weight_decay : 0.0f,
                 st.step, unscale * clip};
      void* w = separate ? static_cast<void*>(wbase + off * dtype_size(working_)) : nullptr;
      if (offload_.optimizer != Tier::device)  // the host's vectorised Adam (same bits as the backend's)
        cpu_adamw(p + off, m + off, v + off, gr + off, b - a, s, w, working_);
      else
        be.adamw(p + off, m + off, v + off, gr + off, b - a, s, w, working_);
    }
    if (to_nvme) {
      std::uint64_t bytes = round_up(n * dtype_size(working_), kDirectIoAlign);
      auto t0 = std::chrono::steady_clock::now();
      store_->write_sync(param_off_[g] + begin * dtype_size(working_), param_scratch_.data(), bytes);
      param_io_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      param_io_.write_bytes += double(bytes);
    }
  };
  std::vector<std::unique_ptr<Work>> gathers;
  std::size_t in_flight = 0;
  // Stages 1-2 (and stage 3's persistent groups) keep the params whole: gather the updated shards.
  auto gather_params = [&](int g) {
    if (stage_ < 1 || !full_params(g) || comm_.size() == 1) return;
    const Shard sh = map_.shard(g);
    std::uint8_t* base = work_[g].data();
    if (in_flight + map_.group(g).padded > allgather_bucket_ && !gathers.empty()) {
      for (auto& w : gathers) w->wait();
      gathers.clear();
      in_flight = 0;
    }
    gathers.push_back(comm_.all_gather(base + sh.offset * dtype_size(working_), base, sh.count, working_));
    in_flight += map_.group(g).padded;
  };
  if (swapper_) {
    swapper_->for_each(update);  // read k+1 / update k / write k-1 through the staging ring
    for (int g = 0; g < G; ++g) gather_params(g);
  } else {
    for (int g = 0; g < G; ++g) {
      update(g, 0, opt_count(g), master_ptr(g), m_[g].data(), v_[g].data());
      gather_params(g);
    }
  }
  for (auto& w : gathers) w->wait();
  for (int g = 0; g < G; ++g) {
    if (stage_ <= 1)
      be.fill(grad_full_[g].data(), 0.0f, map_.group(g).padded);
    else
      be.fill(grad_shard_[g].data(), 0.0f, map_.group(g).shard_count);
  }
  return st;
}

std::vector<float> Engine::gather_master(int g) {
  const GroupShards& sh = map_.group(g);
  std::vector<float> full(sh.padded);
  if (swapper_) {
    swapper_->read_master(g, full.data() + opt_begin(g));
    if (stage_ >= 1 && comm_.size() > 1)
      comm_.all_gather(full.data() + opt_begin(g), full.data(), sh.shard_count, DType::f32)->wait();
  } else if (stage_ == 0) {
    std::memcpy(full.data(), master_ptr(g), sh.padded * sizeof(float));
  } else {
    std::memcpy(full.data() + map_.shard(g).offset, master_ptr(g), sh.shard_count * sizeof(float));
    if (comm_.size() > 1)
      comm_.all_gather(full.data() + map_.shard(g).offset, full.data(), sh.shard_count, DType::f32)->wait();
  }
  full.resize(sh.count);
  return full;
}

}  // namespace tz
