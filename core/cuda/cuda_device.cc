// The CUDA device (see cuda_device.h): the GPU it runs on, its three allocators under their budgets, and
// its streams and events. Every CUDA call here selects the device's GPU first and restores the caller's
// choice afterwards, so allocating or freeing from any thread is safe and changes nothing for it.
#include "core/cuda/cuda_device.h"

#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/cuda_stream.h"
#include "core/error.h"
#include "core/numa.h"
#include "core/host_memory.h"

namespace tz::cuda {
namespace {

// Makes `gpu` the calling thread's current device for a scope, then restores the previous one. The
// destructor never throws: a failed restore is logged.
class CurrentGpu {
 public:
  explicit CurrentGpu(int gpu) {
    TZ_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != gpu) TZ_CUDA_CHECK(cudaSetDevice(gpu));
    changed_ = previous_ != gpu;
  }
  ~CurrentGpu() {
    if (changed_ && cudaSetDevice(previous_) != cudaSuccess)
      log_line("cannot restore the thread's current GPU");
  }
  CurrentGpu(const CurrentGpu&) = delete;
  CurrentGpu& operator=(const CurrentGpu&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

std::string limit_text(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : format_bytes(std::size_t(v)); }

// Why cudaHostRegister may refuse: pinned memory is locked RAM, so the machine's free memory bounds it, and
// some drivers and containers also count it against RLIMIT_MEMLOCK.
std::string describe_pinned_failure(std::size_t bytes, const std::string& what, cudaError_t rc) {
  rlimit lim{};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
  const std::size_t avail = std::size_t(::sysconf(_SC_AVPHYS_PAGES)) * page;
  const std::size_t total = std::size_t(::sysconf(_SC_PHYS_PAGES)) * page;
  return detail::concat(
      "cudaHostRegister of ", format_bytes(bytes), " of pinned host memory for ", what,
      " failed: ", cudaGetErrorName(rc), " (", cudaGetErrorString(rc),
      "); pinned memory is locked RAM: the machine has ", format_bytes(avail), " free of ",
      format_bytes(total), " and RLIMIT_MEMLOCK is ", limit_text(lim.rlim_cur), " (hard ",
      limit_text(lim.rlim_max),
      "): lower --host-mem or what is offloaded to the host, or raise the limit (ulimit -l, "
      "limits.conf memlock, or Slurm's --propagate=MEMLOCK)");
}

// Device memory by cudaMalloc (256-byte aligned) under --device-mem.
class GpuAllocator final : public Allocator {
 public:
  GpuAllocator(int gpu, std::size_t budget) : Allocator(MemoryKind::device, "device", budget), gpu_(gpu) {}

  Allocation allocate(std::size_t bytes, const std::string& what) override {
    Allocation a;
    a.reservation = budget().reserve(bytes, what);
    CurrentGpu on(gpu_);
    const cudaError_t rc = cudaMalloc(&a.ptr, bytes);
    if (rc != cudaSuccess) {
      cudaGetLastError();  // an out-of-memory error is not sticky: clear it for the next call
      std::size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      TZ_FAIL("cudaMalloc of ", format_bytes(bytes), " for ", what, " on GPU ", gpu_,
              " failed: ", cudaGetErrorName(rc), " (", cudaGetErrorString(rc), "); the GPU has ",
              format_bytes(free), " free of ", format_bytes(total),
              " (another process may hold the rest: see nvidia-smi): lower --device-mem or what the plan "
              "keeps on the "
              "device");
    }
    return a;
  }

  void deallocate(void* p, std::size_t) noexcept override {
    try {
      CurrentGpu on(gpu_);
      if (cudaFree(p) != cudaSuccess) log_line("cudaFree of device memory failed");
    } catch (const std::exception& e) {
      log_line(std::string("cannot free device memory: ") + e.what());
    }
  }

 private:
  int gpu_;
};

// The host tier and every staging ring: pages of their own (mmap: page-aligned at every size, never
// shared with another allocation), bound to a NUMA node first for a node's pool, then page-locked and
// registered with CUDA (portable: every GPU and context of the process copies to and from them
// asynchronously), under --host-mem. cudaHostAlloc is not used: it hands out small requests from a cache
// of larger blocks, so only large ones come back page-aligned, and O_DIRECT needs every one to be (the
// first run on a GPU failed at its first step on a 4-byte readback buffer).
class PinnedAllocator final : public Allocator {
 public:
  PinnedAllocator(int gpu, std::size_t budget, MemoryKind kind = MemoryKind::pinned_host,
                  std::string name = "host")
      : Allocator(kind, std::move(name), budget), gpu_(gpu), node_(host_pool_numa_node(kind)) {}

  Allocation allocate(std::size_t bytes, const std::string& what) override {
    Allocation a;
    a.reservation = budget().reserve(bytes, what);
    const std::size_t rounded = round_up(std::max<std::size_t>(bytes, 1), kDirectIoAlign);  // whole pages
    CurrentGpu on(gpu_);
    a.ptr = node_ >= 0 ? map_node_memory(rounded, node_, what) : map_pages(rounded, what);
    // cudaHostRegister faults the pages in (on the node, for a bound pool) and locks them.
    const cudaError_t rc = cudaHostRegister(a.ptr, rounded, cudaHostRegisterPortable);
    if (rc != cudaSuccess) {
      cudaGetLastError();
      ::munmap(a.ptr, rounded);
      TZ_FAIL(describe_pinned_failure(rounded, what, rc));
    }
    if (node_ >= 0) blocks_.add(a.ptr, rounded);
    return a;
  }

  void deallocate(void* p, std::size_t bytes) noexcept override {
    if (cudaHostUnregister(p) != cudaSuccess) {
      cudaGetLastError();
      log_line("cudaHostUnregister of pinned host memory failed");
    }
    if (node_ >= 0) blocks_.remove(p);
    ::munmap(p, round_up(std::max<std::size_t>(bytes, 1), kDirectIoAlign));
  }

  std::vector<std::pair<const void*, std::size_t>> node_blocks() const override { return blocks_.list(); }

 private:
  static void* map_pages(std::size_t bytes, const std::string& what) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      TZ_FAIL("cannot map ", format_bytes(bytes), " of host memory for ", what, ": mmap: ", std::strerror(err),
              " (the machine is out of memory or address space)");
    }
    return p;
  }

