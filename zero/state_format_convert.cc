// Converting optimizer states between formats at a resume: the choice of encoder, rank 0's line, and the
// int8 quantization of values that were not int8's (zero/state_format_convert.h).
#include "zero/state_format_convert.h"

#include <algorithm>

#include "core/blockwise_quant.h"
#include "core/quant_map.h"

namespace tz {

StateWrite resume_write(const StateFormats& from, const StateFormats& to) {
  return from.moments == to.moments ? StateWrite::exact : StateWrite::convert;
}

std::string conversion_note(const std::string& dir, const StateFormats& from, const StateFormats& to) {
  std::string what;
  if (from.moments != to.moments)
    what = "optimizer states " + std::string(moment_format_name(from.moments)) + " -> " +
           std::string(moment_format_name(to.moments));
  if (from.master != to.master)
    what += (what.empty() ? "" : " and ") + std::string("master weights ") +
            std::string(master_format_name(from.master)) + " -> " + std::string(master_format_name(to.master));
  if (what.empty()) return "";
  return "resume: converting checkpoint " + dir + "'s " + what + " (once, at load)";
}

void convert_piece(const CompressedArrays& a, const StatePiece& p, const float* master, const float* m,
                   const float* v) {
  // fp32 moments are copied and bf16 ones rounded to nearest even whatever format the values had: the
  // exact encoder does just that. Only int8 encodes values that were not int8's otherwise.
  if (p.moments != MomentFormat::int8) {
    encode_piece(a, p, master, m, v);
    return;
  }
  encode_master(a, p, master);
  const CompressedStates s = piece_states(a, p);
  for (std::size_t k = 0, b = 0; k < p.count; k += kQuantBlock, ++b) {
    const std::size_t n = std::min(kQuantBlock, p.count - k);
    s.m_absmax[b] = quantize_block(m + k, n, dynamic_map(true), static_cast<std::uint8_t*>(s.m) + k);
    s.v_absmax[b] = quantize_block(v + k, n, dynamic_map(false), static_cast<std::uint8_t*>(s.v) + k,
                                   /*keep_nonzero=*/true);
  }
}

}  // namespace tz
