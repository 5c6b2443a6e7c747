// GPT-2 in safetensors files: the shape a Hugging Face GPT-2 file implies, and import and export in the
// layout transformers' GPT2LMHeadModel loads.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/safetensors_reader.h"

namespace tz {

// Reads n_layer (number of h.N blocks), n_embd and vocab (wte), max_seq_len (wpe rows) from a
// Hugging Face GPT-2 file; n_head is not stored there, so it is given. Padded vocab = pad_vocab(vocab).
ModelConfig infer_gpt_config_from_safetensors(const std::string& path, int n_head);

// Fills groups[g] (resized to layout.groups[g].count, padding zero) with the file's values as fp32.
// Names may carry the "transformer." prefix or not; attn.bias / attn.masked_bias buffers are ignored;
// lm_head.weight, if present, must equal wte.weight (they are tied). wte has vocab_size rows in the
// file; rows [vocab, padded_vocab) are zero. Missing, extra or misshapen tensors and dtypes other
// than F32/F16/BF16 throw. `seen`, if given, gets every byte read, in the order read (the header, then
// each tensor loaded in name order): the ranks of a job compare a hash of it.
void load_gpt_safetensors(const std::string& path, const ParamLayout& layout,
                          std::vector<std::vector<float>>& groups, const SeenBytes& seen = {});

// Writes what transformers.GPT2LMHeadModel.from_pretrained loads: "transformer."-prefixed names,
// Conv1D weights [in, out], wte with vocab_size rows, no lm_head.weight (tied), no attn.bias buffers,
// metadata {"format": "pt"}. dtype is f32, bf16 or f16. groups[g] points at layout.groups[g].count floats.
void save_gpt_safetensors(const std::string& path, const ParamLayout& layout,
                          const std::vector<const float*>& groups, DType dtype);

}  // namespace tz
