// Per-step metrics (--metrics): one JSON object per line (step, loss, lr, tokens/s, ms per phase, bytes
// and peak per tier), for scripts and plots. Written through the one output writer (AtomicOutputFile):
// the records go to a temporary file next to the path as they happen, and the file takes its name when
// the run ends, however it ends short of SIGKILL (a failed run's records are what explains it).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace tz {

class AtomicOutputFile;

class MetricsFile {
 public:
  MetricsFile() = default;
  // An empty path writes nothing.
  explicit MetricsFile(const std::string& path);
  // Commits what was written (a failure to do so is logged, not thrown).
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  bool enabled() const { return out_ != nullptr; }
  // Writes one line (one write(2), so a crash loses at most the current record).
  void write(const nlohmann::json& record);
  // Renames the file into place now; throws naming the file when that fails.
  void commit();

 private:
  std::unique_ptr<AtomicOutputFile> out_;
  std::string path_;
};

}  // namespace tz
