// The registry of device kinds and the two built in: cpu (oneDNN + OpenMP in host memory) and cuda (its
// sizes are data here, so that a build without CUDA still plans for a GPU; its factory is installed by
// make_device, outside core).
#include "core/device_traits.h"

#include <map>
#include <mutex>

#include "core/attention_scratch.h"
#include "core/backend.h"
#include "core/cpu_attention.h"
#include "core/device.h"
#include "core/error.h"

namespace tz {
namespace {

DeviceTraits cpu_traits() {
  DeviceTraits t;
  t.name = "cpu";
  t.unified_memory = true;
  t.collectives = DeviceCollectives::host;
  t.overlap_optimizer = false;
  t.event_clock = "wall";  // the cpu stream runs each operation as it is enqueued
  t.gemm_workspace_floats = [](DType dt, const GemmShape& s) { return cpu_gemm_workspace_floats(dt, s); };
  // The probabilities and their gradient, [B,NH,T,T] each; with 16-bit activations the scratch also
  // holds fp32 copies of what the loops read and write (cpu_attention_widened_floats).
  t.attention_saved_floats = [](const AttentionShape& a, DType) { return std::size_t(a.B) * a.NH * a.T * a.T; };
  t.attention_scratch_floats = [](const AttentionShape& a, DType act) {
    return std::size_t(a.B) * a.NH * a.T * a.T + (act == DType::f32 ? 0 : cpu_attention_widened_floats(a));
  };
  t.make = [](const DeviceOptions& o) { return make_cpu_device(o); };
  return t;
}

DeviceTraits cuda_traits() {
  DeviceTraits t;
  t.name = "cuda";
  t.aliases = {"gpu"};
  t.unified_memory = false;
  t.collectives = DeviceCollectives::nccl;
  t.overlap_optimizer = true;
  t.event_clock = "cuda events";
  // cuBLASLt reads 16-bit inputs as they are (its own workspace is taken when the device is made).
  t.gemm_workspace_floats = [](DType, const GemmShape&) { return std::size_t(0); };
  // The fused kernels and cuDNN keep one log-sum-exp per row. The scratch holds one float per row (rowsum of
  // dout * out), and with 16-bit activations cuDNN's workspace after it (core/attention_scratch.h).
  t.attention_saved_floats = [](const AttentionShape& a, DType) { return attention_row_floats(a); };
  t.attention_scratch_floats = [](const AttentionShape& a, DType act) {
    return cuda_attention_scratch_floats(a, act);
  };
  t.unavailable =
      "this build has no CUDA backend (configure with -DTZ_CUDA=ON where the CUDA toolkit is installed); use "
      "--device cpu";
  return t;
}

struct Registry {
  std::mutex mu;
  std::map<int, std::unique_ptr<DeviceTraits>> kinds;  // nodes are stable: traits are returned by reference
};

bool named(const DeviceTraits& t, const std::string& s) {
  if (t.name == s) return true;
  for (const std::string& a : t.aliases)
    if (a == s) return true;
  return false;
}

void add(Registry& r, DeviceKind kind, DeviceTraits t) {
  TZ_CHECK(!t.name.empty(), "a device kind needs a name");
  TZ_CHECK(t.gemm_workspace_floats && t.attention_saved_floats && t.attention_scratch_floats, "device kind '",
           t.name, "' must size its matmul workspace and its attention");
  TZ_CHECK(!r.kinds.count(int(kind)), "device kind ", int(kind), " is registered already (as '",
           r.kinds.count(int(kind)) ? r.kinds[int(kind)]->name : "", "')");
  std::vector<std::string> names = t.aliases;
  names.push_back(t.name);
  for (const auto& [k, other] : r.kinds)
    for (const std::string& n : names)
      TZ_CHECK(!named(*other, n), "device name '", n, "' is taken by device kind '", other->name, "'");
  r.kinds.emplace(int(kind), std::make_unique<DeviceTraits>(std::move(t)));
}

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: devices may outlive static destruction order
    add(*reg, DeviceKind::cpu, cpu_traits());
    add(*reg, DeviceKind::cuda, cuda_traits());
    return reg;
  }();
  return *r;
}

}  // namespace

void register_device_kind(DeviceKind kind, DeviceTraits traits) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  add(r, kind, std::move(traits));
}

bool device_kind_registered(DeviceKind kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.kinds.count(int(kind)) != 0;
}

const DeviceTraits& device_traits(DeviceKind kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.kinds.find(int(kind));
  TZ_CHECK(it != r.kinds.end(), "device kind ", int(kind), " is not registered");
  return *it->second;
}

std::vector<DeviceKind> device_kinds() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<DeviceKind> out;
  for (const auto& [k, t] : r.kinds) out.push_back(DeviceKind(k));
  return out;
}

void set_device_factory(DeviceKind kind, std::function<std::unique_ptr<Device>(const DeviceOptions&)> make) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.kinds.find(int(kind));
  TZ_CHECK(it != r.kinds.end(), "device kind ", int(kind), " is not registered");
  it->second->make = std::move(make);
}

DeviceKind parse_device_kind(const std::string& s) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::string names;
  std::size_t i = 0;
  for (const auto& [k, t] : r.kinds) {
    if (named(*t, s)) return DeviceKind(k);
    names += (i == 0 ? "" : i + 1 == r.kinds.size() ? " or " : ", ") + t->name;
    ++i;
  }
  TZ_FAIL("unknown device '", s, "': use ", names);
}

std::string device_kind_name(DeviceKind k) { return device_traits(k).name; }

}  // namespace tz