  int gpu_;
  int node_;  // the NUMA node a pool is bound to, or -1
  NodeBlocks blocks_;
};

// Pageable host memory, page-aligned (so O_DIRECT works from it too); no budget of its own.
class PageableAllocator final : public Allocator {
 public:
  PageableAllocator() : Allocator(MemoryKind::pageable_host, "pageable host", kUnlimited) {}

  Allocation allocate(std::size_t bytes, const std::string& what) override {
    Allocation a;
    a.reservation = budget().reserve(bytes, what);
    a.ptr = std::aligned_alloc(kDirectIoAlign, round_up(bytes, kDirectIoAlign));
    if (!a.ptr)
      TZ_FAIL("host allocation of ", format_bytes(bytes), " for ", what,
              " failed (the machine is out of memory)");
    return a;
  }
  void deallocate(void* p, std::size_t) noexcept override { std::free(p); }
};

// GPU opt.gpu modulo the GPU count (-1: GPU 0), made current for the calling thread.
int select_gpu(const DeviceOptions& opt) {
  const int count = device_count();
  TZ_CHECK(count > 0, "--device cuda: no GPU was found (", unavailable_reason(), "); use --device cpu");
  const int gpu = opt.gpu < 0 ? 0 : opt.gpu % count;
  TZ_CUDA_CHECK(cudaSetDevice(gpu));
  return gpu;
}

// --device-mem, or the GPU's free memory less the reserve when it is unlimited.
std::size_t device_budget(const DeviceOptions& opt, int gpu) {
  if (opt.device_mem != kUnlimited) return opt.device_mem;
  std::size_t free = 0, total = 0;
  TZ_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::size_t budget = default_device_budget(free, total);
  const std::size_t reserve = kGpuReserveFixed + std::size_t(kGpuReserveFraction * double(total));
  TZ_CHECK(budget > 0, "GPU ", gpu, " has ", format_bytes(free), " free of ", format_bytes(total),
           ", not more than the ", format_bytes(reserve),
           " tierzero leaves to the CUDA context, cuBLAS and NCCL: free the GPU (nvidia-smi shows who "
           "holds it) or give --device-mem");
  return budget;
}

// The GPU and the allocators, a base of CudaDevice placed before Device so they exist when Device's
// backend is made (the backend takes its cuBLASLt workspace from the device allocator) and outlive it.
struct CudaMemory {
  explicit CudaMemory(const DeviceOptions& opt)
      : gpu(select_gpu(opt)), device(gpu, device_budget(opt, gpu)), pinned(gpu, opt.host_mem) {
    for (MemoryKind k : host_pools()) {
      const auto b = opt.pool_mem.find(k);
      pools.push_back(std::make_unique<PinnedAllocator>(gpu, b == opt.pool_mem.end() ? kUnlimited : b->second, k,
                                                        memory_kind_name(k)));
    }
  }
  int gpu;
  GpuAllocator device;
  PinnedAllocator pinned;
  PageableAllocator pageable;
  std::vector<std::unique_ptr<PinnedAllocator>> pools;  // the registered host pools
};

class CudaDevice final : private CudaMemory, public Device {
 public:
  CudaDevice(const DeviceOptions& opt, const CudaOptions& cuda)
      : CudaMemory(opt), Device(DeviceKind::cuda, make_cuda_backend(CudaMemory::device, cuda)) {}

  Allocator& allocator(MemoryKind k) override {
    switch (k) {
      case MemoryKind::device:
        return CudaMemory::device;
      case MemoryKind::pinned_host:
        return pinned;
      case MemoryKind::pageable_host:
        return pageable;
    }
    for (const auto& p : pools)
      if (p->kind() == k) return *p;
    TZ_FAIL("this device has no ", memory_kind_name(k), " memory (registered after the device was made)");
  }
  std::unique_ptr<Stream> create_stream() override {
    CurrentGpu on(gpu);
    return std::make_unique<CudaStream>();
  }
  std::unique_ptr<Event> create_event() override {
    CurrentGpu on(gpu);
    return std::make_unique<CudaEvent>();
  }
  std::unique_ptr<Event> create_timing_event() override {
    CurrentGpu on(gpu);
    return std::make_unique<CudaEvent>(CudaEvent::Timing::on);
  }
  // cudaHostRegister always locks what it registers (or fails, naming why): the host tier is never unpinned.
  std::string pin_error() const override { return {}; }

  int index() const { return gpu; }
};

}  // namespace

std::size_t default_device_budget(std::size_t free, std::size_t total) {
  const std::size_t reserve = kGpuReserveFixed + std::size_t(kGpuReserveFraction * double(total));
  return free > reserve ? free - reserve : 0;
}

std::unique_ptr<Device> make_cuda_device(const DeviceOptions& opt, const CudaOptions& cuda) {
  return std::make_unique<CudaDevice>(opt, cuda);
}

int cuda_device_index(Device& dev) {
  auto* d = dynamic_cast<CudaDevice*>(&dev);
  TZ_CHECK(d != nullptr, "cuda_device_index: the ", device_kind_name(dev.kind()),
           " device is not a cuda device");
  return d->index();
}

}  // namespace tz::cuda
