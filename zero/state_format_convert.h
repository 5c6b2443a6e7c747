// Converting optimizer states between formats at a resume (issue 36): a checkpoint holds the states as
// fp32 values and records the formats they had (int8 moments dequantized, bf16 widened, both exactly); a
// run in other formats takes them once, at load, into its own: fp32 -> bf16 rounds to nearest even,
// fp32 or bf16 -> int8 quantizes blockwise as training does, bf16 or int8 -> fp32 keeps the values.
#pragma once

#include <string>

#include "core/adam_compressed.h"
#include "zero/compressed_states.h"

namespace tz {

struct StateFormats {
  MomentFormat moments = MomentFormat::fp32;
  MasterFormat master = MasterFormat::fp32;
  bool operator==(const StateFormats&) const = default;
};

// What Engine::visit_states stores back of the fp32 values its visitor leaves: nothing (a save); the
// states' own values (a resume in the checkpoint's formats: int8 blocks are encoded to give them back bit
// for bit, and refused when they are not values int8 gave); or values of other formats, converted into
// the run's (a resume that converts: convert_piece).
enum class StateWrite { none, exact, convert };

// How a resume from states in `from` into a run in `to` stores them: exact where the moments keep their
// format (a master alone rounds to nearest even either way), convert where they change.
StateWrite resume_write(const StateFormats& from, const StateFormats& to);

// Rank 0's line for a resume that converts ("" when `from` is `to`): "resume: converting checkpoint DIR's
// optimizer states int8 -> fp32 and master weights bf16-sr -> fp32 (once, at load)", naming only the
// states whose format changes.
std::string conversion_note(const std::string& dir, const StateFormats& from, const StateFormats& to);

// Piece p's states from fp32 values of any format (master over its span, m and v over its elements) into
// a's formats: fp32 copied, bf16 rounded to nearest even, int8 quantized per 256-block by quantize_block
// (m on the signed map, v on the unsigned one keeping nonzero values nonzero), as the step quantizes.
void convert_piece(const CompressedArrays& a, const StatePiece& p, const float* master, const float* m,
                   const float* v);

}  // namespace tz
