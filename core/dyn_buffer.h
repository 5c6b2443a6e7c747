// A buffer whose element type is a run-time DType: activations and their gradients in the run's
// activation dtype. Bytes of one memory kind (a Buffer<std::byte>) and the dtype; it hands out Views, and
// converts to one where a kernel takes it, as an fp32 Buffer's data() does.
#pragma once

#include <cstddef>
#include <utility>

#include "core/device.h"
#include "core/view.h"

namespace tz {

class DynBuffer {
 public:
  DynBuffer() = default;
  DynBuffer(Buffer<std::byte> bytes, DType dtype) : bytes_(std::move(bytes)), dtype_(dtype) {}
  // `count` elements of `dtype` from `a`.
  DynBuffer(Allocator& a, std::size_t count, DType dtype, const std::string& what)
      : bytes_(a, count * dtype_size(dtype), what), dtype_(dtype) {}

  View view() { return {bytes_.data(), dtype_}; }
  CView view() const { return {bytes_.data(), dtype_}; }
  operator View() { return view(); }             // NOLINT: implicit, as a typed buffer's data()
  operator CView() const { return view(); }      // NOLINT
  // The view `elems` elements in.
  View at(std::size_t elems) { return offset(view(), elems); }
  CView at(std::size_t elems) const { return offset(view(), elems); }

  DType dtype() const { return dtype_; }
  std::size_t size() const { return bytes_.size() / dtype_size(dtype_); }
  std::size_t bytes() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  MemoryKind kind() const { return bytes_.kind(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }

 private:
  Buffer<std::byte> bytes_;
  DType dtype_ = DType::f32;
};

}  // namespace tz
