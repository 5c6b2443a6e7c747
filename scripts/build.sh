#!/usr/bin/env bash
# Configures and builds tierzero into BUILD_DIR (default build/). TZ_CUDA=AUTO|ON|OFF picks the CUDA
# backend (AUTO: on when /usr/local/cuda/bin/nvcc exists); CUDA code targets sm_90 (H100/H200) unless
# CMAKE_CUDA_ARCHITECTURES says otherwise. Compiles through ccache where it is installed (TZ_CCACHE=0: not).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
source scripts/compiler_cache.sh  # ccache, keyed by content: a new clone reuses an earlier one's objects
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZ_CUDA="${TZ_CUDA:-AUTO}" \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" "${TZ_CACHE_FLAGS[@]}"
cmake --build "$BUILD_DIR" -j "$(nproc)"
