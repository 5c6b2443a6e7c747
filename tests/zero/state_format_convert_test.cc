// Converting optimizer states between formats at a resume (zero/state_format_convert.h): fp32 values into
// int8 give the codes and absmax quantize_block gives, bit for bit (v keeping nonzero values nonzero);
// into bf16 they round to nearest even; int8 and bf16 values come back into fp32 unchanged; the exact
// encoder a same-format resume uses still refuses values int8 never gave; rank 0's line names each change.
#include "zero/state_format_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/blockwise_quant.h"
#include "core/quant_map.h"
#include "tests/common/error_message.h"
#include "tests/common/random.h"

namespace tz {
namespace {

// A group of a 12,300-element decayed matrix (int8 when asked: 48 whole blocks and a last one of 12) and
// a 64-element bias (fp32 moments whatever is asked), held whole, with its arrays.
struct Held {
  GroupSpec spec;
  CompressedLayout layout;
  std::vector<std::uint8_t> master, m, v;

  Held(MomentFormat moments, MasterFormat mf) {
    add_tensor(spec, "w", "w", {100, 123}, {}, true);
    add_tensor(spec, "b", "b", {64}, {}, false);
    layout = compressed_layout(spec, Shard{0, spec.count}, moments, mf, "the test's group");
    master.resize(layout.master_bytes());
    m.resize(layout.moment_array_bytes());
    v.resize(layout.moment_array_bytes());
  }
  CompressedArrays arrays() { return {&layout, master.data(), m.data(), v.data()}; }
};

// The group's states as fp32 values, seeded: a master, m of either sign, v >= 0 with some tiny values (the
// ones int8's unsigned map would round to 0 beside a large one), and a block of zeros.
struct Values {
  std::vector<float> master, m, v;
  explicit Values(std::size_t n, std::uint64_t seed) {
    test::Rng rng(seed);
    master = rng.floats(n, -2.0, 2.0);
    m = rng.floats(n, -1e-2, 1e-2);
    v = rng.floats(n, 0.0, 1e-4);
    for (std::size_t i = 0; i < n; i += 97) v[i] = 1e-12f;
    std::fill(m.begin() + 512, m.begin() + 768, 0.0f);
    std::fill(v.begin() + 512, v.begin() + 768, 0.0f);
  }
};

void convert_all(Held& h, const Values& x) {
  for (const StatePiece& p : h.layout.pieces)
    convert_piece(h.arrays(), p, x.master.data() + p.begin, x.m.data() + p.begin, x.v.data() + p.begin);
}

TEST(StateFormatConvert, Fp32ValuesIntoInt8GiveTheCodesAndAbsmaxTheQuantizerGives) {
  Held h(MomentFormat::int8, MasterFormat::fp32);
  const Values x(h.spec.count, 20261207);
  convert_all(h, x);
  const StatePiece& w = h.layout.pieces[0];
  ASSERT_EQ(w.moments, MomentFormat::int8);
  ASSERT_EQ(w.count, 12'300u);
  std::vector<std::uint8_t> mc(w.count), vc(w.count);
  std::vector<float> ma(quant_blocks(w.count)), va(quant_blocks(w.count));
  quantize_blockwise(x.m.data(), w.count, dynamic_map(true), mc.data(), ma.data());
  quantize_blockwise(x.v.data(), w.count, dynamic_map(false), vc.data(), va.data(), /*keep_nonzero=*/true);
  const CompressedStates s = piece_states(h.arrays(), w);
  EXPECT_EQ(std::memcmp(s.m, mc.data(), w.count), 0);  // codes bit for bit
  EXPECT_EQ(std::memcmp(s.v, vc.data(), w.count), 0);
  for (std::size_t b = 0; b < ma.size(); ++b) {
    ASSERT_EQ(s.m_absmax[b], ma[b]) << "block " << b;  // absmax exactly
    ASSERT_EQ(s.v_absmax[b], va[b]) << "block " << b;
  }
  EXPECT_EQ(s.m_absmax[2], 0.0f);  // the zero block
  // v's tiny values stay nonzero, as the step keeps them.
  std::vector<float> back(w.count);
  dequantize_blockwise(static_cast<const std::uint8_t*>(s.v), s.v_absmax, w.count, dynamic_map(false), back.data());
  for (std::size_t i = 0; i < w.count; i += 97)
    if (i < 512 || i >= 768) ASSERT_GT(back[i], 0.0f) << i;
  // The bias keeps fp32 moments, copied; the master is fp32, copied.
  const StatePiece& b = h.layout.pieces[1];
  ASSERT_EQ(b.moments, MomentFormat::fp32);
  const CompressedStates bs = piece_states(h.arrays(), b);
  EXPECT_EQ(std::memcmp(bs.m, x.m.data() + b.begin, b.count * 4), 0);
  EXPECT_EQ(std::memcmp(bs.v, x.v.data() + b.begin, b.count * 4), 0);
  EXPECT_EQ(std::memcmp(h.master.data(), x.master.data(), h.master.size()), 0);
}

TEST(StateFormatConvert, Fp32ValuesIntoBf16RoundToNearestEven) {
  Held h(MomentFormat::bf16, MasterFormat::bf16_sr);
  Values x(h.spec.count, 7);
  // Ties: 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7 and goes to the even 1; 1 + 3 * 2^-8 to
  // the even 1 + 2^-6.
  x.master[0] = x.m[0] = 1.0f + 0x1p-8f;
  x.master[1] = x.m[1] = 1.0f + 3 * 0x1p-8f;
  convert_all(h, x);
  const StatePiece& w = h.layout.pieces[0];
  const CompressedStates s = piece_states(h.arrays(), w);
  const bf16* mb = static_cast<const bf16*>(s.m);
  const bf16* vb = static_cast<const bf16*>(s.v);
  const bf16* pb = reinterpret_cast<const bf16*>(h.master.data());
  for (std::size_t i = 0; i < w.count; ++i) {
    ASSERT_EQ(mb[i].bits, float_to_bf16(x.m[i]).bits) << i;
    ASSERT_EQ(vb[i].bits, float_to_bf16(x.v[i]).bits) << i;
  }
  for (std::size_t i = 0; i < h.spec.count; ++i) ASSERT_EQ(pb[i].bits, float_to_bf16(x.master[i]).bits) << i;
  EXPECT_EQ(bf16_to_float(mb[0]), 1.0f);
  EXPECT_EQ(bf16_to_float(mb[1]), 1.0f + 0x1p-6f);
  EXPECT_EQ(bf16_to_float(pb[0]), 1.0f);
}

TEST(StateFormatConvert, Int8AndBf16ValuesComeBackIntoFp32Unchanged) {
  // The checkpoint's view of int8 + bf16 states (decode_piece), converted into fp32 moments and master.
  Held from(MomentFormat::int8, MasterFormat::bf16_sr);
  const Values x(from.spec.count, 11);
  convert_all(from, x);
  Values seen(from.spec.count, 0);
  for (const StatePiece& p : from.layout.pieces)
    decode_piece(from.arrays(), p, seen.master.data() + p.begin, seen.m.data() + p.begin, seen.v.data() + p.begin);
  Held to(MomentFormat::fp32, MasterFormat::fp32);
  convert_all(to, seen);
  const StatePiece& w = to.layout.pieces[0];
  const CompressedStates s = piece_states(to.arrays(), w);
  // The dequantized values, exactly: map[code] * absmax from the int8 arrays themselves.
  std::vector<float> dm(w.count), dv(w.count);
  const CompressedStates q = piece_states(from.arrays(), from.layout.pieces[0]);
  dequantize_blockwise(static_cast<const std::uint8_t*>(q.m), q.m_absmax, w.count, dynamic_map(true), dm.data());
  dequantize_blockwise(static_cast<const std::uint8_t*>(q.v), q.v_absmax, w.count, dynamic_map(false), dv.data());
  for (std::size_t i = 0; i < w.count; ++i) {
    ASSERT_EQ(static_cast<const float*>(s.m)[i], dm[i]) << i;
    ASSERT_EQ(static_cast<const float*>(s.v)[i], dv[i]) << i;
  }
  const float* master = reinterpret_cast<const float*>(to.master.data());
  for (std::size_t i = 0; i < to.spec.count; ++i)
    ASSERT_EQ(master[i], bf16_to_float(float_to_bf16(x.master[i]))) << i;  // bf16's value, widened
}

TEST(StateFormatConvert, ASameFormatResumesEncoderStillRefusesValuesInt8NeverGave) {
  Held h(MomentFormat::int8, MasterFormat::fp32);
  const Values x(h.spec.count, 3);
  const StatePiece& w = h.layout.pieces[0];
  const std::string e = testing::error_message(
      [&] { encode_piece(h.arrays(), w, x.master.data(), x.m.data(), x.v.data()); });
  EXPECT_NE(e.find("the checkpoint's Adam states were not written by an int8 run"), std::string::npos) << e;
}

TEST(StateFormatConvert, OnlyAChangeOfMomentFormatConvertsAndTheLineNamesEachChange) {
  const StateFormats fp32{}, int8_sr{MomentFormat::int8, MasterFormat::bf16_sr},
      int8{MomentFormat::int8, MasterFormat::fp32};
  EXPECT_EQ(resume_write(int8_sr, int8_sr), StateWrite::exact);
  EXPECT_EQ(resume_write(int8_sr, int8), StateWrite::exact);  // the master rounds to nearest even either way
  EXPECT_EQ(resume_write(int8_sr, fp32), StateWrite::convert);
  EXPECT_EQ(conversion_note("d/step-00000002", int8_sr, fp32),
            "resume: converting checkpoint d/step-00000002's optimizer states int8 -> fp32 and master weights "
            "bf16-sr -> fp32 (once, at load)");
  EXPECT_EQ(conversion_note("c", int8, int8_sr), "resume: converting checkpoint c's master weights fp32 -> bf16-sr "
                                                 "(once, at load)");
  EXPECT_EQ(conversion_note("c", fp32, StateFormats{MomentFormat::bf16, MasterFormat::fp32}),
            "resume: converting checkpoint c's optimizer states fp32 -> bf16 (once, at load)");
  EXPECT_EQ(conversion_note("c", int8, int8), "");
}

}  // namespace
}  // namespace tz
