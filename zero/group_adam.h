// AdamW over a range of one flat group on the host, as the optimizer step runs it on offloaded states:
// tensor by tensor (weight decay applies to matrices and embeddings only), with the working-copy
// write. `bench adam` runs the same function, and its limit pass the same calls with the CPU Adam's
// memory pass in place of the arithmetic, so the benchmark measures what training runs.
#pragma once

#include <cstddef>

#include "core/backend.h"
#include "model/param_layout.h"

namespace tz {

enum class AdamPass { update, memory_limit };

// Elements [lo, lo + n) of the padded group: p, m, v, g and out (the working copy, in `working`'s
// dtype; may be null) point at element lo. `adam` carries lr, betas, eps, step and gradient scale;
// `weight_decay` applies to the decayed tensors. Padding between tensors keeps its master and moments;
// its working copy in `out` is written as zeros (a staging buffer copied up whole holds no stale bytes
// there: the layout's block alignment puts up to 255 padding elements before a tensor).
void group_adamw(const GroupSpec& spec, std::size_t lo, std::size_t n, float* p, float* m, float* v,
                 const float* g, void* out, DType working, const AdamStep& adam, float weight_decay,
                 AdamPass pass = AdamPass::update);

}  // namespace tz
