// One of a flat group's state arrays on this rank (working params, gradient, fp32 master, Adam m or v)
// with the tier it lives on, and the moves that bring a piece of it where a computation runs: the CPU
// Adam reads and writes host memory; the device's AdamW, the norm's kernels and the collectives, device
// memory. The optimizer step, the gatherer and the reducer ask the array, not its tier (FSDP2's
// FSDPParam: the state knows where its shard lives and how it gets where it is used). An array on a file
// tier holds no memory here: the swappers stage it (zero/optimizer_swapper.h, zero/param_swapper.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/backend.h"
#include "core/device.h"
#include "core/host_ops.h"
#include "zero/tier.h"

namespace tz {

template <typename T>
class PlacedArray {
 public:
  PlacedArray() = default;
  PlacedArray(Tier home, Buffer<T> buf) : home_(home), buf_(std::move(buf)) {}

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
};

}  // namespace tz
