// The backend table: every kernel the model and optimizer run, and the copies and fills that move
// device bytes, each enqueued on a stream. Pointers are device memory unless a comment says otherwise
// (copy_async takes any two memory kinds). Activations and activation gradients are Views in the run's
// activation dtype (fp32, bf16 or fp16: every activation argument of one call shares it); parameters are
// read in their working dtype through CView; parameter gradients, normalisation statistics (mean, rstd,
// log-sum-exp), losses, master weights and optimizer states are fp32, and every kernel computes in fp32
// whatever it stores. Shapes are row-major. Functions named *_backward accumulate (+=) into parameter
// gradients. Scalar results (sums, norms, finiteness) are written to device memory: the host reads them
// through a copy into pinned memory and an event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/stream.h"
#include "core/view.h"

namespace tz {

enum class Trans { no, yes };
enum class Accumulate { no, yes };

// One matrix product's shape, as Backend::gemm takes it.
struct GemmShape {
  Trans ta = Trans::no, tb = Trans::no;
  int M = 0, N = 0, K = 0;
  DType out = DType::f32;  // C's dtype: the activation dtype for an activation, fp32 for a weight gradient
  std::string name;        // what a profile calls it ("qkv.fwd"); empty: unnamed
};

// One causal attention's shape: B sequences of T positions, NH query heads and KVH key-value heads
// (KVH divides NH; 1: multi-query) of hd channels each. qkv rows are [q: NH*hd | k: KVH*hd | v: KVH*hd].
struct AttentionShape {
  int B = 0, T = 0, NH = 0, KVH = 0, hd = 0;
  static AttentionShape multi_head(int B, int T, int C, int NH) { return {B, T, NH, NH, NH > 0 ? C / NH : 0}; }
  int qkv_width() const { return (NH + 2 * KVH) * hd; }
  int out_width() const { return NH * hd; }
  int group() const { return NH / KVH; }  // query heads per key-value head
};

// AdamW hyper-parameters for one step (PyTorch semantics: decoupled decay, bias correction).
struct CompressedStates;  // core/adam_compressed.h
struct ShardPosition;

struct AdamStep {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0;
  int step = 1;            // 1-based, for bias correction
  float grad_scale = 1.0f;  // gradients are multiplied by this first (clipping, loss-scale removal)
};

class Backend {
 public:
  virtual ~Backend() = default;

  // C[M,N] (+)= op(A)[M,K] * op(B)[K,N], fp32 accumulation. A and B have the same dtype (f32, bf16 or
  // f16); C is fp32 or A's dtype (read, when accumulating, and written in it). op(X) = X^T when the
  // Trans flag is yes (then X is stored [K,M] or [N,K]). Where the device widens 16-bit operands to fp32
  // first (gemm_workspace_floats), it does so in the workspace given to set_gemm_workspace.
  virtual void gemm(Stream& s, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C, Accumulate acc) = 0;

  // Device memory for gemm's widened inputs (the planned "matmul workspace"); null: none.
  virtual void set_gemm_workspace(float* workspace, std::size_t floats) = 0;

  // out[r, c] += bias[c] for r < rows.
  virtual void add_bias(Stream& s, View out, CView bias, int rows, int cols) = 0;
  // dbias[c] += sum_r dout[r, c].
  virtual void bias_backward(Stream& s, float* dbias, CView dout, int rows, int cols) = 0;

  // out[n] = embedding wte[tokens[n % (B*T)]] + wpe[t] for each of B*T positions, C channels; without a
  // position table (wpe.ptr null, dwpe null: Llama) the token's row alone.
  virtual void encoder_forward(Stream& s, View out, const std::int32_t* tokens, CView wte, CView wpe, int B, int T, int C) = 0;
  virtual void encoder_backward(Stream& s, float* dwte, float* dwpe, CView dout, const std::int32_t* tokens, int B, int T,
                                int C) = 0;

