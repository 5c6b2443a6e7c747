// The cuda attention's scratch (Backend::attention_forward / attention_backward's `scratch`): what each of
// its paths keeps there, and the floats the memory plan reserves for it (core/device_traits.cc's cuda
// record). Pure arithmetic, so a build without CUDA plans a GPU's memory the same way.
//
//   [0, rows)                         one float per query row, B*NH*T: the hand-written backward's
//                                     rowsum(dout * out), or cuDNN backward's softmax_sum (the same sum)
//   [workspace offset, + bound)       cuDNN's execution-plan workspace, 256-byte aligned (16-bit
//                                     activations only: fp32 ones never reach cuDNN)
#pragma once

#include <cstddef>

#include "core/backend.h"

namespace tz {

// B * NH * T: the floats of one value per query row.
std::size_t attention_row_floats(const AttentionShape& a);

// Where cuDNN's workspace starts in the scratch, in bytes (after the row floats, 256-byte aligned).
std::size_t cudnn_attention_workspace_offset(const AttentionShape& a);

// An upper bound, in bytes, of the workspace cuDNN's execution plans ask for to run
// core/cuda/cudnn_sdpa_graph.h's graphs on a Hopper GPU, which the run checks (cudnn_attention.h):
//   - the deterministic backward (the dP-workspace algorithm the frontend picks for
//     set_deterministic_algorithm on sm90) keeps dP for every query-key pair of every head in the io dtype:
//     B * NH * Tp * Tp * 2 bytes, Tp = T rounded up to 128 (cudnn-frontend's own estimate,
//     required_dp_workspace_bytes, rounds to 64; cuDNN's sm90 backward walks keys in 128-row tiles);
//   - plus an fp32 dQ accumulator, B * NH * Tp * hd * 4 bytes (what the frontend's non-deterministic graph
//     keeps in its workspace as dQ_accum; allowed for in case an engine keeps one anyway);
//   - plus 1 MiB for the engines' own counters (forward's engines ask for no more than that).
std::size_t cudnn_attention_workspace_bound(const AttentionShape& a);

// The cuda attention's scratch in floats: the row floats for fp32 activations (only the hand-written
// kernels run them); for bf16 and fp16 the workspace offset plus its bound.
std::size_t cuda_attention_scratch_floats(const AttentionShape& a, DType act);

}  // namespace tz
