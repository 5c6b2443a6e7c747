#!/usr/bin/env bash
# The second command of README.md, and what CI runs: build (CUDA on when the toolkit is present) and run
# every test with ctest; then the same suite again in the poisoned build (AddressSanitizer, with device
# memory poisoned outside the backend's kernels, copies and collectives: any other access fails its
# test). GPU tests skip, with the reason, on machines without a GPU. With CUDA built, the GPU bundle
# (scripts/gpu-bundle.sh) is made between the build and the tests. TZ_POISON=0 skips the second pass.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_DIR=$BUILD_DIR bash scripts/build.sh
# With the CUDA backend built: the GPU bundle, which the suite's check and rehearsal tests take from here.
if [ -x "$BUILD_DIR/tests/cuda_train_cuda_test" ]; then
  BUILD_DIR=$BUILD_DIR bash scripts/gpu-bundle.sh "$BUILD_DIR/gpu-bundle.tar.xz"
fi
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
if [ "${TZ_POISON:-1}" != "0" ]; then
  POISON_DIR=${BUILD_DIR}-poison
  source scripts/compiler_cache.sh
  cmake -S . -B "$POISON_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZ_CUDA=OFF -DTZ_POISON_DEVICE_MEMORY=ON \
    "${TZ_CACHE_FLAGS[@]}"
  cmake --build "$POISON_DIR" -j "$(nproc)"
  (cd "$POISON_DIR" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
fi
