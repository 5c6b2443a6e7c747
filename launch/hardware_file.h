// --hardware NAME|local|FILE: a preset, this machine's calibration, or a JSON file.
#pragma once

#include <string>

#include "zero/hardware.h"

namespace tz {

Hardware load_hardware(const std::string& what);

}  // namespace tz
