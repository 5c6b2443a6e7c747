// One of a flat group's state arrays on this rank (working params, gradient, fp32 master, Adam m or v)
// with the tier it lives on, and the moves that bring a piece of it where a computation runs: the CPU
// Adam reads and writes host memory; the device's AdamW, the norm's kernels and the collectives, device
// memory. The optimizer step, the gatherer and the reducer ask the array, not its tier (FSDP2's
// FSDPParam: the state knows where its shard lives and how it gets where it is used). An array on a file
// tier holds no memory here: its store stages it (ArrayStore: the working params' is the parameter swapper,
// zero/param_swapper.h; the optimizer states on NVMe stream through zero/optimizer_swapper.h instead).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/host_ops.h"
#include "offload/io_handle.h"
#include "zero/tier.h"

namespace tz {

// Where an array on a file tier lives: group g's elements are written once before step 1, read whole into
// pinned staging, and written back a piece at a time through a pinned window that a commit queues (elements
// [begin, begin + n) of the group's optimizer range).
class ArrayStore {
 public:
  virtual ~ArrayStore() = default;
  virtual void initialize(int g, const float* values) = 0;  // fp32 values, cast to the array's dtype
  virtual IoHandle fetch(int g, void* staging) = 0;
  virtual void* writeback_buffer() = 0;
  virtual void commit(int g, std::size_t begin, std::size_t n) = 0;
};

template <typename T>
class PlacedArray {
 public:
  PlacedArray() = default;
  PlacedArray(Tier home, Buffer<T> buf) : home_(home), buf_(std::move(buf)) {}

  // An array on a file tier is group g's in `store` (on other tiers the store is not needed, and ignored).
  void held_by(ArrayStore* store, int g) {
    if (in_file()) store_ = store, group_ = g;
  }

  Tier home() const { return home_; }
  bool on_device() const { return tz::on_device(home_); }
  bool in_host_memory() const { return tz::in_host_memory(home_); }
  bool in_file() const { return tz::in_file(home_); }

  T* data() { return buf_.data(); }
  const T* data() const { return buf_.data(); }
  std::size_t size() const { return buf_.size(); }
  std::size_t bytes() const { return buf_.bytes(); }
  bool empty() const { return buf_.empty(); }

  // n elements at `at` (a pointer into this array) where the host can read and write them: `at` itself in
  // host memory; else copied down into `staging` on `down` (the caller waits for `down` before reading
  // staging, and staged is set).
  T* for_host(Backend& be, Stream& down, T* at, std::size_t n, T* staging, bool& staged) const {
    if (in_host_memory()) return at;
    be.copy_async(down, staging, at, n * sizeof(T));
    staged = true;
    return staging;
  }

  // After the host wrote n elements at `from` (what for_host gave): copied back to `at` on `up` when the
  // array lives on the device. Returns whether a copy was enqueued (the caller waits for `up` before
  // reusing `from`).
  bool back_from_host(Backend& be, Stream& up, T* at, const T* from, std::size_t n) const {
    if (!on_device()) return false;
    be.copy_async(up, at, from, n * sizeof(T));
    return true;
  }

  // Its initial values, n fp32 ones cast to `dtype` (the working params'): cast on the host into `cast` and
  // copied in on `s` (the caller waits for `s` before reusing `cast`), or written to the store.
  void initialize(Backend& be, Stream& s, const float* values, std::size_t n, DType dtype,
                  std::vector<std::uint8_t>& cast) {
    if (in_file()) return store_->initialize(group_, values);
    cast.resize(n * dtype_size(dtype));
    host_cast(cast.data(), dtype, values, n);
    be.copy_async(s, buf_.data(), cast.data(), cast.size());
  }

  // Starts reading the whole array of a file tier into `staging` (pinned host memory); where host code
  // then reads it: host_in.
  IoHandle fetch(void* staging) const { return store_->fetch(group_, staging); }
  // Where host code reads the whole array: its memory on a host tier, `staging` (fetch's) for a file.
  const T* host_in(const T* staging) const { return in_host_memory() ? buf_.data() : staging; }

  // Where host code writes elements bound for `at` (a pointer into this array): `at` itself in host memory,
  // the store's write-back window for a file, else `staging` (host memory; host_wrote copies it up).
  T* host_out(T* at, T* staging) const {
    if (in_host_memory()) return at;
    return in_file() ? static_cast<T*>(store_->writeback_buffer()) : staging;
  }
  // Where device code writes them: `at` itself on the device, else `staging` (device memory, which the
  // caller copies down to host_out's place).
  T* device_out(T* at, T* staging) const { return on_device() ? at : staging; }
  // After host code wrote `bytes` at `from` (host_out's), elements [begin, begin + n) of the optimizer
  // range: copied up to `at` on `up` when the array is on the device (returns true: the caller waits for
  // `up` before reusing `from`), committed to the store for a file, nothing more in host memory.
  bool host_wrote(Backend& be, Stream& up, T* at, const T* from, std::size_t bytes, std::size_t begin,
                  std::size_t n) const {
    if (in_file()) store_->commit(group_, begin, n);
    return back_from_host(be, up, at, from, bytes / sizeof(T));
  }

  // The first n elements zeroed where they live: by the host in host memory, on `s` on the device.
  void zero(Backend& be, Stream& s, std::size_t n) {
    if (in_host_memory())
      host_zero(buf_.data(), n);
    else
      be.memset_async(s, buf_.data(), 0, n * sizeof(T));
  }

 private:
  Tier home_ = Tier::device;
  Buffer<T> buf_;
  ArrayStore* store_ = nullptr;  // a file tier's
  int group_ = -1;
};

}  // namespace tz
