// Device kinds as data: the built-in cpu and cuda records, names and aliases, a registered third kind
// made through make_device, and the registrations the registry refuses.
#include "core/device_traits.h"

#include <gtest/gtest.h>

#include "core/attention_scratch.h"
#include "core/backend.h"
#include "core/device.h"
#include "core/error.h"
#include "tests/common/error_message.h"
#include "tests/common/wide_cpu_device.h"

namespace tz {
namespace {


TEST(DeviceTraits, TheBuiltInKindsSayWhatTheirDevicesAre) {
  const DeviceTraits& cpu = device_traits(DeviceKind::cpu);
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_TRUE(cpu.unified_memory);
  EXPECT_EQ(cpu.collectives, DeviceCollectives::host);
  EXPECT_FALSE(cpu.overlap_optimizer);
  EXPECT_TRUE(bool(cpu.make));
  const DeviceTraits& cuda = device_traits(DeviceKind::cuda);
  EXPECT_EQ(cuda.name, "cuda");
  EXPECT_FALSE(cuda.unified_memory);
  EXPECT_EQ(cuda.collectives, DeviceCollectives::nccl);
  EXPECT_TRUE(cuda.overlap_optimizer);
  EXPECT_EQ(device_kinds(), (std::vector<DeviceKind>{DeviceKind::cpu, DeviceKind::cuda}));
}

// The sizes the plan asks for: the cpu keeps [B,NH,T,T] probabilities and their gradient, widens 16-bit
// activations in the attention's scratch (qkv, out, dout, dqkv) and fp16 inputs in its matmul workspace;
// cuda keeps one float per row and widens nothing, and with 16-bit activations gives cuDNN's attention its
// workspace after the row floats (core/attention_scratch.h).
TEST(DeviceTraits, EachKindSizesAttentionAndTheMatmulWorkspaceItself) {
  const std::size_t B = 3, NH = 4, KVH = 2, T = 7, hd = 5, W = (NH + 2 * KVH) * hd, O = NH * hd;
  const AttentionShape a{int(B), int(T), int(NH), int(KVH), int(hd)};
  for (DType act : {DType::f32, DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(act));
    const std::size_t widened = act == DType::f32 ? 0 : B * T * (2 * W + 2 * O);
    EXPECT_EQ(attention_saved_floats(DeviceKind::cpu, a, act), B * NH * T * T);
    EXPECT_EQ(attention_scratch_floats(DeviceKind::cpu, a, act), B * NH * T * T + widened);
    EXPECT_EQ(attention_saved_floats(DeviceKind::cuda, a, act), B * NH * T);
    EXPECT_EQ(attention_scratch_floats(DeviceKind::cuda, a, act),
              act == DType::f32 ? B * NH * T : cuda_attention_scratch_floats(a, act));
    EXPECT_GT(attention_scratch_floats(DeviceKind::cuda, a, act), act == DType::f32 ? 0 : B * NH * T);
  }
  const GemmShape g{Trans::no, Trans::yes, 64, 48, 32};
  EXPECT_EQ(gemm_workspace_floats(DeviceKind::cpu, DType::f16, g), cpu_gemm_workspace_floats(DType::f16, g));
  EXPECT_GT(gemm_workspace_floats(DeviceKind::cpu, DType::f16, g), 0u);
  EXPECT_EQ(gemm_workspace_floats(DeviceKind::cuda, DType::f16, g), 0u);
  // An fp32 product widens nothing: its workspace is oneDNN's scratchpad alone, in whole cache lines.
  EXPECT_EQ(gemm_workspace_floats(DeviceKind::cpu, DType::f32, g), cpu_gemm_workspace_floats(DType::f32, g));
  EXPECT_EQ(cpu_gemm_workspace_floats(DType::f32, g) % 16, 0u);
  EXPECT_LT(cpu_gemm_workspace_floats(DType::f32, g), gemm_workspace_floats(DeviceKind::cpu, DType::f16, g));
}

TEST(DeviceTraits, ARegisteredKindParsesByNameAndMakesItsOwnDevices) {
  const DeviceKind wide = testing::wide_cpu_kind();
  EXPECT_EQ(parse_device_kind("wide-cpu"), wide);
  EXPECT_EQ(device_kind_name(wide), "wide-cpu");
  EXPECT_EQ(device_kinds(), (std::vector<DeviceKind>{DeviceKind::cpu, DeviceKind::cuda, wide}));
  EXPECT_EQ(attention_saved_floats(wide, AttentionShape::multi_head(2, 4, 6, 3), DType::f32), 2u * 2 * 3 * 4 * 4);
  EXPECT_EQ(gemm_workspace_floats(wide, DType::f32, GemmShape{Trans::no, Trans::no, 8, 8, 8}),
            cpu_gemm_workspace_floats(DType::f32, GemmShape{Trans::no, Trans::no, 8, 8, 8}) +
                testing::kWideExtraWorkspaceFloats);
  EXPECT_TRUE(device_kind_built(wide));
  auto dev = make_device(wide);
  EXPECT_EQ(dev->kind(), wide);
  EXPECT_EQ(dev->traits().name, "wide-cpu");
  const std::string m = testing::error_message([] { parse_device_kind("tpu"); });
  EXPECT_NE(m.find("unknown device 'tpu': use cpu, cuda or wide-cpu"), std::string::npos) << m;
}

TEST(DeviceTraits, AnUnknownNameIsRefusedNamingTheKinds) {
  const std::string m = testing::error_message([] { parse_device_kind("tpu"); });
  // "use cpu or cuda" alone; "use cpu, cuda or wide-cpu" once a test of this binary has registered it.
  EXPECT_TRUE(m.find("unknown device 'tpu': use cpu or cuda") != std::string::npos ||
              m.find("unknown device 'tpu': use cpu, cuda or wide-cpu") != std::string::npos)
      << m;
}

TEST(DeviceTraits, ATakenNumberOrNameOrAnUnsizedKindIsRefused) {
  DeviceTraits t = device_traits(DeviceKind::cpu);
  t.name = "other";
  std::string m = testing::error_message([&] { register_device_kind(DeviceKind::cuda, t); });
  EXPECT_NE(m.find("device kind 1 is registered already (as 'cuda')"), std::string::npos) << m;
  t.name = "another";
  t.aliases = {"gpu"};
  m = testing::error_message([&] { register_device_kind(DeviceKind(9), t); });
  EXPECT_NE(m.find("device name 'gpu' is taken by device kind 'cuda'"), std::string::npos) << m;
  t.aliases = {};
  t.attention_scratch_floats = nullptr;
  m = testing::error_message([&] { register_device_kind(DeviceKind(9), t); });
  EXPECT_NE(m.find("device kind 'another' must size its matmul workspace and its attention"), std::string::npos) << m;
  EXPECT_FALSE(device_kind_registered(DeviceKind(9)));
  m = testing::error_message([] { device_traits(DeviceKind(9)); });
  EXPECT_NE(m.find("device kind 9 is not registered"), std::string::npos) << m;
}

// Without a factory (cuda in a build without CUDA), make_device says why and what to do.
TEST(DeviceTraits, AKindThisBuildCannotMakeIsRefusedWithItsReason) {
  DeviceTraits t = device_traits(DeviceKind::cpu);
  t.name = "unbuilt";
  t.make = nullptr;
  t.unavailable = "this build has no unbuilt backend; use --device cpu";
  register_device_kind(DeviceKind(11), t);
  EXPECT_FALSE(device_kind_built(DeviceKind(11)));
  const std::string m = testing::error_message([] { make_device(DeviceKind(11)); });
  EXPECT_NE(m.find("--device unbuilt: this build has no unbuilt backend; use --device cpu"), std::string::npos) << m;
}

}  // namespace
}  // namespace tz
