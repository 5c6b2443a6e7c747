// ZeRO's contract at world sizes 1-4, in-process on every rank: stages 0-3 give the same losses, world
// sizes agree at the same global batch, each stage's persistent bytes and traffic match the theory,
// and an fp16 overflow on one rank makes every rank skip the step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "comm/communicator.h"
#include "core/error.h"
#include "tests/common/test_dir.h"
#include "tests/common/stream.h"
#include "zero/engine.h"
#include "train/trainer.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

// The tiny preset on the built-in corpus, with small buckets so several collectives run per step and
// persistence off so every group is sharded at stage 3.
TrainOptions tiny(int stage, int steps) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = steps;
  o.lr.lr = 1e-3f;
  o.log_every = 0;
  o.val_batches = 2;
  o.zero.stage = stage;
  o.zero.reduce_bucket_size = 40'000;
  o.zero.allgather_bucket_size = 40'000;
  o.zero.prefetch_bucket_size = 60'000;
  o.zero.param_persistence_threshold = 0;
  return o;
}

struct World {
  std::unique_ptr<Communicator> comm = make_mpi_world();
  int n() const { return comm->size(); }
};

TEST(ZeroStages, AllStagesGiveTheSameLossAtEveryOneOf20Steps) {
  World w;
  std::vector<TrainResult> r;
  for (int stage = 0; stage <= 3; ++stage) r.push_back(train(tiny(stage, 20), *w.comm, quiet));
  for (int stage = 1; stage <= 3; ++stage)
    for (int s = 0; s < 20; ++s) {
      if (w.n() <= 2) {
        // Sums of two values do not depend on their order, so every stage's arithmetic is the same.
        ASSERT_EQ(r[stage].losses[s], r[0].losses[s]) << "stage " << stage << " step " << s + 1;
      } else {
        // Stage 0 all-reduces, stages 1-3 reduce-scatter: MPI may add the N >= 3 contributions in another
        // order (fp32 rounding ~1e-7 relative per add), which compounds through 20 AdamW steps to well
        // under 1e-4 of the loss.
        ASSERT_NEAR(r[stage].losses[s], r[0].losses[s], 1e-4 * r[0].losses[s]) << "stage " << stage << " step " << s + 1;
      }
    }
  EXPECT_LT(r[3].losses.back(), r[3].losses.front() - 0.3f);  // and it learns
}

TEST(ZeroStages, WorldSizesAgreeAtTheSameGlobalBatch) {
  World w;
  const int N = w.n();
  // N ranks x micro-batch 2 against one rank with micro-batch 2 and N accumulation steps: the same
  // 2N sequences per step, read in the same order by the data loader.
  TrainOptions many = tiny(2, 20);
  many.micro_batch = 2;
  TrainResult multi = train(many, *w.comm, quiet);
  auto self = make_self_comm();
  TrainOptions one = tiny(0, 20);
  one.micro_batch = 2;
  one.grad_accum = N;
  TrainResult single = train(one, *self, quiet);
  for (int s = 0; s < 20; ++s)
    // Averaging N rank-means vs N micro-step means: the same numbers summed in another order, and the
    // loss printed is a mean of means in both; fp32 differences compound to ~1e-5 over 20 steps.
    ASSERT_NEAR(multi.losses[s], single.losses[s], 2e-4 * single.losses[s]) << "step " << s + 1;
}

