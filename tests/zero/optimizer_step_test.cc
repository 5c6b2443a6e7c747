// OptimizerStep at its own layer, on a cpu device over a recording communicator (the peers hold what this
// rank holds): with every state on the device, on the host tier, split between them by the ratios, or
// on a registered second host tier, one update gives each group's master, Adam m and v and working
// params exactly what a plain loop over math::adamw_update gives (weight decay per tensor, padding left
// alone); whole params are all-gathered after the step at stages 1-2, bucket by bucket; the global norm
// is the sum of squares of the shard's gradient over ranks; zero_grads zeroes every gradient.
#include "zero/optimizer_step.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/cpu_adam.h"
#include "core/elementwise.h"
#include "model/model_config.h"
#include "tests/common/plan_groups.h"
#include "tests/common/recording_comm.h"
#include "tests/common/second_host_tier.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

const AdamStep kAdam{1e-2f, 0.9f, 0.95f, 1e-8f, 0.0f, 3, 0.5f};
constexpr float kDecay = 0.1f;

float master0(std::size_t e, int g) { return float(int((e * 37 + std::size_t(g) * 11) % 201) - 100) / 64.0f; }
float m0(std::size_t e, int g) { return float(int((e * 13 + std::size_t(g)) % 51) - 25) / 1024.0f; }
float v0(std::size_t e, int g) { return float((e * 7 + std::size_t(g)) % 41) / 4096.0f; }
float grad0(std::size_t e, int g) { return float(int((e * 29 + std::size_t(g) * 5) % 97) - 48) / 32.0f; }

struct Rig {
  PlanInputs in;
  MemoryPlan plan;
  std::unique_ptr<Device> dev;
  std::unique_ptr<Stream> stream;
  testing::RecordingComm comm;
  std::unique_ptr<PlannedBuffers> planned;
  std::vector<GroupState> groups;
  std::unique_ptr<OptimizerStep> step;

  static PlanInputs inputs(int stage, Tier optimizer, double ratio, int world) {
    PlanInputs in = testing::tiny_step_inputs(stage, optimizer, world, world - 1);
    in.offload.host_ratio_master = in.offload.host_ratio_m = in.offload.host_ratio_v = ratio;
    return in;
  }

  Rig(int stage, Tier optimizer, double ratio, int world)
      : in(inputs(stage, optimizer, ratio, world)),
        plan(plan_memory(in)),
        dev(make_cpu_device()),
        stream(dev->create_stream()),
        comm(world, world - 1) {
    planned = std::make_unique<PlannedBuffers>(*dev, plan.buffers);
    groups = testing::plan_groups(plan, *planned);
    for (GroupState& s : groups) fill(s);
    step = std::make_unique<OptimizerStep>(*dev, *stream, comm, plan.optimizer(), groups, *planned, nullptr, nullptr,
                                           in.zero.allgather_bucket_size);
  }

  void put(void* dst, const void* src, std::size_t bytes) {
    dev->backend().copy_async(*stream, dst, src, bytes);
    stream->synchronize();
  }
  template <typename T>
  std::vector<T> get(const T* src, std::size_t n) {
    std::vector<T> v(n);
    dev->backend().copy_async(*stream, v.data(), src, n * sizeof(T));
    stream->synchronize();
    return v;
  }

  void fill(GroupState& s) {
    const GroupPlacement& gp = *s.place;
    const std::size_t lo = gp.opt_range.offset, n = gp.opt_range.count;
    std::vector<float> a(n), b(n), c(n);
    for (std::size_t i = 0; i < n; ++i)
      a[i] = master0(lo + i, s.index), b[i] = m0(lo + i, s.index), c[i] = v0(lo + i, s.index);
    put(s.master_at(0), a.data(), n * 4);
    put(s.m.data(), b.data(), n * 4);
    put(s.v.data(), c.data(), n * 4);
    std::vector<float> gr(s.grad_count());
    const std::size_t first = gp.grads_sharded ? s.shard.offset : 0;
    for (std::size_t j = 0; j < gr.size(); ++j) gr[j] = grad0(first + j, s.index);
    put(s.grad.data(), gr.data(), gr.size() * 4);
    const std::vector<bf16> zero(s.params.bytes() / 2, float_to_bf16(0.0f));
    put(s.params.data(), zero.data(), s.params.bytes());
  }
};

struct Expected {
  std::vector<float> master, m, v;
  std::vector<bf16> params;
};

// What a plain loop gives over group g's optimizer range (padding is no tensor's and is left alone).
Expected reference(const Rig& r, int g) {
  const GroupPlacement& gp = r.plan.placement.groups[std::size_t(g)];
  const GroupSpec& spec = r.plan.layout.groups[std::size_t(g)];
  const std::size_t lo = gp.opt_range.offset, n = gp.opt_range.count;
  Expected x;
  x.params.assign(n, float_to_bf16(0.0f));
  for (std::size_t i = 0; i < n; ++i) {
    float p = master0(lo + i, g), m = m0(lo + i, g), v = v0(lo + i, g);
    for (const TensorSpec& t : spec.tensors)
      if (lo + i >= t.offset && lo + i < t.offset + t.count) {
        AdamStep a = kAdam;
        a.weight_decay = t.decay ? kDecay : 0.0f;
        math::adamw_update(p, m, v, grad0(lo + i, g), adam_coeffs(a));
        x.params[i] = float_to_bf16(p);
      }
    x.master.push_back(p), x.m.push_back(m), x.v.push_back(v);
  }
  return x;
}

