// The SDPA graphs (see cudnn_sdpa_graph.h). Each operation, its name, order, dtypes and the dims and
// strides of its intermediates follow cudnn-frontend v1.8.0's
// include/cudnn_frontend/node/scaled_dot_product_flash_attention.h for a causal graph with an attention
// scale, the softmax stats, no bias, dropout, padding or ALiBi, and set_deterministic_algorithm(true)
// (llm.c's choice): backward's dQ comes straight from its product (use_dp_workspace), with no fp32 dQ
// accumulator in the workspace and no atomics, so runs repeat bit for bit. The frontend's K -> K^T (and in
// backward V -> V^T) is the same memory with its last two dims and strides swapped.
#include "core/cuda/cudnn_sdpa_graph.h"

#include <limits>
#include <string>
#include <vector>

namespace tz::cuda {
namespace {

using Dims = std::vector<std::int64_t>;

// tierzero's layouts as 4-D strided tensors, in elements. qkv rows are W = (NH + 2 KVH) hd wide; q, k and v
// start at columns 0, NH hd and (NH + KVH) hd of them (the pointers in the variant pack); out rows are
// O = NH hd wide; the log-sum-exp is [B,NH,T].
struct Layout {
  std::int64_t B, T, NH, KVH, hd, W, O;
  explicit Layout(const AttentionShape& a)
      : B(a.B), T(a.T), NH(a.NH), KVH(a.KVH), hd(a.hd), W(a.qkv_width()), O(a.out_width()) {}
  Dims q() const { return {B, NH, T, hd}; }
  Dims kv() const { return {B, KVH, T, hd}; }
  Dims qkv_strides() const { return {T * W, hd, W, 1}; }  // a head's rows in the packed qkv
  Dims kv_t() const { return {B, KVH, hd, T}; }
  Dims qkv_t_strides() const { return {T * W, hd, 1, W}; }  // the same memory, last two dims swapped
  Dims out_strides() const { return {T * O, hd, O, 1}; }
  Dims scores() const { return {B, NH, T, T}; }
  Dims score_strides() const { return {NH * T * T, T * T, T, 1}; }
  Dims score_t_strides() const { return {NH * T * T, T * T, 1, T}; }
  Dims rows() const { return {B, NH, T, 1}; }
  Dims row_strides() const { return {NH * T, T, 1, 1}; }
  Dims full_head() const { return {B, NH, T, hd}; }  // a grouped head's per-query-head gradient
  Dims full_head_strides() const { return {NH * T * hd, T * hd, hd, 1}; }
};

constexpr cudnnDataType_t kF32 = CUDNN_DATA_FLOAT;

// The causal mask (the frontend's causal_mask branch): a key's column index above the query's row index
// gets the mask value. GEN_INDEX in int32 along the rows (axis 2) and the columns (axis 3), CMP_GE in
// boolean, BINARY_SELECT keeping the score where row >= col.
const CudnnTensor& causal_mask(CudnnGraph& g, const Layout& L, const CudnnTensor& s,
                               const CudnnTensor& mask_value) {
  const CudnnTensor& row = g.virt("row index", CUDNN_DATA_INT32, L.scores(), L.score_strides());
  g.pointwise("gen_row_idx_causal", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, s, nullptr, nullptr, row, 2);
  const CudnnTensor& col = g.virt("column index", CUDNN_DATA_INT32, L.scores(), L.score_strides());
  g.pointwise("gen_col_idx_causal", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, s, nullptr, nullptr, col, 3);
  const CudnnTensor& keep = g.virt("row >= column", CUDNN_DATA_BOOLEAN, L.scores(), L.score_strides());
  g.pointwise("row_greater_than_col", CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, &col, nullptr, keep);
  const CudnnTensor& masked = g.virt("masked scores", kF32, L.scores(), L.score_strides());
  g.pointwise("binary_select", CUDNN_POINTWISE_BINARY_SELECT, kF32, s, &mask_value, &keep, masked);
  return masked;
}

// The frontend's Softmax node with stats and without M and Zinv outputs: M = max, Z = sum exp(s - M),
// Stats = M + log Z, P = exp(s - M) / Z in the io dtype (bmm2's operand).
const CudnnTensor& softmax(CudnnGraph& g, const Layout& L, const CudnnTensor& s, const CudnnTensor& stats,
                           cudnnDataType_t io) {
  const CudnnTensor& m = g.virt("M", kF32, L.rows(), L.row_strides());
  g.reduction("M", CUDNN_REDUCE_TENSOR_MAX, s, m);
  const CudnnTensor& sub = g.virt("sub_M", kF32, L.scores(), L.score_strides());
  g.pointwise("sub", CUDNN_POINTWISE_SUB, kF32, s, &m, nullptr, sub);
  const CudnnTensor& e = g.virt("exp_sub_M", kF32, L.scores(), L.score_strides());
  g.pointwise("exp", CUDNN_POINTWISE_EXP, kF32, sub, nullptr, nullptr, e);
  const CudnnTensor& z = g.virt("Z", kF32, L.rows(), L.row_strides());
  g.reduction("sum", CUDNN_REDUCE_TENSOR_ADD, e, z);
  const CudnnTensor& log_z = g.virt("log Z", kF32, L.rows(), L.row_strides());
  g.pointwise("log", CUDNN_POINTWISE_LOG, kF32, z, nullptr, nullptr, log_z);
  g.pointwise("add", CUDNN_POINTWISE_ADD, kF32, m, &log_z, nullptr, stats);
  const CudnnTensor& p = g.virt("P", io, L.scores(), L.score_strides());
  g.pointwise("div", CUDNN_POINTWISE_DIV, kF32, e, &z, nullptr, p);
  return p;
}

// A product per query head, then, for grouped heads, the sum over each group (the frontend's GQA branch:
// the per-head product in the io dtype, a reduction into the key-value head's gradient).
void grouped_product(CudnnGraph& g, const Layout& L, const std::string& product, const std::string& reduction,
                     const CudnnTensor& a, const CudnnTensor& b, const CudnnTensor& out, cudnnDataType_t io) {
  if (L.NH == L.KVH) return g.matmul(product, a, b, out);
  const CudnnTensor& full = g.virt(product + " per query head", io, L.full_head(), L.full_head_strides());
  g.matmul(product, a, b, full);
  g.reduction(reduction, CUDNN_REDUCE_TENSOR_ADD, full, out);
}

std::string shape_text(const AttentionShape& a) {
  return "B=" + std::to_string(a.B) + " T=" + std::to_string(a.T) + " NH=" + std::to_string(a.NH) +
         " KVH=" + std::to_string(a.KVH) + " hd=" + std::to_string(a.hd);
}

}  // namespace

float sdpa_mask_value(std::size_t cudnn_version) {
  return cudnn_version < 91000 ? std::numeric_limits<float>::lowest()
                               : -std::numeric_limits<float>::infinity();
}

CudnnGraph sdpa_forward_graph(const CudnnApi& api, const AttentionShape& a, cudnnDataType_t io) {
  const Layout L(a);
  CudnnGraph g(api, "causal attention forward " + shape_text(a));
  const CudnnTensor& q = g.tensor("Q", kSdpaQ, io, L.q(), L.qkv_strides());
  const CudnnTensor& k_t = g.tensor("K^T", kSdpaK, io, L.kv_t(), L.qkv_t_strides());
  const CudnnTensor& v = g.tensor("V", kSdpaV, io, L.kv(), L.qkv_strides());
  const CudnnTensor& scale = g.scalar("attn_scale", kSdpaScale, kF32);
  const CudnnTensor& mask_value = g.scalar("mask value", kSdpaMaskValue, kF32);
  const CudnnTensor& o = g.tensor("O", kSdpaO, io, L.q(), L.out_strides());
  const CudnnTensor& stats = g.tensor("Stats", kSdpaStats, kF32, L.rows(), L.row_strides());

  const CudnnTensor& s = g.virt("S", kF32, L.scores(), L.score_strides());
  g.matmul("bmm1", q, k_t, s);
  const CudnnTensor& scaled = g.virt("S * scale", kF32, L.scores(), L.score_strides());
  g.pointwise("attn_scale", CUDNN_POINTWISE_MUL, kF32, s, &scale, nullptr, scaled);
  const CudnnTensor& p = softmax(g, L, causal_mask(g, L, scaled, mask_value), stats, io);
  g.matmul("bmm2", p, v, o);
  return g;
}

CudnnGraph sdpa_backward_graph(const CudnnApi& api, const AttentionShape& a, cudnnDataType_t io) {
  const Layout L(a);
  CudnnGraph g(api, "causal attention backward " + shape_text(a));
  const CudnnTensor& q = g.tensor("Q", kSdpaQ, io, L.q(), L.qkv_strides());
  const CudnnTensor& k_t = g.tensor("K^T", kSdpaK, io, L.kv_t(), L.qkv_t_strides());
  const CudnnTensor& v_t = g.tensor("V^T", kSdpaV, io, L.kv_t(), L.qkv_t_strides());
  const CudnnTensor& o = g.tensor("O", kSdpaO, io, L.q(), L.out_strides());
  const CudnnTensor& d_o = g.tensor("dO", kSdpaDO, io, L.q(), L.out_strides());
  const CudnnTensor& stats = g.tensor("Stats", kSdpaStats, kF32, L.rows(), L.row_strides());
  const CudnnTensor& scale = g.scalar("attn_scale", kSdpaScale, kF32);
  const CudnnTensor& mask_value = g.scalar("mask value", kSdpaMaskValue, kF32);
  const CudnnTensor& one = g.scalar("one", kSdpaOne, kF32);
  const CudnnTensor& dq = g.tensor("dQ", kSdpaDQ, io, L.q(), L.qkv_strides());
  const CudnnTensor& dk = g.tensor("dK", kSdpaDK, io, L.kv(), L.qkv_strides());
  const CudnnTensor& dv = g.tensor("dV", kSdpaDV, io, L.kv(), L.qkv_strides());

  // softmax_sum = rowsum(dO * O) (times the dropout scale's inverse: one here), kept in memory.
  const CudnnTensor& do_o = g.virt("dO * O", kF32, L.q(), {L.NH * L.T * L.hd, L.T * L.hd, L.NH * L.hd, 1});
  g.pointwise("mul_dO_O", CUDNN_POINTWISE_MUL, kF32, d_o, &o, nullptr, do_o);
  const CudnnTensor& row_sum = g.virt("rowsum dO * O", kF32, L.rows(), L.row_strides());
  g.reduction("reduce_dO_o", CUDNN_REDUCE_TENSOR_ADD, do_o, row_sum);
  const CudnnTensor& softmax_sum = g.tensor("softmax_sum", kSdpaSoftmaxSum, kF32, L.rows(), L.row_strides());
  g.pointwise("scale_dropout_inv", CUDNN_POINTWISE_MUL, kF32, row_sum, &one, nullptr, softmax_sum);

  // P = exp(mask(scale * Q K^T) - Stats), recomputed; dV = P^T dO.
  const CudnnTensor& s = g.virt("S", kF32, L.scores(), L.score_strides());
  g.matmul("matmul_Q_KT", q, k_t, s);
  const CudnnTensor& scaled = g.virt("S * scale", kF32, L.scores(), L.score_strides());
  g.pointwise("mul_s_attn_scale", CUDNN_POINTWISE_MUL, kF32, s, &scale, nullptr, scaled);
  const CudnnTensor& masked = causal_mask(g, L, scaled, mask_value);
  const CudnnTensor& centred = g.virt("S - Stats", kF32, L.scores(), L.score_strides());
  g.pointwise("sub_s_m", CUDNN_POINTWISE_SUB, kF32, masked, &stats, nullptr, centred);
  const CudnnTensor& p = g.virt("P", kF32, L.scores(), L.score_strides());
  g.pointwise("exp_s", CUDNN_POINTWISE_EXP, kF32, centred, nullptr, nullptr, p);
  const CudnnTensor& p_t = g.virt("P^T", io, L.scores(), L.score_t_strides());
  g.reshape("reshape_p", p, p_t);
  grouped_product(g, L, "matmul_pT_dO", "red_dV_head", p_t, d_o, dv, io);

  // dS = P * (dO V^T - softmax_sum) * scale; dK = dS^T Q.
  const CudnnTensor& dp = g.virt("dP", kF32, L.scores(), L.score_strides());
  g.matmul("matmul_dO_VT", d_o, v_t, dp);
  const CudnnTensor& dp_kept = g.virt("dP * mask", kF32, L.scores(), L.score_strides());
  g.pointwise("dP_dropout_mask", CUDNN_POINTWISE_MUL, kF32, dp, &one, nullptr, dp_kept);
  const CudnnTensor& dp_centred = g.virt("dP - softmax_sum", kF32, L.scores(), L.score_strides());
  g.pointwise("sub_dP_softmax_sum", CUDNN_POINTWISE_SUB, kF32, dp_kept, &softmax_sum, nullptr, dp_centred);
  const CudnnTensor& ds_unscaled = g.virt("dP * P", kF32, L.scores(), L.score_strides());
  g.pointwise("mul_dP_exp_s", CUDNN_POINTWISE_MUL, kF32, dp_centred, &p, nullptr, ds_unscaled);
  const CudnnTensor& ds = g.virt("dS", kF32, L.scores(), L.score_strides());
  g.pointwise("mul_dS_attn_scale", CUDNN_POINTWISE_MUL, kF32, ds_unscaled, &scale, nullptr, ds);
  const CudnnTensor& ds_t = g.virt("dS^T", io, L.scores(), L.score_t_strides());
  g.reshape("reshape_dS", ds, ds_t);
  grouped_product(g, L, "matmul_dST_Q", "red_dK_head", ds_t, q, dk, io);

  // dQ = dS K, K read back from K^T's memory (the frontend leaves this view's dtype to the graph's
  // intermediate one, fp32). Written straight into dQ: the deterministic (dP workspace) algorithm.
  const CudnnTensor& k = g.virt("K", kF32, L.kv(), L.qkv_strides());
  g.reshape("reshape_k", k_t, k);
  g.matmul("matmul_dS_K", ds, k, dq);
  return g;
}

}  // namespace tz::cuda
