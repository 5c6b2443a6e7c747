// Compressed optimizer states on the host tier (zero/compressed_states.h, issue 36): the plan sizes each
// group's master, m and v exactly per tensor (fp32 under 4096 elements, int8 codes and an absmax per 256);
// int8 shards are 256-aligned; what is not built is refused naming the flag;
// the optimizer step leaves in the host states exactly what a direct adamw_compressed call per tensor gives
// on the same gradients; and the fp32 view checkpoints use gives the states back exactly.
#include "zero/compressed_states.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "core/blockwise_quant.h"
#include "core/cpu_adam.h"
#include "model/model_config.h"
#include "tests/common/error_message.h"
#include "tests/common/plan_groups.h"
#include "tests/common/recording_comm.h"
#include "zero/memory_plan.h"
#include "zero/optimizer_step.h"

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

// The layout starts a tensor of 4096 elements or more on a block even after a short one, so a shard on a
// multiple of 256 holds whole blocks of it.
TEST(CompressedStates, TheLayoutStartsAQuantizedTensorOnABlockSoNoShardCutsOne) {
  GroupSpec g;
  add_tensor(g, "a", "a", {64}, {}, false);
  add_tensor(g, "w", "w", {64, 128}, {}, false);
  add_tensor(g, "b", "b", {48}, {}, false);
  add_tensor(g, "u", "u", {4096}, {}, false);
  ASSERT_EQ(g.tensors[1].offset, 256u);
  ASSERT_EQ(g.tensors[2].offset, 256u + 8192u);
  ASSERT_EQ(g.tensors[3].offset, 256u + 8192u + 256u);
  const CompressedLayout l =
      compressed_layout(g, Shard{4096, 8192}, MomentFormat::int8, MasterFormat::fp32, "rank 1's shard of g");
  for (const StatePiece& s : l.pieces)
    if (s.moments == MomentFormat::int8) EXPECT_EQ(s.in_tensor % kQuantBlock, 0u) << s.tensor;
}

// Only a tensor after a packed one (read with it as one matrix) can start off a block.
TEST(CompressedStates, AShardThatCutsAnInt8BlockIsRefusedNamingTheTensor) {
  GroupSpec g;
  add_tensor(g, "a", "a", {64}, {}, false, /*packed=*/true);
  add_tensor(g, "w", "w", {64, 128}, {}, true);  // 8192 elements from element 64: its blocks start off 256
  const std::string m = error_message(
      [&] { compressed_layout(g, Shard{4096, 4096}, MomentFormat::int8, MasterFormat::fp32, "rank 1's shard of g"); });
  EXPECT_NE(m.find("--optimizer-states int8: rank 1's shard of g cuts tensor w"), std::string::npos) << m;
  EXPECT_NE(m.find("use --optimizer-states bf16"), std::string::npos) << m;
  EXPECT_NO_THROW(compressed_layout(g, Shard{4096, 4096}, MomentFormat::bf16, MasterFormat::fp32, "x"));
}

TEST(CompressedStates, WhatIsNotBuiltIsRefusedNamingTheFlag) {
  {  // the optimizer on the device with the parameters on NVMe
    PlanInputs in = inputs(3, MomentFormat::int8, MasterFormat::fp32);
    in.offload.optimizer = Tier::device;
    in.offload.param = Tier::nvme;
    in.offload.nvme_paths = {"unused"};
    const std::string m = error_message([&] { plan_memory(in); });
    EXPECT_NE(m.find("--optimizer-states int8 with the optimizer on the device is not yet supported with the "
                     "parameters on nvme"),
              std::string::npos)
        << m;
  }
  for (Tier t : {Tier::device, Tier::nvme}) {  // every other tier plans
    PlanInputs in = inputs(1, MomentFormat::int8, MasterFormat::bf16_sr);
    in.offload.optimizer = t;
    in.offload.nvme_paths = {"unused"};
    const MemoryPlan p = plan_memory(in);
    std::size_t master = 0;
    for (const PlanRow& r : p.rows())
      if (r.what == "bf16 master") {
        EXPECT_EQ(r.tier, t);
        master += r.bytes;
      }
    EXPECT_GT(master, 0u) << tier_name(t);
  }
  PlanInputs in = inputs(1, MomentFormat::int8, MasterFormat::fp32);
  in.offload.host_ratio_m = 0.5;
  EXPECT_NE(error_message([&] { plan_memory(in); }).find("--offload-ratio below 1"), std::string::npos);
  in = inputs(1, MomentFormat::int8, MasterFormat::fp32);
  in.offload.overlap_optimizer = OptimizerOverlap::on;
  EXPECT_NE(error_message([&] { plan_memory(in); }).find("--overlap-optimizer on"), std::string::npos);
}

