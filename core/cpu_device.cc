// The CPU device: its three allocators (device memory poisoned outside kernels in the poison build;
// the host tier page-aligned and locked where the limit allows) and its synchronous streams and events.
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/error.h"
#include "core/numa.h"
#include "core/poison.h"

namespace tz {
namespace {

class CpuAllocator final : public Allocator {
 public:
  // align: 64 bytes for device and pageable memory (a cache line, what vector loads want), a page for
  // pinned memory (so it can go straight to O_DIRECT I/O and be locked page by page).
  CpuAllocator(MemoryKind kind, std::string tier, std::size_t budget, std::size_t align, Pinning pinning)
      : Allocator(kind, std::move(tier), budget), align_(align), pinning_(pinning), node_(host_pool_numa_node(kind)) {}

  Allocation allocate(std::size_t bytes, const std::string& what) override {
    Allocation a;
    a.reservation = budget().reserve(bytes, what);
    const std::size_t rounded = (bytes + align_ - 1) / align_ * align_;
    // A pool bound to a NUMA node maps its own pages, bound before the first touch.
    a.ptr = node_ >= 0 ? map_node_memory(rounded, node_, what) : std::aligned_alloc(align_, rounded);
    if (!a.ptr)
      TZ_FAIL("host allocation of ", format_bytes(bytes), " for ", what,
              " failed (the machine is out of memory)");
    if (pinning_ != Pinning::none) {
      std::string why;
      try {
        why = lock_pages(a.ptr, rounded, pinning_);
      } catch (...) {
        release(a.ptr, rounded);
        throw;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (!why.empty() && pin_error_.empty()) pin_error_ = why;
    }
    if (kind() == MemoryKind::device) register_device_memory(a.ptr, rounded);
    if (node_ >= 0) blocks_.add(a.ptr, rounded);
    return a;
  }

  void deallocate(void* p, std::size_t bytes) noexcept override {
    if (kind() == MemoryKind::device) unregister_device_memory(p);
    const std::size_t rounded = (bytes + align_ - 1) / align_ * align_;
    if (pinning_ != Pinning::none) ::munlock(p, rounded);
    if (node_ >= 0) blocks_.remove(p);
    release(p, rounded);
  }

  std::vector<std::pair<const void*, std::size_t>> node_blocks() const override { return blocks_.list(); }

  std::string pin_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pin_error_;
  }

 private:
  void release(void* p, std::size_t rounded) noexcept {
    if (node_ >= 0)
      unmap_node_memory(p, rounded);
    else
      std::free(p);
  }

  std::size_t align_;
  Pinning pinning_;
  int node_;  // the NUMA node a pool is bound to, or -1
  NodeBlocks blocks_;
  mutable std::mutex mu_;
  std::string pin_error_;
};

// The calling thread runs every operation as it is enqueued: a stream is always drained and an event
// is complete as soon as it is recorded.
class CpuStream final : public Stream {
 public:
  void synchronize() override {}
};

class CpuEvent final : public Event {
 public:
  explicit CpuEvent(bool timing = false) : timing_(timing) {}
  // The stream has run everything enqueued before this call: now is when it reached the event.
  void record(Stream&) override {
    if (timing_) at_ = std::chrono::steady_clock::now();
  }
  void wait(Stream&) override {}
  void synchronize() override {}
  bool ready() override { return true; }
  double ms_since(Event& start) override {
    auto* s = dynamic_cast<CpuEvent*>(&start);
    TZ_CHECK(timing_ && s && s->timing_, "ms_since needs two timing events of the cpu device");
    return std::chrono::duration<double, std::milli>(at_ - s->at_).count();
  }

 private:
  bool timing_;
  std::chrono::steady_clock::time_point at_{};
};

class CpuDevice final : public Device {
 public:
  CpuDevice(const DeviceOptions& o, DeviceKind kind)
      : Device(kind, make_cpu_backend()),
        device_(MemoryKind::device, "device", o.device_mem, 64, Pinning::none),
        pinned_(MemoryKind::pinned_host, "host", o.host_mem, kDirectIoAlign, o.pinning),
        pageable_(MemoryKind::pageable_host, "pageable host", kUnlimited, 64, Pinning::none) {
    for (MemoryKind k : host_pools()) {
      const auto b = o.pool_mem.find(k);
      pools_.push_back(std::make_unique<CpuAllocator>(k, memory_kind_name(k),
                                                      b == o.pool_mem.end() ? kUnlimited : b->second,
                                                      kDirectIoAlign, o.pinning));
    }
  }

  Allocator& allocator(MemoryKind k) override {
    switch (k) {
      case MemoryKind::device:
        return device_;
      case MemoryKind::pinned_host:
        return pinned_;
      case MemoryKind::pageable_host:
        return pageable_;
    }
    for (const auto& p : pools_)
      if (p->kind() == k) return *p;
    TZ_FAIL("this device has no ", memory_kind_name(k), " memory (registered after the device was made)");
  }
  std::unique_ptr<Stream> create_stream() override { return std::make_unique<CpuStream>(); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<CpuEvent>(); }
  std::unique_ptr<Event> create_timing_event() override { return std::make_unique<CpuEvent>(true); }
  std::string pin_error() const override {
    std::string e = pinned_.pin_error();
    for (const auto& p : pools_)
      if (e.empty()) e = p->pin_error();
    return e;
  }

 private:
  CpuAllocator device_, pinned_, pageable_;
  std::vector<std::unique_ptr<CpuAllocator>> pools_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(const DeviceOptions& opt, DeviceKind kind) {
  return std::make_unique<CpuDevice>(opt, kind);
}

}  // namespace tz
