// Typed pointers whose element type is known only at run time: a kernel argument that may hold fp32,
// bf16 or fp16 (activations and their gradients in the run's activation dtype, parameters in their
// working dtype). View is writable, CView read-only; both convert implicitly from a typed pointer, so
// an fp32 buffer passes as it is.
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace tz {

struct View {
  void* ptr = nullptr;
  DType dtype = DType::f32;
  View() = default;
  View(void* p, DType t) : ptr(p), dtype(t) {}
  View(float* p) : ptr(p), dtype(DType::f32) {}  // NOLINT: implicit by design
  View(bf16* p) : ptr(p), dtype(DType::bf16) {}  // NOLINT
  View(fp16* p) : ptr(p), dtype(DType::f16) {}   // NOLINT
  // The pointer as T*, when the view holds T (else null: callers check the dtype first).
  template <typename T>
  T* as() const {
    return dtype == dtype_of<T>() ? static_cast<T*>(ptr) : nullptr;
  }
};

struct CView {
  const void* ptr = nullptr;
  DType dtype = DType::f32;
  CView() = default;
  CView(const void* p, DType t) : ptr(p), dtype(t) {}
  CView(const float* p) : ptr(p), dtype(DType::f32) {}  // NOLINT: implicit by design
  CView(const bf16* p) : ptr(p), dtype(DType::bf16) {}  // NOLINT
  CView(const fp16* p) : ptr(p), dtype(DType::f16) {}   // NOLINT
  CView(View v) : ptr(v.ptr), dtype(v.dtype) {}         // NOLINT
  template <typename T>
  const T* as() const {
    return dtype == dtype_of<T>() ? static_cast<const T*>(ptr) : nullptr;
  }
};

inline CView cview(const float* p) { return {p, DType::f32}; }
inline CView cview(const bf16* p) { return {p, DType::bf16}; }
inline CView cview(const fp16* p) { return {p, DType::f16}; }

// The view `elems` elements further on.
inline CView offset(CView v, std::size_t elems) {
  return {static_cast<const char*>(v.ptr) + elems * dtype_size(v.dtype), v.dtype};
}
inline View offset(View v, std::size_t elems) {
  return {static_cast<char*>(v.ptr) + elems * dtype_size(v.dtype), v.dtype};
}

// The dtypes an activation may have.
inline bool is_float_dtype(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

}  // namespace tz
