// Tests core/cuda/cuda_device.h: the three allocators under their budgets, copies between every pair of
// memory kinds (bitwise), fills, and events ordering two streams. Skips when no CUDA device is usable.
#include "core/cuda/cuda_device.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_runtime.h"
#include "core/device.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"

namespace tz {
namespace {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << cuda::unavailable_reason();
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST_F(CudaDeviceTest, AnAllocationPastTheDeviceBudgetFailsNamingTheBufferAndFreeingReturnsIt) {
  DeviceOptions o;
  o.device_mem = kCudaGemmWorkspaceBytes + (std::size_t(16) << 20);
  auto dev = cuda::make_cuda_device(o);
  MemoryBudget& b = dev->budget(MemoryKind::device);
  EXPECT_EQ(b.budget(), o.device_mem);
  EXPECT_EQ(b.used(), kCudaGemmWorkspaceBytes);  // the backend's cuBLASLt workspace, taken when it is made
  {
    Buffer<float> a(*dev, std::size_t(3) << 20, "twelve MiB");
    EXPECT_EQ(b.used(), kCudaGemmWorkspaceBytes + a.bytes());
    const std::string why =
        error_of([&] { Buffer<float> c(*dev, std::size_t(2) << 20, "the buffer too many"); });
    EXPECT_NE(why.find("the buffer too many"), std::string::npos) << why;
    EXPECT_NE(why.find("device"), std::string::npos) << why;
    EXPECT_EQ(b.used(), kCudaGemmWorkspaceBytes + a.bytes());  // the refusal took nothing
  }
  EXPECT_EQ(b.used(), kCudaGemmWorkspaceBytes);
  Buffer<float> again(*dev, std::size_t(4) << 20, "all sixteen MiB");  // the freed bytes are back
  EXPECT_EQ(b.used(), b.budget());
}

TEST_F(CudaDeviceTest, APinnedAllocationPastTheHostBudgetFailsNamingTheBuffer) {
  DeviceOptions o;
  o.host_mem = std::size_t(1) << 20;
  auto dev = cuda::make_cuda_device(o);
  Allocator& pinned = dev->allocator(MemoryKind::pinned_host);
  {
    Buffer<std::uint8_t> a(pinned, std::size_t(1) << 19, "half the tier");
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % kDirectIoAlign, 0u);  // O_DIRECT-ready
    const std::string why =
        error_of([&] { Buffer<std::uint8_t> c(pinned, std::size_t(1) << 20, "a staging ring"); });
    EXPECT_NE(why.find("a staging ring"), std::string::npos) << why;
    EXPECT_NE(why.find("host"), std::string::npos) << why;
  }
  EXPECT_EQ(pinned.budget().used(), 0u);
  EXPECT_EQ(dev->pin_error(), "");  // cudaHostRegister always pins
}

TEST_F(CudaDeviceTest, AnUnlimitedDeviceBudgetIsTheFreeMemoryLessTheReserve) {
  std::size_t free = 0, total = 0;
  TZ_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  auto dev = make_device(DeviceKind::cuda);
  ASSERT_EQ(dev->kind(), DeviceKind::cuda);
  const std::size_t budget = dev->budget(MemoryKind::device).budget();
  EXPECT_GT(budget, 0u);
  EXPECT_LT(budget, free);
  EXPECT_LE(budget, total - cuda::kGpuReserveFixed);
  EXPECT_EQ(cuda::default_device_budget(std::size_t(10) << 30, std::size_t(80) << 30),
            (std::size_t(9) << 30) - std::size_t(0.02 * double(std::size_t(80) << 30)));
  EXPECT_EQ(cuda::default_device_budget(std::size_t(1) << 30, std::size_t(80) << 30), 0u);
}

TEST_F(CudaDeviceTest, TheGpuIsTheOptionModuloTheGpuCount) {
  DeviceOptions o;
  o.device_mem = std::size_t(64) << 20;
  EXPECT_EQ(cuda::cuda_device_index(*cuda::make_cuda_device(o)), 0);
  o.gpu = cuda::device_count();  // one past the last: wraps to GPU 0
  EXPECT_EQ(cuda::cuda_device_index(*cuda::make_cuda_device(o)), 0);
  o.gpu = cuda::device_count() - 1;
  EXPECT_EQ(cuda::cuda_device_index(*cuda::make_cuda_device(o)), cuda::device_count() - 1);
  TZ_CUDA_CHECK(cudaSetDevice(0));
  EXPECT_THROW(cuda::cuda_device_index(*make_cpu_device()), Error);
}

// Every ordered pair of memory kinds, through copy_async on one stream: random bytes (an odd count, so
// no copy is a whole number of words) arrive bit for bit.
TEST_F(CudaDeviceTest, CopiesRoundTripExactlyBetweenEveryPairOfMemoryKinds) {
  auto dev = cuda::make_cuda_device({});
  Backend& be = dev->backend();
  auto s = dev->create_stream();
  const std::size_t n = (std::size_t(3) << 20) + 5;
  test::Rng rng(7);
  std::vector<std::uint8_t> want(n);
  for (auto& x : want) x = std::uint8_t(rng.bits32());

  const MemoryKind kinds[] = {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::pageable_host};
  for (MemoryKind from : kinds) {
    for (MemoryKind to : kinds) {
      SCOPED_TRACE(memory_kind_name(from) + " -> " + memory_kind_name(to));
      Buffer<std::uint8_t> src(dev->allocator(from), n, "source"), dst(dev->allocator(to), n, "destination");
      Buffer<std::uint8_t> back(dev->allocator(MemoryKind::pinned_host), n, "read back");
      be.copy_async(*s, src.data(), want.data(), n);  // from a std::vector: pageable memory not ours
      be.memset_async(*s, dst.data(), 0xA5, n);       // stale bytes that a short copy would leave
      be.copy_async(*s, dst.data(), src.data(), n);
      be.copy_async(*s, back.data(), dst.data(), n);
      s->synchronize();
      EXPECT_TRUE(test::all_bits_equal("bytes", back.data(), want.data(), n));
    }
  }
}

// What the runtime hands out, at every size the plan asks for: pinned host memory is page-aligned
// (O_DIRECT reads and writes into it; cudaHostAlloc returned small requests from a cache of larger
// blocks, unaligned, and the first GPU run stopped at its first step), device memory is 256-byte aligned
// (cuBLASLt's heuristics are keyed by pointer alignment), pageable memory page-aligned; many small
// pinned buffers alive at once (the readbacks, one per scalar) each have pages of their own; and bytes
// copied through each pinned buffer to the device and back arrive bit for bit.
TEST_F(CudaDeviceTest, EveryAllocationIsAlignedAtEverySizeAndCopiesThroughPinnedBuffersRoundTrip) {
  auto dev = cuda::make_cuda_device({});
  Backend& be = dev->backend();
  auto s = dev->create_stream();
  const std::size_t sizes[] = {1, 4, 8, 24, 100, 511, 4095, 4096, 4097, 65535, 65536, 1 << 20, (1 << 20) + 3,
                               std::size_t(64) << 20};
  test::Rng rng(11);
  std::vector<Buffer<std::uint8_t>> pinned, device;
  for (int round = 0; round < 20; ++round)
    for (std::size_t n : sizes) {
      if (n > (std::size_t(1) << 20) && round > 0) continue;  // the large ones once
      pinned.emplace_back(dev->allocator(MemoryKind::pinned_host), n, "pinned " + std::to_string(n));
      device.emplace_back(*dev, n, "device " + std::to_string(n));
      Buffer<std::uint8_t> pageable(dev->allocator(MemoryKind::pageable_host), n, "pageable");
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pinned.back().data()) % kDirectIoAlign, 0u) << n << " bytes";
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(device.back().data()) % 256, 0u) << n << " bytes";
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pageable.data()) % kDirectIoAlign, 0u) << n << " bytes";
    }
  for (std::size_t i = 0; i < pinned.size(); ++i) {
    const std::size_t n = pinned[i].size();
    std::vector<std::uint8_t> want(n);
    for (auto& x : want) x = std::uint8_t(rng.bits32());
    std::memcpy(pinned[i].data(), want.data(), n);
    be.copy_async(*s, device[i].data(), pinned[i].data(), n);
    be.memset_async(*s, pinned[i].data(), 0x5A, n);
    be.copy_async(*s, pinned[i].data(), device[i].data(), n);
    s->synchronize();
    ASSERT_TRUE(test::all_bits_equal("bytes", pinned[i].data(), want.data(), n)) << n << " bytes, buffer " << i;
  }
  std::size_t held = 0;
  for (const auto& b : pinned) held += b.size();
  EXPECT_EQ(dev->budget(MemoryKind::pinned_host).used(), held);  // the budget counts what was asked
  pinned.clear();
  EXPECT_EQ(dev->budget(MemoryKind::pinned_host).used(), 0u);
}

