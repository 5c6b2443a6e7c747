// Compressed optimizer states on NVMe (issue 36): each group's layout is cut into records of whole pieces,
// never inside a 256-block, each record block-aligned in the store; the plan's NVMe rows add up to the
// store, for GPT-2 at most 0.40 of fp32's; and the same updates on the records streamed through the optimizer
// swapper's ring, and on the same states held in host memory, leave the same bytes (master, codes, absmax),
// read back as the same fp32 values.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/blockwise_quant.h"
#include "core/buffer_plan.h"
#include "core/device.h"
#include "model/model_config.h"
#include "tests/common/plan_groups.h"
#include "tests/common/test_dir.h"
#include "zero/memory_plan.h"
#include "zero/optimizer_swapper.h"

namespace tz {
namespace {

constexpr std::size_t kBlock = 4096;

PlanInputs nvme_inputs(int world, int rank, MomentFormat moments, MasterFormat master) {
  PlanInputs in = testing::tiny_step_inputs(1, Tier::nvme, world, rank);
  in.offload.nvme_paths = {"unused"};
  in.offload.aio_block_size = kBlock;
  in.offload.sub_group_size = 4096;  // records of at most 4,096 elements: tiny's larger tensors are cut
  in.offload.optimizer_states = moments;
  in.offload.master_weights = master;
  return in;
}

TEST(PackedSwap, RecordsHoldWholePiecesCutOnBlocksAndTileTheLayout) {
  for (int rank : {0, 1}) {
    const MemoryPlan p = plan_memory(nvme_inputs(2, rank, MomentFormat::int8, MasterFormat::bf16_sr));
    const OptimizerSwapPlan& s = p.optimizer_swap;
    ASSERT_FALSE(s.packed.empty());
    std::size_t u = 0, cut = 0;
    std::uint64_t end = s.base;
    for (int g = 0; g < p.map.groups(); ++g) {
      SCOPED_TRACE("rank " + std::to_string(rank) + ", group " + std::to_string(g));
      const std::vector<StatePiece> want = p.compressed[g].split(s.chunk);
      std::size_t k = 0, next = 0;  // the next piece of the group's split, and its first element
      for (; u < s.packed.size() && s.packed[u].g == g; ++u) {
        const PackedUnit& r = s.packed[u];
        EXPECT_EQ(r.begin, next);
        EXPECT_EQ(r.offset, end);  // records in order, each on a block, none overlapping
        EXPECT_EQ(r.offset % kBlock, 0u);
        // At most fp32's sub-group's bytes (12 an element), or one piece alone.
        EXPECT_TRUE(r.bytes <= 12 * s.chunk || r.layout.pieces.size() == 1) << r.bytes;
        for (const StatePiece& q : r.layout.pieces) EXPECT_LE(q.count, s.chunk);
        EXPECT_GE(r.m_byte, r.layout.master_bytes());
        EXPECT_EQ(r.bytes - r.v_byte, r.layout.moment_array_bytes());
        EXPECT_GE(r.v_byte - r.m_byte, r.layout.moment_array_bytes());
        EXPECT_LE(std::size_t(round_up(r.bytes, kDirectIoAlign)), s.slot_bytes);
        for (const StatePiece& q : r.layout.pieces) {
          ASSERT_LT(k, want.size());
          const StatePiece& w = want[k++];
          EXPECT_EQ(r.begin + q.begin, w.begin);
          EXPECT_EQ(q.count, w.count);
          EXPECT_EQ(q.span, w.span);
          EXPECT_EQ(q.in_tensor, w.in_tensor);
          EXPECT_EQ(q.tensor, w.tensor);
          EXPECT_EQ(q.moments, w.moments);
          if (q.moments == MomentFormat::int8) {
            // A piece starts on a block of its tensor; it ends on one unless its tensor ends there.
            EXPECT_EQ(q.in_tensor % kQuantBlock, 0u);
            const TensorSpec& t = p.layout.groups[g].tensors[std::size_t(q.tensor)];
            EXPECT_TRUE((q.in_tensor + q.count) % kQuantBlock == 0 || q.in_tensor + q.count == t.count);
            cut += q.in_tensor > 0 && q.in_tensor + q.count < t.count;
          }
        }
        next = r.begin + r.layout.range;
        end = r.offset + round_up(r.bytes, kBlock);
      }
      EXPECT_EQ(k, want.size());
      EXPECT_EQ(next, p.compressed[g].range);
    }
    EXPECT_EQ(u, s.packed.size());
    EXPECT_GT(cut, 0u);  // the sub-group size did cut tensors in their middle
    EXPECT_EQ(end - s.base, s.bytes);
    // The plan's NVMe rows: the master, m and v in their formats and the blocks' padding, summing to the
    // store.
    std::size_t rows = 0;
    for (const PlanRow& r : p.rows())
      if (r.tier == Tier::nvme) {
        rows += r.bytes;
        EXPECT_TRUE(r.what == "bf16 master" || r.what == "adam m (int8)" || r.what == "adam v (int8)" ||
                    r.what == "store block padding")
            << r.what;
      }
    EXPECT_EQ(rows, s.bytes);
    EXPECT_EQ(p.total(Tier::nvme), p.nvme_bytes);
    EXPECT_EQ(p.state_bytes(Tier::host), 0u);  // nothing of the states in host memory
  }
}

TEST(PackedSwap, Gpt2sStoreAndItsTrafficAStepAreAtMost040OfFp32sWithInt8AndABf16SrMaster) {
  for (int world : {1, 4}) {
    SCOPED_TRACE("world " + std::to_string(world));
    PlanInputs in = nvme_inputs(world, world - 1, MomentFormat::int8, MasterFormat::bf16_sr);
    in.model = model_preset("gpt2");
    in.offload.aio_block_size = PlanInputs{}.offload.aio_block_size;  // the defaults: 1 MiB blocks
    in.offload.sub_group_size = PlanInputs{}.offload.sub_group_size;
    const MemoryPlan packed = plan_memory(in);
    in.offload.optimizer_states = MomentFormat::fp32, in.offload.master_weights = MasterFormat::fp32;
    const MemoryPlan fp32 = plan_memory(in);
    // Each record is read and written once a step, as is each fp32 array: the store's bytes are the traffic.
    const double ratio = double(packed.optimizer_swap.bytes) / double(fp32.optimizer_swap.bytes);
    EXPECT_LE(ratio, 0.40);
    EXPECT_GE(ratio, 4.0 / 12);  // int8 m, v (1 byte and an absmax per 256) and a 2-byte master against 12
    EXPECT_LE(packed.optimizer_swap.slot_bytes, fp32.optimizer_swap.slot_bytes);  // the ring no larger
  }
}

// The states of a layout in host memory, as the host tier holds them.
struct HostStates {
  std::vector<std::uint8_t> master, m, v;
  explicit HostStates(const CompressedLayout& l)
      : master(l.master_bytes()), m(l.moment_array_bytes()), v(l.moment_array_bytes()) {}
  CompressedArrays arrays(const CompressedLayout& l) { return {&l, master.data(), m.data(), v.data()}; }
};

TEST(PackedSwap, UpdatesOnRecordsStreamedFromTheStoreLeaveTheBytesOfTheSameUpdatesInHostMemory) {
  for (MomentFormat f : {MomentFormat::int8, MomentFormat::bf16})
    for (MasterFormat mf : {MasterFormat::bf16_sr, MasterFormat::fp32}) {
      SCOPED_TRACE(std::string(moment_format_name(f)) + "/" + std::string(master_format_name(mf)));
      const MemoryPlan p = plan_memory(nvme_inputs(2, 1, f, mf));
      testing::TestDir dir;
      NvmeStoreOptions so;
      so.paths = {dir.path()};
      so.bytes = p.optimizer_swap.bytes;
      so.block_size = kBlock;
      so.queue_depth = 4;
      so.run_id = "packed-swap-test";
      NvmeStore store(so);
      auto dev = make_cpu_device();
      PlannedBuffers planned(*dev, OptimizerSwapper::buffers(p.optimizer_swap));
      OptimizerSwapper swap(store, p.optimizer_swap, planned);
      ASSERT_TRUE(swap.packed());
      std::mt19937 rng(7);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<HostStates> host;
      std::vector<std::vector<float>> values;
      for (int g = 0; g < p.map.groups(); ++g) {
        values.emplace_back(p.compressed[g].range);
        for (float& x : values.back()) x = normal(rng) * 0.05f;
        host.emplace_back(p.compressed[g]);
        init_compressed(host.back().arrays(p.compressed[g]), values.back().data());
        swap.initialize(g, values.back().data());
      }
      for (int step = 1; step <= 3; ++step) {
        std::vector<std::vector<float>> grads;
        for (int g = 0; g < p.map.groups(); ++g) {
          grads.emplace_back(p.compressed[g].range);
          for (float& x : grads.back()) x = normal(rng) * (g == 1 ? 0.0f : 0.01f);  // one group's all zero
        }
        const AdamStep a{1e-2f, 0.9f, 0.95f, 1e-8f, 0.0f, step, 1.0f};
        for (int g = 0; g < p.map.groups(); ++g)
          for (const StatePiece& q : p.compressed[g].split(p.optimizer_swap.chunk))
            update_compressed(host[g].arrays(p.compressed[g]), q, grads[g].data() + q.begin, a, 0.1f, 1337,
                              g);
        swap.for_each_packed([&](const PackedUnit& u, const CompressedArrays& arr) {
          for (const StatePiece& q : u.layout.pieces)
            update_compressed(arr, q, grads[u.g].data() + u.begin + q.begin, a, 0.1f, 1337, u.g);
        });
      }
      // Read back without writing, piece by piece: the record's bytes are the host's bytes at that piece.
      std::size_t pieces = 0;
      swap.for_each_packed(
          [&](const PackedUnit& u, const CompressedArrays& arr) {
            const CompressedLayout& whole = p.compressed[u.g];
            const CompressedArrays h = host[u.g].arrays(whole);
            const std::size_t mb = mf == MasterFormat::bf16_sr ? 2 : 4;
            ASSERT_EQ(std::memcmp(arr.master, h.master + u.begin * mb, u.layout.range * mb), 0)
                << u.g << " " << u.begin;
            for (const StatePiece& q : u.layout.pieces) {
              std::vector<float> a3(3 * q.span), b3(3 * q.span);
              decode_piece(arr, q, a3.data(), a3.data() + q.span, a3.data() + 2 * q.span);
              StatePiece w = q;  // the same piece in the whole layout
              for (const StatePiece& x : whole.split(p.optimizer_swap.chunk))
                if (x.begin == u.begin + q.begin) w = x;
              ASSERT_EQ(w.begin, u.begin + q.begin);
              decode_piece(h, w, b3.data(), b3.data() + q.span, b3.data() + 2 * q.span);
              for (std::size_t i = 0; i < a3.size(); ++i)
                ASSERT_EQ(a3[i], b3[i]) << u.g << " " << w.begin << " " << i;
              if (q.moments == MomentFormat::int8) {
                const CompressedStates cs = piece_states(arr, q), hs = piece_states(h, w);
                ASSERT_EQ(std::memcmp(cs.m, hs.m, q.count), 0);
                ASSERT_EQ(std::memcmp(cs.v, hs.v, q.count), 0);
                ASSERT_EQ(std::memcmp(cs.m_absmax, hs.m_absmax, quant_blocks(q.count) * 4), 0);
                ASSERT_EQ(std::memcmp(cs.v_absmax, hs.v_absmax, quant_blocks(q.count) * 4), 0);
              }
              ++pieces;
            }
          },
          false);
      EXPECT_GT(pieces, std::size_t(p.map.groups()));
      // The master alone, as an export reads it.
      for (int g = 0; g < p.map.groups(); ++g) {
        std::vector<float> got(p.compressed[g].range), want(p.compressed[g].range), m, v;
        swap.read_master(g, got.data());
        for (const StatePiece& q : p.compressed[g].pieces) {
          m.resize(q.span), v.resize(q.span);
          decode_piece(host[g].arrays(p.compressed[g]), q, want.data() + q.begin, m.data(), v.data());
        }
        EXPECT_EQ(got, want) << "group " << g;
      }
      // A step reads and writes each record once: the store's bytes, rounded to 4 KiB per record.
      double record_bytes = 0;
      for (const PackedUnit& u : p.optimizer_swap.packed)
        record_bytes += double(round_up(u.bytes, kDirectIoAlign));
      swap.stats().reset();
      swap.for_each_packed([](const PackedUnit&, const CompressedArrays&) {});
      EXPECT_EQ(swap.stats().read_bytes, record_bytes);
      EXPECT_EQ(swap.stats().write_bytes, record_bytes);
    }
}

}  // namespace
}  // namespace tz
