// Parsing of the optimizer overlap names shared by flags and the JSON config.
#include "zero/zero_options.h"

#include "core/error.h"

namespace tz {

OptimizerOverlap parse_optimizer_overlap(const std::string& s) {
  if (s == "auto") return OptimizerOverlap::automatic;
  if (s == "on") return OptimizerOverlap::on;
  if (s == "off") return OptimizerOverlap::off;
  TZ_FAIL("--overlap-optimizer '", s, "' is not one of auto, on, off");
}

std::string optimizer_overlap_name(OptimizerOverlap o) {
  return o == OptimizerOverlap::on ? "on" : o == OptimizerOverlap::off ? "off" : "auto";
}

}  // namespace tz
