// Per-step metrics (--metrics): one JSON object per line (the run's start or resume, every step, every
// validation, the end), appended to the file itself as each record is made, so that `tail -f`, a notebook
// or `tierzero report` sees the run while it runs, and a kill -9 leaves every record written before it.
// Each line is one write(2) to a file opened with O_APPEND: records never interleave or tear, though a read
// racing the newest write may end inside it (readers drop an unfinished last line). The file belongs to one run (its run id, train/save_dir.h): a resume of that run appends
// to it; any other run refuses it (docs/metrics.md#one-file-per-run).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tz {

// What a metrics file holds so far, read before a run writes to it.
struct MetricsFileState {
  bool exists = false;
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;      // complete lines
  std::vector<std::string> runs;  // the run ids of its start and resume records, each once, in order
  // Not a tierzero metrics file: a complete line that is not a JSON object, or a first line that is no
  // start or resume record.
  bool foreign = false;
};

// Reads `path` (absent: an empty state); a path that is not a regular file is refused, naming `flag`.
MetricsFileState read_metrics_file_state(const std::string& path, const std::string& flag);

// Refuses, naming the file, the runs and what to do, a `path` this run may not write: for a fresh run
// (`resumed` false) anything but an absent or empty file; for a resumed run of `run_id`, a file whose
// start and resume records are another run's, or that is not a tierzero metrics file.
void check_metrics_file(const std::string& path, const std::string& run_id, bool resumed);

class MetricsFile {
 public:
  MetricsFile() = default;
  // Opens `path` for appending, creating it (an empty path writes nothing). A last line cut off
  // mid-write (by a kill during a write, or a full disk) is cut off the file first, so that every line
  // is a whole record; cut_bytes() says how many bytes that was.
  explicit MetricsFile(const std::string& path);
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  MetricsFile(MetricsFile&& o) noexcept { *this = std::move(o); }
  MetricsFile& operator=(MetricsFile&& o) noexcept;

  bool enabled() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  std::uint64_t cut_bytes() const { return cut_; }
  // Appends one line (one write(2)); a failed or short write throws naming the file and the errno.
  void write(const nlohmann::json& record);

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t cut_ = 0;
};

}  // namespace tz
