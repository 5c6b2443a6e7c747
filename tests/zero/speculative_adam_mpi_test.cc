// The speculative CPU Adam (zero/speculative_adam.h) on the cpu backend: with --overlap-optimizer on,
// every offloaded group's update starts during backward and is kept, redone or undone in step(); the
// losses, validation loss and final weights must be bitwise those of the same run without overlap, on
// steps where clipping triggers, where it does not, with an injected fp16 overflow and with gradient
// accumulation, at stages 2 and 3 (parameter shards on the device or the host tier).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "comm/communicator.h"
#include "tests/common/stream.h"
#include "train/trainer.h"
#include "zero/speculation_policy.h"
#include "zero/speculative_adam.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

TrainOptions offloaded(int stage, DType dt, int steps) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = steps;
  o.lr.lr = 1e-3f;
  o.log_every = 0;
  o.val_batches = 2;
  o.dtype = dt;
  o.zero.stage = stage;
  o.zero.reduce_bucket_size = 40'000;  // several buckets, so groups arrive on the host one by one
  o.zero.param_persistence_threshold = 0;
  o.offload.optimizer = Tier::host;
  return o;
}

struct Counts {
  int kept = 0, rolled_back = 0;
};

// The training steps' metrics records (validation records are interleaved with them).
std::vector<nlohmann::json> steps(const TrainResult& r) {
  std::vector<nlohmann::json> v;
  for (const nlohmann::json& m : r.metrics)
    if (m.contains("grad_norm")) v.push_back(m);
  return v;
}

Counts speculation(const TrainResult& r) {
  Counts c;
  for (const nlohmann::json& m : steps(r)) {
    c.kept += m.at("speculative_optimizer").at("kept").get<int>();
    c.rolled_back += m.at("speculative_optimizer").at("rolled_back").get<int>();
  }
  return c;
}

// The median gradient norm of a run without clipping: a threshold that some steps cross and some not.
float median_norm(TrainOptions o, Communicator& comm) {
  o.adam.grad_clip = 0;
  o.offload.overlap_optimizer = OptimizerOverlap::off;
  const TrainResult r = train(o, comm, quiet);
  std::vector<double> norms;
  for (const nlohmann::json& m : steps(r)) norms.push_back(m.at("grad_norm").get<double>());
  std::nth_element(norms.begin(), norms.begin() + norms.size() / 2, norms.end());
  return float(norms[norms.size() / 2]);
}

void expect_same(const TrainResult& on, const TrainResult& off, const std::string& what) {
  ASSERT_EQ(on.losses, off.losses) << what;
  EXPECT_EQ(on.val_loss, off.val_loss) << what;
  EXPECT_EQ(on.skipped_steps, off.skipped_steps) << what;
  EXPECT_EQ(on.loss_scales, off.loss_scales) << what;
}

TEST(SpeculativeAdam, KeptAndRolledBackUpdatesGiveBitwiseTheStepWithoutOverlap) {
  auto comm = make_mpi_world();
  for (DType dt : {DType::bf16, DType::f32})
    for (int stage : {2, 3})
      for (Tier params : {Tier::device, Tier::host}) {
        if (stage == 2 && params == Tier::host) continue;
        TrainOptions o = offloaded(stage, dt, 16);
        o.offload.param = params;
        o.offload.overlap_optimizer_share = stage == 2 ? 1.0 : 0.5;  // every group, or the first half
        o.adam.grad_clip = median_norm(o, *comm);
        const std::string what = std::string(dtype_name(dt)) + " stage " + std::to_string(stage) +
                                 (params == Tier::host ? " params on the host" : "");
        o.offload.overlap_optimizer = OptimizerOverlap::off;
        const TrainResult off = train(o, *comm, quiet);
        o.offload.overlap_optimizer = OptimizerOverlap::on;
        const TrainResult on = train(o, *comm, quiet);
        expect_same(on, off, what);
        const Counts c = speculation(on);
        // Both outcomes happened: steps under the threshold kept the speculative updates, clipped steps
        // rolled them back and redid them.
        EXPECT_GT(c.kept, 0) << what;
        EXPECT_GT(c.rolled_back, 0) << what;
        const Counts none = speculation(off);
        EXPECT_EQ(none.kept + none.rolled_back, 0) << what;
      }
}

TEST(SpeculativeAdam, AnInjectedFp16OverflowUndoesEveryStartedUpdate) {
  auto comm = make_mpi_world();
  for (int stage : {2, 3}) {
    TrainOptions o = offloaded(stage, DType::f16, 6);
    o.fp16.hysteresis = 1;
    o.fp16.initial_scale_power = 12;
    // The last rank writes an Inf into block 0's gradient at step 3 just before its reduction: block 0
    // arrives late in backward, after later blocks' updates have started on the host.
    TrainHooks hooks;
    hooks.engine.before_reduce = [&](int step, int group, float* grad, Stream& s) {
      if (step != 3 || group != 1 || comm->rank() != comm->size() - 1) return;
      const float inf = INFINITY;
      test::cpu_stream_backend().copy_async(s, grad + 5, &inf, sizeof inf);
    };
    o.offload.overlap_optimizer = OptimizerOverlap::off;
    const TrainResult off = train(o, *comm, quiet, hooks);
    o.offload.overlap_optimizer = OptimizerOverlap::on;
    const TrainResult on = train(o, *comm, quiet, hooks);
    ASSERT_EQ(on.skipped_steps, std::vector<int>{3}) << "stage " << stage;
    expect_same(on, off, "fp16 stage " + std::to_string(stage));
    const nlohmann::json step3 = steps(on).at(2);
    ASSERT_EQ(step3.at("step").get<int>(), 3);
    EXPECT_GT(step3.at("speculative_optimizer").at("rolled_back").get<int>(), 0) << "stage " << stage;
    EXPECT_EQ(step3.at("speculative_optimizer").at("kept").get<int>(), 0) << "stage " << stage;
  }
}

