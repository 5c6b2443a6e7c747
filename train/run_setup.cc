// A Run's set-up: the plan (planned again against a GPU's free memory), the device, its communicator,
// the planned buffers, the data, --init-from, the engine and the model.
#include "train/run_setup.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <xxhash.h>

#include "comm/device_comm.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/heap.h"
#include "model/model_family.h"
#include "train/collective_util.h"
#include "train/corpus_data.h"
#include "train/rank_agreement.h"
#include "zero/numa_tier.h"
#include "zero/plan_advice.h"

namespace tz {

DeviceOptions device_options(const TrainOptions& opt) {
  DeviceOptions d;
  d.device_mem = opt.device_mem;
  d.host_mem = opt.offload.mem[Tier::host];
  for (Tier t : tiers())  // a registered host tier's own pool, under its own budget
    if (in_host_memory(t) && is_host_pool(tier_memory(t))) d.pool_mem[tier_memory(t)] = opt.offload.mem[t];
  d.gpu = opt.gpu;
  d.tf32 = opt.tf32;
  d.attention = attention_kernels(opt.attention_math, opt.dtype);
  d.pinning =
      opt.offload.pin_memory && !opt.offload.allow_unpinned ? Pinning::required : Pinning::best_effort;
  return d;
}

namespace {

// --init-from, streamed: every rank opens the weights (checking what needs no values), then the engine's
// initialisation reads them one group at a time. A failure there (NaN, a read error) is kept, not thrown,
// so that every rank finishes initialising; finish() then stops every rank together, naming it, and the
// ranks compare the XXH3-64 of every byte each read: ranks given different weights stop, naming --init-from.
class InitFrom {
 public:
  InitFrom(const TrainOptions& opt, Communicator& comm, const ParamLayout& layout)
      : h_(XXH3_createState(), &XXH3_freeState), what_("load --init-from " + opt.init_from) {
    TZ_CHECK(h_ && XXH3_64bits_reset(h_.get()) == XXH_OK, "cannot start a hash of --init-from");
    on_every_rank(comm, what_, [&] {
      source_ = model_family(opt.model).open_weights(opt.init_from, layout, [this](const void* p, std::size_t n) {
        XXH3_64bits_update(h_.get(), p, n);
        bytes_ += n;
      });
    });
    counts_.resize(layout.groups.size());
    for (std::size_t g = 0; g < counts_.size(); ++g) counts_[g] = layout.groups[g].count;
  }

  void read(int g, std::vector<float>& values) {
    if (!error_) {
      try {
        return source_->read_group(g, values);
      } catch (...) {
        error_ = std::current_exception();
      }
    }
    values.assign(counts_[std::size_t(g)], 0.0f);  // never trained from: finish() stops every rank
  }

  void finish(Communicator& comm) {
    source_.reset();
    on_every_rank(comm, what_, [&] {
      if (error_) std::rethrow_exception(error_);
    });
    char b[80];
    std::snprintf(b, sizeof b, "%llu bytes read, xxh3 %016llx", static_cast<unsigned long long>(bytes_),
                  static_cast<unsigned long long>(XXH3_64bits_digest(h_.get())));
    check_settings_agree({{"the contents of --init-from", b}}, comm);
  }

