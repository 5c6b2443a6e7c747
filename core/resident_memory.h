// The process's resident memory as the kernel counts it (/proc/self/status), independent of the memory
// plan's own bookkeeping: what `train` reports next to the plan, and what tests and benchmarks measure.
#pragma once

#include <cstddef>
#include <string>

namespace tz {

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); 0 where it cannot be read.
std::size_t resident_status_bytes(const std::string& field);

// Resets the peak resident set (VmHWM) to the current one (Linux >= 4.0); false where refused.
bool reset_resident_peak();

}  // namespace tz
