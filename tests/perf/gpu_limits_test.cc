// Tests perf/gpu_limits.h: peaks by GPU name with their sources, the PCIe link read from a fake sysfs
// tree (and the stated assumption without one), and the attention FLOP convention.
#include "perf/gpu_limits.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/test_dir.h"

namespace tz {
namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

TEST(GpuPeak, HopperSxmCardsAre989DenseFromTheirPresets) {
  for (const char* name : {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA GH200 480GB"}) {
    const PeakTflops p = bf16_dense_peak(name);
    EXPECT_EQ(p.tflops, 989) << name;
    EXPECT_NE(p.source.find("datasheet"), std::string::npos) << p.source;
  }
  EXPECT_NE(bf16_dense_peak("NVIDIA H200").source.find("h200-141g"), std::string::npos);
  EXPECT_NE(bf16_dense_peak("NVIDIA GH200 480GB").source.find("gh200"), std::string::npos);
}

TEST(GpuPeak, PcieAndNvlVariantsAreNotTakenForTheSxmPart) {
  EXPECT_EQ(bf16_dense_peak("NVIDIA H100 PCIe").tflops, 756);
  EXPECT_EQ(bf16_dense_peak("NVIDIA H100 NVL").tflops, 835);
  EXPECT_EQ(bf16_dense_peak("NVIDIA H200 NVL").tflops, 835);
  EXPECT_EQ(bf16_dense_peak("NVIDIA A100-SXM4-80GB").tflops, 312);
}

TEST(GpuPeak, UnknownAndBf16LessCardsHaveNoPeakAndSayWhy) {
  const PeakTflops v = bf16_dense_peak("Tesla V100-SXM2-32GB");
  EXPECT_EQ(v.tflops, 0);
  EXPECT_NE(v.source.find("no bf16"), std::string::npos);
  const PeakTflops u = bf16_dense_peak("Some Future GPU");
  EXPECT_EQ(u.tflops, 0);
  EXPECT_NE(u.source.find("--peak-tflops"), std::string::npos);
  EXPECT_NE(bf16_dense_peak("").source.find("--peak-tflops"), std::string::npos);
}

TEST(PcieLink, BandwidthAfterLineEncoding) {
  EXPECT_NEAR(pcie_gb_per_s(32, 16), 63.015, 1e-3);  // Gen5 x16: 32 GT/s x 16 x 128/130 / 8
  EXPECT_NEAR(pcie_gb_per_s(16, 16), 31.508, 1e-3);  // Gen4
  EXPECT_NEAR(pcie_gb_per_s(5, 16), 8.0, 1e-9);      // Gen2: 8b/10b
}

TEST(PcieLink, ReadsTheMaxLinkFromSysfsAndReportsTheCurrentOne) {
  testing::TestDir d;
  const std::string dev = d.file("0000:1b:00.0");
  std::filesystem::create_directories(dev);
  write(dev + "/max_link_speed", "32.0 GT/s PCIe\n");
  write(dev + "/max_link_width", "16\n");
  write(dev + "/current_link_speed", "2.5 GT/s PCIe\n");
  write(dev + "/current_link_width", "16\n");
  const PcieLink l = pcie_link("0000:1b:00.0", d.path());
  EXPECT_TRUE(l.measured);
  EXPECT_EQ(l.gt_per_s, 32);
  EXPECT_EQ(l.width, 16);
  EXPECT_NEAR(l.gb_per_s, 63.015, 1e-3);
  EXPECT_NE(l.source.find("current: 2.5 GT/s PCIe x16"), std::string::npos) << l.source;
}

TEST(PcieLink, WithoutSysfsAssumesGen5x16AndSaysWhy) {
  testing::TestDir d;
  const PcieLink missing = pcie_link("0000:1b:00.0", d.path());
  EXPECT_FALSE(missing.measured);
  EXPECT_EQ(missing.width, 16);
  EXPECT_NEAR(missing.gb_per_s, 63.015, 1e-3);
  EXPECT_NE(missing.source.find("assumed PCIe Gen5 x16"), std::string::npos);
  EXPECT_NE(missing.source.find("missing or unknown"), std::string::npos);
  const std::string dev = d.file("0000:01:00.0");
  std::filesystem::create_directories(dev);
  write(dev + "/max_link_speed", "Unknown\n");
  write(dev + "/max_link_width", "255\n");
  EXPECT_FALSE(pcie_link("0000:01:00.0", d.path()).measured);
  EXPECT_NE(pcie_link("", d.path()).source.find("bus id is unknown"), std::string::npos);
}

TEST(AttentionFlops, FlashAttention2sCausalConvention) {
  // gpt2-xl: B=8, NH=25, T=1024, hs=64: 4 * 8 * 25 * 1024^2 * 64 / 2.
  EXPECT_DOUBLE_EQ(causal_attention_forward_flops(8, 25, 1024, 64), 26843545600.0);
  EXPECT_DOUBLE_EQ(causal_attention_backward_flops(8, 25, 1024, 64), 2.5 * 26843545600.0);
}

}  // namespace
}  // namespace tz
