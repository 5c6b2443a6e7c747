// RAII files for model data: positioned reads, and temp-then-rename writes.
#include "model/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "model/protected_inputs.h"

namespace tz {

InputFile::InputFile(std::string path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears; it is
  // refused below as not a regular file (and means nothing for regular files).
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    int e = errno;
    TZ_FAIL("cannot open ", what_, " '", path_, "': ", std::strerror(e), "; check the path");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int e = errno;
    ::close(fd_);
    TZ_FAIL("cannot stat ", what_, " '", path_, "': ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    TZ_FAIL(what_, " '", path_, "' is not a regular file (",
            S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device" : S_ISDIR(st.st_mode) ? "a directory" : "not a file",
            "); give the path of a file");
  }
  size_ = std::uint64_t(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile::InputFile(InputFile&& o) noexcept
    : path_(std::move(o.path_)), what_(std::move(o.what_)), fd_(std::exchange(o.fd_, -1)), size_(o.size_) {}

InputFile& InputFile::operator=(InputFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    what_ = std::move(o.what_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
  }
  return *this;
}

void InputFile::read_at(void* dst, std::size_t bytes, std::uint64_t offset) const {
  auto* p = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd_, p + done, bytes - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      TZ_FAIL("reading ", bytes, " bytes at offset ", offset, " of ", what_, " '", path_,
              "' failed: ", std::strerror(e));
    }
    TZ_CHECK(n > 0, what_, " '", path_, "' ended at byte ", offset + done, " while reading ", bytes,
             " bytes at offset ", offset, "; the file is truncated (or changed while being read)");
    done += std::size_t(n);
  }
}

AtomicOutputFile::AtomicOutputFile(std::string path, std::string what, OutputWriter writer)
    : path_(std::move(path)), tmp_(path_ + ".tmp.XXXXXX"), what_(std::move(what)), writer_(writer) {
  check_output_target(path_, what_, OutputKind::file, writer_);  // before anything is created next to it
  // A unique name, created exclusively (mkostemp: O_CREAT | O_EXCL, mode 0600): never an existing file
  // and never through a symlink someone planted at a predictable name.
  fd_ = ::mkostemp(tmp_.data(), O_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    TZ_FAIL("cannot create ", what_, " next to '", path_, "': ", std::strerror(e),
            "; check that the folder exists and is writable");
  }
  ::fchmod(fd_, 0644);  // as a plain file would be (mkostemp creates 0600)
}

AtomicOutputFile::~AtomicOutputFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  if (::unlink(tmp_.c_str()) != 0 && errno != ENOENT)
    log_line("could not remove the unfinished " + what_ + " '" + tmp_ + "': " + std::strerror(errno));
}

void AtomicOutputFile::write(const void* src, std::size_t bytes) {
  TZ_CHECK(fd_ >= 0 && !committed_, what_, " '", path_,
           "' was already committed; nothing more can be written");
  const auto* p = static_cast<const char*>(src);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      TZ_FAIL("writing ", what_, " '", path_, "' (as '", tmp_, "') failed: ", std::strerror(e), " (errno ", e,
              "); check free disk space and quota");
    }
    p += n;
    bytes -= std::size_t(n);
  }
}

void AtomicOutputFile::commit() {
  TZ_CHECK(fd_ >= 0 && !committed_, what_, " '", path_, "' was already committed");
  // fsync before rename: otherwise a crash can leave the new name pointing at unwritten blocks.
  TZ_SYS_CHECK(::fsync(fd_), "flushing ", what_, " '", tmp_, "' to disk");
  int fd = std::exchange(fd_, -1);
  TZ_SYS_CHECK(::close(fd), "closing ", what_, " '", tmp_, "'");
  check_output_target(path_, what_, OutputKind::file, writer_);  // again: the target may have changed meanwhile
  TZ_SYS_CHECK(::rename(tmp_.c_str(), path_.c_str()), "renaming ", what_, " '", tmp_, "' to '", path_, "'");
  committed_ = true;
  // The rename is durable only once the folder's entry is on disk too.
  const std::size_t slash = path_.rfind('/');
  sync_folder(slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash));
}

void sync_folder(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  TZ_SYS_CHECK(fd, "opening folder '", dir, "' to flush it to disk");
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  errno = e;
  TZ_SYS_CHECK(rc, "flushing folder '", dir, "' to disk");
}

std::string read_small_file(const std::string& path, const std::string& what, std::uint64_t max_bytes,
                            const std::string& hint) {
  InputFile file(path, what);
  TZ_CHECK(file.size() <= max_bytes, "the ", what, " '", path, "' is ", file.size(), " bytes, more than the ", max_bytes,
           " it may have", hint.empty() ? "" : "; ", hint);
  std::string text(file.size(), '\0');
  file.read_at(text.data(), text.size(), 0);
  return text;
}

}  // namespace tz
