#!/usr/bin/env bash
# Installs tierzero's build and test dependencies from Debian 12 packages (run as root or via sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# ccache: the compiler cache scripts/build.sh and scripts/test.sh use (scripts/compiler_cache.sh).
# The GPU bundle (scripts/gpu-bundle.sh) needs patchelf and xz; its rehearsal on a bare root
# (scripts/gpu-bundle-rehearse.sh) debootstrap. The NUMA tier's check on a two-node guest
# (perf/scripts/numa_qemu.sh) boots Debian's kernel (linux-image-amd64) under qemu-system-x86 from a
# cpio root. The PyTorch peer's test at a tiny size needs Debian's torch
# (libopenblas0-pthread: without it torch falls back to the reference BLAS, ~50x slower).
# The launch tests (tests/launch/cluster/) need a real Slurm with PMIx and the tools that simulate two
# hosts (ip, nsenter, unshare). They start their own munged, slurmctld and slurmd with a config of their
# own, so the services these packages enable are not wanted: where this script installs them anew, it
# stops and disables them again. A machine that already had them keeps them as they were.
# The tierzero binary's heap is gperftools' tcmalloc (libgoogle-perftools-dev; docs/ARCHITECTURE.md#the-stack).
# `tierzero report` draws its plots with gnuplot (gnuplot-nox); the Prometheus textfile's test checks it
# with promtool, which Debian ships in the prometheus package (whose server this script disables the same way).
new_services=()
for svc in munge slurmctld slurmd prometheus; do
  dpkg-query -W -f='${Status}' "$svc" 2>/dev/null | grep -q 'install ok installed' || new_services+=("$svc")
done
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build pkg-config ccache \
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers \
  libopenmpi-dev openmpi-bin \
  liburing-dev libxxhash-dev libnuma-dev \
  libboost-program-options-dev nlohmann-json3-dev libgoogle-perftools-dev \
  libgtest-dev libgmock-dev \
  base-files jq \
  patchelf xz-utils debootstrap \
  qemu-system-x86 linux-image-amd64 cpio \
  python3-torch libopenblas0-pthread \
  slurmctld slurmd slurm-client munge libpmix-dev iproute2 util-linux bc \
  gnuplot-nox prometheus
if ((${#new_services[@]})) && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now "${new_services[@]}" >/dev/null 2>&1 || true
fi
