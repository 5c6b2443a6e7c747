// A parameter layout written as a Hugging Face safetensors file: each tensor under its hf_name with its
// hf_shape (padded vocabulary rows dropped: they are the tail of a row-major block), metadata
// {"format": "pt"}, in fp32, bf16 or fp16. Families whose stored tensors are Hugging Face's own, up to
// that padding, export through it.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/param_layout.h"

namespace tz {

// groups[g] points at layout.groups[g].count floats. `what` names the model in errors ("GPT-2 weights").
void save_layout_safetensors(const std::string& path, const ParamLayout& layout,
                             const std::vector<const float*>& groups, DType dtype, const std::string& what);

}  // namespace tz
