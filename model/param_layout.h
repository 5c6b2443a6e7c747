// Where every parameter of a model lives: one flat group per transformer block, plus the embedding group
// first and the final norm's last (the family decides what is in them: model/model_family.h). Tensors
// inside a group are aligned to kTensorAlign elements, and those of kBlockAlignElements or more to
// kBlockAlign, so that shards cut on multiples of kBlockAlign never split an int8 optimizer state's
// quantization block (core/blockwise_quant.h). Gradients and optimizer states use the same layout, so
// ZeRO can shard a group without model code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace tz {

inline constexpr std::size_t kTensorAlign = 16;  // elements: 64 bytes in fp32, 32 in bf16
// A tensor of kBlockAlignElements or more starts on a multiple of kBlockAlign elements (unless it follows a
// packed one): the int8 moments' block and the least tensor they quantize (core/adam_compressed.h, a test
// pins the pair), whatever format a run chooses, so the layout and its checkpoints do not depend on it.
inline constexpr std::size_t kBlockAlign = 256;
inline constexpr std::size_t kBlockAlignElements = 4096;

struct TensorSpec {
  std::string name;                   // the family's name for it, e.g. GPT-2's "h.0.ln_1.weight"
  std::string hf_name;                // the name transformers' save_pretrained writes, "transformer.h.0.ln_1.weight"
  std::vector<std::int64_t> shape;    // as stored here (wte has padded_vocab_size rows)
  std::vector<std::int64_t> hf_shape; // as Hugging Face stores it (wte has vocab_size rows)
  std::size_t offset = 0;             // elements from the start of the group
  std::size_t count = 0;              // elements (product of shape)
  // Whether AdamW's weight decay applies, as the family decides it (GPT-2: matrices and embeddings, not
  // biases or LayerNorm parameters, the Hugging Face Trainer / nanoGPT convention). The optimizer reads
  // this and asks the model nothing.
  bool decay = false;
  bool packed = false;  // the next tensor follows it without alignment padding (add_tensor)
};

enum class GroupKind { embedding, block, final_norm };

struct GroupSpec {
  std::string name;  // "embedding", "block.3", "final_norm"
  GroupKind kind = GroupKind::block;
  int layer = -1;    // block index for kind == block
  std::vector<TensorSpec> tensors;
  std::size_t count = 0;  // elements including alignment padding
};

// Appends a tensor at the group's end and returns its offset; hf_shape empty: the same as shape. A tensor
// of kBlockAlignElements or more starts on a multiple of kBlockAlign, unless the one before it is packed.
// The group's end is then aligned to kTensorAlign, unless `packed`: the next tensor starts right after
// this one (tensors a product reads as one matrix, as Llama's q/k/v).
std::size_t add_tensor(GroupSpec& g, std::string name, std::string hf_name, std::vector<std::int64_t> shape,
                       std::vector<std::int64_t> hf_shape, bool decay, bool packed = false);

struct ParamLayout {
  std::vector<GroupSpec> groups;  // [embedding, block.0 .. block.L-1, final_norm]
  std::size_t total = 0;          // sum of group counts

  // The layout of cfg's family (ModelFamily::layout).
  static ParamLayout build(const ModelConfig& cfg);

  // Appends a group and adds its count to the total.
  void add_group(GroupSpec g);

  int embedding_group() const { return 0; }
  int block_group(int layer) const { return 1 + layer; }
  int final_norm_group() const { return int(groups.size()) - 1; }

  // The order a backward pass finishes the groups' gradients in, for families whose blocks run between the
  // embedding and the final norm: the final norm, the blocks from the last to the first, the embedding.
  std::vector<int> backward_order() const;

  // Finds a tensor by its name (TensorSpec::name); null when absent.
  const TensorSpec* find(const std::string& name, int* group = nullptr) const;
};

}  // namespace tz
