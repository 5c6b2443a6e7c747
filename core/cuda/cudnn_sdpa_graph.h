// The causal scaled-dot-product attention graphs that cuDNN runs as one fused flash-attention kernel:
// forward (out and the row log-sum-exp) and backward (dq, dk, dv from out, dout and that log-sum-exp), built
// operation by operation as cudnn-frontend's SDPA nodes lower them for cuDNN 9 (v1.8's SDPANode and
// SDPABackwardNode, the graph llm.c's llmc/cudnn_att.cpp gets from the frontend), over tierzero's packed
// layouts: strided views of the qkv rows [q heads | k heads | v heads] and of out, no transposes, key-value
// heads shared by their group of query heads through the tensors' head dims. Include only from CUDA targets.
#pragma once

#include <cudnn_graph.h>

#include <cstddef>
#include <cstdint>

#include "core/backend.h"
#include "core/cuda/cudnn_graph.h"

namespace tz::cuda {

// The variant pack's keys. Scale, mask value and one are scalars passed by value; softmax_sum is backward's
// row sum of dout * out (in the attention's scratch, as the frontend keeps it in its workspace).
enum SdpaUid : std::int64_t {
  kSdpaQ = 1,
  kSdpaK,
  kSdpaV,
  kSdpaO,
  kSdpaStats,
  kSdpaDO,
  kSdpaDQ,
  kSdpaDK,
  kSdpaDV,
  kSdpaScale,
  kSdpaMaskValue,
  kSdpaOne,
  kSdpaSoftmaxSum,
};

// What the causal mask writes over a future key's score: -inf from cuDNN 9.10, the lowest float before (the
// frontend's attn::score_modifiers::get_negative_inf_value: "older cuDNN version prefers lowest").
float sdpa_mask_value(std::size_t cudnn_version);

// The graphs for one shape and 16-bit dtype (io: CUDNN_DATA_BFLOAT16 or CUDNN_DATA_HALF). Every tensor and
// operation is made and finalized here, which needs no GPU; CudnnGraph::plan needs one.
CudnnGraph sdpa_forward_graph(const CudnnApi& api, const AttentionShape& a, cudnnDataType_t io);
CudnnGraph sdpa_backward_graph(const CudnnApi& api, const AttentionShape& a, cudnnDataType_t io);

}  // namespace tz::cuda
