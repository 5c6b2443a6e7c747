// Tests core/device.h on the cpu device: each memory kind allocates under its own budget and refuses
// with the budget error, buffers move their ownership, copies move bytes between any two kinds in
// stream order, and (in the poisoned build) device memory cannot be touched outside the backend.
#include "core/device.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/poison.h"

namespace tz {
namespace {

TEST(Device, EachMemoryKindCountsAgainstItsOwnBudget) {
  DeviceOptions o;
  o.device_mem = 1 << 20;
  o.host_mem = 1 << 16;
  auto dev = make_cpu_device(o);
  EXPECT_EQ(dev->kind(), DeviceKind::cpu);
  EXPECT_EQ(dev->budget(MemoryKind::device).tier(), "device");
  EXPECT_EQ(dev->budget(MemoryKind::pinned_host).tier(), "host");
  EXPECT_EQ(dev->budget(MemoryKind::device).budget(), std::size_t(1) << 20);
  EXPECT_EQ(dev->budget(MemoryKind::pinned_host).budget(), std::size_t(1) << 16);
  {
    Buffer<float> a(*dev, 1000, "a");
    Buffer<bf16> b(*dev, 11, "b");
    Buffer<float> h(dev->allocator(MemoryKind::pinned_host), 100, "h");
    Buffer<float> p(dev->allocator(MemoryKind::pageable_host), 7, "p");
    EXPECT_EQ(dev->budget(MemoryKind::device).used(), 4022u);
    EXPECT_EQ(dev->budget(MemoryKind::pinned_host).used(), 400u);
    EXPECT_EQ(dev->budget(MemoryKind::pageable_host).used(), 28u);
    EXPECT_EQ(a.kind(), MemoryKind::device);
    EXPECT_EQ(h.kind(), MemoryKind::pinned_host);
    EXPECT_EQ(a.bytes(), 4000u);
    EXPECT_EQ(b.bytes(), 22u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    // The host tier is page-aligned (O_DIRECT, and locking page by page).
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(h.data()) % 4096, 0u);
    for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = float(i);  // host kinds are host memory
  }
  for (MemoryKind k : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::pageable_host})
    EXPECT_EQ(dev->budget(k).used(), 0u) << memory_kind_name(k);
  EXPECT_EQ(dev->budget(MemoryKind::device).peak(), 4022u);
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
  EXPECT_EQ(dev->budget(MemoryKind::device).used(), 2048u);
  DeviceOptions o;
  o.host_mem = 100;
  auto small_host = make_cpu_device(o);
  try {
    Buffer<float> big(small_host->allocator(MemoryKind::pinned_host), 26, "staging");
    FAIL() << "the host tier's budget was not enforced";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--host-mem"), std::string::npos) << e.what();
  }
}

TEST(Device, MovingABufferTransfersOwnershipAndTheAccountingReturnsToZero) {
  auto dev = make_cpu_device();
  MemoryBudget& b = dev->budget(MemoryKind::device);
  {
    Buffer<float> a(*dev, 100, "a");
    float* p = a.data();
    Buffer<float> moved(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(moved.data(), p);
    EXPECT_EQ(moved.size(), 100u);
    EXPECT_EQ(b.used(), 400u);

    Buffer<float> c(*dev, 50, "c");
    EXPECT_EQ(b.used(), 600u);
    c = std::move(moved);  // frees c's old 200 bytes, takes the 400
    EXPECT_EQ(b.used(), 400u);
    EXPECT_EQ(c.data(), p);

    Buffer<float> d;
    d = std::move(c);
    c.reset();  // a moved-from buffer resets without freeing anything
    EXPECT_EQ(b.used(), 400u);
    d.reset();
    EXPECT_EQ(b.used(), 0u);
    EXPECT_TRUE(d.empty());
  }
  EXPECT_EQ(b.used(), 0u);
}

TEST(Device, AnEmptyBufferAllocatesNothing) {
  auto dev = make_cpu_device(0);
  Buffer<float> a(*dev, 0, "empty");
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(dev->budget(MemoryKind::device).used(), 0u);
  EXPECT_THROW(Buffer<float>(*dev, 1, "one"), Error);
}

TEST(Device, KindsParseByName) {
  EXPECT_EQ(parse_device_kind("cpu"), DeviceKind::cpu);
  EXPECT_EQ(parse_device_kind("cuda"), DeviceKind::cuda);
  EXPECT_EQ(parse_device_kind("gpu"), DeviceKind::cuda);
  EXPECT_THROW(parse_device_kind("tpu"), Error);
  EXPECT_EQ(device_kind_name(DeviceKind::cpu), "cpu");
  EXPECT_EQ(device_kind_name(DeviceKind::cuda), "cuda");
  EXPECT_EQ(make_device(DeviceKind::cpu)->kind(), DeviceKind::cpu);
}

// Without the CUDA backend the error says so; with it but without a GPU, that no GPU was found. Both say
// to use --device cpu. (With a GPU there is nothing to refuse: tests/cuda/ covers that device.)
TEST(Device, MakeDeviceCudaWithoutTheBackendOrAGpuSaysWhyAndToUseTheCpu) {
  try {
    auto dev = make_device(DeviceKind::cuda);
    ASSERT_TRUE(cuda_backend_built()) << "a cuda device from a build without CUDA";
    EXPECT_EQ(dev->kind(), DeviceKind::cuda);
    GTEST_SKIP() << "a GPU is present: make_device(cuda) made a device";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(cuda_backend_built() ? "no GPU was found" : "this build has no CUDA backend"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("use --device cpu"), std::string::npos) << what;
  }
}

// Pageable host -> device -> device -> pinned host, with a fill and a memset in between, all on one
// stream; an event recorded after the last copy says when the host may read.
TEST(Device, CopiesMoveBytesBetweenEveryKindInStreamOrder) {
  auto dev = make_cpu_device();
  Backend& be = dev->backend();
  auto s = dev->create_stream();
  auto done = dev->create_event();
  const std::size_t n = 1000;
  std::vector<float> src(n);
  std::iota(src.begin(), src.end(), 1.0f);
  Buffer<float> d1(*dev, n, "d1"), d2(*dev, n, "d2");
  Buffer<float> out(dev->allocator(MemoryKind::pinned_host), n, "out");
  be.copy_async(*s, d1.data(), src.data(), n * sizeof(float));
  be.fill(*s, d2.data(), -1.0f, n);
  be.copy_async(*s, d2.data() + 10, d1.data() + 10, 500 * sizeof(float));
  be.memset_async(*s, d2.data(), 0, 5 * sizeof(float));
  be.copy_async(*s, out.data(), d2.data(), n * sizeof(float));
  done->record(*s);
  done->synchronize();
  EXPECT_TRUE(done->ready());
  for (std::size_t i = 0; i < n; ++i) {
    const float want = i < 5 ? 0.0f : (i >= 10 && i < 510) ? float(i + 1) : -1.0f;
    ASSERT_EQ(out.data()[i], want) << i;
  }
}

// The poisoned build's promise: an access to device memory from outside the backend (here, the test
// itself standing in for the engine or the model) stops the program, as it would fault on a GPU.
TEST(PoisonedDeviceMemory, ADirectReadOfDeviceMemoryFailsWhileCopiesSucceed) {
  if (!kPoisonDeviceMemory) GTEST_SKIP() << "needs the poisoned build (-DTZ_POISON_DEVICE_MEMORY=ON)";
  auto dev = make_cpu_device();
  auto s = dev->create_stream();
  Buffer<float> x(*dev, 16, "x");
  float host = 3.0f;
  dev->backend().fill(*s, x.data(), 2.5f, x.size());                  // a kernel may
  dev->backend().copy_async(*s, &host, x.data() + 3, sizeof(float));  // a copy may
  EXPECT_EQ(host, 2.5f);
  EXPECT_DEATH(
      {
        volatile float v = x.data()[3];
        (void)v;
      },
      "use-after-poison");
  EXPECT_DEATH({ x.data()[0] = 1.0f; }, "use-after-poison");
  EXPECT_DEATH({ std::memcpy(&host, x.data(), 4); }, "use-after-poison");
}

}  // namespace
}  // namespace tz
