// Store folder locks (flock) and the removal of stores whose owner died.
#include "offload/store_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tz {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Bytes of the regular files directly in `dir`, then the files and the folder removed.
std::uint64_t remove_folder(const std::string& dir) {
  std::uint64_t bytes = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string f = dir + "/" + name;
      struct stat st {};
      if (::lstat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode)) bytes += std::uint64_t(st.st_size);
      ::unlink(f.c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
  return bytes;
}

}  // namespace

FileDescriptor lock_store_folder(const std::string& folder) {
  // The lock file is made under a temporary name (which the sweep ignores: it does not end in .lock),
  // locked, given its owner, and only then linked under its name. Created under its name and locked
  // after, it could be taken in between by another rank sweeping the path, and removed as a leftover.
  const std::string path = folder + ".lock", tmp = path + ".new-" + std::to_string(::getpid());
  const int raw = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (raw < 0) {
    const int err = errno;
    TZ_FAIL("cannot create the NVMe store lock ", tmp, ": errno ", err, " (", std::strerror(err), ")");
  }
  FileDescriptor fd(raw, path);
  TZ_SYS_CHECK(::flock(fd.get(), LOCK_EX | LOCK_NB), "flock ", tmp);
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::string owner = std::string("host ") + host + ", pid " + std::to_string(::getpid()) + "\n";
  if (::write(fd.get(), owner.data(), owner.size()) < 0) log_line("warning: cannot write the owner into " + tmp);
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int err = errno;
  ::unlink(tmp.c_str());
  if (linked != 0) {
    TZ_CHECK(err != EEXIST, "NVMe store ", folder, " already exists and is in use by a live job with the same run ",
             "id (its lock ", path, " is held); give this job another --nvme-path");
    TZ_FAIL("cannot create the NVMe store lock ", path, ": errno ", err, " (", std::strerror(err), ")");
  }
  return fd;
}

std::vector<RemovedStore> remove_stale_stores(const std::string& path) {
  std::vector<RemovedStore> removed;
  DIR* d = ::opendir(path.c_str());
  if (!d) return removed;  // the caller reports a missing path
  std::vector<std::string> locks;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("tierzero-", 0) == 0 && ends_with(name, ".lock")) locks.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : locks) {
    const std::string lock = path + "/" + name, folder = lock.substr(0, lock.size() - 5);
    const int fd = ::open(lock.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;  // gone already (another rank cleaned it), or not ours to open
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // a live job holds it
      ::close(fd);
      continue;
    }
    struct stat st {};
    // A lock file unlinked by whoever cleaned it before us no longer names the folder: leave it.
    if (::fstat(fd, &st) != 0 || st.st_nlink == 0) {
      ::close(fd);
      continue;
    }
    char owner[256] = {0};
    const ssize_t n = ::pread(fd, owner, sizeof owner - 1, 0);
    std::string who = n > 0 ? std::string(owner, std::size_t(n)) : "unknown";
    while (!who.empty() && who.back() == '\n') who.pop_back();
    const std::uint64_t bytes = remove_folder(folder);
    ::unlink(lock.c_str());  // while holding the lock: no one else can be cleaning it
    ::close(fd);
    removed.push_back({folder, bytes, who});
  }
  return removed;
}

}  // namespace tz