  // LayerNorm over C channels of N rows (eps 1e-5); saves mean and rstd for backward.
  virtual void layernorm_forward(Stream& s, View out, float* mean, float* rstd, CView inp, CView w, CView b, int N,
                                 int C) = 0;
  // dinp += ..., dw += ..., db += ...
  virtual void layernorm_backward(Stream& s, View dinp, float* dw, float* db, CView dout, CView inp, CView w,
                                  const float* mean, const float* rstd, int N, int C) = 0;

  // GELU, tanh approximation. Backward writes dinp = dout * gelu'(inp) (no accumulation).
  virtual void gelu_forward(Stream& s, View out, CView inp, std::size_t n) = 0;
  virtual void gelu_backward(Stream& s, View dinp, CView inp, CView dout, std::size_t n) = 0;

  // Causal multi-head self-attention with grouped-query heads (AttentionShape). qkv rows are [q | k | v];
  // out is [B,T,NH*hd]. `saved` keeps what backward needs, attention_saved_floats(kind, shape, dtype)
  // floats: the cpu backend keeps the softmax probabilities [B,NH,T,T], the cuda backend (fused, online
  // softmax) only each row's log-sum-exp [B,NH,T] and recomputes the probabilities in backward. Repeated
  // keys and values are never materialised: query head h reads key-value head h / (NH / KVH) where it
  // lies. `scratch` has attention_scratch_floats(kind, shape, dtype) floats (forward and backward: the
  // cpu backend widens 16-bit activations there).
  virtual void attention_forward(Stream& s, View out, float* saved, float* scratch, CView qkv, const AttentionShape& a) = 0;
  // Writes dqkv (no accumulation; a key-value head's gradient sums over its group of query heads). out and
  // saved are forward's.
  virtual void attention_backward(Stream& s, View dqkv, float* scratch, CView dout, CView qkv, CView out,
                                  const float* saved, const AttentionShape& a) = 0;
  // GPT-2's shape: qkv [B,T,3C], NH heads of C/NH for queries, keys and values alike.
  void attention_forward(Stream& s, View out, float* saved, float* scratch, CView qkv, int B, int T, int C, int NH) {
    attention_forward(s, out, saved, scratch, qkv, AttentionShape::multi_head(B, T, C, NH));
  }
  void attention_backward(Stream& s, View dqkv, float* scratch, CView dout, CView qkv, CView out, const float* saved,
                          int B, int T, int C, int NH) {
    attention_backward(s, dqkv, scratch, dout, qkv, out, saved, AttentionShape::multi_head(B, T, C, NH));
  }

  // RMSNorm over C channels of N rows: out = inp * rstd * w with rstd = 1 / sqrt(mean(inp^2) + eps)
  // (Hugging Face's LlamaRMSNorm in fp32); saves rstd for backward.
  virtual void rmsnorm_forward(Stream& s, View out, float* rstd, CView inp, CView w, int N, int C, float eps) = 0;
  // dinp += ..., dw += ...
  virtual void rmsnorm_backward(Stream& s, View dinp, float* dw, CView dout, CView inp, CView w, const float* rstd,
                                int N, int C) = 0;
  // Rotary position embedding in place, Hugging Face's rotate_half pairing (channel i with i + hd/2) of
  // `heads` heads of hd channels from column 0 of each of N rows of `stride` floats. Row r is position
  // r % T, whose angles come from `table`: cos [T, hd/2] then sin [T, hd/2]. inverse: the rotation by
  // the negative angles (its transpose: backward's).
  virtual void rope(Stream& s, View x, const float* table, int N, int T, int heads, int hd, int stride,
                    bool inverse) = 0;
  // SwiGLU: out[N, I] = silu(gate) * up, gate_up rows [gate: I | up: I].
  virtual void swiglu_forward(Stream& s, View out, CView gate_up, int N, int I) = 0;
  // dgate_up[N, 2I] from dout[N, I] (no accumulation).
  virtual void swiglu_backward(Stream& s, View dgate_up, CView gate_up, CView dout, int N, int I) = 0;

  // out = a + b.
  virtual void add(Stream& s, View out, CView a, CView b, std::size_t n) = 0;
  // y += alpha * x.
  virtual void axpy(Stream& s, float* y, float alpha, const float* x, std::size_t n) = 0;

