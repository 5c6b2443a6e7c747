#!/usr/bin/env bash
# Tutorial 1 (docs/tutorials/1-larger-than-device.md): a model whose training states are far larger
# than the device's memory, on one device, with the optimizer on the host (ZeRO-Offload) and
# activation checkpointing. On the CPU backend --device-mem stands in for the card.
set -euo pipefail
OUT=${OUT:-out/tutorial-1}
STEPS=${STEPS:-10}
mkdir -p "$OUT"
rm -f "$OUT/metrics.jsonl"  # a rerun is a new run: --metrics refuses another run's records
MODEL=(--model gpt2 --dtype bf16 --seq-len 128 --micro-batch 2)   # GPT-2 124M: 2.2 GB of training states

echo "== 1. On the device alone it does not fit in 1 GiB"
tierzero plan "${MODEL[@]}" --device-mem 1G | tail -n 4 || true

echo "== 2. ZeRO-Offload: fp32 master, Adam states and gradient shards on the host; activations recomputed"
OFFLOAD=(--zero-stage 2 --offload-optimizer cpu --checkpoint-activations --reduce-bucket-size 2e7 --device-mem 1G)
tierzero plan "${MODEL[@]}" "${OFFLOAD[@]}"
tierzero train "${MODEL[@]}" "${OFFLOAD[@]}" --steps "$STEPS" --log-every 5 --val-batches 2 \
  --metrics "$OUT/metrics.jsonl"

echo "== 3. Full scale: DeepSpeed's tutorial model, a 10B GPT-2 on one 32 GB V100, and on one H200"
BIG=(--n-layer 50 --n-embd 4096 --n-head 32 --vocab 50257 --seq-len 1024 --micro-batch 4 --zero-stage 2
     --offload-optimizer cpu --checkpoint-activations --reduce-bucket-size 5e7)
tierzero plan "${BIG[@]}" --dtype fp16 --hardware v100-32g | tail -n 12
tierzero plan "${BIG[@]}" --dtype bf16 --hardware h200-141g | tail -n 12