 private:
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> h_;
  std::string what_;
  std::exception_ptr error_;
  std::uint64_t bytes_ = 0;
  std::unique_ptr<WeightSource> source_;
  std::vector<std::size_t> counts_;
};

}  // namespace

PlanInputs plan_inputs(const TrainOptions& opt, int world, int rank) {
  PlanInputs in;
  in.device = opt.device;
  in.model = opt.model;
  in.shape = ModelShape{opt.micro_batch, opt.seq_len};
  in.dtype = opt.dtype;
  in.fp32_activations = opt.fp32_activations;
  in.checkpointing = opt.checkpointing;
  in.zero = opt.zero;
  in.offload = opt.offload;
  in.offload.rounding_seed = opt.seed;  // the stochastic rounding of bf16 states follows --seed
  in.world = world;
  in.rank = rank;
  in.ranks_per_node = opt.ranks_per_node;
  in.budget = opt.offload.mem;
  in.budget[Tier::device] = opt.device_mem;
  in.data_bytes = data_loader_bytes(opt, world);
  in.measured = opt.measured_memory;
  in.measured_source = opt.measured_memory_source;
  return in;
}

Run::Run(const TrainOptions& opt, Communicator& comm, const TrainHooks& hooks, const CheckpointReader* ckpt)
    : plan(plan_memory(plan_inputs(opt, comm.size(), comm.rank()))) {
  check_fits_with_advice(plan);  // a refusal names the smallest changes that fit
  check_numa_tiers(plan);        // numa:N tiers on nodes that exist here, with room for the plan
  dev = make_device(opt.device, device_options(opt));
  // Device buffers travel over NCCL on a cuda device (bootstrapped over `comm`, which keeps the host
  // collectives). Made before the plan is checked against the device, whose budget then holds what the
  // communicator took (its barrier buffer).
  device_comm_owned = make_device_comm(comm, *dev);
  dcomm = device_comm_owned ? device_comm_owned.get() : &comm;
  comm.set_piece_bytes(opt.zero.comm_piece_bytes);  // every rank alike: the settings agree (rank_agreement.h)
  // Planned again where the device can give less than the plan's budget: its budget (a GPU's:
  // --device-mem, or the free memory less the reserve) less what is taken already (cuBLASLt's workspace,
  // the device communicator's buffer).
  if (const MemoryBudget& b = dev->budget(MemoryKind::device); b.budget() - b.used() < plan.in.budget[Tier::device]) {
    PlanInputs in = plan.in;
    in.budget[Tier::device] = b.budget() - b.used();
    plan = plan_memory(in);
    check_fits_with_advice(plan);
  }
  stream = dev->create_stream();
  // Collectives wait for the compute stream's work, not for the host.
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
  std::unique_ptr<InitFrom> init_from;  // --init-from: read a group at a time as the engine initialises
  if (!opt.init_from.empty()) init_from = std::make_unique<InitFrom>(opt, comm, plan.layout);
  auto init = [&](int g, std::vector<float>& values) {
    if (ckpt) {
      values.resize(plan.layout.groups[g].count);
      return ckpt->read(g, StateArray::master, 0, values.size(), values.data());
    }
    if (init_from) return init_from->read(g, values);
    model_family(opt.model).init_group(opt.model, plan.layout, opt.seed, g, values);
  };
  engine = std::make_unique<Engine>(*dev, *stream, *dcomm, plan, *planned, ec, init, hooks.engine);
  if (init_from) init_from->finish(comm);
  engine->set_host_comm(comm);
  const MemoryKind act_home = tier_memory(opt.offload.activations);
  model = model_family(opt.model).make(*dev, opt.model, ModelShape{opt.micro_batch, opt.seq_len}, opt.precision(),
                                       opt.checkpointing, *planned, act_home);
  losses = planned->take<double>(kLossSums);
  readback = planned->take<double>(kLossReadback);
  tokens = planned->take<std::int32_t>(kTokenStaging);
  for (auto& e : tokens_used) e = dev->create_event();
  dev->backend().memset_async(*stream, losses.data(), 0, losses.bytes());
  planned->expect_all_taken();  // what was allocated is exactly what the plan lists
  // The set-up's transients (the corpus text, each group's initial values, a checkpoint's or a folder's
  // reads) are freed, but the heap keeps freed memory resident until it is given back: returned now, the
  // resident set holds what the plan lists and no more.
  release_free_heap();
}

Run::~Run() {
  if (dcomm) dcomm->set_producer_stream(nullptr);  // the stream goes before `comm` does
}

void Run::reduce_scalars(int i, int n, ReduceOp op) {
  Backend& be = dev->backend();
  if (dcomm->size() > 1) dcomm->all_reduce(losses.data() + i, n, DType::f64, op)->wait(*stream);
  be.copy_async(*stream, readback.data() + i, losses.data() + i, n * sizeof(double));
  be.memset_async(*stream, losses.data() + i, 0, n * sizeof(double));
  done->record(*stream);
  done->synchronize();
}

std::pair<std::int32_t*, std::int32_t*> Run::next_tokens(std::size_t BT) {
  token_set ^= 1;
  tokens_used[token_set]->synchronize();
  std::int32_t* in = tokens.data() + std::size_t(token_set) * 2 * BT;
  return {in, in + BT};
}

}  // namespace tz
