// check_outputs: each output through the writer's own target check (model/protected_inputs.h), then a
// writability probe (an exclusive temporary file created and removed next to it).
#include "train/output_checks.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "model/hf_folder_writer.h"
#include "model/model_family.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

void check_writable(const char* flag, const std::string& path) {
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

}  // namespace

std::vector<ProtectedInput> protect_inputs(const TrainOptions& opt) {
  std::vector<ProtectedInput> in;
  if (opt.data != kDefaultData) in.emplace_back(opt.data, "--data");
  in.emplace_back(opt.val_data, "--val-data");
  in.emplace_back(opt.init_from, "--init-from");
  in.emplace_back(opt.config, "--config");
  return in;
}

void check_outputs(const TrainOptions& opt) {
  for (auto [flag, path] : {std::pair{"--save-safetensors", opt.save_safetensors}, {"--metrics", opt.metrics}}) {
    if (path.empty()) continue;
    check_output_target(path, flag);
    check_writable(flag, path);
  }
  if (!opt.save_dir.empty()) {
    check_output_target(opt.save_dir, "--save-dir", OutputKind::folder);
    check_writable("--save-dir", (fs::path(opt.save_dir) / "latest").string());
  }
  if (!opt.save_hf.empty()) {
    check_hf_output_folder(opt.save_hf, "--save-hf");
    model_family(opt.model).hf_config(opt.model);  // a shape no Hugging Face architecture holds is refused now
    const fs::path hf = fs::weakly_canonical(opt.save_hf);
    for (auto [flag, path] : {std::pair{"--save-dir", opt.save_dir}, {"--save-safetensors", opt.save_safetensors},
                              {"--metrics", opt.metrics}}) {
      if (path.empty()) continue;
      const fs::path other = fs::weakly_canonical(path);
      auto inside = [](const fs::path& a, const fs::path& b) {  // a is b or inside it
        auto [ai, bi] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
        return bi == b.end();
      };
      TZ_CHECK(!inside(hf, other) && !inside(other, hf), "--save-hf '", opt.save_hf, "' and ", flag, " '", path,
               "' overlap: the model folder is written whole into a folder of its own; give paths apart");
    }
  }
  TZ_CHECK(opt.save_safetensors.empty() || opt.metrics.empty() ||
               (!same_file(opt.save_safetensors, opt.metrics) && opt.save_safetensors != opt.metrics),
           "--save-safetensors and --metrics name the same file '", opt.metrics, "'");
}

}  // namespace tz
