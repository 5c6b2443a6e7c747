// Whether a folder can hold an NVMe store: io_uring in the kernel, and a 4 KiB O_DIRECT write and
// read through it on the folder's filesystem (tmpfs and some network filesystems refuse O_DIRECT).
#pragma once

#include <cstdint>
#include <string>

namespace tz {

struct DirectIoReport {
  bool ok = false;         // io_uring and O_DIRECT both work here
  std::string why;         // when not ok: what failed, with errno's text
  std::string filesystem;  // "ext4", "xfs", "tmpfs", ... (from statfs), "?" when unknown
  std::uint64_t free_bytes = 0;
};

// Writes, reads back and removes one 4 KiB probe file in `dir`; never throws.
DirectIoReport probe_direct_io(const std::string& dir);

}  // namespace tz