TEST_F(CudaDeviceTest, MemsetFillsEveryMemoryKindInStreamOrder) {
  auto dev = cuda::make_cuda_device({});
  Backend& be = dev->backend();
  auto s = dev->create_stream();
  const std::size_t n = 1000003;
  std::vector<std::uint8_t> want(n, 0x3C);
  for (MemoryKind k : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::pageable_host}) {
    SCOPED_TRACE(memory_kind_name(k));
    Buffer<std::uint8_t> x(dev->allocator(k), n, "filled"),
        back(dev->allocator(MemoryKind::pinned_host), n, "back");
    be.memset_async(*s, x.data(), 0x11, n);
    be.memset_async(*s, x.data(), 0x3C, n);  // the later fill wins: the two run in order
    be.copy_async(*s, back.data(), x.data(), n);
    s->synchronize();
    EXPECT_TRUE(test::all_bits_equal("bytes", back.data(), want.data(), n));
  }
}

// Stream a fills a large buffer; stream b copies it out after waiting on an event recorded after the
// fill. Repeated with changing values, so a copy that overtook its fill would read the previous value.
TEST_F(CudaDeviceTest, AnEventOrdersWorkOnTwoStreams) {
  auto dev = cuda::make_cuda_device({});
  Backend& be = dev->backend();
  auto a = dev->create_stream(), b = dev->create_stream();
  auto filled = dev->create_event(), copied = dev->create_event();
  const std::size_t n = std::size_t(256) << 20;  // long enough that an unordered copy would overtake
  Buffer<std::uint8_t> x(*dev, n, "filled on a"),
      back(dev->allocator(MemoryKind::pinned_host), n, "read on b");
  for (int round = 1; round <= 4; ++round) {
    const int value = 0x10 * round;
    be.memset_async(*a, x.data(), value, n);
    filled->record(*a);
    filled->wait(*b);
    be.copy_async(*b, back.data(), x.data(), n);
    copied->record(*b);
    copied->wait(*a);  // the next fill must not overwrite x under this copy
    copied->synchronize();
    EXPECT_TRUE(copied->ready());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; i += 4093) wrong += back.data()[i] != value;
    wrong += back.data()[n - 1] != value;
    EXPECT_EQ(wrong, 0u) << "round " << round;
  }
}

TEST_F(CudaDeviceTest, AStreamOfAnotherDeviceIsRefusedByName) {
  auto dev = cuda::make_cuda_device({});
  auto cpu = make_cpu_device();
  auto s = cpu->create_stream();
  Buffer<float> x(*dev, 16, "x");
  const std::string why = error_of([&] { dev->backend().memset_async(*s, x.data(), 0, x.bytes()); });
  EXPECT_NE(why.find("stream of another device"), std::string::npos) << why;
}

}  // namespace
}  // namespace tz
