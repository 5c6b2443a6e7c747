#!/usr/bin/env bash
# Tutorial 2 (docs/tutorials/2-zero-infinity.md): ZeRO-Infinity across ranks: ZeRO stage 3 with the
# optimizer states and the parameter shards on NVMe, the host tier as the staging area, for a model
# beyond what the ranks' devices hold together.
set -euo pipefail
OUT=${OUT:-out/tutorial-2}
NVME=${NVME:-$OUT/nvme}      # a folder on an NVMe drive (here: wherever OUT is)
STEPS=${STEPS:-10}
RANKS=${RANKS:-2}
mkdir -p "$OUT" "$NVME"
rm -f "$OUT/metrics.jsonl"  # a rerun is a new run: --metrics refuses another run's records
MPIRUN=(mpirun -np "$RANKS" --bind-to none -x OMP_NUM_THREADS=1)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
[ "$RANKS" -gt "$(getconf _NPROCESSORS_ONLN)" ] && MPIRUN+=(--oversubscribe)
# 48 blocks of width 320: 59M parameters, 0.95 GB of fp32 training states, in 64 MiB of device memory per rank.
MODEL=(--n-layer 48 --n-embd 320 --n-head 5 --vocab 256 --seq-len 64 --micro-batch 2 --checkpoint-activations)
INFINITY=(--zero-stage 3 --offload-optimizer nvme --offload-param nvme --nvme-path "$NVME"
          --param-persistence-threshold 0 --device-mem 64M --host-mem 256M --reduce-bucket-size 2e6
          --prefetch-bucket-size 2.5e6)

echo "== 1. Without offload, stage 3 over $RANKS ranks does not fit 64 MiB per rank"
tierzero plan "${MODEL[@]}" --zero-stage 3 --param-persistence-threshold 0 --device-mem 64M --world "$RANKS" | tail -n 3 || true

echo "== 2. ZeRO-Infinity: the plan per tier, then training"
tierzero plan "${MODEL[@]}" "${INFINITY[@]}" --world "$RANKS"
"${MPIRUN[@]}" tierzero train "${MODEL[@]}" "${INFINITY[@]}" --steps "$STEPS" --log-every 5 --val-batches 2 \
  --metrics "$OUT/metrics.jsonl"
echo "== 3. NVMe traffic of the last step (optimizer states, parameter shards)"
grep '"offload"' "$OUT/metrics.jsonl" | tail -n 1 | grep -o '"offload":{.*}},"peak' | sed 's/,"peak$//'
