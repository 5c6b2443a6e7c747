// Tests core/device.h on the cpu device: typed buffers are allocated under the device budget,
// refused with the budget error when they do not fit, and move their ownership.
#include "core/device.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

#include "core/backend.h"
#include "core/error.h"

namespace tz {
namespace {

TEST(Device, CpuBuffersCountAgainstTheDeviceBudget) {
  auto dev = make_cpu_device(1 << 20);
  EXPECT_EQ(dev->kind(), DeviceKind::cpu);
  EXPECT_EQ(dev->memory().tier(), "device");
  EXPECT_EQ(dev->memory().budget(), std::size_t(1) << 20);
  {
    Buffer<float> a(*dev, 1000, "a");
    EXPECT_EQ(dev->memory().used(), 4000u);
    Buffer<bf16> b(*dev, 11, "b");
    EXPECT_EQ(dev->memory().used(), 4022u);
    EXPECT_EQ(a.size(), 1000u);
    EXPECT_EQ(a.bytes(), 4000u);
    EXPECT_EQ(b.bytes(), 22u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(i);  // the whole range is writable
    EXPECT_EQ(a[999], 999.0f);
  }
  EXPECT_EQ(dev->memory().used(), 0u);
  EXPECT_EQ(dev->memory().peak(), 4022u);
}

TEST(Device, ABufferThatDoesNotFitThrowsTheBudgetError) {
  auto dev = make_cpu_device(4096);
  Buffer<float> held(*dev, 512, "held");  // 2 KiB
  try {
    Buffer<float> big(*dev, 1000, "activations");
    FAIL() << "allocating 4000 bytes over a 4096-byte budget with 2048 in use did not throw";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("device"), std::string::npos) << msg;
    EXPECT_NE(msg.find("activations"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3.91 KiB"), std::string::npos) << msg;  // the 4000-byte request
    EXPECT_NE(msg.find("4.00 KiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2.00 KiB"), std::string::npos) << msg;
  }
  EXPECT_EQ(dev->memory().used(), 2048u);
}

TEST(Device, MovingABufferTransfersOwnershipAndTheAccountingReturnsToZero) {
  auto dev = make_cpu_device();
  {
    Buffer<float> a(*dev, 100, "a");
    float* p = a.data();
    Buffer<float> b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.size(), 100u);
    EXPECT_EQ(dev->memory().used(), 400u);

    Buffer<float> c(*dev, 50, "c");
    EXPECT_EQ(dev->memory().used(), 600u);
    c = std::move(b);  // frees c's old 200 bytes, takes b's 400
    EXPECT_EQ(dev->memory().used(), 400u);
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(b.data(), nullptr);

    Buffer<float> d;
    d = std::move(c);
    c.reset();  // a moved-from buffer resets without freeing anything
    EXPECT_EQ(dev->memory().used(), 400u);
    d.reset();
    EXPECT_EQ(dev->memory().used(), 0u);
    EXPECT_TRUE(d.empty());
  }
  EXPECT_EQ(dev->memory().used(), 0u);
}

TEST(Device, AnEmptyBufferAllocatesNothing) {
  auto dev = make_cpu_device(0);
  Buffer<float> a(*dev, 0, "empty");
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(dev->memory().used(), 0u);
  EXPECT_THROW(Buffer<float>(*dev, 1, "one"), Error);
}

TEST(Device, KindsParseAndCudaIsRefusedWithAClearError) {
  EXPECT_EQ(parse_device_kind("cpu"), DeviceKind::cpu);
  EXPECT_EQ(parse_device_kind("cuda"), DeviceKind::cuda);
  EXPECT_EQ(parse_device_kind("gpu"), DeviceKind::cuda);
  EXPECT_THROW(parse_device_kind("tpu"), Error);
  EXPECT_EQ(device_kind_name(DeviceKind::cpu), "cpu");
  EXPECT_EQ(device_kind_name(DeviceKind::cuda), "cuda");
  EXPECT_EQ(make_device(DeviceKind::cpu)->kind(), DeviceKind::cpu);
  EXPECT_THROW(make_device(DeviceKind::cuda), Error);
}

TEST(Device, TheBackendRunsOnBufferMemory) {
  auto dev = make_cpu_device();
  Buffer<float> x(*dev, 37, "x");
  dev->backend().fill(x.data(), 2.5f, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], 2.5f) << i;
}

}  // namespace
}  // namespace tz