  // Softmax cross-entropy over the first V of Vp columns (Vp - V padded columns get no mass).
  // Writes losses[N] and replaces logits with dlogits = (softmax - onehot(target)) * dloss (padded
  // columns 0); the softmax is computed in fp32 whatever the logits' dtype.
  virtual void softmax_xent(Stream& s, float* losses, View logits, const std::int32_t* targets, int N, int V, int Vp,
                            float dloss) = 0;

  // Element conversions.
  virtual void cast(Stream& s, void* dst, DType dst_type, const void* src, DType src_type, std::size_t n) = 0;
  virtual void fill(Stream& s, View x, float value, std::size_t n) = 0;
  // Reductions into one double in device memory, each summed in fixed-size chunks in chunk order, so
  // the result does not depend on the thread count (or block count): acc[0] += sum of x, of x^2.
  virtual void sum(Stream& s, double* acc, const float* x, std::size_t n) = 0;
  // acc[0] += x[0] + x[1] + ... in that order (combining per-group partial sums).
  virtual void sum(Stream& s, double* acc, const double* x, std::size_t n) = 0;
  virtual void sum_squares(Stream& s, double* acc, const float* x, std::size_t n) = 0;
  // acc[0] = NaN when any of x is NaN or Inf (an overflow check folded into a norm).
  virtual void check_finite(Stream& s, double* acc, const float* x, std::size_t n) = 0;

  // AdamW over fp32 master params p with moments m, v and gradient g; also writes the updated
  // params in the working dtype to `working` (skipped when null). The CPU backend runs the same CPU
  // Adam (core/cpu_adam.h) the offloaded optimizer states are updated with.
  virtual void adamw(Stream& s, float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& step,
                     void* working, DType working_type) = 0;

  // AdamW over one tensor's shard with compressed states (core/adam_compressed.h: moments in fp32, bf16 or
  // int8, the master in fp32 or bf16 with stochastic rounding), every array in device memory. The CPU
  // backend runs the CPU Adam's adamw_compressed, the CUDA backend its kernel: the same bits.
  virtual void adamw_compressed(Stream& s, const AdamStep& step, const CompressedStates& st, const float* g,
                                std::size_t n, const ShardPosition& at) = 0;

  // Moves bytes between any two memory kinds (device, pinned or pageable host), in stream order. The
  // ranges must not overlap.
  virtual void copy_async(Stream& s, void* dst, const void* src, std::size_t bytes) = 0;
  // Sets bytes of device (or host) memory to `value`, in stream order.
  virtual void memset_async(Stream& s, void* dst, int value, std::size_t bytes) = 0;
};

std::unique_ptr<Backend> make_cpu_backend();

// Floats of workspace the CPU backend's gemm uses for one product: fp16 operands are always widened to
// fp32 (oneDNN 2.6 has no fp16 matmul without AMX-FP16); bf16 inputs of a transposed product are widened
// on CPUs without AMX, where oneDNN's bf16 kernels run at ~60% of its fp32 ones for those layouts, up to
// kGemmWidenLimit floats (larger products stay bf16); on CPUs without AVX-512 (no oneDNN bf16 matmul)
// every bf16 product is widened. A widened product with a 16-bit C computes C in fp32 there too. 0: none.
inline constexpr std::size_t kGemmWidenLimit = std::size_t(16) << 20;
std::size_t cpu_gemm_workspace_floats(DType dtype, const GemmShape& s);
bool cpu_has_amx_bf16();
bool cpu_has_onednn_bf16();

// The same for a device kind, from its traits (what the memory plan sizes the workspace with).
enum class DeviceKind : int;
std::size_t gemm_workspace_floats(DeviceKind kind, DType dtype, const GemmShape& s);
// Floats attention_forward saves for backward, and the scratch both directions use, on a device kind (its
// traits'), for activations of dtype `act`.
std::size_t attention_saved_floats(DeviceKind kind, const AttentionShape& a, DType act);
std::size_t attention_scratch_floats(DeviceKind kind, const AttentionShape& a, DType act);

}  // namespace tz
