// A per-op profile of a device's work: a pair of timing events on the stream each backend call runs on
// (CUDA events on a GPU, so the GPU's time; the wall clock on the cpu), summed by op once the step's work
// is done, with the FLOPs and bytes each call computes and moves, so a report can set achieved TFLOP/s or
// GB/s against a peak. The device's backend records into the profile attached to it (Device::profile);
// nothing is recorded while none is.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/backend.h"
#include "core/stream.h"

namespace tz {

class Device;

// What one call computes and moves: FLOPs (matrix products and attention) and bytes read plus written.
struct OpCost {
  double flops = 0, bytes = 0;
};

// One op's totals over the profiled steps.
struct OpRow {
  std::string name;
  std::size_t calls = 0;
  double ms = 0, flops = 0, bytes = 0;
};

class OpProfile {
 public:
  explicit OpProfile(Device& dev);
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // Names the matrix products by shape (the model's GemmShape::name): a gemm call of that (ta, tb, M, N,
  // K) is reported under the name; products no name matches as "gemm MxNxK". Shapes two names share
  // report under both, joined by "|".
  void name_gemms(const std::vector<GemmShape>& shapes);
  std::string gemm_name(Trans ta, Trans tb, int M, int N, int K) const;

  // A call's start and end on stream s; `begin` returns the token `end` takes.
  std::size_t begin(Stream& s);
  void end(Stream& s, std::size_t token, const std::string& name, OpCost cost);

  // Once the host has waited for every stream the recorded calls ran on: adds each call's elapsed time
  // to its op and makes the events free for the next calls. Returns the calls collected.
  std::size_t collect();
  // Ops by name, in first-seen order, over everything collected; `reset` forgets them.
  const std::vector<OpRow>& rows() const { return rows_; }
  void reset();

 private:
  struct Pending {
    std::size_t begin, end;
    std::size_t row;
  };
  Event& event(std::size_t i);
  std::size_t row_of(const std::string& name);

  Device& dev_;
  // Timing events, reused every step; the pool grows during the first profiled step (the only
  // allocation profiling adds: its steps are measured for the profile, not for throughput).
  std::vector<std::unique_ptr<Event>> pool_;
  std::size_t next_ = 0;
  std::vector<Pending> pending_;
  std::vector<OpRow> rows_;
  std::map<std::string, std::size_t> index_;
  std::map<std::tuple<int, int, int, int, int>, std::string> gemm_names_;
};

// FLOPs of causal attention as FlashAttention's benchmarks count them: forward 4 B NH T^2 hd / 2 (two
// products, the mask halves them), backward 2.5 times that.
double attention_forward_flops(const AttentionShape& a);
inline double attention_backward_flops(const AttentionShape& a) { return 2.5 * attention_forward_flops(a); }

}  // namespace tz
