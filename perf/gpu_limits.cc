// GPU peaks by name (the presets' datasheet figures first) and the PCIe link from sysfs.
#include "perf/gpu_limits.h"

#include <cctype>
#include <cstdlib>
#include <fstream>

#include "zero/hardware.h"

namespace tz {
namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

PeakTflops from_preset(const char* preset) {
  const Hardware h = hardware_preset(preset);
  return {h.peak_tflops[1], "preset " + std::string(preset) + ": " + h.source};
}

// The first line of a small sysfs file, trimmed; "" when it cannot be read.
std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

// "32.0 GT/s PCIe" (Linux >= 5.x) or "8 GT/s" -> 32.0 / 8; 0 for "Unknown" or anything else.
double parse_gt(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end && std::string(end).find("GT/s") != std::string::npos ? v : 0;
}

int parse_width(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return 0;
  return std::atoi(text.c_str());
}

}  // namespace

nlohmann::json GpuIdentity::to_json() const {
  return {{"name", name},
          {"pci_bus_id", pci_bus_id},
          {"compute_capability", std::to_string(cc_major) + "." + std::to_string(cc_minor)},
          {"memory_bytes", memory_bytes}};
}

PeakTflops bf16_dense_peak(const std::string& device_name) {
  const std::string n = upper(device_name);
  // Most specific names first: "GH200" contains "H200", "H100 PCIe" and "H100 NVL" contain "H100".
  if (has(n, "GH200")) return from_preset("gh200");
  if (has(n, "H200 NVL"))
    return {835, "NVIDIA H200 NVL datasheet: 1,671 TFLOP/s bf16 with sparsity, 835 dense (PCIe card, 600 W)"};
  if (has(n, "H200")) return from_preset("h200-141g");
  if (has(n, "H100 NVL"))
    return {835, "NVIDIA H100 NVL datasheet: 1,671 TFLOP/s bf16 with sparsity, 835 dense (PCIe card, 400 W)"};
  if (has(n, "H100") && has(n, "PCIE"))
    return {756, "NVIDIA H100 PCIe datasheet: 1,513 TFLOP/s bf16 with sparsity, 756 dense"};
  if (has(n, "H100") || has(n, "H800")) return from_preset("h100-80g");
  if (has(n, "A100") || has(n, "A800")) return from_preset("a100-40g");  // 40 and 80 GB: the same 312
  if (has(n, "L40S")) return {362, "NVIDIA L40S datasheet: 733 TFLOP/s bf16 with sparsity, 362 dense"};
  if (has(n, "V100")) return {0, "V100 has no bf16 tensor cores (preset v100-32g)"};
  return {0, device_name.empty()
                 ? "no GPU name: pass --peak-tflops"
                 : "'" + device_name + "' is not in the peak table (perf/gpu_limits.cc): pass --peak-tflops"};
}

nlohmann::json PcieLink::to_json() const {
  return {{"gt_per_s", gt_per_s},
          {"width", width},
          {"gb_per_s", gb_per_s},
          {"measured", measured},
          {"source", source}};
}

double pcie_gb_per_s(double gt_per_s, int width) {
  // Gen1-2 (2.5, 5 GT/s) encode 8 bits in 10; Gen3-5 (8, 16, 32 GT/s) 128 in 130; Gen6 (64 GT/s) uses
  // FLIT mode, 242 payload bytes in 256.
  const double encoding = gt_per_s < 8 ? 0.8 : gt_per_s < 64 ? 128.0 / 130.0 : 242.0 / 256.0;
  return gt_per_s * width * encoding / 8.0;
}

PcieLink pcie_link(const std::string& pci_bus_id, const std::string& sysfs_root) {
  PcieLink l;
  std::string why;
  if (pci_bus_id.empty()) {
    why = "the GPU's PCI bus id is unknown";
  } else {
    const std::string dir = sysfs_root + "/" + pci_bus_id + "/";
    const double gt = parse_gt(read_line(dir + "max_link_speed"));
    const int width = parse_width(read_line(dir + "max_link_width"));
    if (gt > 0 && width > 0) {
      l.gt_per_s = gt;
      l.width = width;
      l.gb_per_s = pcie_gb_per_s(gt, width);
      l.measured = true;
      const std::string cur = read_line(dir + "current_link_speed"),
                        cur_w = read_line(dir + "current_link_width");
      l.source = dir + "max_link_{speed,width}: " + read_line(dir + "max_link_speed") + " x" +
                 std::to_string(width) + " (current: " + (cur.empty() ? "?" : cur) + " x" +
                 (cur_w.empty() ? "?" : cur_w) + "; GPUs lower it when idle)";
      return l;
    }
    why = dir + "max_link_{speed,width} are missing or unknown (a VM may hide the link)";
  }
  l.gt_per_s = 32;
  l.width = 16;
  l.gb_per_s = pcie_gb_per_s(32, 16);
  l.source = "assumed PCIe Gen5 x16 (H100/H200 SXM's host link): " + why;
  return l;
}

double causal_attention_forward_flops(double B, double NH, double T, double hs) {
  return 4.0 * B * NH * T * T * hs / 2.0;
}

}  // namespace tz