TEST(SpeculativeAdam, WithGradientAccumulationOnlyTheLastMicroStepStartsUpdates) {
  auto comm = make_mpi_world();
  TrainOptions o = offloaded(2, DType::bf16, 8);
  o.grad_accum = 3;
  o.adam.grad_clip = 0;  // no clipping: every speculative update stands
  o.offload.overlap_optimizer = OptimizerOverlap::off;
  const TrainResult off = train(o, *comm, quiet);
  o.offload.overlap_optimizer = OptimizerOverlap::on;
  const TrainResult on = train(o, *comm, quiet);
  expect_same(on, off, "grad_accum 3");
  const Counts c = speculation(on);
  EXPECT_GT(c.kept, 0);
  EXPECT_EQ(c.rolled_back, 0);
}

// A fresh model with a max norm far below its gradients' norms: every step is clipped, so every
// speculative update would be rolled back. The run speculates for the first 4 steps (the policy's
// threshold), stops, says so in the metrics, and gives bitwise the losses of the run without overlap.
TEST(SpeculativeAdam, WhenEveryStepIsClippedTheRunStopsSpeculatingAfterFourSteps) {
  auto comm = make_mpi_world();
  TrainOptions o = offloaded(2, DType::bf16, 10);
  o.adam.grad_clip = 1e-3f;  // norms here are ~1-5
  o.offload.overlap_optimizer = OptimizerOverlap::off;
  const TrainResult off = train(o, *comm, quiet);
  o.offload.overlap_optimizer = OptimizerOverlap::on;
  std::vector<std::string> lines;
  const TrainResult on = train(o, *comm, [&](const std::string& l) { lines.push_back(l); });
  expect_same(on, off, "every step clipped");
  const std::vector<nlohmann::json> s = steps(on);
  ASSERT_EQ(s.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    const nlohmann::json& spec = s[i].at("speculative_optimizer");
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(spec.at("speculated").get<bool>(), i < SpeculationPolicy::kStopBad);
    EXPECT_EQ(spec.at("kept").get<int>(), 0);
    if (i < SpeculationPolicy::kStopBad)
      EXPECT_GT(spec.at("rolled_back").get<int>(), 0);
    else
      EXPECT_EQ(spec.at("rolled_back").get<int>(), 0);
    EXPECT_DOUBLE_EQ(spec.at("rollback_rate").get<double>(), 1.0);
  }
  int stops = 0;
  for (const std::string& l : lines) stops += l.find("step 4: the speculative CPU Adam stops") == 0;
  if (comm->rank() == 0) EXPECT_EQ(stops, 1);
}

TEST(SpeculativeAdam, AutomaticIsOffOnTheCpuDeviceAndTheArenaIsInThePlan) {
  TrainOptions o = offloaded(2, DType::bf16, 1);
  PlanInputs in = plan_inputs(o, 1, 0);
  auto arena = [](const MemoryPlan& p) {
    std::size_t bytes = 0;
    for (const BufferSpec& b : p.buffers)
      if (b.name == "speculative optimizer: saved states") bytes += b.bytes;
    return bytes;
  };
  EXPECT_EQ(arena(plan_memory(in)), 0u);  // automatic on a cpu device: off
  in.offload.overlap_optimizer = OptimizerOverlap::on;
  in.offload.overlap_optimizer_share = 1.0;
  const MemoryPlan on = plan_memory(in);
  // 12 bytes of fp32 master, m and v plus 2 of bf16 working params per optimizer element.
  std::size_t elems = 0;
  for (const GroupPlacement& g : on.placement.groups) elems += g.opt_range.count;
  EXPECT_EQ(arena(on), elems * 14);
  in.device = DeviceKind::cuda;
  in.offload.overlap_optimizer = OptimizerOverlap::automatic;
  EXPECT_EQ(arena(plan_memory(in)), elems * 14);
  // The default share, half: the groups backward hands over first, in whole groups, up to half.
  in.offload.overlap_optimizer_share = 0.5;
  const MemoryPlan half = plan_memory(in);
  EXPECT_GT(arena(half), 0u);
  EXPECT_LE(arena(half), elems * 7);
  const std::vector<bool> c = SpeculativeAdam::covered(half.optimizer());
  EXPECT_TRUE(c[half.buckets.order.front()]);   // the final norm, handed over first
  EXPECT_FALSE(c[half.buckets.order.back()]);   // the embedding, handed over last
  in.offload.overlap_optimizer_share = 0.0;
  EXPECT_EQ(arena(plan_memory(in)), 0u);
}

}  // namespace
}  // namespace tz
