// Activation checkpoints in place on the device, or on the host tier behind device staging buffers and
// two copy streams (see the header for the schedule).
#include "model/activation_checkpoints.h"

#include "core/backend.h"
#include "core/error.h"

namespace tz {

std::string ActivationCheckpoints::checkpoint_name(int l) {
  return "activation checkpoint [" + std::to_string(l) + "]";
}

std::string ActivationCheckpoints::staging_name(int i) {
  return "activation checkpoint staging [" + std::to_string(i) + "]";
}

int ActivationCheckpoints::staging_count(MemoryKind kind, ActivationCheckpointing ckpt) {
  if (kind == MemoryKind::device) return 0;
  return ckpt == ActivationCheckpointing::per_block ? 3 : 2;
}

ActivationCheckpoints::ActivationCheckpoints(Device& dev, int n_layer, MemoryKind kind,
                                             ActivationCheckpointing ckpt, DType act, PlannedBuffers& planned)
    : be_(dev.backend()), n_layer_(n_layer) {
  TZ_CHECK(kind != MemoryKind::pageable_host, "activation checkpoints live in device or pinned host memory");
  for (int l = 0; l <= n_layer; ++l) ckpt_.push_back(planned.take_as(checkpoint_name(l), act));
  for (int i = 0; i < staging_count(kind, ckpt); ++i)
    staging_.push_back(planned.take_as(staging_name(i), act));
  if (!staged()) return;
  down_ = dev.create_stream();
  up_ = dev.create_stream();
  for (int i = 0; i < 2; ++i) {
    compute_done_[i] = dev.create_event();
    copy_done_[i] = dev.create_event();
  }
}

View ActivationCheckpoints::write(Stream& s, int l) {
  if (!staged()) return ckpt_[l];
  // The buffer still holds checkpoint l - 2 until its copy down has read it. (At l < 2 it holds what the
  // previous forward's last copies read, and finish_forward waited for those, or what backward read.)
  if (l >= 2) copy_done_[l % 2]->wait(s);
  return ring(l);
}

void ActivationCheckpoints::written(Stream& s, int l) {
  if (!staged()) return;
  compute_done_[l % 2]->record(s);
  compute_done_[l % 2]->wait(*down_);
  be_.copy_async(*down_, ckpt_[l].data(), ring(l).ptr, ckpt_[l].bytes());
  copy_done_[l % 2]->record(*down_);
}

CView ActivationCheckpoints::reading(int l) { return staged() ? ring(l) : ckpt_[l]; }

void ActivationCheckpoints::finish_forward(Stream& s) {
  // The down stream runs its copies in order: its last one done means all are, so the host tier holds
  // every checkpoint before anything after forward on `s` (backward's uploads, the next forward) runs.
  if (staged()) copy_done_[n_layer_ % 2]->wait(s);
}

void ActivationCheckpoints::fetch(int l) {
  compute_done_[l % 2]->wait(*up_);
  be_.copy_async(*up_, ring(l).ptr, ckpt_[l].data(), ckpt_[l].bytes());
  copy_done_[l % 2]->record(*up_);
}

void ActivationCheckpoints::start_backward(Stream& s) {
  if (!staged()) return;
  // Forward's kernels may still read the ring (the final LayerNorm reads checkpoint L) when backward is
  // enqueued: the first two uploads wait for everything `s` has so far.
  for (auto& e : compute_done_) e->record(s);
  fetch(n_layer_);
  if (n_layer_ >= 1) fetch(n_layer_ - 1);
}

CView ActivationCheckpoints::load(Stream& s, int l) {
  if (!staged()) return ckpt_[l];
  copy_done_[l % 2]->wait(s);
  return ring(l);
}

void ActivationCheckpoints::done(Stream& s, int l) {
  if (!staged()) return;
  compute_done_[l % 2]->record(s);
  // Checkpoint l - 2 shares the buffer: it goes up while `s` computes block l - 1 (whose input is
  // already up or on its way in the other buffer).
  if (l >= 2) fetch(l - 2);
}

View ActivationCheckpoints::recompute_output(int l) {
  // On the device the recomputation rewrites checkpoint l + 1 with the same values (block l + 1's
  // backward has read it already); on the host tier it must not touch the ring.
  if (!staged()) return ckpt_[l + 1];
  TZ_CHECK(staging_.size() == 3,
           "the recomputation's staging buffer is planned only with per-block checkpointing");
  return staging_[2];
}

}  // namespace tz
