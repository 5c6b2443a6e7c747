// An open file descriptor and the path it came from (for error messages): the NVMe tier's files.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <string>
#include <utility>

namespace tz {

// An open file descriptor and the path it came from (for error messages). Move-only; closes on
// destruction and logs (never throws) if close fails.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  FileDescriptor(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  // open(2), or a tz::Error naming the path and errno. EINVAL with O_DIRECT is reported as "the
  // filesystem does not support O_DIRECT".
  static FileDescriptor open(const std::string& path, int flags, mode_t mode = 0600);
  ~FileDescriptor() { close(); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  FileDescriptor(FileDescriptor&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}
  FileDescriptor& operator=(FileDescriptor&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
      path_ = std::move(o.path_);
    }
    return *this;
  }

  int get() const { return fd_; }
  const std::string& path() const { return path_; }
  explicit operator bool() const { return fd_ >= 0; }
  void close() noexcept;

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace tz