// Persistent bytes per parameter at each stage, for bf16 working params: 2 + 4 + 12 (stage 0),
// 2 + 4 + 12/N (1), 2 + (4 + 12)/N (2), (2 + 4 + 12)/N (3); fp32 master aliases fp32 working params.
TEST(ZeroStages, PersistentBytesPerRankMatchTheStageFormulas) {
  World w;
  const double N = w.n();
  ModelConfig cfg = model_preset("tiny");
  ParamLayout layout = ParamLayout::build(cfg);
  // Padding: each group is rounded up to a multiple of 16 x N elements so it splits into aligned shards.
  double padded = 0;
  for (const GroupSpec& g : layout.groups) padded += std::ceil(double(g.count) / (16 * N)) * 16 * N;
  const double bf16_bytes[4] = {2 + 4 + 12, 2 + 4 + 12 / N, 2 + 16 / N, 18 / N};
  const double fp32_bytes[4] = {4 + 4 + 8, 4 + 4 + 8 / N, 4 + 12 / N, 16 / N};
  for (int stage = 0; stage <= 3; ++stage) {
    TrainOptions o = tiny(stage, 1);
    o.dtype = DType::bf16;
    TrainResult rb = train(o, *w.comm, quiet);
    EXPECT_EQ(double(rb.persistent_bytes), bf16_bytes[stage] * padded) << "bf16 stage " << stage;
    o.dtype = DType::f32;
    TrainResult rf = train(o, *w.comm, quiet);
    EXPECT_EQ(double(rf.persistent_bytes), fp32_bytes[stage] * padded) << "fp32 stage " << stage;
  }
}

// Elements each rank sends per step, read from the metrics: stages 0-2 move 2(N-1)/N x params
// (all-reduce, or reduce-scatter + all-gather), stage 3 3(N-1)/N (two gathers and a reduce-scatter).
TEST(ZeroStages, ElementsSentPerStepMatchTheTheoryWithinOnePercent) {
  World w;
  const double N = w.n();
  if (w.n() == 1) GTEST_SKIP() << "a world of one sends nothing";
  const double params = double(model_preset("tiny").num_parameters());
  for (int stage = 0; stage <= 3; ++stage) {
    TrainOptions o = tiny(stage, 2);
    o.val_batches = 0;
    o.val_every = 0;
    TrainResult r = train(o, *w.comm, quiet);
    const nlohmann::json& step2 = r.metrics[1];  // step 2: the stage-3 prefetch trace is in use
    ASSERT_EQ(step2["step"], 2);
    double sent = 0;
    for (auto& [kind, v] : step2["comm"].items()) sent += v["elements_sent"].get<double>();
    // The gradient norm and the reported loss add two scalar all-reduces per step.
    double theory = (stage == 3 ? 3 : 2) * (N - 1) / N * params;
    EXPECT_NEAR(sent, theory, 0.01 * theory) << "stage " << stage << ": " << step2["comm"].dump();
  }
}

// The Inf goes into one rank's gradient of one group before that gradient is reduced (as an overflow
// in backward would), at every stage: the reduction spreads it (all-reduce) or leaves it in one rank's
// shard (reduce-scatter), and the global norm must still make every rank skip.
TEST(ZeroStages, AnFp16OverflowOnOneRankMakesEveryRankSkipTheStepAndHalveTheScale) {
  World w;
  for (int stage : {0, 1, 2, 3}) {
    TrainOptions o = tiny(stage, 6);
    o.dtype = DType::f16;
    o.fp16.hysteresis = 1;
    o.fp16.initial_scale_power = 12;
    // Rank N-1 alone writes an Inf into block 0's gradient of step 3, just before its reduction.
    TrainHooks hooks;
    hooks.engine.before_reduce = [&](int step, int group, float* grad, Stream& s) {
      if (step != 3 || group != 1 || w.comm->rank() != w.n() - 1) return;
      const float inf = INFINITY;
      test::cpu_stream_backend().copy_async(s, grad + 5, &inf, sizeof inf);
    };
    TrainResult r = train(o, *w.comm, quiet, hooks);
    ASSERT_EQ(r.skipped_steps, std::vector<int>{3}) << "stage " << stage;
    EXPECT_EQ(r.loss_scales[2], 4096.0f);
    EXPECT_EQ(r.loss_scales[3], 2048.0f);  // halved after the overflow
    EXPECT_EQ(r.loss_scales[5], 2048.0f);
    EXPECT_TRUE(std::isfinite(r.losses.back()));
  }
}

