// GradReducer at its own layer, on a cpu device over a recording communicator of 2 ranks (the peer holds
// what this rank holds, so a sum is twice the pushed gradient): each group's reduced gradient reaches
// its destination exactly (copied or added, on the device or the host), one collective per planned
// bucket with its planned length, and groups out of order are refused.
#include "zero/grad_reducer.h"

#include <gtest/gtest.h>

#include <set>

#include "core/backend.h"
#include "core/error.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "tests/common/recording_comm.h"

namespace tz {
namespace {

constexpr int kWorld = 2, kRank = 1;

struct Fixture {
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  ShardMap map{layout, kWorld, kRank};
  std::unique_ptr<Device> dev = make_cpu_device();
  std::unique_ptr<Stream> stream = dev->create_stream();
  testing::RecordingComm comm{kWorld, kRank};

  // Group g's gradient: distinct small integers per group and element (exact in fp32, doubled exactly).
  std::vector<float> grad(int g) const {
    std::vector<float> v(map.group(g).padded);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float((int(i) * 7 + g * 13) % 97 - 48);
    return v;
  }
  void to_device(float* dst, const std::vector<float>& src) {
    dev->backend().copy_async(*stream, dst, src.data(), src.size() * sizeof(float));
    stream->synchronize();
  }
  std::vector<float> from_device(const float* src, std::size_t n) {
    std::vector<float> v(n);
    dev->backend().copy_async(*stream, v.data(), src, n * sizeof(float));
    stream->synchronize();
    return v;
  }
};

// One run: every group pushed in the planned order, then flushed. Destinations are device buffers
// (or pinned host memory with `on_host`) holding `start` before the step.
struct Outcome {
  std::vector<std::vector<float>> got;
  std::vector<int> delivered;
};

Outcome reduce(Fixture& f, bool reduce_scatter, std::size_t bucket_elems, GradReducer::Deliver how, bool on_host,
               bool overlap, float start) {
  BucketPlan plan = plan_buckets(f.map, reduce_scatter, bucket_elems, Gpt::gradient_order(f.layout));
  std::vector<BufferSpec> specs = GradReducer::buffers(f.map, plan, on_host);
  const int G = f.map.groups();
  auto len = [&](int g) { return reduce_scatter ? f.map.group(g).shard_count : f.map.group(g).padded; };
  for (int g = 0; g < G; ++g) {
    specs.push_back({"dest " + std::to_string(g), "test", on_host ? MemoryKind::pinned_host : MemoryKind::device,
                     len(g) * 4});
    specs.push_back({"grad " + std::to_string(g), "test", MemoryKind::device, f.map.group(g).padded * 4});
  }
  PlannedBuffers planned(*f.dev, specs);
  std::vector<Buffer<float>> dest, grads;
  std::vector<GradReducer::Destination> d;
  for (int g = 0; g < G; ++g) {
    dest.push_back(planned.take<float>("dest " + std::to_string(g)));
    grads.push_back(planned.take<float>("grad " + std::to_string(g)));
    const std::vector<float> init(len(g), start);
    if (on_host)
      std::copy(init.begin(), init.end(), dest.back().data());
    else
      f.to_device(dest.back().data(), init);
    f.to_device(grads.back().data(), f.grad(g));
    d.push_back({dest.back().data(), how, on_host});
  }
  Outcome out;
  {
    GradReducer r(*f.dev, *f.stream, f.comm, f.map, plan, d, planned, overlap);
    r.on_delivered([&](int g) { out.delivered.push_back(g); });
    for (int g : plan.order) r.push(g, grads[g].data());
    r.flush();
    f.stream->synchronize();
  }
  for (int g = 0; g < G; ++g)
    out.got.push_back(on_host ? std::vector<float>(dest[g].data(), dest[g].data() + len(g))
                              : f.from_device(dest[g].data(), len(g)));
  return out;
}

// What rank 1 of 2 must hold: the sum over both ranks (twice the gradient) of its shard, or of all of it.
std::vector<float> expected(const Fixture& f, int g, bool reduce_scatter, float start, bool add) {
  const std::vector<float> full = f.grad(g);
  const std::size_t n = reduce_scatter ? f.map.group(g).shard_count : full.size();
  const std::size_t off = reduce_scatter ? std::size_t(kRank) * n : 0;
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (add ? start : 0.0f) + 2.0f * full[off + i];
  return v;
}

TEST(GradReducer, ReduceScatterDeliversEachGroupsShardOfTheSumWithOneCollectivePerBucket) {
  for (bool overlap : {true, false}) {
    Fixture f;
    const std::size_t bucket = 20'000;  // several buckets for the tiny model
    const BucketPlan plan = plan_buckets(f.map, true, bucket, Gpt::gradient_order(f.layout));
    ASSERT_GT(plan.launches(), 2);
    const Outcome o = reduce(f, true, bucket, GradReducer::Deliver::copy, false, overlap, -5.0f);
    for (int g = 0; g < f.map.groups(); ++g) EXPECT_EQ(o.got[g], expected(f, g, true, 0, false)) << "group " << g;
    const auto rs = f.comm.of(Collective::reduce_scatter);
    ASSERT_EQ(int(rs.size()), plan.launches());
    for (int l = 0; l < plan.launches(); ++l) {
      EXPECT_EQ(rs[l].count, plan.stride[l]) << l;
      EXPECT_EQ(rs[l].dtype, DType::f32);
      // NCCL's in-place convention: the result lands in this rank's block of the bucket.
      EXPECT_EQ(rs[l].recv, static_cast<const float*>(rs[l].send) + kRank * plan.stride[l]) << l;
    }
    EXPECT_TRUE(f.comm.of(Collective::all_reduce).empty());
    EXPECT_EQ(o.delivered, plan.order);  // each group once, in the order it arrived
  }
}

TEST(GradReducer, AllReduceDeliversTheWholeSumAndAddsWhereAsked) {
  Fixture f;
  const Outcome o = reduce(f, false, 1 << 30, GradReducer::Deliver::add, false, true, 3.0f);
  for (int g = 0; g < f.map.groups(); ++g) EXPECT_EQ(o.got[g], expected(f, g, false, 3.0f, true)) << "group " << g;
  ASSERT_EQ(f.comm.of(Collective::all_reduce).size(), 1u);  // one bucket holds the whole model
  EXPECT_TRUE(f.comm.of(Collective::reduce_scatter).empty());
}

// The host tier's gradient shards (an offloaded optimizer at stages 2-3): added in host memory.
TEST(GradReducer, HostDestinationsGetTheirShardAddedInHostMemory) {
  Fixture f;
  const Outcome o = reduce(f, true, 20'000, GradReducer::Deliver::add, true, true, 0.5f);
  for (int g = 0; g < f.map.groups(); ++g) EXPECT_EQ(o.got[g], expected(f, g, true, 0.5f, true)) << "group " << g;
}

TEST(GradReducer, AGroupOutOfThePlannedOrderOrAFlushWithGroupsMissingIsRefused) {
  Fixture f;
  // Buckets of one group each, so that a flush after the first group has delivered every launched bucket.
  BucketPlan plan = plan_buckets(f.map, true, 1, Gpt::gradient_order(f.layout));
  ASSERT_EQ(plan.launches(), f.map.groups());
  std::vector<BufferSpec> specs = GradReducer::buffers(f.map, plan, false);
  std::size_t largest = 0;
  for (int g = 0; g < f.map.groups(); ++g) largest = std::max(largest, f.map.group(g).padded);
  specs.push_back({"grad", "test", MemoryKind::device, largest * 4});
  PlannedBuffers planned(*f.dev, specs);
  Buffer<float> grad = planned.take<float>("grad");
  std::vector<Buffer<float>> dest;
  std::vector<GradReducer::Destination> d;
  for (int g = 0; g < f.map.groups(); ++g) {
    dest.emplace_back(*f.dev, f.map.group(g).shard_count, "dest");
    d.push_back({dest.back().data(), GradReducer::Deliver::copy, false});
  }
  GradReducer r(*f.dev, *f.stream, f.comm, f.map, plan, d, planned, true);
  const int first = plan.order[0], second = plan.order[1];
  try {
    r.push(second, grad.data());
    FAIL() << "expected the order error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gradient of group " + std::to_string(second) +
                                         " arrived out of the planned order (expected group " +
                                         std::to_string(first) + ")"),
              std::string::npos)
        << e.what();
  }
  r.push(first, grad.data());
  try {
    r.flush();
    FAIL() << "expected the missing-groups error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gradients were reduced for 1 of " + std::to_string(f.map.groups()) +
                                         " groups before the step"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tz