float master0(std::size_t e, int g) { return float(int((e * 37 + std::size_t(g) * 11) % 201) - 100) / 64.0f; }
float grad0(std::size_t e, int g, int step) {
  return float(int((e * 29 + std::size_t(g) * 5 + std::size_t(step) * 7) % 97) - 48) / 32.0f;
}

// The optimizer step over a plan's groups on a cpu device and a recording communicator (its peers hold what
// this rank holds), the gradients written by the test.
struct Rig {
  PlanInputs in;
  MemoryPlan plan;
  std::unique_ptr<Device> dev = make_cpu_device();
  std::unique_ptr<Stream> stream = dev->create_stream();
  testing::RecordingComm comm;
  std::unique_ptr<PlannedBuffers> planned;
  std::vector<GroupState> groups;
  std::unique_ptr<OptimizerStep> step;

  explicit Rig(const PlanInputs& i) : in(i), plan(plan_memory(in)), comm(in.world, in.rank) {
    planned = std::make_unique<PlannedBuffers>(*dev, plan.buffers);
    groups = testing::plan_groups(plan, *planned);
    for (GroupState& s : groups) {
      std::vector<float> range(s.place->opt_range.count);
      for (std::size_t k = 0; k < range.size(); ++k) range[k] = master0(s.place->opt_range.offset + k, s.index);
      init_compressed(s.compressed(), range.data());
    }
    step = std::make_unique<OptimizerStep>(*dev, *stream, comm, plan.optimizer(), groups, *planned, nullptr, nullptr,
                                           in.zero.allgather_bucket_size);
  }

  void set_grads(int k) {
    for (GroupState& s : groups) {
      std::vector<float> gr(s.grad_count());
      const std::size_t first = s.place->grads_sharded ? s.shard.offset : 0;
      for (std::size_t j = 0; j < gr.size(); ++j) gr[j] = grad0(first + j, s.index, k);
      dev->backend().copy_async(*stream, s.grad.data(), gr.data(), gr.size() * 4);
      stream->synchronize();
    }
  }
};

// The same states kept by the test: one tensor piece's arrays, updated by adamw_compressed directly.
struct Direct {
  std::vector<std::uint8_t> master, m, v;
  std::vector<float> m_absmax, v_absmax;
};

