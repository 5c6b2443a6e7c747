// Parsing of the offload device names shared by flags and the JSON config.
#include "zero/zero_options.h"

#include "core/error.h"

namespace tz {

Tier parse_offload_device(const std::string& s, const std::string& what) {
  if (s == "none" || s == "device") return Tier::device;
  if (s == "cpu" || s == "host") return Tier::host;
  if (s == "nvme") return Tier::nvme;
  TZ_FAIL(what, " '", s, "' is not an offload device: use none, cpu or nvme");
}

OptimizerOverlap parse_optimizer_overlap(const std::string& s) {
  if (s == "auto") return OptimizerOverlap::automatic;
  if (s == "on") return OptimizerOverlap::on;
  if (s == "off") return OptimizerOverlap::off;
  TZ_FAIL("--overlap-optimizer '", s, "' is not one of auto, on, off");
}

std::string optimizer_overlap_name(OptimizerOverlap o) {
  return o == OptimizerOverlap::on ? "on" : o == OptimizerOverlap::off ? "off" : "auto";
}

std::string tier_name(Tier t) {
  switch (t) {
    case Tier::device:
      return "device";
    case Tier::host:
      return "host";
    case Tier::nvme:
      return "nvme";
  }
  return "?";
}

}  // namespace tz
