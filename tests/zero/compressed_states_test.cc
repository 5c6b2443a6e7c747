// Compressed optimizer states on the host tier (zero/compressed_states.h, issue 36): the plan sizes each
// group's master, m and v exactly per tensor (fp32 under 4096 elements, int8 codes and an absmax per 256);
// int8 shards are 256-aligned; the other tiers are refused naming the flag and the tier.
#include "zero/compressed_states.h"

#include <gtest/gtest.h>

#include <map>

#include "core/blockwise_quant.h"
#include "model/model_config.h"
#include "tests/common/error_message.h"
#include "tests/common/plan_groups.h"
#include "zero/memory_plan.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

using testing::error_message;

PlanInputs inputs(int stage, MomentFormat moments, MasterFormat master, int world = 2, int rank = 1) {
  PlanInputs in = testing::tiny_step_inputs(stage, Tier::host, world, rank);
  in.offload.optimizer_states = moments;
  in.offload.master_weights = master;
  in.offload.rounding_seed = 1337;
  return in;
}

std::size_t align64(std::size_t n) { return (n + 63) / 64 * 64; }

TEST(CompressedStates, ThePlanSizesEachGroupsStatesExactlyPerTensor) {
  for (MomentFormat f : {MomentFormat::int8, MomentFormat::bf16})
    for (int stage : {0, 1, 3}) {
      SCOPED_TRACE(std::string(moment_format_name(f)) + ", stage " + std::to_string(stage));
      const MemoryPlan p = plan_memory(inputs(stage, f, MasterFormat::bf16_sr));
      std::map<std::string, BufferSpec> b;
      for (const BufferSpec& s : p.buffers) b.emplace(s.name, s);
      ASSERT_EQ(p.compressed.size(), p.layout.groups.size());
      for (int g = 0; g < p.map.groups(); ++g) {
        const GroupSpec& spec = p.layout.groups[g];
        const Shard r = p.placement.groups[g].opt_range;
        std::size_t codes = 0, absmax = 0;
        for (const TensorSpec& t : spec.tensors) {
          const std::size_t lo = std::max(r.offset, t.offset), hi = std::min(r.offset + r.count, t.offset + t.count);
          if (lo >= hi) continue;
          const bool small = t.count < kCompressedMinElements;
          const std::size_t es = small ? 4 : f == MomentFormat::bf16 ? 2 : 1;
          codes = align64(codes + (hi - lo) * es);
          if (!small && f == MomentFormat::int8) absmax += (hi - lo + 255) / 256;
        }
        SCOPED_TRACE(spec.name);
        EXPECT_EQ(b.at(master_buffer(spec.name)).bytes, r.count * 2);
        EXPECT_EQ(b.at(master_buffer(spec.name)).cls, "bf16 master");
        EXPECT_EQ(b.at(master_buffer(spec.name)).kind, MemoryKind::pinned_host);
        for (const std::string& n : {adam_m_buffer(spec.name), adam_v_buffer(spec.name)}) {
          EXPECT_EQ(b.at(n).bytes, codes + 4 * absmax) << n;
          EXPECT_EQ(b.at(n).kind, MemoryKind::pinned_host) << n;
        }
        EXPECT_EQ(b.at(adam_m_buffer(spec.name)).cls, "adam m (" + std::string(moment_format_name(f)) + ")");
      }
      EXPECT_NE(p.table().find("optimizer states " + std::string(moment_format_name(f)) + ", master bf16-sr"),
                std::string::npos)
          << p.table();
    }
}

TEST(CompressedStates, Int8ShardsHoldWholeBlocksOfEveryTensorThatStartsOnOne) {
  const MemoryPlan p = plan_memory(inputs(1, MomentFormat::int8, MasterFormat::fp32, 4, 2));
  for (int g = 0; g < p.map.groups(); ++g) EXPECT_EQ(p.map.group(g).shard_count % kQuantBlock, 0u);
  for (const CompressedLayout& l : p.compressed)
    for (const StatePiece& s : l.pieces)
      if (s.moments == MomentFormat::int8) EXPECT_EQ(s.in_tensor % kQuantBlock, 0u);
  // fp32 states keep the 16-element shards (their bits do not change).
  const MemoryPlan f = plan_memory(inputs(1, MomentFormat::fp32, MasterFormat::fp32, 4, 2));
  EXPECT_EQ(f.map.group(0).padded % (kShardAlign * 4), 0u);
  EXPECT_TRUE(f.compressed.empty());
}

TEST(CompressedStates, AShardThatCutsAnInt8BlockIsRefusedNamingTheTensor) {
  GroupSpec g;
  add_tensor(g, "a", "a", {64}, {}, false);
  add_tensor(g, "w", "w", {64, 128}, {}, true);  // 8192 elements from element 64: its blocks start off 256
  const std::string m = error_message(
      [&] { compressed_layout(g, Shard{4096, 4096}, MomentFormat::int8, MasterFormat::fp32, "rank 1's shard of g"); });
  EXPECT_NE(m.find("--optimizer-states int8: rank 1's shard of g cuts tensor w"), std::string::npos) << m;
  EXPECT_NE(m.find("use --optimizer-states bf16"), std::string::npos) << m;
  EXPECT_NO_THROW(compressed_layout(g, Shard{4096, 4096}, MomentFormat::bf16, MasterFormat::fp32, "x"));
}

TEST(CompressedStates, OtherTiersAreRefusedNamingTheFlagAndTheTier) {
  struct Case {
    Tier tier;
    MomentFormat moments;
    MasterFormat master;
    const char* want;
  };
  for (const Case& c : {Case{Tier::nvme, MomentFormat::int8, MasterFormat::fp32,
                             "--optimizer-states int8 is not yet supported with the optimizer on nvme; use host"},
                        Case{Tier::device, MomentFormat::fp32, MasterFormat::bf16_sr,
                             "--master-weights bf16-sr is not yet supported with the optimizer on device; use host"},
                        Case{numa_tier(0), MomentFormat::bf16, MasterFormat::fp32,
                             "--optimizer-states bf16 is not yet supported with the optimizer on numa:0; use host"}}) {
    PlanInputs in = inputs(1, c.moments, c.master);
    in.offload.optimizer = c.tier;
    in.offload.nvme_paths = {"unused"};
    const std::string m = error_message([&] { plan_memory(in); });
    EXPECT_NE(m.find(c.want), std::string::npos) << m;
  }
  PlanInputs in = inputs(1, MomentFormat::int8, MasterFormat::fp32);
  in.offload.host_ratio_m = 0.5;
  EXPECT_NE(error_message([&] { plan_memory(in); }).find("--offload-ratio below 1"), std::string::npos);
  in = inputs(1, MomentFormat::int8, MasterFormat::fp32);
  in.offload.overlap_optimizer = OptimizerOverlap::on;
  EXPECT_NE(error_message([&] { plan_memory(in); }).find("--overlap-optimizer on"), std::string::npos);
}

}  // namespace
}  // namespace tz
