// A flat group's optimizer states in compressed formats (issue 36), on the host tier: the master (fp32 or
// bf16) over the optimizer range, Adam m and v per tensor piece in the format its tensor gets
// (moment_format_for: tensors under kCompressedMinElements keep fp32), int8 with an absmax per 256-block.
// The layout is planned once from the group and the range (the memory plan sizes the buffers by it); the
// step updates a piece with adamw_compressed; checkpoints and exports see the states as fp32 values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/adam_compressed.h"
#include "model/param_layout.h"
#include "zero/shard_map.h"

namespace tz {

// One tensor's elements in the optimizer range (or, with count 0, padding before the first tensor), and
// the padding after them up to the next piece: [begin, begin + span) of the range, the tensor's elements
// first.
struct StatePiece {
  std::size_t begin = 0;      // optimizer-range element (0 = opt_range.offset)
  std::size_t count = 0;      // tensor elements
  std::size_t span = 0;       // count plus the padding after them
  std::size_t in_tensor = 0;  // the first element's index in its tensor (ShardPosition::first_element)
  int tensor = -1;            // index in the group's tensors
  bool decay = false;
  MomentFormat moments = MomentFormat::fp32;
  std::size_t moment_byte = 0;  // where its m (and its v) start in their arrays
  std::size_t absmax = 0;       // its first block's absmax (int8), in the absmax part of the same arrays
};

struct CompressedLayout {
  MasterFormat master = MasterFormat::fp32;
  std::size_t range = 0;  // optimizer-range elements; the master covers every one, padding included
  std::vector<StatePiece> pieces;
  std::size_t codes_bytes = 0;   // m's elements or codes (v's alike), each piece 64-byte aligned
  std::size_t absmax_count = 0;  // m's absmax floats (v's alike), after the codes

  bool empty() const { return pieces.empty(); }
  std::size_t master_element_bytes() const { return master == MasterFormat::bf16_sr ? 2 : 4; }
  std::size_t master_bytes() const { return range * master_element_bytes(); }
  std::size_t moment_array_bytes() const { return codes_bytes + absmax_count * sizeof(float); }
  // The pieces cut so that none holds more than `max` tensor elements, each cut on a 256-block of its
  // tensor (max below 256 cuts nothing: the caller's max is then at least the range).
  std::vector<StatePiece> split(std::size_t max) const;
};

// The layout of group `spec`'s states over `range` of the padded group. Int8 moments need the range to
// start and end on 256-blocks of every int8 tensor it cuts: refused otherwise, naming `who`.
CompressedLayout compressed_layout(const GroupSpec& spec, Shard range, MomentFormat moments, MasterFormat master,
                                   const std::string& who);

// The layout cut into consecutive parts of whole pieces (split on blocks, of at most `max` elements), each
// part's master, m and v taking at most `bytes` (a piece larger than that alone), each a layout of its own
// from its first element: pieces rebased, their moments packed again from byte 0. The records of states on
// NVMe; (first element, layout) pairs.
std::vector<std::pair<std::size_t, CompressedLayout>> cut_layout(const CompressedLayout& l, std::size_t max,
                                                                 std::size_t bytes);

// The plan's class (row) of each array: "bf16 master", "adam m (int8)" (fp32 formats: the fp32 rows').
std::string master_class(MasterFormat f);
std::string moment_class(const char* moment, MomentFormat f);

// A group's compressed arrays (host memory, planned by the layout's sizes).
struct CompressedArrays {
  const CompressedLayout* layout = nullptr;
  std::uint8_t* master = nullptr;
  std::uint8_t* m = nullptr;
  std::uint8_t* v = nullptr;
};

// Piece p's arrays, typed by its formats (what adamw_compressed takes).
CompressedStates piece_states(const CompressedArrays& a, const StatePiece& p);

// The stochastic rounding's seed of tensor `tensor` of group `group` under the run's seed.
std::uint64_t rounding_seed(std::uint64_t run_seed, int group, int tensor);

// The states at the start: the master from `range_values` (fp32, the whole range), m and v zero.
void init_compressed(const CompressedArrays& a, const float* range_values);

// Piece p's step (weight decay on decayed tensors) and where its stochastic rounding is keyed.
AdamStep piece_step(const StatePiece& p, const AdamStep& adam, float weight_decay);
ShardPosition piece_position(const StatePiece& p, std::uint64_t run_seed, int group);

// Where piece p's bytes lie in its layout's arrays, as offsets and lengths in bytes: in the master's, and in
// m's (v's alike) its codes and its absmax. What a copy of the piece alone moves.
struct PieceBytes {
  std::size_t master_at = 0, master = 0, codes_at = 0, codes = 0, absmax_at = 0, absmax = 0;
};
PieceBytes piece_bytes(const CompressedLayout& l, const StatePiece& p);

// AdamW over piece p with gradient g (p.count elements at p.begin); weight decay on decayed tensors.
void update_compressed(const CompressedArrays& a, const StatePiece& p, const float* g, const AdamStep& adam,
                       float weight_decay, std::uint64_t run_seed, int group);

// The master of [begin, begin + n) as the working params (`working`'s dtype) at `out`.
void master_to_working(const CompressedArrays& a, std::size_t begin, std::size_t n, void* out, DType working);

// Piece p's states as fp32 (master over its span, m and v zero over its padding), and back (exact for
// values decode gave).
void decode_piece(const CompressedArrays& a, const StatePiece& p, float* master, float* m, float* v);
void encode_piece(const CompressedArrays& a, const StatePiece& p, const float* master, const float* m,
                  const float* v);
// The master alone over p's span from fp32 values: copied, or rounded to nearest even into bf16.
void encode_master(const CompressedArrays& a, const StatePiece& p, const float* master);

}  // namespace tz
