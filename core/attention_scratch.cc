// The cuda attention's scratch layout and bound (see attention_scratch.h).
#include "core/attention_scratch.h"

namespace tz {
namespace {

constexpr std::size_t kAlign = 256;            // cudaMalloc's alignment, kept for the workspace
constexpr std::size_t kEngineSlack = 1 << 20;  // the engines' own counters and semaphores

std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

}  // namespace

std::size_t attention_row_floats(const AttentionShape& a) { return std::size_t(a.B) * a.NH * a.T; }

std::size_t cudnn_attention_workspace_offset(const AttentionShape& a) {
  return round_up(attention_row_floats(a) * sizeof(float), kAlign);
}

std::size_t cudnn_attention_workspace_bound(const AttentionShape& a) {
  const std::size_t heads = std::size_t(a.B) * a.NH, tp = round_up(std::size_t(a.T), 128);
  const std::size_t dp = heads * tp * tp * 2, dq_accumulator = heads * tp * std::size_t(a.hd) * sizeof(float);
  return dp + dq_accumulator + kEngineSlack;
}

std::size_t cuda_attention_scratch_floats(const AttentionShape& a, DType act) {
  if (act == DType::f32) return attention_row_floats(a);
  const std::size_t bytes = cudnn_attention_workspace_offset(a) + cudnn_attention_workspace_bound(a);
  return round_up(bytes, sizeof(float)) / sizeof(float);
}

}  // namespace tz
