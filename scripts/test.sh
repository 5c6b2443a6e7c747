#!/usr/bin/env bash
# The second command of README.md, and what CI runs: build (CUDA on when the toolkit is present) and
# run every test with ctest. GPU tests skip, with the reason, on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
