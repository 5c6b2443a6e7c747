// Shared by the offload tests: why io_uring + O_DIRECT cannot run here (so the test skips with the
// reason), random page-aligned data, and the message of an expected tz::Error.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/host_memory.h"
#include "tests/common/random.h"
#include "tests/common/error_message.h"

namespace tz::test {

// Empty when the kernel has io_uring and `dir`'s filesystem takes a 4 KiB O_DIRECT write; else why not.
inline std::string direct_io_unsupported(const std::string& dir) {
  io_uring ring;
  int rc = io_uring_queue_init(1, &ring, 0);
  if (rc < 0) return std::string("io_uring unavailable: ") + std::strerror(-rc);
  io_uring_queue_exit(&ring);
  std::string f = dir + "/direct_io_probe";
  int fd = ::open(f.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) return "O_DIRECT open failed in " + dir + ": " + std::strerror(errno);
  AlignedBuffer b(kDirectIoAlign);
  std::memset(b.data(), 0, b.bytes());
  ssize_t n = ::pwrite(fd, b.data(), b.bytes(), 0);
  int err = errno;
  ::close(fd);
  ::unlink(f.c_str());
  if (n != ssize_t(b.bytes())) return "O_DIRECT write failed in " + dir + ": " + std::strerror(err);
  return {};
}

inline void fill_random(std::byte* p, std::size_t bytes, std::uint64_t seed) {
  Rng rng(seed);
  for (std::size_t i = 0; i < bytes; i += 8) {
    std::uint64_t v = rng.bits64();
    std::memcpy(p + i, &v, std::min<std::size_t>(8, bytes - i));
  }
}

using testing::error_message;

}  // namespace tz::test
