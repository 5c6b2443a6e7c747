// Engine: what checkpoints read and restore (step counters, the loss scaler, every group's states).
#include <algorithm>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "zero/device_pieces.h"
#include "zero/engine.h"

namespace tz {

EngineState Engine::state() const {
  EngineState s;
  s.optimizer_steps = step_;
  s.computing = computing_;
  s.scaler = scaler_.state();
  return s;
}

void Engine::restore(const EngineState& s) {
  TZ_CHECK(s.optimizer_steps >= 0 && s.computing >= s.optimizer_steps + 1, "engine state out of range: ",
           s.optimizer_steps, " optimizer steps, computing step ", s.computing);
  step_ = s.optimizer_steps;
  computing_ = s.computing;
  if (fp16_) scaler_.restore(s.scaler);
}

void Engine::visit_states(const StateVisit& fn, StateWrite write) {
  const bool write_back = write != StateWrite::none;
  std::vector<float> stage;
  // Compressed states, seen as fp32 a piece (cut on blocks) at a time: `pieces` of arrays `a`, whose
  // element 0 is element `base` of group g's optimizer range.
  auto visit_packed = [&](int g, std::size_t base, const CompressedArrays& a,
                          const std::vector<StatePiece>& pieces) {
    for (const StatePiece& p : pieces) {
      stage.resize(3 * p.span);
      float* host[3] = {stage.data(), stage.data() + p.span, stage.data() + 2 * p.span};
      decode_piece(a, p, host[0], host[1], host[2]);
      fn(g, base + p.begin, p.span, host[0], host[1], host[2]);
      if (write == StateWrite::exact) encode_piece(a, p, host[0], host[1], host[2]);
      if (write == StateWrite::convert) convert_piece(a, p, host[0], host[1], host[2]);
    }
  };
  if (optimizer_swap_ && optimizer_swap_->packed()) {  // compressed on NVMe: a record at a time
    optimizer_swap_->for_each_packed(
        [&](const PackedUnit& u, const CompressedArrays& a) {
          visit_packed(u.g, u.begin, a, u.layout.pieces);
        },
        write_back);
    return;
  }
  if (optimizer_swap_) {  // on NVMe: through the staging ring, sub-group by sub-group
    optimizer_swap_->for_each(fn, write_back);
    return;
  }
  Backend& be = dev_.backend();
  for (GroupState& g : groups_) {
    if (g.packed && on_device(g.place->master_home)) {  // on the device: through host copies, a piece at a time
      for_each_device_piece(be, stream_, *done_, g.compressed(), kStatePiece, write_back,
                            [&](std::size_t begin, const CompressedArrays& a, const StatePiece& p) {
                              visit_packed(g.index, begin, a, {p});
                            });
      continue;
    }
    if (g.packed) {
      visit_packed(g.index, 0, g.compressed(), g.packed->split(kStatePiece));
      continue;
    }
    const std::size_t count = g.place->opt_range.count;
    const std::size_t piece = std::min(kStatePiece, count);
    stage.resize(3 * piece);
    float* host[3] = {stage.data(), stage.data() + piece, stage.data() + 2 * piece};
    for (std::size_t b = 0; b < count; b += piece) {
      const std::size_t n = std::min(piece, count - b);
      float* home[3] = {g.master_at(b), g.m.data() + b, g.v.data() + b};
      for (int a = 0; a < 3; ++a) be.copy_async(stream_, host[a], home[a], n * sizeof(float));
      done_->record(stream_);
      done_->synchronize();
      fn(g.index, b, n, host[0], host[1], host[2]);
      if (!write_back) continue;
      for (int a = 0; a < 3; ++a) be.copy_async(stream_, home[a], host[a], n * sizeof(float));
      done_->record(stream_);
      done_->synchronize();
    }
  }
}

}  // namespace tz
