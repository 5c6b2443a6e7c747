// What the machine offers for the CUDA path, found at run time with dlopen (so every build, CUDA or
// not, can report it): the driver and its GPUs, peer access, and the CUDA runtime, cuBLAS and NCCL
// libraries installed. For `tierzero doctor`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tz {

struct GpuInfo {
  std::string name;
  std::uint64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  std::string pci_bus_id;  // "0000:1b:00.0", as sysfs names the device; "" when unknown
};

struct GpuReport {
  std::string driver;  // "13.0", or "" when there is no usable driver
  std::string driver_problem;  // why not (library missing, cuInit's error)
  std::vector<GpuInfo> gpus;
  std::vector<std::vector<bool>> peer;  // peer[i][j]: GPU i can access GPU j's memory
  std::string runtime, cublas, nccl;    // versions, "" when the library was not found
  std::string runtime_lib, cublas_lib, nccl_lib;  // where each was found
};

GpuReport probe_gpus();

}  // namespace tz
