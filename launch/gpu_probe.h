// What the machine offers for the CUDA path, found at run time with dlopen (so every build, CUDA or
// not, can report it): the driver and its GPUs, peer access, and the CUDA runtime, cuBLAS, NCCL and cuDNN
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
  // cuDNN 9 (libcudnn.so.9, loaded by the attention only when it runs on cuDNN): its version and where it
  // was found, or why not (the loader's reason): without it the attention keeps its own kernels.
  std::string cudnn, cudnn_lib, cudnn_problem;
  // The NVRTC cuDNN compiles its attention with (libnvrtc.so.<the CUDA major cuDNN was built for>): where
  // it was found ("" when not: then cudnn_problem says so).
  std::string cudnn_nvrtc_lib;
};

GpuReport probe_gpus();

}  // namespace tz
