#!/usr/bin/env bash
# Tutorial 4 (docs/tutorials/4-bigger-gpus-or-offload.md): bigger GPUs against offloading, for one
# model: every option on every card size, with the GPU, node and NVMe prices counted.
set -euo pipefail
OUT=${OUT:-out/tutorial-4}
mkdir -p "$OUT"
# GPT-2 XL (1.5B) fine-tuning: 8 ranks, 8 x 1024 tokens per rank per step, 10,000 steps.
# Prices are illustrative on-demand rates per hour: edit them.
tierzero plan --compare --model gpt2-xl --dtype fp16 --micro-batch 8 --seq-len 1024 --checkpoint-activations \
  --world 8 --steps 10000 --hardware h100-80g,h200-141g,a100-40g,v100-32g \
  --price-gpu-hour "${GPU_HOUR:-2.50}" --price-node-hour "${NODE_HOUR:-4.00}" --price-nvme-tb-hour "${NVME_TB_HOUR:-0.02}" \
  --csv "$OUT/compare.csv"
echo "CSV: $OUT/compare.csv"
