// The rotary angles (model/rope_table.h) against the reference's own transcription of Hugging Face's
// formulas (tests/model/llama_reference.h), for plain rope_theta and Llama 3.1's "llama3" scaling, and
// the table the kernels read.
#include "model/rope_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "model/model_family.h"
#include "tests/model/llama_reference.h"

namespace tz {
namespace {

TEST(RopeTable, InverseFrequenciesAreHuggingFacesForEveryPreset) {
  for (const std::string& name : model_family("llama").preset_names()) {
    const ModelConfig c = model_family("llama").preset(name);
    const std::vector<double> got = rope_inv_freq(c), want = testing::ref_inv_freq(c);
    ASSERT_EQ(got.size(), std::size_t(LlamaDims::of(c).hd / 2)) << name;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14 * want[i]) << name << " " << i;
  }
}

// Llama 3.1-8B: head_dim 128, theta 500000, factor 8, low 1, high 4, original 8192. Wavelengths under
// 8192 / 4 = 2048 are kept, over 8192 divided by 8, the band between interpolated.
TEST(RopeTable, Llama3ScalingKeepsShortWavelengthsDividesLongOnesAndBlendsBetween) {
  const ModelConfig c = model_family("llama").preset("llama3.1-8b");
  const std::vector<double> f = rope_inv_freq(c);
  int kept = 0, divided = 0, blended = 0;
  for (int i = 0; i < 64; ++i) {
    const double plain = 1.0 / std::pow(500000.0, 2.0 * i / 128), wavelen = 2 * std::numbers::pi / plain;
    if (wavelen < 2048) {
      EXPECT_EQ(f[i], plain) << i;
      ++kept;
    } else if (wavelen > 8192) {
      EXPECT_NEAR(f[i], plain / 8, 1e-15 * plain) << i;
      ++divided;
    } else {
      EXPECT_GT(f[i], plain / 8) << i;
      EXPECT_LT(f[i], plain) << i;
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

TEST(RopeTable, HoldsCosThenSinOfPositionTimesFrequencyRoundedOnce) {
  const ModelConfig c = model_family("llama").preset("llama3.2-1b");
  const int T = 300, half = 32;
  const std::vector<float> tab = rope_table(c, T);
  const std::vector<double> f = rope_inv_freq(c);  // checked above; here the table's layout and rounding
  ASSERT_EQ(tab.size(), 2u * T * half);
  for (int t = 0; t < T; t += 7)
    for (int i = 0; i < half; ++i) {
      EXPECT_EQ(tab[std::size_t(t) * half + i], float(std::cos(t * f[i]))) << t << " " << i;
      EXPECT_EQ(tab[(std::size_t(T) + t) * half + i], float(std::sin(t * f[i]))) << t << " " << i;
    }
}

}  // namespace
}  // namespace tz