void expect_updated_exactly(Rig& r) {
  for (GroupState& s : r.groups) {
    SCOPED_TRACE("group " + s.spec->name);
    const std::size_t n = s.place->opt_range.count;
    const Expected x = reference(r, s.index);
    const std::vector<float> master = r.get(s.master_at(0), n), m = r.get(s.m.data(), n), v = r.get(s.v.data(), n);
    const std::vector<bf16> p =
        r.get(reinterpret_cast<const bf16*>(s.params_at(s.place->opt_range.offset)), n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(master[i], x.master[i]) << "master " << i;
      ASSERT_EQ(m[i], x.m[i]) << "m " << i;
      ASSERT_EQ(v[i], x.v[i]) << "v " << i;
      ASSERT_EQ(p[i].bits, x.params[i].bits) << "working param " << i;
    }
  }
}

TEST(OptimizerStep, EveryPlacementOfTheStatesGivesThePlainLoopsBitsAtStages0To2) {
  const Tier t2 = testing::second_host_tier();
  struct Case {
    Tier optimizer;
    double ratio;
  };
  for (int stage = 0; stage <= 2; ++stage)
    for (Case c : {Case{Tier::device, 1.0}, Case{Tier::host, 1.0}, Case{Tier::host, 0.5}, Case{t2, 1.0}}) {
      SCOPED_TRACE("stage " + std::to_string(stage) + ", optimizer on " + tier_name(c.optimizer) + " ratio " +
                   std::to_string(c.ratio));
      Rig r(stage, c.optimizer, c.ratio, 2);
      bool on_host = false, on_device_ = false;
      for (const GroupPlacement& gp : r.plan.placement.groups)
        (in_host_memory(gp.update_on) ? on_host : on_device_) = true;
      EXPECT_EQ(on_host, !on_device(c.optimizer));
      if (c.ratio < 1) EXPECT_TRUE(on_host && on_device_);  // split: some groups each way
      r.step->update(kAdam, kDecay);
      expect_updated_exactly(r);
    }
}

TEST(OptimizerStep, WholeParamsAreAllGatheredAfterTheStepAtStages1And2BucketByBucket) {
  for (int stage = 0; stage <= 2; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    Rig r(stage, Tier::host, 1.0, 4);
    r.step->update(kAdam, kDecay);
    const auto gathers = r.comm.of(Collective::all_gather);
    if (stage == 0) {
      EXPECT_TRUE(gathers.empty());  // every rank updated the whole replica
      continue;
    }
    std::size_t gathered = 0, want = 0;
    for (const auto& c : gathers) gathered += c.count;
    for (const GroupState& s : r.groups) want += s.shard.count;
    EXPECT_EQ(gathered, want);
    EXPECT_GT(gathers.size(), 1u);  // buckets of 40,000 elements: several
    for (GroupState& s : r.groups) {  // every rank's block is this rank's (the peers mirror it)
      const std::size_t k = s.shard.count;
      const std::vector<bf16> all = r.get(reinterpret_cast<const bf16*>(s.params.data()), s.shards.padded);
      for (int b = 0; b < 4; ++b)
        for (std::size_t j = 0; j < k; ++j)
          ASSERT_EQ(all[std::size_t(b) * k + j].bits, all[std::size_t(3) * k + j].bits) << s.spec->name << " block " << b;
    }
  }
}

TEST(OptimizerStep, TheGlobalNormIsTheShardsSumOfSquaresOverRanksAndZeroGradsZeroesEveryGradient) {
  for (Tier t : {Tier::device, Tier::host}) {
    for (int stage : {0, 2}) {
      SCOPED_TRACE(tier_name(t) + ", stage " + std::to_string(stage));
      Rig r(stage, t, 1.0, 2);
      double want = 0;
      for (const GroupState& s : r.groups)
        for (std::size_t j = 0; j < s.shard.count; ++j) {
          const double x = grad0(s.shard.offset + j, s.index);
          want += x * x;
        }
      want *= 2;  // two ranks holding the same
      const double got = r.step->global_norm_squared();
      EXPECT_NEAR(got, want, 1e-12 * want);
      const auto reduces = r.comm.of(Collective::all_reduce);
      ASSERT_EQ(reduces.size(), 1u);
      EXPECT_EQ(reduces[0].count, 1u);
      EXPECT_EQ(reduces[0].dtype, DType::f64);
      r.step->zero_grads();
      for (GroupState& s : r.groups)
        for (float x : r.get(s.grad.data(), s.grad_count())) ASSERT_EQ(x, 0.0f) << s.spec->name;
    }
  }
}

TEST(OptimizerStep, ANonFiniteGradientAnywhereInAWholeReplicaMakesTheNormNaN) {
  Rig r(0, Tier::device, 1.0, 2);
  GroupState& s = r.groups[0];
  // Outside this rank's shard (rank 1 of 2: the first half), which its sum of squares does not cover.
  const float inf = INFINITY;
  r.put(s.grad.data(), &inf, sizeof(float));
  EXPECT_TRUE(std::isnan(r.step->global_norm_squared()));
}

}  // namespace
}  // namespace tz
