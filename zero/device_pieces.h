// Compressed optimizer states in device memory seen from the host a piece at a time (checkpoints, exports,
// the first values): each piece's bytes (its master, codes and absmax) copied down into host arrays of a
// one-piece layout of its own, and back up after when asked. No host code reads the device's arrays in
// place (the poisoned build proves it).
#pragma once

#include <cstddef>
#include <functional>

#include "core/backend.h"
#include "core/stream.h"
#include "zero/compressed_states.h"

namespace tz {

// fn(begin, host, p): the piece that starts at element `begin` of the layout's range, as piece p of the
// host arrays `host` (p.begin is 0 there).
using DevicePieceFn = std::function<void(std::size_t begin, const CompressedArrays& host, const StatePiece& p)>;

// Over every piece of device.layout cut into at most `max` elements (on blocks), in order; with
// write_back, what fn leaves in the host arrays goes back up. Each copy completes before fn, and each
// write-back before the next piece (done is recorded on s and waited).
void for_each_device_piece(Backend& be, Stream& s, Event& done, const CompressedArrays& device, std::size_t max,
                           bool write_back, const DevicePieceFn& fn);

// The states at the start (init_compressed) built in host memory and copied up to the device's arrays.
void init_device_compressed(Backend& be, Stream& s, Event& done, const CompressedArrays& device,
                            const float* range_values);

}  // namespace tz
