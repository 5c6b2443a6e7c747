// The save-dir lease: rank 0's flock on DIR/.tierzero.lock, its owner record and nonce, the nonce read
// back on every rank; run ids; the step folders of a save-dir.
#include "train/save_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/error.h"
#include "model/file_io.h"
#include "train/checkpoint_manifest.h"
#include "train/collective_util.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

std::string host_name() {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  return host;
}

// The value of the line "key value" in a lock file's text ("" when there is none).
std::string field(const std::string& text, const std::string& key) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
    at = end + 1;
  }
  return "";
}

std::string holder(const std::string& text) {
  const std::string job = field(text, "slurm_job_id");
  return "host " + field(text, "host") + ", pid " + field(text, "pid") + (job.empty() ? "" : ", Slurm job " + job) +
         ", since " + field(text, "started");
}

// Rank 0: the folder made, its lock taken and the owner record written; returns the locked descriptor.
int take_lock(const std::string& dir, const std::string& job, const std::string& nonce) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    TZ_CHECK(S_ISDIR(st.st_mode), "--save-dir '", dir, "' exists and is not a folder; give a folder for checkpoints");
  } else {
    std::error_code ec;
    fs::create_directories(dir, ec);
    TZ_CHECK(!ec, "--save-dir '", dir, "' cannot be created (", ec.message(),
             "); create it or choose a writable folder before training, not after");
  }
  const std::string path = dir + "/" + kSaveDirLock;
  // O_NOFOLLOW: a symlink planted at the lock's name is refused; O_NONBLOCK: a FIFO does not block.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    TZ_FAIL("--save-dir '", dir, "': cannot open its lock file ", path, ": ", std::strerror(e), " (errno ", e, ")",
            e == ELOOP ? "; it is a symlink: remove it" : "; check that the folder is writable");
  }
  struct stat lst {};
  if (::fstat(fd, &lst) != 0 || !S_ISREG(lst.st_mode)) {
    ::close(fd);
    TZ_FAIL("--save-dir '", dir, "': its lock file ", path, " is not a regular file; remove it");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    std::string text(4096, '\0');
    const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
    text.resize(n > 0 ? std::size_t(n) : 0);
    ::close(fd);
    TZ_CHECK(e != EWOULDBLOCK, "--save-dir '", dir, "' is in use by another job (", holder(text), "; its lock ", path,
             " is held): wait for that job to end, or give this one another --save-dir");
    TZ_FAIL("--save-dir '", dir, "': cannot lock ", path, ": ", std::strerror(e), " (errno ", e, ")");
  }
  char started[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const std::string text = "host " + host_name() + "\npid " + std::to_string(::getpid()) + "\nslurm_job_id " + job +
                           "\nstarted " + started + "\nnonce " + nonce + "\n";
  const bool written = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, text.data(), text.size(), 0) == ssize_t(text.size()) &&
                       ::fsync(fd) == 0;
  if (!written) {
    const int e = errno;
    ::close(fd);
    TZ_FAIL("--save-dir '", dir, "': cannot write its lock file ", path, ": ", std::strerror(e), " (errno ", e,
            "); check free disk space");
  }
  return fd;
}

// This rank's view of the lock: "" when it holds rank 0's nonce, else what it saw.
std::string check_nonce(const std::string& path, const std::string& nonce) {
  try {
    const std::string seen = field(read_small_file(path, "save-dir lock file", 4096), "nonce");
    return seen == nonce ? "" : "its lock file there is another job's (nonce " + seen + ")";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

SaveDirLease::SaveDirLease(const std::string& dir, Communicator& comm, const std::string& job) {
  const std::string nonce = all_gather_strings(comm, comm.rank() == 0 ? new_run_id() : "")[0];
  on_every_rank(comm, "take the lock of --save-dir " + dir, [&] {
    if (comm.rank() == 0) fd_ = take_lock(dir, job, nonce);
  });
  if (comm.size() == 1) return;
  // Rank 0's record must be visible to every rank: one shared folder, not a node-local disk each.
  const std::string mine = comm.rank() == 0 ? "" : check_nonce(dir + "/" + kSaveDirLock, nonce);
  const std::vector<std::string> seen = all_gather_strings(comm, mine.empty() ? "" : host_name() + "\n" + mine);
  for (std::size_t r = 0; r < seen.size(); ++r) {
    if (seen[r].empty()) continue;
    const std::size_t nl = seen[r].find('\n');
    if (fd_ >= 0) ::close(fd_), fd_ = -1;
    TZ_FAIL("--save-dir '", dir, "' is not the same folder on every rank: rank ", r, " on host ",
            seen[r].substr(0, nl), " does not see rank 0's lock file (", seen[r].substr(nl + 1),
            "), so its checkpoint files would be lost; give a --save-dir on a file system every node shares");
  }
}

SaveDirLease::~SaveDirLease() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock; the file stays for the next owner to rewrite
}

std::string new_run_id() {
  unsigned char b[8];
  std::size_t got = 0;
  while (got < sizeof b) {
    const ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n < 0 && errno == EINTR) continue;
    TZ_CHECK(n > 0, "cannot draw a run id from the kernel's random source: ", std::strerror(errno));
    got += std::size_t(n);
  }
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", b[i]);
  return hex;
}

std::vector<std::string> step_folders(const std::string& dir) {
  std::vector<std::string> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (is_checkpoint_name(name) && e.is_directory(ec)) steps.push_back(name);
  }
  std::sort(steps.rbegin(), steps.rend());  // zero-padded: text order is step order
  return steps;
}

}  // namespace tz
