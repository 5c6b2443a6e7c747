// The SDPA graphs of core/cuda/cudnn_sdpa_graph.h, built without a GPU: every tensor and operation of the
// forward and backward graphs is accepted and finalized by the installed cuDNN (dims, strides, dtypes and
// attribute types as cuDNN checks them), for multi-head, grouped-query and multi-query heads, head sizes 64
// and 128, bf16 and fp16, with the frontend's operations in its order (their count); and the graph layer
// names the graph and the tensor in its refusals. Planning them needs a GPU
// (tests/cuda/cudnn_attention_test.cc). Skips where no cuDNN 9 is installed.
#include "core/cuda/cudnn_sdpa_graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/cuda/cudnn_api.h"
#include "tests/common/error_message.h"

namespace tz::cuda {
namespace {

class CudnnSdpaGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      api_ = &cudnn();
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
  }
  const CudnnApi* api_ = nullptr;
};

std::string label(const AttentionShape& a) {
  return "B" + std::to_string(a.B) + " T" + std::to_string(a.T) + " NH" + std::to_string(a.NH) + " KVH" +
         std::to_string(a.KVH) + " hd" + std::to_string(a.hd);
}

// Forward: bmm1, the scale, the causal mask's four (row index, column index, row >= column, select), the
// softmax's seven (max, sub, exp, sum, log, add, div) and bmm2. Backward: rowsum(dO * O)'s three, Q K^T,
// the scale, the mask's four, minus Stats, exp, P^T, P^T dO, dO V^T, the dropout mask (one), minus the row
// sums, times P, the scale, dS^T, dS^T Q, K's view and dS K: 22, and a reduction over each group for dK and
// dV when heads are grouped.
TEST_F(CudnnSdpaGraph, EveryTensorAndOperationOfBothGraphsFinalizesWithoutAGpu) {
  for (const AttentionShape& a :
       {AttentionShape{2, 128, 4, 4, 64}, AttentionShape{1, 100, 8, 2, 128}, AttentionShape{2, 64, 8, 1, 64},
        AttentionShape{1, 1024, 25, 25, 64}, AttentionShape{4, 1024, 32, 8, 64}})
    for (cudnnDataType_t io : {CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF}) {
      SCOPED_TRACE(label(a) + (io == CUDNN_DATA_HALF ? " fp16" : " bf16"));
      const CudnnGraph fwd = sdpa_forward_graph(*api_, a, io);
      EXPECT_EQ(fwd.operation_count(), 14u);
      EXPECT_NE(fwd.name().find("forward B=" + std::to_string(a.B)), std::string::npos) << fwd.name();
      const CudnnGraph bwd = sdpa_backward_graph(*api_, a, io);
      EXPECT_EQ(bwd.operation_count(), a.KVH == a.NH ? 22u : 24u);
    }
}

TEST_F(CudnnSdpaGraph, TheMaskValueIsMinusInfinityFrom9_10AndTheLowestFloatBefore) {
  EXPECT_EQ(sdpa_mask_value(90100), std::numeric_limits<float>::lowest());
  EXPECT_EQ(sdpa_mask_value(90901), std::numeric_limits<float>::lowest());
  EXPECT_TRUE(std::isinf(sdpa_mask_value(91000)) && sdpa_mask_value(91000) < 0);
  EXPECT_TRUE(std::isinf(sdpa_mask_value(91900)) && sdpa_mask_value(91900) < 0);
}

// A refusal names the graph and the tensor (and cuDNN's status where cuDNN refused).
TEST_F(CudnnSdpaGraph, ARefusedTensorIsNamedWithItsGraph) {
  CudnnGraph g(*api_, "a test graph");
  std::string m = testing::error_message([&] { g.tensor("Q", 1, CUDNN_DATA_BFLOAT16, {1, 2, 3}, {6, 3}); });
  EXPECT_NE(m.find("cuDNN tensor 'Q' of a test graph: dims [1,2,3] and strides [6,3] differ in rank"),
            std::string::npos)
      << m;
  m = testing::error_message([&] { g.tensor("K", 0, CUDNN_DATA_BFLOAT16, {1, 1}, {1, 1}); });
  EXPECT_NE(m.find("cuDNN tensor 'K': uid 0 is not in [1, 1000)"), std::string::npos) << m;
  m = testing::error_message([&] { g.tensor("V", 2, CUDNN_DATA_BFLOAT16, {1, -1, 4, 8}, {32, 32, 8, 1}); });
  EXPECT_NE(m.find("tensor 'V' [1,-1,4,8]"), std::string::npos) << m;
  EXPECT_NE(m.find("(a test graph)"), std::string::npos) << m;
  EXPECT_NE(m.find("CUDNN_STATUS_"), std::string::npos) << m;
}

}  // namespace
}  // namespace tz::cuda
