// Resuming a checkpoint in other optimizer-state formats (train/checkpoint_resume.cc,
// zero/state_format_convert.h), tiny GPT-2 with the optimizer on the host tier, at 1 and 2 ranks: each
// element of the resumed engine's states is what converting the checkpoint's fp32 values gives (int8 codes
// bit for bit and absmax exactly as quantize_block gives them, bf16 rounded to nearest even, int8 and bf16
// values kept exactly in fp32), at stages 1-3 and from 2 ranks to 1; the resumed run's first loss is the
// unconverted run's, its next checkpoint records the new formats and resumes without converting.
#include <gtest/gtest.h>

#include <cstring>

#include "comm/communicator.h"
#include "core/blockwise_quant.h"
#include "core/quant_map.h"
#include "tests/common/test_dir.h"
#include "tests/common/tier_runs.h"
#include "train/checkpoint.h"
#include "train/collective_util.h"
#include "train/run_setup.h"
#include "train/trainer.h"

namespace tz {
namespace {

using testing::quiet;

TrainOptions in_formats(int stage, int steps, StateFormats f) {
  TrainOptions o = testing::offloaded(testing::tiny_tier_run(stage, steps), Tier::host);
  o.offload.optimizer_states = f.moments;
  o.offload.master_weights = f.master;
  return o;
}

const StateFormats kFp32{}, kInt8Sr{MomentFormat::int8, MasterFormat::bf16_sr},
    kBf16{MomentFormat::bf16, MasterFormat::fp32};

// A checkpoint of a run in formats f after 2 steps at `stage` (every rank of comm writing), in rank 0's dir.
std::string checkpoint(Communicator& comm, const std::string& dir, int stage, StateFormats f) {
  TrainOptions o = in_formats(stage, 2, f);
  o.save_dir = dir;
  o.save_every = 2;
  train(o, comm, quiet);
  return dir + "/step-00000002";
}

// A run's engine built from a checkpoint and restored, as train() does before its first step.
struct Resumed {
  std::vector<std::string> log;
  std::unique_ptr<CheckpointReader> ckpt;
  std::unique_ptr<Run> run;
  Resumed(const std::string& dir, const TrainOptions& opt, Communicator& comm) {
    ckpt = open_resume(dir, opt, comm, [&](const std::string& s) { log.push_back(s); });
    run = std::make_unique<Run>(opt, comm, TrainHooks{}, ckpt.get());
    restore_engine(*ckpt, opt, *run->engine);
  }
  Engine& engine() { return *run->engine; }
  const MemoryPlan& plan() const { return run->plan; }
  // The checkpoint's values of group g's array from optimizer-range element `begin`, n of them at most
  // (fewer at the group's end).
  std::vector<float> held(int g, StateArray a, std::size_t begin, std::size_t n) const {
    const std::size_t at = plan().placement.groups[g].opt_range.offset + begin, count = plan().layout.groups[g].count;
    std::vector<float> out(at >= count ? 0 : std::min(n, count - at));
    if (!out.empty()) ckpt->read(g, a, at, out.size(), out.data());
    return out;
  }
};

// Exactly the states converting the checkpoint's values into compressed formats gives, element by element.
void expect_converted_into_compressed(Resumed& r) {
  ASSERT_FALSE(r.plan().compressed.empty());
  int int8_blocks = 0;
  for (int g = 0; g < r.plan().map.groups(); ++g) {
    const CompressedArrays a = r.engine().compressed_states(g);
    for (const StatePiece& p : a.layout->pieces) {
      SCOPED_TRACE(r.plan().layout.groups[g].name + " at " + std::to_string(p.begin));
      const std::vector<float> master = r.held(g, StateArray::master, p.begin, p.span);
      for (std::size_t i = 0; i < master.size(); ++i)
        if (a.layout->master == MasterFormat::bf16_sr)
          ASSERT_EQ(reinterpret_cast<const bf16*>(a.master)[p.begin + i].bits, float_to_bf16(master[i]).bits) << i;
        else
          ASSERT_EQ(reinterpret_cast<const float*>(a.master)[p.begin + i], master[i]) << i;
      if (!p.count) continue;
      const std::vector<float> m = r.held(g, StateArray::m, p.begin, p.count),
                               v = r.held(g, StateArray::v, p.begin, p.count);
      ASSERT_EQ(m.size(), p.count);
      const CompressedStates s = piece_states(a, p);
      if (p.moments == MomentFormat::fp32) {
        ASSERT_EQ(std::memcmp(s.m, m.data(), p.count * 4), 0);
        ASSERT_EQ(std::memcmp(s.v, v.data(), p.count * 4), 0);
      } else if (p.moments == MomentFormat::bf16) {
        for (std::size_t i = 0; i < p.count; ++i) {
          ASSERT_EQ(static_cast<const bf16*>(s.m)[i].bits, float_to_bf16(m[i]).bits) << i;
          ASSERT_EQ(static_cast<const bf16*>(s.v)[i].bits, float_to_bf16(v[i]).bits) << i;
        }
      } else {
        std::vector<std::uint8_t> mc(p.count), vc(p.count);
        std::vector<float> ma(quant_blocks(p.count)), va(ma.size());
        quantize_blockwise(m.data(), p.count, dynamic_map(true), mc.data(), ma.data());
        quantize_blockwise(v.data(), p.count, dynamic_map(false), vc.data(), va.data(), /*keep_nonzero=*/true);
        ASSERT_EQ(std::memcmp(s.m, mc.data(), p.count), 0);  // codes bit for bit
        ASSERT_EQ(std::memcmp(s.v, vc.data(), p.count), 0);
        for (std::size_t b = 0; b < ma.size(); ++b, ++int8_blocks) {
          ASSERT_EQ(s.m_absmax[b], ma[b]) << "block " << b;  // absmax exactly
          ASSERT_EQ(s.v_absmax[b], va[b]) << "block " << b;
        }
      }
    }
  }
  if (r.run->plan.in.offload.optimizer_states == MomentFormat::int8) EXPECT_GT(int8_blocks, 0);
}

// The states of a run in fp32 formats, seen through visit_states: `want(g, array, begin, n)` element by
// element, exactly.
void expect_fp32_states(Resumed& r, const std::function<std::vector<float>(int, StateArray, std::size_t,
                                                                           std::size_t)>& want) {
  ASSERT_TRUE(r.plan().compressed.empty());
  std::size_t seen = 0;
  r.engine().visit_states(
      [&](int g, std::size_t b, std::size_t n, float* master, float* m, float* v) {
        const float* got[3] = {master, m, v};
        const StateArray arrays[3] = {StateArray::master, StateArray::m, StateArray::v};
        for (int k = 0; k < 3; ++k) {
          const std::vector<float> w = want(g, arrays[k], b, n);
          for (std::size_t i = 0; i < w.size(); ++i)
            ASSERT_EQ(got[k][i], w[i]) << r.plan().layout.groups[g].name << " array " << k << " element " << b + i;
          seen += w.size();
        }
      },
      StateWrite::none);
  EXPECT_GT(seen, 0u);
}

bool logged(const Resumed& r, const std::string& text) {
  for (const std::string& s : r.log)
    if (s.find(text) != std::string::npos) return true;
  return false;
}

TEST(StateConversion, Fp32IntoInt8AndBf16SrGivesTheQuantizersCodesAndRoundsTheMasterToNearestEven) {
  auto comm = make_mpi_world();
  testing::TestDir mine;
  const std::string dir = all_gather_strings(*comm, mine.file("ckpt"))[0];
  for (int stage : {1, 2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const std::string ckpt = checkpoint(*comm, dir + std::to_string(stage), stage, kFp32);
    Resumed r(ckpt, in_formats(stage, 4, kInt8Sr), *comm);
    expect_converted_into_compressed(r);
    EXPECT_EQ(logged(r, "resume: converting checkpoint " + ckpt +
                            "'s optimizer states fp32 -> int8 and master weights fp32 -> bf16-sr (once, at load)"),
              comm->rank() == 0);  // one line, on rank 0
  }
}

TEST(StateConversion, Int8AndBf16SrIntoFp32GivesTheDequantizedValuesExactly) {
  auto comm = make_mpi_world();
  testing::TestDir mine;
  const std::string dir = all_gather_strings(*comm, mine.file("ckpt"))[0];
  const std::string ckpt = checkpoint(*comm, dir, 2, kInt8Sr);
  // The int8 states as a run in the checkpoint's own formats holds them, dequantized here by the test: a
  // run of one rank, so that it holds every element (int8's shards are not fp32's).
  auto self = make_self_comm();
  Resumed same(ckpt, in_formats(2, 4, kInt8Sr), *self);
  EXPECT_FALSE(logged(same, "converting"));
  std::vector<std::vector<float>> want[3];  // [array][group]: the padded group's values
  for (int g = 0; g < same.plan().map.groups(); ++g) {
    ASSERT_EQ(same.plan().placement.groups[g].opt_range.offset, 0u);
    const CompressedArrays a = same.engine().compressed_states(g);
    for (auto& w : want) w.emplace_back(a.layout->range);
    for (const StatePiece& p : a.layout->pieces) {
      float* at[3] = {want[0][g].data() + p.begin, want[1][g].data() + p.begin, want[2][g].data() + p.begin};
      for (std::size_t i = 0; i < p.span; ++i) at[0][i] = bf16_to_float(reinterpret_cast<bf16*>(a.master)[p.begin + i]);
      const CompressedStates s = piece_states(a, p);
      if (p.moments == MomentFormat::int8) {
        dequantize_blockwise(static_cast<std::uint8_t*>(s.m), s.m_absmax, p.count, dynamic_map(true), at[1]);
        dequantize_blockwise(static_cast<std::uint8_t*>(s.v), s.v_absmax, p.count, dynamic_map(false), at[2]);
      } else {
        std::memcpy(at[1], s.m, p.count * 4);
        std::memcpy(at[2], s.v, p.count * 4);
      }
    }
  }
  Resumed r(ckpt, in_formats(2, 4, kFp32), *comm);
  expect_fp32_states(r, [&](int g, StateArray a, std::size_t b, std::size_t n) {
    const std::vector<float>& w = want[int(a)][g];
    const std::size_t at = r.plan().placement.groups[g].opt_range.offset + b;
    const std::size_t valid = r.held(g, a, b, n).size();  // the group's elements, not its padding
    return std::vector<float>(w.begin() + at, w.begin() + at + valid);
  });
  comm->barrier()->wait();  // rank 0's folder stays until rank 1 has read it
  EXPECT_EQ(logged(r, "'s optimizer states int8 -> fp32 and master weights bf16-sr -> fp32 (once, at load)"),
            comm->rank() == 0);
}

TEST(StateConversion, Bf16MomentsIntoFp32KeepTheirValuesAndFp32IntoBf16RoundsToNearestEven) {
  auto comm = make_mpi_world();
  testing::TestDir mine;
  const std::string dir = all_gather_strings(*comm, mine.file("ckpt"))[0];
  const std::string from_bf16 = checkpoint(*comm, dir + "a", 1, kBf16);
  Resumed r(from_bf16, in_formats(1, 4, kFp32), *comm);
  std::size_t widened = 0, not_bf16 = 0;
  expect_fp32_states(r, [&](int g, StateArray a, std::size_t b, std::size_t n) {
    std::vector<float> x = r.held(g, a, b, n);
    const GroupSpec& spec = r.plan().layout.groups[g];
    const std::size_t first = r.plan().placement.groups[g].opt_range.offset + b;
    for (std::size_t i = 0; i < x.size() && a != StateArray::master; ++i)
      for (const TensorSpec& t : spec.tensors)  // bf16's values, widened (small tensors keep fp32 moments)
        if (first + i >= t.offset && first + i < t.offset + t.count && t.count >= kCompressedMinElements) {
          not_bf16 += bf16_to_float(float_to_bf16(x[i])) != x[i];
          ++widened;
        }
    return x;
  });
  EXPECT_GT(widened, 0u);
  EXPECT_EQ(not_bf16, 0u);
  const std::string from_fp32 = checkpoint(*comm, dir + "b", 1, kFp32);
  Resumed back(from_fp32, in_formats(1, 4, kBf16), *comm);
  expect_converted_into_compressed(back);
}

TEST(StateConversion, ATwoRankCheckpointResumesAtOneRankInAnotherFormat) {
  auto comm = make_mpi_world();
  if (comm->size() != 2) GTEST_SKIP() << "needs 2 ranks to write the checkpoint";
  testing::TestDir mine;
  const std::string dir = all_gather_strings(*comm, mine.file("ckpt"))[0];
  const std::string int8 = checkpoint(*comm, dir + "a", 2, kInt8Sr), fp32 = checkpoint(*comm, dir + "b", 3, kFp32);
  auto self = make_self_comm();  // each rank resumes the whole checkpoint alone
  Resumed r(int8, in_formats(1, 4, kFp32), *self);
  EXPECT_TRUE(logged(r, "written by 2 ranks at ZeRO stage 2"));
  expect_fp32_states(r, [&](int g, StateArray a, std::size_t b, std::size_t n) { return r.held(g, a, b, n); });
  Resumed q(fp32, in_formats(1, 4, kInt8Sr), *self);
  expect_converted_into_compressed(q);
  comm->barrier()->wait();  // rank 0's folder stays until rank 1 has read it
}

TEST(StateConversion, TheResumedRunContinuesTheCheckpointsStepAndItsNextSaveRecordsTheNewFormats) {
  auto comm = make_mpi_world();
  testing::TestDir mine;
  const std::string dir = all_gather_strings(*comm, mine.file("ckpt"))[0];
  for (auto [from, to] : {std::pair{kInt8Sr, kFp32}, std::pair{kFp32, kInt8Sr}}) {
    SCOPED_TRACE(std::string(moment_format_name(from.moments)) + " -> " + std::string(moment_format_name(to.moments)));
    const std::string save = dir + std::string(moment_format_name(from.moments));
    checkpoint(*comm, save, 2, from);
    const TrainResult straight = train(in_formats(2, 4, from), *comm, quiet);
    TrainOptions o = in_formats(2, 4, to);
    o.save_dir = save;
    o.save_every = 2;
    o.resume = "latest";
    std::vector<std::string> log;
    const TrainResult resumed = train(o, *comm, [&](const std::string& s) { log.push_back(s); });
    ASSERT_EQ(resumed.losses.size(), 2u);
    // Step 3's forward reads only the working params, bf16 of the master in both runs (a bf16-sr master
    // widened exactly into fp32 and cast back; an fp32 master rounded to nearest even either way): equal
    // bit for bit. Step 4 follows an update by moments in other formats: within 0.1% (measured: at most
    // 1.0e-4 relative, at 1 and 2 ranks).
    EXPECT_EQ(resumed.losses[0], straight.losses[2]);
    EXPECT_NEAR(resumed.losses[1], straight.losses[3], 1e-3 * straight.losses[3]);
    int lines = 0;
    for (const std::string& s : log) lines += s.find("resume: converting checkpoint ") != std::string::npos;
    EXPECT_EQ(lines, comm->rank() == 0 ? 1 : 0);
    const CheckpointReader next(save + "/step-00000004");
    EXPECT_EQ(next.manifest().optimizer_states, moment_format_name(to.moments));
    EXPECT_EQ(next.manifest().master_weights, master_format_name(to.master));
    // The converted and saved checkpoint is the new formats' own: it resumes without converting.
    Resumed again(save + "/step-00000004", in_formats(2, 6, to), *comm);
    EXPECT_FALSE(logged(again, "converting"));
  }
}

}  // namespace
}  // namespace tz
