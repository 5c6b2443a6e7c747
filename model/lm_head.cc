// The chunked LM head and loss (see lm_head.h).
#include "model/lm_head.h"

#include <algorithm>

namespace tz {

int lm_head_rows(int padded_vocab, ModelShape s) {
  const std::size_t BT = std::size_t(s.B) * s.T, row = std::size_t(padded_vocab) * sizeof(float);
  std::size_t rows = std::clamp<std::size_t>(kLmHeadChunkBytes / row, 1, BT);
  if (s.max_logits_rows > 0) rows = std::min<std::size_t>(rows, std::size_t(s.max_logits_rows));
  return int(rows);
}

void lm_head_forward(Backend& be, Stream& s, const LmHead& h) {
  for (int r0 = 0; r0 < h.BT; r0 += h.rows) {
    const int rows = std::min(h.rows, h.BT - r0);
    be.gemm(s, Trans::no, Trans::yes, rows, h.Vp, h.C, offset(h.x, std::size_t(r0) * h.C), h.head, h.logits,
            Accumulate::no);
    be.softmax_xent(s, h.losses + r0, h.logits, h.targets + r0, rows, h.V, h.Vp, h.dloss);
  }
}

void lm_head_backward(Backend& be, Stream& s, const LmHead& h, const std::function<CView(CView, std::size_t)>& lowp,
                      View dx, float* dhead) {
  const int last = (h.BT - 1) / h.rows * h.rows;
  for (int r0 = last; r0 >= 0; r0 -= h.rows) {
    const int rows = std::min(h.rows, h.BT - r0);
    const CView xr = offset(h.x, std::size_t(r0) * h.C);
    if (r0 != last) {
      be.gemm(s, Trans::no, Trans::yes, rows, h.Vp, h.C, xr, h.head, h.logits, Accumulate::no);
      be.softmax_xent(s, h.losses + r0, h.logits, h.targets + r0, rows, h.V, h.Vp, h.dloss);
    }
    const CView dlog = lowp(h.logits, std::size_t(rows) * h.Vp);
    be.gemm(s, Trans::no, Trans::no, rows, h.C, h.Vp, dlog, h.head, offset(dx, std::size_t(r0) * h.C), Accumulate::no);
    be.gemm(s, Trans::yes, Trans::no, h.Vp, h.C, rows, dlog, xr, dhead, Accumulate::yes);
  }
}

}  // namespace tz
