// The compressed states' layout, their update (adamw_compressed per piece) and their fp32 view.
#include "zero/compressed_states.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/blockwise_quant.h"
#include "core/cpu_adam.h"
#include "core/error.h"
#include "core/host_ops.h"
#include "core/quant_map.h"

namespace tz {
namespace {

// The layout starts every tensor that int8 moments quantize on a block (model/param_layout.h), so that
// shards on multiples of a block never cut one.
static_assert(kBlockAlign == kQuantBlock && kBlockAlignElements == kCompressedMinElements,
              "the layout's block alignment is the int8 moments' block and least tensor");

constexpr std::size_t kPieceAlign = 64;  // bytes: each piece's moments start on a cache line

std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

std::size_t element_bytes(MomentFormat f) {
  return f == MomentFormat::fp32 ? 4 : f == MomentFormat::bf16 ? 2 : 1;
}

// The codes and absmax that give back exactly the n values x (which dequantization gave): the absmax is
// the largest |x| when a code of magnitude 1 was used, else (the signed map's lowest value is -0.99297)
// one of the floats near |x_min| / 0.99297. Only the dequantized values enter the next update, so any
// absmax that gives them all back is as good as the one they came from.
void encode_block(const float* x, std::size_t n, const QuantMap& map, std::uint8_t* codes, float* absmax) {
  float amax = 0;
  for (std::size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  auto fits = [&](float a) {
    for (std::size_t i = 0; i < n; ++i) {
      codes[i] = nearest_code(map, a == 0 ? 0.0f : x[i] / a);
      if (map[codes[i]] * a != x[i]) return false;
    }
    *absmax = a;
    return true;
  };
  if (fits(amax)) return;
  float a = float(double(amax) / -double(map[0]));
  for (int k = 0; k < 8; ++k) a = std::nextafter(a, 0.0f);
  for (int k = 0; k < 16; ++k, a = std::nextafter(a, INFINITY))
    if (fits(a)) return;
  TZ_FAIL("an int8 optimizer state block (absmax ", amax, ") is not one dequantization gave; the checkpoint's "
          "Adam states were not written by an int8 run");
}

}  // namespace

CompressedStates piece_states(const CompressedArrays& a, const StatePiece& p) {
  const PieceBytes b = piece_bytes(*a.layout, p);
  CompressedStates s;
  s.moments = p.moments;
  s.master = a.layout->master;
  s.p = a.master + b.master_at;
  s.m = a.m + b.codes_at;
  s.v = a.v + b.codes_at;
  if (p.moments == MomentFormat::int8) {
    s.m_absmax = reinterpret_cast<float*>(a.m + b.absmax_at);
    s.v_absmax = reinterpret_cast<float*>(a.v + b.absmax_at);
  }
  return s;
}

std::vector<StatePiece> CompressedLayout::split(std::size_t max) const {
  const std::size_t step = max >= kQuantBlock ? max / kQuantBlock * kQuantBlock : max;
  std::vector<StatePiece> out;
  for (const StatePiece& p : pieces) {
    if (p.count <= step || step == 0) {
      out.push_back(p);
      continue;
    }
    for (std::size_t k = 0; k < p.count; k += step) {
      StatePiece q = p;
      q.begin = p.begin + k;
      q.count = std::min(step, p.count - k);
      q.span = k + step >= p.count ? p.span - k : q.count;
      q.in_tensor = p.in_tensor + k;
      q.moment_byte = p.moment_byte + k * element_bytes(p.moments);
      q.absmax = p.absmax + k / kQuantBlock;
      out.push_back(q);
    }
  }
  return out;
}

std::vector<std::pair<std::size_t, CompressedLayout>> cut_layout(const CompressedLayout& l, std::size_t max,
                                                                 std::size_t bytes) {
  // `part` with piece q added at its end: q rebased, and the part's sizes after it.
  struct Grown {
    StatePiece q;
    std::size_t range, codes, absmax;
  };
  auto grow = [](const CompressedLayout& part, StatePiece q) {
    q.begin = part.range;
    q.moment_byte = part.codes_bytes;
    q.absmax = part.absmax_count;
    return Grown{q, part.range + q.span,
                 align_up(part.codes_bytes + q.count * element_bytes(q.moments), kPieceAlign),
                 part.absmax_count + (q.moments == MomentFormat::int8 ? quant_blocks(q.count) : 0)};
  };
  auto add = [](CompressedLayout& part, const Grown& g) {
    part.pieces.push_back(g.q);
    part.range = g.range, part.codes_bytes = g.codes, part.absmax_count = g.absmax;
  };
  std::vector<std::pair<std::size_t, CompressedLayout>> out;
  for (const StatePiece& piece : l.split(max)) {
    if (!out.empty()) {
      const Grown g = grow(out.back().second, piece);
      if (g.range * l.master_element_bytes() + 2 * (g.codes + g.absmax * sizeof(float)) <= bytes) {
        add(out.back().second, g);
        continue;
      }
    }
    out.emplace_back(piece.begin, CompressedLayout{});
    out.back().second.master = l.master;
    add(out.back().second, grow(out.back().second, piece));
  }
  return out;
}

CompressedLayout compressed_layout(const GroupSpec& spec, Shard range, MomentFormat moments, MasterFormat master,
                                   const std::string& who) {
  CompressedLayout l;
  l.master = master;
  l.range = range.count;
  const std::size_t lo = range.offset, hi = range.offset + range.count;
  for (std::size_t t = 0; t < spec.tensors.size(); ++t) {
    const TensorSpec& ts = spec.tensors[t];
    const std::size_t a = std::max(lo, ts.offset), b = std::min(hi, ts.offset + ts.count);
    if (a >= b) continue;
    StatePiece p;
    p.begin = a - lo;
    p.count = b - a;
    p.in_tensor = a - ts.offset;
    p.tensor = int(t);
    p.decay = ts.decay;
    p.moments = moment_format_for(ts.count, moments);
    if (p.moments == MomentFormat::int8)
      TZ_CHECK(
          p.in_tensor % kQuantBlock == 0 && (b == ts.offset + ts.count || (b - ts.offset) % kQuantBlock == 0),
          "--optimizer-states int8: ", who, " cuts tensor ", ts.name, " of ", ts.count,
          " elements at element ", p.in_tensor % kQuantBlock ? p.in_tensor : b - ts.offset,
          ", inside a block of ", kQuantBlock,
          " (the shards are equal slices of each flat group, and this tensor follows a packed one, so the "
          "layout could not start it on a block); "
          "use --optimizer-states bf16, or a world size or ZeRO stage 0 that keeps whole blocks");
    p.moment_byte = l.codes_bytes;
    l.codes_bytes = align_up(l.codes_bytes + p.count * element_bytes(p.moments), kPieceAlign);
    p.absmax = l.absmax_count;
    if (p.moments == MomentFormat::int8) l.absmax_count += quant_blocks(p.count);
    if (l.pieces.empty() && p.begin > 0) l.pieces.push_back({0, 0, p.begin});  // padding before it
    l.pieces.push_back(p);
  }
  if (l.pieces.empty() && range.count) l.pieces.push_back({0, 0, range.count});
  for (std::size_t k = 0; k < l.pieces.size(); ++k)
    l.pieces[k].span = (k + 1 < l.pieces.size() ? l.pieces[k + 1].begin : range.count) - l.pieces[k].begin;
  return l;
}

std::string master_class(MasterFormat f) {
  return f == MasterFormat::fp32 ? "fp32 master" : "bf16 master";
}

std::string moment_class(const char* moment, MomentFormat f) {
  return f == MomentFormat::fp32 ? moment : std::string(moment) + " (" + std::string(moment_format_name(f)) + ")";
}

std::uint64_t rounding_seed(std::uint64_t run_seed, int group, int tensor) {
  // splitmix64 of the three, so that tensors do not share their random bits at equal element indices.
  std::uint64_t z = run_seed ^ (std::uint64_t(group) << 32 | std::uint32_t(tensor));
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void init_compressed(const CompressedArrays& a, const float* range_values) {
  const CompressedLayout& l = *a.layout;
  if (l.master == MasterFormat::bf16_sr)
    host_cast(a.master, DType::bf16, range_values, l.range);
  else
    std::memcpy(a.master, range_values, l.range * sizeof(float));
  // Zero moments in every format are zero bytes but int8's codes: the code of 0, with absmax 0.
  std::memset(a.m, 0, l.moment_array_bytes());
  std::memset(a.v, 0, l.moment_array_bytes());
  const std::uint8_t zm = nearest_code(dynamic_map(true), 0.0f), zv = nearest_code(dynamic_map(false), 0.0f);
  for (const StatePiece& p : l.pieces)
    if (p.moments == MomentFormat::int8) {
      std::memset(a.m + p.moment_byte, zm, p.count);
      std::memset(a.v + p.moment_byte, zv, p.count);
    }
}

AdamStep piece_step(const StatePiece& p, const AdamStep& adam, float weight_decay) {
  AdamStep s = adam;
  s.weight_decay = p.decay ? weight_decay : 0.0f;
  return s;
}

ShardPosition piece_position(const StatePiece& p, std::uint64_t run_seed, int group) {
  return ShardPosition{p.in_tensor, rounding_seed(run_seed, group, p.tensor)};
}

PieceBytes piece_bytes(const CompressedLayout& l, const StatePiece& p) {
  const std::size_t mb = l.master_element_bytes();
  PieceBytes b;
  b.master_at = p.begin * mb;
  b.master = p.span * mb;
  b.codes_at = p.moment_byte;
  b.codes = p.count * element_bytes(p.moments);
  b.absmax_at = l.codes_bytes + p.absmax * sizeof(float);
  b.absmax = p.moments == MomentFormat::int8 ? quant_blocks(p.count) * sizeof(float) : 0;
  return b;
}

void update_compressed(const CompressedArrays& a, const StatePiece& p, const float* g, const AdamStep& adam,
                       float weight_decay, std::uint64_t run_seed, int group) {
  if (!p.count) return;
  adamw_compressed(cpu_adam_isa_choice(), piece_step(p, adam, weight_decay), piece_states(a, p), g, p.count,
                   piece_position(p, run_seed, group));
}

void master_to_working(const CompressedArrays& a, std::size_t begin, std::size_t n, void* out, DType working) {
  if (a.layout->master == MasterFormat::fp32) {
    host_cast(out, working, reinterpret_cast<const float*>(a.master) + begin, n);
    return;
  }
  const bf16* m = reinterpret_cast<const bf16*>(a.master) + begin;
  if (working == DType::bf16) {
    std::memcpy(out, m, n * sizeof(bf16));
    return;
  }
  float f[256];
  for (std::size_t k = 0; k < n; k += 256) {
    const std::size_t c = std::min<std::size_t>(256, n - k);
    for (std::size_t i = 0; i < c; ++i) f[i] = bf16_to_float(m[k + i]);
    host_cast(static_cast<char*>(out) + k * dtype_size(working), working, f, c);
  }
}

void decode_piece(const CompressedArrays& a, const StatePiece& p, float* master, float* m, float* v) {
  const CompressedLayout& l = *a.layout;
  if (l.master == MasterFormat::fp32) {
    std::memcpy(master, reinterpret_cast<const float*>(a.master) + p.begin, p.span * sizeof(float));
  } else {
    const bf16* b = reinterpret_cast<const bf16*>(a.master) + p.begin;
    for (std::size_t i = 0; i < p.span; ++i) master[i] = bf16_to_float(b[i]);
  }
  std::fill(m + p.count, m + p.span, 0.0f);
  std::fill(v + p.count, v + p.span, 0.0f);
  if (!p.count) return;
  const CompressedStates s = piece_states(a, p);
  switch (p.moments) {
    case MomentFormat::fp32:
      std::memcpy(m, s.m, p.count * sizeof(float));
      std::memcpy(v, s.v, p.count * sizeof(float));
      return;
    case MomentFormat::bf16:
      for (std::size_t i = 0; i < p.count; ++i) {
        m[i] = bf16_to_float(static_cast<const bf16*>(s.m)[i]);
        v[i] = bf16_to_float(static_cast<const bf16*>(s.v)[i]);
      }
      return;
    case MomentFormat::int8:
      dequantize_blockwise(static_cast<const std::uint8_t*>(s.m), s.m_absmax, p.count, dynamic_map(true), m);
      dequantize_blockwise(static_cast<const std::uint8_t*>(s.v), s.v_absmax, p.count, dynamic_map(false), v);
      return;
  }
}

void encode_master(const CompressedArrays& a, const StatePiece& p, const float* master) {
  if (a.layout->master == MasterFormat::fp32)
    std::memcpy(reinterpret_cast<float*>(a.master) + p.begin, master, p.span * sizeof(float));
  else
    host_cast(reinterpret_cast<bf16*>(a.master) + p.begin, DType::bf16, master, p.span);
}

void encode_piece(const CompressedArrays& a, const StatePiece& p, const float* master, const float* m,
                  const float* v) {
  encode_master(a, p, master);
  if (!p.count) return;
  const CompressedStates s = piece_states(a, p);
  switch (p.moments) {
    case MomentFormat::fp32:
      std::memcpy(s.m, m, p.count * sizeof(float));
      std::memcpy(s.v, v, p.count * sizeof(float));
      return;
    case MomentFormat::bf16:
      host_cast(s.m, DType::bf16, m, p.count);
      host_cast(s.v, DType::bf16, v, p.count);
      return;
    case MomentFormat::int8:
      for (std::size_t k = 0, b = 0; k < p.count; k += kQuantBlock, ++b) {
        const std::size_t n = std::min(kQuantBlock, p.count - k);
        encode_block(m + k, n, dynamic_map(true), static_cast<std::uint8_t*>(s.m) + k, s.m_absmax + b);
        encode_block(v + k, n, dynamic_map(false), static_cast<std::uint8_t*>(s.v) + k, s.v_absmax + b);
      }
      return;
  }
}

}  // namespace tz
