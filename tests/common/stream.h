// A CPU stream for kernel tests that call a backend directly (on host vectors: the CPU backend runs on
// any memory the calling thread can reach; device memory is reached through copies).
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/device.h"

namespace tz::test {

inline Device& cpu_device() {
  static std::unique_ptr<Device> dev = make_cpu_device();
  return *dev;
}

inline Stream& cpu_stream() {
  static std::unique_ptr<Stream> s = cpu_device().create_stream();
  return *s;
}

// The CPU backend, for tests that move bytes into device memory (a fault injected through a copy).
inline Backend& cpu_stream_backend() { return cpu_device().backend(); }

}  // namespace tz::test