// ZeRO-Offload: moving the optimizer states (and stage 3's parameter shards) to the host tier changes
// where bytes live, not the arithmetic (the host's vectorised Adam gives the backend's bits).
TEST(ZeroOffload, CpuAndNvmeOffloadGiveBitwiseTheLossesOfNoOffloadAtStages1To3) {
  World w;
  testing::TestDir dir;
  for (DType dt : {DType::bf16, DType::f32})
    for (int stage = 1; stage <= 3; ++stage) {
      TrainOptions o = tiny(stage, 20);
      o.dtype = dt;
      TrainResult plain = train(o, *w.comm, quiet);
      o.offload.optimizer = Tier::host;
      if (stage == 3) o.offload.param = Tier::host;
      TrainResult cpu = train(o, *w.comm, quiet);
      ASSERT_EQ(cpu.losses, plain.losses) << "cpu offload, stage " << stage << " " << dtype_name(dt);
      EXPECT_EQ(cpu.val_loss, plain.val_loss);
      // Optimizer states on NVMe, streamed in sub-groups of 2048 elements through 3 staging buffers.
      o.offload.optimizer = Tier::nvme;
      if (stage == 3) o.offload.param = Tier::nvme;
      o.offload.nvme_paths = {dir.path()};
      o.offload.aio_block_size = 4096;
      o.offload.sub_group_size = 2048;
      o.offload.buffer_count = 3;
      TrainResult nvme = train(o, *w.comm, quiet);
      ASSERT_EQ(nvme.losses, plain.losses) << "nvme offload, stage " << stage << " " << dtype_name(dt);
      EXPECT_EQ(nvme.val_loss, plain.val_loss);
      if (stage == 3) {  // parameter shards alone on NVMe, the optimizer on the device
        o.offload.optimizer = Tier::device;
        TrainResult params = train(o, *w.comm, quiet);
        ASSERT_EQ(params.losses, plain.losses) << "nvme params only, " << dtype_name(dt);
      }
    }
}

TEST(ZeroOffload, OffloadedStatesMoveFromTheDeviceBudgetToTheHostBudget) {
  World w;
  const double N = w.n();
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  double padded = 0;
  for (const GroupSpec& g : layout.groups) padded += std::ceil(double(g.count) / (16 * N)) * 16 * N;
  struct Case {
    int stage;
    Tier param;
    double device, host;  // bytes per parameter, bf16 working params
  };
  // Offloading the optimizer moves the fp32 master, m and v (12/N) and, at stages 2-3, the fp32
  // gradient shard (4/N); offloading stage 3's params moves their shard too (2/N).
  const Case cases[] = {{1, Tier::device, 2 + 4, 12 / N},
                        {2, Tier::device, 2, 16 / N},
                        {3, Tier::device, 2 / N, 16 / N},
                        {3, Tier::host, 0, 18 / N}};
  for (const Case& c : cases) {
    TrainOptions o = tiny(c.stage, 1);
    o.dtype = DType::bf16;
    o.offload.optimizer = Tier::host;
    o.offload.param = c.param;
    TrainResult r = train(o, *w.comm, quiet);
    EXPECT_EQ(double(r.persistent_bytes), c.device * padded) << "stage " << c.stage;
    EXPECT_EQ(double(r.host_persistent_bytes), c.host * padded) << "stage " << c.stage;
  }
}

