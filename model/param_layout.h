// Where every GPT-2 parameter lives: one flat group per transformer block, plus the embeddings
// (wte, wpe) and the final LayerNorm. Tensors inside a group are aligned to kTensorAlign elements.
// Gradients and optimizer states use the same layout, so ZeRO can shard a group without model code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_config.h"

namespace tz {

inline constexpr std::size_t kTensorAlign = 16;  // elements: 64 bytes in fp32, 32 in bf16

struct TensorSpec {
  std::string name;                   // Hugging Face GPT-2 name without "transformer.", e.g. "h.0.ln_1.weight"
  std::vector<std::int64_t> shape;    // as stored here (wte has padded_vocab_size rows)
  std::vector<std::int64_t> hf_shape; // as Hugging Face stores it (wte has vocab_size rows)
  std::size_t offset = 0;             // elements from the start of the group
  std::size_t count = 0;              // elements (product of shape)
  // Whether AdamW's weight decay applies, as the model decides it (GPT-2: matrices and embeddings, not
  // biases or LayerNorm parameters, the Hugging Face Trainer / nanoGPT convention). The optimizer reads
  // this and asks the model nothing.
  bool decay = false;
};

enum class GroupKind { embedding, block, final_norm };

struct GroupSpec {
  std::string name;  // "embedding", "block.3", "final_norm"
  GroupKind kind = GroupKind::block;
  int layer = -1;    // block index for kind == block
  std::vector<TensorSpec> tensors;
  std::size_t count = 0;  // elements including alignment padding
};

// Offsets (elements) of each tensor inside a block's flat group.
struct BlockOffsets {
  std::size_t ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

struct ParamLayout {
  std::vector<GroupSpec> groups;  // [embedding, block.0 .. block.L-1, final_norm]
  BlockOffsets block;             // identical for every block
  std::size_t wte_offset = 0, wpe_offset = 0;  // in the embedding group
  std::size_t lnf_w_offset = 0, lnf_b_offset = 0;  // in the final_norm group
  std::size_t total = 0;          // sum of group counts

  static ParamLayout build(const GptConfig& cfg);

  int embedding_group() const { return 0; }
  int block_group(int layer) const { return 1 + layer; }
  int final_norm_group() const { return int(groups.size()) - 1; }

  // Finds a tensor by name (with or without the "transformer." prefix); null when absent.
  const TensorSpec* find(const std::string& name, int* group = nullptr) const;
};

}  // namespace tz
