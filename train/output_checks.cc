// check_outputs: writability by creating (and removing) an exclusive temporary file next to each output,
// and identity with the inputs through the file system (symlinks and hard links included).
#include "train/output_checks.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/error.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

void check_writable(const char* flag, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    TZ_CHECK(S_ISREG(st.st_mode), flag, " '", path, "' exists and is not a regular file (",
             S_ISDIR(st.st_mode) ? "a folder" : "a device, FIFO or socket", "); give the path of a file to write");
  const fs::path parent = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  std::string probe = (parent / ".tierzero-write-check.XXXXXX").string();
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    TZ_FAIL(flag, " '", path, "' cannot be written: creating a file in '", parent.string(), "' failed (",
            std::strerror(e), "); create the folder or choose a writable one before training, not after");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

// The checkpoint folder: created if missing (with its parents), a folder, and writable.
void check_save_dir(const std::string& dir, const std::vector<std::pair<const char*, std::string>>& inputs) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    TZ_CHECK(S_ISDIR(st.st_mode), "--save-dir '", dir, "' exists and is not a folder; give a folder for checkpoints");
  } else {
    std::error_code ec;
    fs::create_directories(dir, ec);
    TZ_CHECK(!ec, "--save-dir '", dir, "' cannot be created (", ec.message(),
             "); create it or choose a writable folder before training, not after");
  }
  for (const auto& [in_flag, in_path] : inputs)
    TZ_CHECK(in_path.empty() || !same_file(dir, in_path), "--save-dir '", dir, "' is ", in_flag, "; choose another folder");
  check_writable("--save-dir", (fs::path(dir) / "latest").string());
}

}  // namespace

void check_outputs(const TrainOptions& opt) {
  std::vector<std::pair<const char*, std::string>> inputs = {
      {"--val-data", opt.val_data}, {"--init-from", opt.init_from}, {"--config", opt.config}};
  if (opt.data != kDefaultData) inputs.push_back({"--data", opt.data});
  for (auto [flag, path] : {std::pair{"--save-safetensors", opt.save_safetensors}, {"--metrics", opt.metrics}}) {
    if (path.empty()) continue;
    for (const auto& [in_flag, in_path] : inputs)
      TZ_CHECK(in_path.empty() || !same_file(path, in_path), flag, " '", path, "' is the same file as ", in_flag,
               " '", in_path, "': writing it would destroy the input; choose another path");
    check_writable(flag, path);
  }
  if (!opt.save_dir.empty()) check_save_dir(opt.save_dir, inputs);
  TZ_CHECK(opt.save_safetensors.empty() || opt.metrics.empty() ||
               (!same_file(opt.save_safetensors, opt.metrics) && opt.save_safetensors != opt.metrics),
           "--save-safetensors and --metrics name the same file '", opt.metrics, "'");
}

}  // namespace tz
