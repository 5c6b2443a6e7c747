// Matrix products on the CPU through oneDNN 2.6 matmul primitives, created once per shape and
// reused. Why oneDNN: Debian's OpenBLAS misdetects these CPUs and runs sgemm ~8x slower.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "core/backend.h"

namespace tz {

// The oneDNN library's version, "major.minor.patch" (for `tierzero doctor` and benchmark headers).
std::string onednn_version();

class OneDnnGemm {
 public:
  OneDnnGemm();
  ~OneDnnGemm();
  OneDnnGemm(const OneDnnGemm&) = delete;
  OneDnnGemm& operator=(const OneDnnGemm&) = delete;

  // C[M,N] (+)= op(A) op(B); A and B both f32, bf16 or f16; C f32 or A's dtype. Operands that
  // cpu_gemm_workspace_floats says to widen are widened into the workspace (or, when none was given, into
  // scratch of its own: tests and benchmarks that call the backend outside a planned model), a 16-bit C
  // of such a product computed in fp32 there and rounded once.
  void run(Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C, Accumulate acc);
  void set_workspace(float* ws, std::size_t floats);

  std::size_t cached_primitives() const;

 private:
  void run_product(const GemmShape& g, CView A, CView B, View C, Accumulate acc, float* scratch);
  void run_widened(const GemmShape& g, CView A, CView B, View C, Accumulate acc, float* ws);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tz
