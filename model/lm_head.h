// The LM head and the loss, as every family runs them: logits of the final norm's output against the
// head matrix, chunk by chunk of rows so that a large vocabulary never materialises B*T rows of logits,
// each chunk's logits turned into their gradient in place by the fused softmax cross-entropy. Forward keeps
// the last chunk's gradient; backward recomputes the others, from the last chunk to the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/backend.h"
#include "model/model.h"

namespace tz {

// Rows of logits materialised at once: all B*T while they fit kLmHeadChunkBytes of fp32, else this many
// (shape.max_logits_rows lowers it, for tests).
inline constexpr std::size_t kLmHeadChunkBytes = std::size_t(64) << 20;
int lm_head_rows(int padded_vocab, ModelShape shape);

struct LmHead {
  int BT, C, V, Vp;              // rows, width, vocabulary and its padded size
  int rows;                      // lm_head_rows
  CView x;                       // the final norm's output in the working dtype, BT x C
  CView head;                    // the head matrix, Vp x C (a tied embedding, or lm_head)
  View logits;                   // rows x Vp, in the activation dtype
  float* losses;                 // BT per-row losses
  const std::int32_t* targets;   // BT
  float dloss;                   // the gradient scale of each row's loss (loss scale / BT)
};

// Every row's loss into h.losses; the last chunk's logit gradient stays in h.logits.
void lm_head_forward(Backend& be, Stream& s, const LmHead& h);
// dx (BT x C, activation dtype) = the head's input gradient; dhead += the head's gradient. lowp hands a
// chunk's logit gradient over in the working dtype (as the products take it: cast, when activations are
// fp32 and parameters are not).
void lm_head_backward(Backend& be, Stream& s, const LmHead& h, const std::function<CView(CView, std::size_t)>& lowp,
                      View dx, float* dhead);

}  // namespace tz
