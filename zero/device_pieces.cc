// for_each_device_piece and init_device_compressed: compressed states on the device, through host copies.
#include "zero/device_pieces.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"

namespace tz {

void for_each_device_piece(Backend& be, Stream& s, Event& done, const CompressedArrays& device, std::size_t max,
                           bool write_back, const DevicePieceFn& fn) {
  const CompressedLayout& l = *device.layout;
  const std::vector<StatePiece> whole = l.split(max);
  const auto parts = cut_layout(l, max, 0);  // a byte budget of 0: one piece a part, in the same order
  TZ_CHECK(parts.size() == whole.size(), "internal: ", parts.size(), " one-piece parts of ", whole.size(), " pieces");
  std::vector<std::uint8_t> master, m, v;
  for (std::size_t k = 0; k < whole.size(); ++k) {
    const auto& [begin, part] = parts[k];
    const StatePiece& q = part.pieces.at(0);
    master.assign(part.master_bytes(), 0);
    m.assign(part.moment_array_bytes(), 0);
    v.assign(part.moment_array_bytes(), 0);
    const CompressedArrays host{&part, master.data(), m.data(), v.data()};
    const PieceBytes d = piece_bytes(l, whole[k]), h = piece_bytes(part, q);
    auto move = [&](bool up) {
      auto copy = [&](std::uint8_t* dev, std::uint8_t* hst, std::size_t at_dev, std::size_t at_host, std::size_t n) {
        if (!n) return;
        if (up)
          be.copy_async(s, dev + at_dev, hst + at_host, n);
        else
          be.copy_async(s, hst + at_host, dev + at_dev, n);
      };
      copy(device.master, host.master, d.master_at, h.master_at, d.master);
      for (auto [dev, hst] : {std::pair{device.m, host.m}, std::pair{device.v, host.v}}) {
        copy(dev, hst, d.codes_at, h.codes_at, d.codes);
        copy(dev, hst, d.absmax_at, h.absmax_at, d.absmax);
      }
      done.record(s);
      done.synchronize();
    };
    move(false);
    fn(begin, host, q);
    if (write_back) move(true);
  }
}

void init_device_compressed(Backend& be, Stream& s, Event& done, const CompressedArrays& device,
                            const float* range_values) {
  const CompressedLayout& l = *device.layout;
  std::vector<std::uint8_t> master(l.master_bytes()), m(l.moment_array_bytes()), v(l.moment_array_bytes());
  init_compressed({&l, master.data(), m.data(), v.data()}, range_values);
  be.copy_async(s, device.master, master.data(), master.size());
  be.copy_async(s, device.m, m.data(), m.size());
  be.copy_async(s, device.v, v.data(), v.size());
  done.record(s);
  done.synchronize();
}

}  // namespace tz