TEST(CompressedStates, TheStepLeavesWhatADirectAdamwCompressedCallGivesOnTheSameGradients) {
  for (MomentFormat f : {MomentFormat::int8, MomentFormat::bf16})
    for (int stage : {1, 2}) {
      SCOPED_TRACE(std::string(moment_format_name(f)) + ", stage " + std::to_string(stage));
      Rig r(inputs(stage, f, MasterFormat::bf16_sr));
      // The reference: per group, per tensor piece of this rank's range, its own arrays.
      std::vector<std::vector<Direct>> ref(r.groups.size());
      for (GroupState& s : r.groups)
        for (const StatePiece& p : s.packed->pieces) {
          Direct d;
          std::vector<float> x(p.count);
          for (std::size_t i = 0; i < p.count; ++i) x[i] = master0(s.place->opt_range.offset + p.begin + i, s.index);
          d.master.resize(p.count * 2);
          for (std::size_t i = 0; i < p.count; ++i) {
            const bf16 h = float_to_bf16(x[i]);
            std::memcpy(d.master.data() + 2 * i, &h, 2);
          }
          const std::vector<float> zero(p.count, 0.0f);
          const std::size_t es = p.moments == MomentFormat::fp32 ? 4 : p.moments == MomentFormat::bf16 ? 2 : 1;
          d.m.assign(p.count * es, 0), d.v.assign(p.count * es, 0);
          d.m_absmax.assign(quant_blocks(p.count), 0.0f), d.v_absmax.assign(quant_blocks(p.count), 0.0f);
          if (p.moments == MomentFormat::int8) {
            quantize_blockwise(zero.data(), p.count, dynamic_map(true), d.m.data(), d.m_absmax.data());
            quantize_blockwise(zero.data(), p.count, dynamic_map(false), d.v.data(), d.v_absmax.data(), true);
          }
          ref[std::size_t(s.index)].push_back(std::move(d));
        }
      for (int k = 1; k <= 3; ++k) {
        const AdamStep a{1e-2f, 0.9f, 0.95f, 1e-8f, 0.0f, k, 0.5f};
        r.set_grads(k);
        r.step->update(a, 0.1f);
        for (GroupState& s : r.groups) {
          const std::size_t lo = s.place->opt_range.offset;
          for (std::size_t j = 0; j < s.packed->pieces.size(); ++j) {
            const StatePiece& p = s.packed->pieces[j];
            if (!p.count) continue;
            Direct& d = ref[std::size_t(s.index)][j];
            std::vector<float> g(p.count);
            for (std::size_t i = 0; i < p.count; ++i) g[i] = grad0(lo + p.begin + i, s.index, k);
            AdamStep sa = a;
            sa.weight_decay = p.decay ? 0.1f : 0.0f;
            CompressedStates st{p.moments, MasterFormat::bf16_sr, d.master.data(), d.m.data(), d.v.data(),
                                d.m_absmax.data(), d.v_absmax.data()};
            adamw_compressed(CpuAdamIsa::scalar, sa, st, g.data(), p.count,
                             ShardPosition{p.in_tensor, rounding_seed(1337, s.index, p.tensor)});
            SCOPED_TRACE(s.spec->name + " piece " + std::to_string(j) + " step " + std::to_string(k));
            const CompressedArrays c = s.compressed();
            ASSERT_EQ(std::memcmp(c.master + 2 * p.begin, d.master.data(), d.master.size()), 0);
            ASSERT_EQ(std::memcmp(c.m + p.moment_byte, d.m.data(), d.m.size()), 0);
            ASSERT_EQ(std::memcmp(c.v + p.moment_byte, d.v.data(), d.v.size()), 0);
            if (p.moments == MomentFormat::int8) {
              const float* ma = reinterpret_cast<const float*>(c.m + s.packed->codes_bytes) + p.absmax;
              for (std::size_t b = 0; b < d.m_absmax.size(); ++b) ASSERT_EQ(ma[b], d.m_absmax[b]);
            }
            // The working params (device memory: read back by a copy) are the master's values.
            std::vector<std::uint8_t> w(d.master.size());
            r.dev->backend().copy_async(*r.stream, w.data(), s.params_at(lo + p.begin), w.size());
            r.stream->synchronize();
            ASSERT_EQ(std::memcmp(w.data(), d.master.data(), d.master.size()), 0);
          }
        }
      }
    }
}

TEST(CompressedStates, TheFp32ViewGivesTheStatesBackExactly) {
  Rig r(inputs(1, MomentFormat::int8, MasterFormat::bf16_sr));
  for (int k = 1; k <= 2; ++k) {
    r.set_grads(k);
    r.step->update(AdamStep{1e-2f, 0.9f, 0.95f, 1e-8f, 0.0f, k, 0.5f}, 0.1f);
  }
  for (GroupState& s : r.groups) {
    const CompressedArrays c = s.compressed();
    const std::size_t mb = s.packed->moment_array_bytes();
    const std::vector<std::uint8_t> master(c.master, c.master + s.packed->master_bytes()), m(c.m, c.m + mb),
        v(c.v, c.v + mb);
    for (const StatePiece& p : s.packed->split(1000)) {
      std::vector<float> x(p.span), y(p.span), z(p.span);
      decode_piece(c, p, x.data(), y.data(), z.data());
      encode_piece(c, p, x.data(), y.data(), z.data());
    }
    EXPECT_EQ(std::memcmp(master.data(), c.master, master.size()), 0) << s.spec->name;
    // int8 codes may change where a block's values come back under another absmax: the values may not.
    for (const StatePiece& p : s.packed->pieces) {
      std::vector<float> a(p.span), b(p.span), cc(p.span), a2(p.span), b2(p.span), c2(p.span);
      decode_piece(c, p, a.data(), b.data(), cc.data());
      CompressedArrays old{s.packed, const_cast<std::uint8_t*>(master.data()), const_cast<std::uint8_t*>(m.data()),
                           const_cast<std::uint8_t*>(v.data())};
      decode_piece(old, p, a2.data(), b2.data(), c2.data());
      for (std::size_t i = 0; i < p.span; ++i) {
        ASSERT_EQ(a[i], a2[i]);
        ASSERT_EQ(b[i], b2[i]) << s.spec->name << " m " << i;
        ASSERT_EQ(cc[i], c2[i]) << s.spec->name << " v " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tz
