// Planned buffers: a list of named buffers (memory kind, bytes, the state class they belong to), made
// before anything is allocated, and the one place that allocates them. Whoever owns a buffer takes it
// by name, in the size the plan gives, so what is allocated is exactly what the plan lists.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dyn_buffer.h"

namespace tz {

struct BufferSpec {
  std::string name;  // unique in a plan: "adam m block.3", "activations ln1 [2]"
  std::string cls;   // the row of the printed plan it adds to: "adam m", "activations and scratch"
  MemoryKind kind = MemoryKind::device;
  std::size_t bytes = 0;
};

// The sum of the bytes of every spec of memory kind k.
std::size_t total_bytes(const std::vector<BufferSpec>& specs, MemoryKind k);

class PlannedBuffers {
 public:
  PlannedBuffers(Device& dev, const std::vector<BufferSpec>& specs);
  PlannedBuffers(const PlannedBuffers&) = delete;
  PlannedBuffers& operator=(const PlannedBuffers&) = delete;

  // Allocates the planned buffer `name` (once) as elements of T; its bytes must be a multiple of T's.
  template <typename T>
  Buffer<T> take(const std::string& name) {
    const BufferSpec& s = claim(name, sizeof(T));
    return Buffer<T>(dev_.allocator(s.kind), s.bytes / sizeof(T), s.name);
  }
  // The same as elements of a run-time dtype (activations).
  DynBuffer take_as(const std::string& name, DType dtype) {
    const BufferSpec& s = claim(name, dtype_size(dtype));
    return DynBuffer(dev_.allocator(s.kind), s.bytes / dtype_size(dtype), dtype, s.name);
  }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // Throws naming every planned buffer nobody took (a plan that says more than the code allocates).
  void expect_all_taken() const;

 private:
  const BufferSpec& claim(const std::string& name, std::size_t elem);

  Device& dev_;
  std::vector<BufferSpec> specs_;
  std::vector<bool> taken_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace tz
