// Device kinds as data: what each kind of device can do and needs, one record per kind (ggml-backend's
// device properties are the model). The cpu and cuda records are built in; a test (or a new backend)
// registers another kind with register_device_kind. Code outside core/ asks a kind's traits and never
// compares kinds.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tz {

class Device;
struct DeviceOptions;
struct GemmShape;
struct AttentionShape;

// A device kind: an index into the registry. cpu and cuda are built in; others are registered.
enum class DeviceKind : int { cpu = 0, cuda = 1 };

// Which communicator moves a device's buffers in collectives.
enum class DeviceCollectives {
  host,  // the host's own (MPI): device memory is host memory
  nccl,  // NCCL, bootstrapped over the host communicator, which keeps the host collectives
};

struct DeviceTraits {
  std::string name;                  // what --device and the reports call it
  std::vector<std::string> aliases;  // other names --device accepts ("gpu")
  // Device memory is host memory and the cores that compute also run the optimizer and the copies: a
  // copy between the tiers is a memcpy and nothing the host does hides behind the compute.
  bool unified_memory = false;
  DeviceCollectives collectives = DeviceCollectives::host;
  // Whether the CPU Adam runs during backward (speculatively) when --overlap-optimizer is auto: on a
  // device whose cores are the host's it would take them from backward.
  bool overlap_optimizer = false;
  // The clock timing events read (Device::create_timing_event), as the metrics name it.
  std::string event_clock;
  // Floats of workspace one matrix product needs (the cpu widens 16-bit inputs to fp32 there).
  std::function<std::size_t(DType, const GemmShape&)> gemm_workspace_floats;
  // Floats attention_forward keeps for backward, and the attention's scratch, for a shape and an
  // activation dtype.
  std::function<std::size_t(const AttentionShape&, DType act)> attention_saved_floats;
  std::function<std::size_t(const AttentionShape&, DType act)> attention_scratch_floats;
  // Makes a device of this kind; empty when this build cannot, and then `unavailable` says why and what
  // to do. make_device (library `devices`) installs the factories that live outside core (cuda).
  std::function<std::unique_ptr<Device>(const DeviceOptions&)> make;
  std::string unavailable;
};

// Registers a kind; refuses one whose number or any of whose names is taken. Not for use while devices
// are being made on other threads (register at start-up).
void register_device_kind(DeviceKind kind, DeviceTraits traits);
bool device_kind_registered(DeviceKind kind);
// A registered kind's traits; throws for an unregistered one.
const DeviceTraits& device_traits(DeviceKind kind);
// Every registered kind, in the order of their numbers.
std::vector<DeviceKind> device_kinds();
// Installs (or replaces) the factory of a registered kind.
void set_device_factory(DeviceKind kind, std::function<std::unique_ptr<Device>(const DeviceOptions&)> make);

// A kind by any of its names; throws naming the registered ones.
DeviceKind parse_device_kind(const std::string& s);
std::string device_kind_name(DeviceKind k);

}  // namespace tz
