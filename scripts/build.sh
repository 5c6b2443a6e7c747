#!/usr/bin/env bash
# Configures and builds tierzero into BUILD_DIR (default build/). TZ_CUDA=AUTO|ON|OFF picks the CUDA
# backend (AUTO: on when /usr/local/cuda/bin/nvcc exists); CUDA code targets sm_90 (H100/H200) unless
# CMAKE_CUDA_ARCHITECTURES says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZ_CUDA="${TZ_CUDA:-AUTO}" \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}"
cmake --build "$BUILD_DIR" -j "$(nproc)"
