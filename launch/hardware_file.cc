// load_hardware: presets by name; files (bounded reads) for `local` and paths.
#include "launch/hardware_file.h"

#include <filesystem>

#include "core/error.h"
#include "model/file_io.h"
#include "model/json_bounded.h"
#include "perf/calibrate.h"

namespace tz {

Hardware load_hardware(const std::string& what) {
  for (const auto& n : hardware_preset_names())
    if (what == n) return hardware_preset(n);
  const bool local = what == "local";
  const std::string path = local ? local_hardware_path() : what;
  if (local && !std::filesystem::exists(path))
    TZ_FAIL("--hardware local: no calibration at ", path, "; run `tierzero bench calibrate` (under mpirun -np N ",
            "for N ranks per node) first, or name a preset");
  const std::string text = read_small_file(path, "hardware file", 1 << 20);
  return Hardware::from_json(parse_json_bounded(text, "hardware file '" + path + "'"), path);
}

}  // namespace tz
