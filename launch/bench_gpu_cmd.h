// `tierzero bench gpu-matmul | gpu-attention | gpu-copy | mfu`: the GPU benchmarks (exit status 77,
// skipped, when the cuda device cannot be made) and the MFU of a training run's metrics file.
#pragma once

#include <string>
#include <vector>

namespace tz {

int bench_gpu_matmul(const std::vector<std::string>& args);
int bench_gpu_attention(const std::vector<std::string>& args);
int bench_gpu_copy(const std::vector<std::string>& args);
int bench_mfu(const std::vector<std::string>& args);

// The exit status of a benchmark that cannot run on this machine (automake's and ctest's "skipped").
inline constexpr int kBenchSkipped = 77;

}  // namespace tz
