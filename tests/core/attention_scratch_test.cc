// The cuda attention's scratch (core/attention_scratch.h): one float per query row, then, for 16-bit
// activations, cuDNN's workspace at a 256-byte offset within the bound the memory plan reserves: the
// deterministic backward's dP for every query-key pair in 2 bytes (T padded to 128), an fp32 dQ, and 1 MiB.
#include "core/attention_scratch.h"

#include <gtest/gtest.h>

namespace tz {
namespace {

TEST(AttentionScratch, Fp32KeepsOneFloatPerRowAndSixteenBitAddsTheBoundedWorkspace) {
  const AttentionShape a{2, 99, 8, 2, 64};
  EXPECT_EQ(attention_row_floats(a), 2u * 8 * 99);
  EXPECT_EQ(cuda_attention_scratch_floats(a, DType::f32), 2u * 8 * 99);
  // 1584 floats = 6336 bytes of row sums: the workspace starts at 6400, the next multiple of 256.
  EXPECT_EQ(cudnn_attention_workspace_offset(a), 6400u);
  const std::size_t tp = 128, bound = 2 * 8 * tp * tp * 2 + 2 * 8 * tp * 64 * 4 + (1u << 20);
  EXPECT_EQ(cudnn_attention_workspace_bound(a), bound);
  for (DType t : {DType::bf16, DType::f16})
    EXPECT_EQ(cuda_attention_scratch_floats(a, t), (6400 + bound) / 4);
}

// gpt2-xl at micro-batch 8 and seq-len 1024 (25 heads of 64): 400 MiB of dP, 50 MiB of dQ and 1 MiB; what
// the plan reserves once for every layer's attention (the scratch is shared).
TEST(AttentionScratch, Gpt2XlAtMicroBatch8ReservesFourHundredAndFiftyOneMiB) {
  const AttentionShape a = AttentionShape::multi_head(8, 1024, 1600, 25);
  EXPECT_EQ(cudnn_attention_workspace_bound(a), (400u + 50 + 1) << 20);
  EXPECT_EQ(cudnn_attention_workspace_offset(a), 8u * 25 * 1024 * 4);
}

TEST(AttentionScratch, TheBoundGrowsWithTPaddedTo128) {
  const AttentionShape t1{1, 1, 4, 4, 128}, t128{1, 128, 4, 4, 128}, t129{1, 129, 4, 4, 128};
  EXPECT_EQ(cudnn_attention_workspace_bound(t1), cudnn_attention_workspace_bound(t128));
  EXPECT_GT(cudnn_attention_workspace_bound(t129), cudnn_attention_workspace_bound(t128));
}

}  // namespace
}  // namespace tz
