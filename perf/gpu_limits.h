// The limits the GPU benchmarks are measured against: the card's bf16 dense tensor-core peak, looked up
// by the name the driver reports, and the host link's bandwidth, read from the PCIe link in sysfs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace tz {

// The GPU a benchmark runs on, as the driver describes it (launch/ fills it from probe_gpus()).
struct GpuIdentity {
  std::string name;        // "NVIDIA H200"; "" when unknown (no driver, or the cpu device)
  std::string pci_bus_id;  // "0000:1b:00.0" (sysfs spelling); "" when unknown
  int cc_major = 0, cc_minor = 0;
  std::uint64_t memory_bytes = 0;
  nlohmann::json to_json() const;
};

// A datasheet peak in TFLOP/s with where it comes from; tflops == 0 when the card is not in the table.
struct PeakTflops {
  double tflops = 0;
  std::string source;
};

// The bf16 dense (no sparsity) tensor-core peak of the GPU called `device_name`, from the hardware
// presets (zero/hardware.h) where one matches, else from this file's table of other variants.
PeakTflops bf16_dense_peak(const std::string& device_name);

// The host <-> device link: PCIe generation and lane count, and the bandwidth per direction after the
// line encoding (128b/130b from 8 GT/s, 8b/10b below), before packet overheads (~85-90% is what DMA
// engines reach).
struct PcieLink {
  double gt_per_s = 0;  // per lane
  int width = 0;
  double gb_per_s = 0;    // per direction, 1e9 bytes/s
  bool measured = false;  // read from sysfs; false: the assumption below
  std::string source;     // where the figures come from, or why they are assumed
  nlohmann::json to_json() const;
};

// What a GPU benchmark reports its figures against.
struct GpuLimits {
  GpuIdentity gpu;
  PeakTflops bf16_peak;
  PcieLink link;
};

// GB/s per direction of `width` lanes at `gt_per_s`.
double pcie_gb_per_s(double gt_per_s, int width);

// The device's PCIe link from <sysfs_root>/<pci_bus_id>/{max,current}_link_{speed,width}: the max
// figures set the limit (GPUs lower the current speed when idle). Without them (no bus id, a VM that
// hides the link, no sysfs) the link is assumed to be PCIe Gen5 x16, and `source` says so.
PcieLink pcie_link(const std::string& pci_bus_id, const std::string& sysfs_root = "/sys/bus/pci/devices");

// The FLOPs FlashAttention-2's benchmarks count for causal attention over [B, NH, T, hs]: forward
// 2 products of 2*T*T*hs multiply-adds per head, halved by the mask; backward 2.5x forward (5 products).
double causal_attention_forward_flops(double B, double NH, double T, double hs);
inline double causal_attention_backward_flops(double B, double NH, double T, double hs) {
  return 2.5 * causal_attention_forward_flops(B, NH, T, hs);
}

}  // namespace tz
