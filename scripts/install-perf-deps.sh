#!/usr/bin/env bash
# Optional: the peers and tools the benchmarks under perf/ compare against (PyTorch 1.13 from Debian,
# hyperfine, fio). Not needed to build, train or test.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# libopenblas0-pthread: without it Debian's torch falls back to the reference BLAS (~50x slower).
$SUDO apt-get install -y -q --no-install-recommends python3-torch libopenblas0-pthread hyperfine fio gnuplot-nox
