// Command-line flags that choose the model (preset + free sizes) and the compute dtype, shared by
// `train` and `bench`.
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "core/dtype.h"
#include "model/model_config.h"

namespace tz {

struct ModelFlags {
  std::string preset = "tiny";
  int n_layer = 0, n_head = 0, n_embd = 0, vocab = 0, seq_len = 64;  // 0: the preset's
};

void add_model_flags(boost::program_options::options_description& desc, ModelFlags& f);
// The preset with the overrides applied; max_seq_len grows to seq_len when needed.
ModelConfig resolve_model(const ModelFlags& f);

// The preset's name, or "custom (based on PRESET)" when size flags change it.
std::string resolve_model_name(const ModelFlags& f);

// The shape of a safetensors file, read by the family of --model's preset: the sizes the file stores,
// --n-head (or, without it, a preset's of the same width and depth) for what it does not; --seq-len must
// fit its positions.
ModelConfig model_from_file(const ModelFlags& f, const std::string& file);

// "fp32" | "bf16" | "fp16" (fp16 trains with loss scaling).
DType parse_compute_dtype(const std::string& s);

}  // namespace tz