TEST(ZeroOffload, TheMeasuredPeakPerTierMatchesThePrintedPlanWithin5Percent) {
  World w;
  testing::TestDir dir;
  struct Case {
    int stage;
    Tier opt, param;
  };
  for (Case c : {Case{0, Tier::device, Tier::device}, Case{2, Tier::host, Tier::device},
                 Case{3, Tier::host, Tier::host}, Case{3, Tier::nvme, Tier::host}, Case{1, Tier::nvme, Tier::device}}) {
    TrainOptions o = tiny(c.stage, 2);
    o.dtype = DType::bf16;
    o.offload.optimizer = c.opt;
    o.offload.param = c.param;
    o.offload.nvme_paths = {dir.path()};
    o.offload.aio_block_size = 4096;
    TrainResult r = train(o, *w.comm, quiet);
    for (Tier t : tiers()) {
      EXPECT_NEAR(double(r.peak_bytes[t]), double(r.plan_bytes[t]), 0.05 * double(r.plan_bytes[t]))
          << "tier " << tier_name(t) << ", stage " << c.stage << ", optimizer on " << tier_name(c.opt);
    }
    EXPECT_EQ(r.plan_bytes[Tier::nvme] > 0, c.opt == Tier::nvme);
  }
}

TEST(ZeroOffload, APartialRatioSplitsEachOptimizerClassByWholeGroupsAndKeepsTheLosses) {
  World w;
  TrainOptions o = tiny(2, 10);
  o.dtype = DType::bf16;
  TrainResult plain = train(o, *w.comm, quiet);
  o.offload.optimizer = Tier::host;
  o.offload.host_ratio_master = 1.0;
  o.offload.host_ratio_m = 0.5;
  o.offload.host_ratio_v = 0.0;
  TrainResult split = train(o, *w.comm, quiet);
  EXPECT_EQ(split.losses, plain.losses);
  // Host bytes: the gradient shards and the master (16/N... as the full offload) minus what m and v keep
  // on the device: m about half (whole groups: within the largest group's share), v none.
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  const double N = w.n();
  double padded = 0, largest = 0;
  for (const GroupSpec& g : layout.groups) {
    double p = std::ceil(double(g.count) / (16 * N)) * 16 * N;
    padded += p;
    largest = std::max(largest, p);
  }
  double m_host = double(split.host_persistent_bytes) - 8.0 / N * padded;  // grads + master: 4/N + 4/N
  EXPECT_NEAR(m_host, 0.5 * 4.0 / N * padded, 0.5 * 4.0 / N * largest + 1);
}

TEST(ZeroOffload, ActivationCheckpointsOnTheHostTierKeepTheLossesAndLeaveTheDevice) {
  World w;
  TrainOptions o = tiny(3, 5);
  o.model.n_layer = 4;  // tiny's 2 layers have 3 checkpoints: as many as the device staging
  o.checkpointing = ActivationCheckpointing::per_block;
  TrainResult plain = train(o, *w.comm, quiet);
  o.offload.activations = Tier::host;
  TrainResult off = train(o, *w.comm, quiet);
  EXPECT_EQ(off.losses, plain.losses);
  EXPECT_EQ(off.val_loss, plain.val_loss);
  // (n_layer + 1) residual streams of B x T x C floats moved from the device to the host tier, and 3
  // buffers of that size came to the device as the staging the kernels use instead (a ring of 2 and the
  // recomputation's output).
  const double ckpt = double(o.micro_batch) * o.seq_len * o.model.n_embd * 4;
  EXPECT_EQ(double(plain.plan_bytes[Tier::device] - off.plan_bytes[Tier::device]), (o.model.n_layer + 1 - 3) * ckpt);
  EXPECT_EQ(double(off.plan_bytes[Tier::host] - plain.plan_bytes[Tier::host]), (o.model.n_layer + 1) * ckpt);
}

TEST(ZeroOffload, AHostTierThatIsTooSmallIsRefusedNamingIt) {
  World w;
  TrainOptions o = tiny(2, 1);
  o.offload.optimizer = Tier::host;
  o.offload.mem[Tier::host] = 64 * 1024;
  try {
    train(o, *w.comm, quiet);
    FAIL() << "expected the host budget error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("out of host memory budget"), std::string::npos) << m;
    EXPECT_NE(m.find("--host-mem"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tz
