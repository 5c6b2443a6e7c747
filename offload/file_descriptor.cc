// FileDescriptor: open(2) with a clear error, close(2) that logs.
#include "offload/file_descriptor.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tz {
namespace {

std::string errno_text(int err) { return detail::concat("errno ", err, " (", std::strerror(err), ")"); }

}  // namespace

FileDescriptor FileDescriptor::open(const std::string& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    if (err == EINVAL && (flags & O_DIRECT))
      TZ_FAIL("cannot open ", path, " with O_DIRECT: its filesystem does not support direct I/O (",
              errno_text(err), "); put the NVMe path on ext4, xfs or another filesystem that does");
    TZ_FAIL("cannot open ", path, ": ", errno_text(err));
  }
  return FileDescriptor(fd, path);
}

void FileDescriptor::close() noexcept {
  if (fd_ < 0) return;
  if (::close(fd_) != 0) log_line("warning: close(" + path_ + ") failed: " + errno_text(errno));
  fd_ = -1;
}

}  // namespace tz
