#!/usr/bin/env bash
# The GPU check on a machine that can build (one with this project's Debian packages and a GPU): makes the
# bundle unpacked (scripts/gpu-bundle.sh --dir) and runs its check, gpu-bundle/run.sh, the same runner a
# lent machine runs from the carried archive (perf/README.md, "The GPU check"). One runner, not two.
#
#   bash perf/gpu-check.sh [RESULTS_DIR]   default $OUT, else perf/results/gpu-check-<UTC time>/; that
#                                          folder gets smoke.json, results.json and logs.tar.gz
#
# BUILD_DIR goes to gpu-bundle.sh (default build/: Release, CUDA on, sm_90); every TZ_GPU_CHECK_* variable
# to run.sh (the budget, stages to skip, test mode: see its header). Exit: run.sh's (0 once results.json
# is written; 2 when a library is missing), or 1 when the bundle cannot be made.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RESULTS=${1:-${OUT:-$ROOT/perf/results/gpu-check-$(date -u +%Y-%m-%dT%H%M%SZ)}}
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
bash "$ROOT/scripts/gpu-bundle.sh" --dir "$W" || { echo "gpu-check: the bundle could not be made" >&2; exit 1; }
"$W/gpu-bundle/run.sh" "$RESULTS"
