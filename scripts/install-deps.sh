#!/usr/bin/env bash
# Installs tierzero's build and test dependencies from Debian 12 packages (run as root or via sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build pkg-config \
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers \
  libopenmpi-dev openmpi-bin \
  liburing-dev libxxhash-dev \
  libboost-program-options-dev nlohmann-json3-dev \
  libgtest-dev libgmock-dev \
  base-files jq
