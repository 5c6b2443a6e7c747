// Device: where a rank computes (cpu or cuda), as ggml-backend's device + buffer types + backend: three
// memory kinds, each an allocator under a budget (device, pinned host = the host tier, pageable host),
// and one more per registered host pool, streams and events to order work, and the backend table of kernels, copies and fills. Only backends
// and communicators touch device memory; everyone else moves bytes with Backend::copy_async.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "core/allocator.h"
#include "core/device_traits.h"
#include "core/dtype.h"
#include "core/host_memory.h"
#include "core/memory_budget.h"
#include "core/stream.h"

namespace tz {

class Backend;
class OpProfile;
class ProfiledBackend;

// cuda: the fused attention's kernels. fp32: SIMT cores in fp32 (within ~1e-6 of the cpu backend); bf16:
// bf16 tiles on tensor cores (head sizes up to 128; larger ones keep fp32); cudnn: cuDNN's fused flash
// attention for bf16 and fp16 activations where it runs (core/cuda/cudnn_attention.h), the bf16 kernels
// for anything else (fp32 activations, other head sizes, cuDNN missing or refusing a shape).
enum class AttentionKernels { fp32, bf16, cudnn };

// The budgets and the pinning policy a device is made with (filled by launch/ from the flags).
struct DeviceOptions {
  std::size_t device_mem = kUnlimited;  // --device-mem
  std::size_t host_mem = kUnlimited;    // --host-mem: pinned host memory (the host tier)
  // The budget of each registered host pool (register_host_pool) that has one; the others are unlimited.
  std::map<MemoryKind, std::size_t> pool_mem;
  // Locking the host tier: best_effort (the default: locked where RLIMIT_MEMLOCK allows), required
  // (--pin-memory without --allow-unpinned) or none.
  Pinning pinning = Pinning::best_effort;
  // The GPU of a cuda device: launch/ fills it with the rank's local rank, and the device takes it modulo
  // the node's GPU count (so ranks share GPUs round-robin when there are more ranks than GPUs); -1: GPU 0.
  // The cuda device selects it (cudaSetDevice) for its own calls: its constructor, allocations, streams
  // and events. Every other thread that launches work on the device's streams must select the same GPU
  // first (cuda_device_index() says which); that is the caller's business.
  int gpu = -1;
  // cuda: fp32 products may round their inputs to TF32 (--tf32); off keeps them comparable with the cpu.
  bool tf32 = false;
  // cuda: which fused attention runs (--attention-math, through attention_kernels).
  AttentionKernels attention = AttentionKernels::fp32;
};

// The value of --attention-math for a run computing in `dtype`: fp32, bf16, cudnn, or auto (cudnn with a
// bf16 or fp16 dtype, fp32 otherwise). Throws, naming the values, for any other name.
AttentionKernels attention_kernels(const std::string& math, DType dtype);

// Device memory the cuda backend takes for itself when it is made, inside --device-mem: cuBLASLt's
// matmul workspace (one, shared by every product). The memory plan should count it on cuda.
inline constexpr std::size_t kCudaGemmWorkspaceBytes = std::size_t(32) << 20;

class Device {
 public:
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceKind kind() const { return kind_; }
  const DeviceTraits& traits() const { return device_traits(kind_); }
  // Throws for a kind registered after the device was made.
  virtual Allocator& allocator(MemoryKind k) = 0;
  MemoryBudget& budget(MemoryKind k) { return allocator(k).budget(); }
  // The kernels; each call is timed into the attached profile while there is one.
  Backend& backend();
  // Attaches a per-op profile to every backend call from now on (null: detaches); the profile outlives
  // its attachment.
  void set_op_profile(OpProfile* profile);

  virtual std::unique_ptr<Stream> create_stream() = 0;
  virtual std::unique_ptr<Event> create_event() = 0;
  // An event that also records when its stream reached it (Event::ms_since): CUDA events with timing on
  // a GPU, the wall clock on the cpu (whose streams run each operation as it is enqueued). The traits'
  // event_clock names that clock.
  virtual std::unique_ptr<Event> create_timing_event();
  // Why the host tier is not locked in RAM ("" when it is, or when pinning was not asked for).
  virtual std::string pin_error() const = 0;

 protected:
  Device(DeviceKind kind, std::unique_ptr<Backend> backend);

 private:
  DeviceKind kind_;
  std::unique_ptr<ProfiledBackend> backend_;
};

// The CPU device: oneDNN + OpenMP kernels; device memory is 64-byte-aligned host memory under
// device_mem (poisoned outside kernels in the TZ_POISON_DEVICE_MEMORY build), pinned host memory is
// page-aligned and mlock'ed per the pinning policy. `kind`: another registered kind whose devices are cpu
// devices with other traits (a test's).
std::unique_ptr<Device> make_cpu_device(const DeviceOptions& opt = {}, DeviceKind kind = DeviceKind::cpu);
inline std::unique_ptr<Device> make_cpu_device(std::size_t device_mem) {
  DeviceOptions o;
  o.device_mem = device_mem;
  return make_cpu_device(o);
}

// Creates a device of a registered kind with its traits' factory; fails with a clear error when this
// build cannot make that kind or (cuda) the machine has none. Defined in core/make_device.cc (library
// `devices`, which links the CUDA backend when it is built and installs its factory), so that core itself
// links nothing from CUDA.
std::unique_ptr<Device> make_device(DeviceKind kind, const DeviceOptions& opt = {});
// Whether this build can make devices of a kind (cuda: configured with TZ_CUDA); also in `devices`.
bool device_kind_built(DeviceKind kind);
// Whether this build has the CUDA device (what `doctor` reports).
bool cuda_backend_built();

// A typed, move-only buffer of `count` elements of one memory kind. No copy: device memory is never
// duplicated implicitly. There is no element access: device memory is reached only by kernels, copies
// and collectives; host kinds through data().
template <typename T>
class Buffer {
 public:
  using value_type = T;
  Buffer() = default;
  Buffer(Allocator& a, std::size_t count, const std::string& what) : alloc_(&a), count_(count) {
    if (!count) return;
    Allocation m = a.allocate(count * sizeof(T), what);
    ptr_ = static_cast<T*>(m.ptr);
    reservation_ = std::move(m.reservation);
  }
  // Device memory of `dev`.
  Buffer(Device& dev, std::size_t count, const std::string& what)
      : Buffer(dev.allocator(MemoryKind::device), count, what) {}
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept
      : alloc_(std::exchange(o.alloc_, nullptr)),
        count_(std::exchange(o.count_, 0)),
        ptr_(std::exchange(o.ptr_, nullptr)),
        reservation_(std::move(o.reservation_)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      alloc_ = std::exchange(o.alloc_, nullptr);
      count_ = std::exchange(o.count_, 0);
      ptr_ = std::exchange(o.ptr_, nullptr);
      reservation_ = std::move(o.reservation_);
    }
    return *this;
  }

  void reset() noexcept {
    if (ptr_) alloc_->deallocate(ptr_, count_ * sizeof(T));
    reservation_.reset();
    ptr_ = nullptr;
    count_ = 0;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }
  MemoryKind kind() const { return alloc_ ? alloc_->kind() : MemoryKind::pageable_host; }

 private:
  Allocator* alloc_ = nullptr;
  std::size_t count_ = 0;
  T* ptr_ = nullptr;
  Reservation reservation_;
};

}  // namespace tz
