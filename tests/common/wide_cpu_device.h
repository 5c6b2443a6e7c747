// A third device kind for tests: a cpu device whose traits keep twice the cpu's attention probabilities
// and ask a matmul workspace of 256 floats more, registered under the name "wide-cpu". What its sizes
// change is only what the plan allocates; the kernels are the cpu's, so it trains bitwise like the cpu.
#pragma once

#include "core/device.h"

namespace tz::testing {

inline constexpr DeviceKind kWideCpu = DeviceKind(7);
inline constexpr std::size_t kWideExtraWorkspaceFloats = 256;

// Registers the kind once per process and returns it.
inline DeviceKind wide_cpu_kind() {
  if (!device_kind_registered(kWideCpu)) {
    DeviceTraits t = device_traits(DeviceKind::cpu);
    t.name = "wide-cpu";
    t.aliases = {};
    auto cpu_saved = t.attention_saved_floats;
    t.attention_saved_floats = [cpu_saved](const AttentionShape& a, DType act) { return 2 * cpu_saved(a, act); };
    auto cpu_ws = t.gemm_workspace_floats;
    t.gemm_workspace_floats = [cpu_ws](DType dt, const GemmShape& s) {
      return cpu_ws(dt, s) + kWideExtraWorkspaceFloats;
    };
    t.make = [](const DeviceOptions& o) { return make_cpu_device(o, kWideCpu); };
    register_device_kind(kWideCpu, std::move(t));
  }
  return kWideCpu;
}

}  // namespace tz::testing
