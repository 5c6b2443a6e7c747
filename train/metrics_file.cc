// MetricsFile: JSONL records appended with one write(2) each; the check of what a file already holds.
#include "train/metrics_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tz {
namespace {

// Follows one complete line of the file.
void take_line(MetricsFileState& st, const std::string& line) {
  const bool first = st.records++ == 0;
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    st.foreign = true;
    return;
  }
  const auto ev = j.find("event");
  const bool marker = ev != j.end() && ev->is_string() && (*ev == "start" || *ev == "resume");
  if (!marker) {
    if (first) st.foreign = true;
    return;
  }
  const auto id = j.find("run_id");
  const std::string run = id != j.end() && id->is_string() ? id->get<std::string>() : std::string();
  if (std::find(st.runs.begin(), st.runs.end(), run) == st.runs.end()) st.runs.push_back(run);
}

constexpr std::size_t kMaxLine = 1 << 20;

std::string run_name(const std::string& id) { return id.empty() ? "(no run id)" : id; }

}  // namespace

MetricsFileState read_metrics_file_state(const std::string& path, const std::string& flag) {
  MetricsFileState st;
  // O_NONBLOCK: a FIFO put in the file's place never blocks the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    TZ_CHECK(e == ENOENT, flag, " '", path,
             "' cannot be read to see whose records it holds: ", std::strerror(e), " (errno ", e,
             "); give a file this user can read and write");
    return st;
  }
  struct stat sb {};
  const bool regular = ::fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
  if (!regular) {
    ::close(fd);
    TZ_FAIL(flag, " '", path, "' is not a regular file: metrics are appended to a file; give a file path");
  }
  st.exists = true;
  std::string line, chunk(1 << 20, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      TZ_FAIL("reading ", flag, " '", path, "' failed: ", std::strerror(e), " (errno ", e, ")");
    }
    if (n == 0) break;
    st.bytes += std::uint64_t(n);
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[std::size_t(i)] != '\n') {
        // No record is near 1 MiB: a longer line is no metrics, and is not kept whole in memory.
        if (line.size() < kMaxLine) line.push_back(chunk[std::size_t(i)]);
        continue;
      }
      if (line.size() >= kMaxLine)
        st.foreign = true, ++st.records;
      else
        take_line(st, line);
      line.clear();
    }
  }
  ::close(fd);
  return st;  // a last line without its newline is a record cut off mid-write: not counted
}

void check_metrics_file(const std::string& path, const std::string& run_id, bool resumed) {
  if (path.empty()) return;
  const MetricsFileState st = read_metrics_file_state(path, "--metrics");
  if (st.bytes == 0) return;
  const std::string what = "--metrics '" + path + "'";
  const std::string todo = "; give another --metrics, or move the file away";
  TZ_CHECK(!st.foreign, what, " holds ", st.bytes,
           " bytes that are not a tierzero metrics file (its first line is "
           "no run start record): a run appends to its own metrics file only",
           todo);
  TZ_CHECK(resumed, what, " holds the records of ",
           st.runs.empty() ? std::string("an earlier run") : "run " + run_name(st.runs.back()),
           " and this run starts afresh: a new run never appends to another "
           "run's records",
           todo, " (a resumed run, --resume, appends to its own)");
  for (const std::string& r : st.runs)
    TZ_CHECK(r == run_id, what, " holds the records of run ", run_name(r), ", and this run resumes run ",
             run_name(run_id), ": a run appends to its own metrics file only", todo);
}

MetricsFile::MetricsFile(const std::string& path) : path_(path) {
  if (path.empty()) return;
  fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int e = errno;
    TZ_FAIL("opening --metrics '", path, "' to append failed: ", std::strerror(e), " (errno ", e,
            "); give a file in a folder this user can write");
  }
  struct stat sb {};
  if (::fstat(fd_, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd_), fd_ = -1;
    TZ_FAIL("--metrics '", path, "' is not a regular file: metrics are appended to a file; give a file path");
  }
  // A last line without its newline is a record cut off mid-write; it goes, so every line stays whole.
  std::uint64_t keep = std::uint64_t(sb.st_size);
  char c = '\n';
  while (keep > 0 && ::pread(fd_, &c, 1, off_t(keep - 1)) == 1 && c != '\n') --keep;
  if (keep < std::uint64_t(sb.st_size)) {
    if (::ftruncate(fd_, off_t(keep)) != 0) {
      const int e = errno;
      ::close(fd_), fd_ = -1;
      TZ_FAIL("cutting the partial last line off --metrics '", path, "' failed: ", std::strerror(e),
              " (errno ", e, ")");
    }
    cut_ = std::uint64_t(sb.st_size) - keep;
  }
}

MetricsFile& MetricsFile::operator=(MetricsFile&& o) noexcept {
  if (this == &o) return *this;
  if (fd_ >= 0) ::close(fd_);
  path_ = std::move(o.path_), fd_ = std::exchange(o.fd_, -1), cut_ = o.cut_;
  return *this;
}

MetricsFile::~MetricsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsFile::write(const nlohmann::json& record) {
  if (fd_ < 0) return;
  const std::string line = record.dump() + "\n";
  for (;;) {
    const ssize_t n = ::write(fd_, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == ssize_t(line.size())) return;
    const int e = n < 0 ? errno : ENOSPC;
    if (n > 0) (void)::ftruncate(fd_, ::lseek(fd_, 0, SEEK_END) - n);  // never leave half a record
    TZ_FAIL("appending a record to --metrics '", path_, "' failed: ", std::strerror(e), " (errno ", e,
            "); check free disk space and quota (the records before it are kept)");
  }
}

}  // namespace tz
