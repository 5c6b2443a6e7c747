#!/usr/bin/env bash
# The step-time model against measured runs on this machine: calibrate (`tierzero bench calibrate` under
# mpirun -np 2, with an NVMe folder), then for each configuration the step time `tierzero plan --hardware`
# predicts next to the median step time of a real `tierzero train` run with the same flags (steps 4-12;
# the first steps warm up). Prints one row per configuration and the ratio predicted / measured.
# usage: perf/scripts/validate_plan.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d /var/tmp/tz-validate.XXXXXX)}
tz=$(cd "$build" && pwd)/launch/tierzero
mkdir -p "$work/nvme"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(getconf _NPROCESSORS_ONLN)  # not nproc: it obeys OMP_NUM_THREADS
model=(--n-layer 6 --n-embd 384 --n-head 6 --vocab 256 --seq-len 128 --micro-batch 4)
mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=$((cores / 2 > 0 ? cores / 2 : 1)) \
  "$tz" bench calibrate "${model[@]}" --nvme-path "$work/nvme" --nvme-bytes 512M --out "$work/hw.json" > "$work/calibrate.log"
echo "calibration: $work/hw.json ($(grep -o '"source": "[^"]*"' "$work/hw.json"))"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) ($(grep -o -m1 'amx_bf16' /proc/cpuinfo || echo no AMX), $cores cores)"
run() {  # run NAME WORLD FLAGS...
  local name=$1 world=$2; shift 2
  local threads=$(( cores / world > 0 ? cores / world : 1 ))
  local flags=("${model[@]}" "$@")
  local predicted measured
  predicted=$("$tz" plan --world "$world" "${flags[@]}" --hardware "$work/hw.json" --ranks-per-node "$world" |
              awk '/^  step /{print $2}')
  rm -f "$work/m.jsonl"
  if [ "$world" = 1 ]; then
    OMP_NUM_THREADS=$threads "$tz" train "${flags[@]}" --steps 12 --log-every 0 --val-batches 1 --metrics "$work/m.jsonl" > "$work/$name.log" 2>&1
  else
    mpirun -np "$world" --oversubscribe --bind-to none -x OMP_NUM_THREADS=$threads "$tz" train "${flags[@]}" --steps 12 \
      --log-every 0 --val-batches 1 --metrics "$work/m.jsonl" > "$work/$name.log" 2>&1
  fi
  measured=$(grep -v val_loss "$work/m.jsonl" | tail -n 9 | grep -o '"step":[0-9.e+-]*}' | sed 's/"step":\(.*\)}/\1/' | sort -g |
             awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v n="$name" -v w="$world" -v p="$predicted" -v m="$measured" \
    'BEGIN { printf "%-34s %5d %12.1f %12.1f %8.2f\n", n, w, p, m, p / m }'
}
printf "%-34s %5s %12s %12s %8s\n" configuration ranks "predicted ms" "measured ms" ratio
run "stage 0 fp32" 1 --zero-stage 0
run "stage 1 fp32" 2 --zero-stage 1
run "stage 2 bf16" 2 --zero-stage 2 --dtype bf16
run "stage 3 fp32" 2 --zero-stage 3 --param-persistence-threshold 0
run "stage 3 fp32, optimizer on host" 2 --zero-stage 3 --param-persistence-threshold 0 --offload-optimizer cpu
run "stage 2 fp32, optimizer on NVMe" 2 --zero-stage 2 --offload-optimizer nvme --nvme-path "$work/nvme"
run "stage 3 fp32, 4 ranks" 4 --zero-stage 3 --param-persistence-threshold 0
