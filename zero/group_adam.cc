// group_adamw: the tensor walk over a group range, then the CPU Adam (or its memory pass) per tensor.
#include "zero/group_adam.h"

#include <algorithm>
#include <cstring>

#include "core/cpu_adam.h"

namespace tz {

void group_adamw(const GroupSpec& spec, std::size_t lo, std::size_t n, float* p, float* m, float* v,
                 const float* g, void* out, DType working, const AdamStep& adam, float wd, AdamPass pass) {
  const std::size_t es = dtype_size(working);
  std::size_t done = lo;  // the working copy is written up to here
  const auto zero_to = [&](std::size_t end) {
    if (out && pass == AdamPass::update && end > done)
      std::memset(static_cast<char*>(out) + (done - lo) * es, 0, (end - done) * es);
    done = std::max(done, end);
  };
  for (const TensorSpec& t : spec.tensors) {
    const std::size_t a = std::max(lo, t.offset), b = std::min(lo + n, t.offset + t.count);
    if (a >= b) continue;
    zero_to(a);
    done = b;
    const std::size_t off = a - lo;
    void* w = out ? static_cast<char*>(out) + off * es : nullptr;
    if (pass == AdamPass::memory_limit) {
      cpu_adam_memory_pass(cpu_adam_isa_choice(), p + off, m + off, v + off, g + off, b - a, w, working);
      continue;
    }
    AdamStep s = adam;
    s.weight_decay = t.decay ? wd : 0.0f;
    cpu_adamw(p + off, m + off, v + off, g + off, b - a, s, w, working);
  }
  zero_to(lo + n);
}

}  // namespace tz
