// The per-block activation checkpoints (the residual stream entering each block, and the last one) and
// where the kernels meet them: in place on the device, or, on the host tier, in device staging buffers
// that copy streams of the model's own drain during forward and fill during backward.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/buffer_plan.h"
#include "core/device.h"

namespace tz {

enum class ActivationCheckpointing { off, per_block };

// Gpt's forward writes checkpoint 0 (the embedding) and checkpoint l + 1 (block l's output); backward
// reads them back from L down to 0. With the checkpoints on the device, every call below hands out the
// checkpoint itself and orders nothing. On the host tier the kernels only ever touch device memory:
// - forward: checkpoint l is written into staging[l % 2]; a device-to-host stream copies it down once
//   `s` has written it; `s` waits for that copy before it writes staging[l % 2] again (checkpoint l + 2),
//   and at the end of forward for the last one, so nothing is in flight once forward returns;
// - backward: a host-to-device stream brings checkpoints L and L - 1 up first, then checkpoint l - 2
//   into staging[l % 2] as soon as `s` has done reading checkpoint l there, so block l - 2's input
//   crosses while block l - 1 computes; `s` waits for each copy before reading it;
// - the recomputation's output (backward's block forward with per-block checkpointing) goes to
//   staging[2]: backward never reads it, and the ring holds the checkpoints still to come.
// Streams wait on each other by events, never by a host synchronisation.
class ActivationCheckpoints {
 public:
  // The planned names: "activation checkpoint [l]" (L + 1, B*T*C activations each, in the checkpoints'
  // memory kind) and "activation checkpoint staging [i]" (device, B*T*C activations each).
  static std::string checkpoint_name(int l);
  static std::string staging_name(int i);
  // Staging buffers needed: none on the device; on the host tier the ring of 2, plus 1 for the
  // recomputation's output with per-block checkpointing.
  static int staging_count(MemoryKind kind, ActivationCheckpointing ckpt);

  // Takes the n_layer + 1 checkpoints and the staging buffers, of activation dtype `act`, from `planned`.
  ActivationCheckpoints(Device& dev, int n_layer, MemoryKind kind, ActivationCheckpointing ckpt, DType act,
                        PlannedBuffers& planned);
  ActivationCheckpoints(const ActivationCheckpoints&) = delete;
  ActivationCheckpoints& operator=(const ActivationCheckpoints&) = delete;

  // Forward, in the order 0, 1, ..., L: `s` writes checkpoint l into write(s, l) and then calls
  // written(s, l); reading(l) is where `s` reads it afterwards (the next block's input, the final
  // LayerNorm's). finish_forward(s) last.
  View write(Stream& s, int l);
  void written(Stream& s, int l);
  CView reading(int l);
  void finish_forward(Stream& s);

  // Backward, after a forward: start_backward(s) first; then, from L down to 0, `s` reads checkpoint l
  // at load(s, l) and calls done(s, l) after its last read.
  void start_backward(Stream& s);
  CView load(Stream& s, int l);
  void done(Stream& s, int l);
  // Where block l's recomputed output goes (its value is not used).
  View recompute_output(int l);

 private:
  bool staged() const { return !staging_.empty(); }
  View ring(int l) { return staging_[l % 2]; }
  void fetch(int l);  // checkpoint l up into its ring buffer, once `s` is done with what it holds

  Backend& be_;
  int n_layer_;
  std::vector<DynBuffer> ckpt_;     // n_layer + 1, on the device or the host tier
  std::vector<DynBuffer> staging_;  // host tier only: the ring of 2, then the recomputation's output
  std::unique_ptr<Stream> down_, up_;   // device to host, host to device
  // Per ring buffer: `s` has written (forward) or last read (backward) it; the copy down from it or up
  // into it has finished.
  std::unique_ptr<Event> compute_done_[2], copy_done_[2];
};

}  // namespace tz
