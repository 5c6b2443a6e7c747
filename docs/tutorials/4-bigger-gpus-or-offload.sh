#!/usr/bin/env bash
# Tutorial 4 (docs/tutorials/4-bigger-gpus-or-offload.md): bigger GPUs against offloading, for Llama 3.1 8B
# and 70B: tierzero plan (a pure function: no GPU needed) on each card size and rank count, every option
# (ZeRO stages 0-3 on the devices; optimizer, or optimizer and parameters, on the host or on NVMe).
set -euo pipefail
OUT=${OUT:-out/tutorial-4}
mkdir -p "$OUT"
# Fine-tuning shape: bf16, 1 x 2048 tokens per rank per step, activation checkpointing.
RUN=(--dtype bf16 --seq-len 2048 --micro-batch 1 --checkpoint-activations)

echo "== Llama 3.1 8B on one H100 80G, all states on the device (ZeRO stage 2):"
tierzero plan --model llama3.1-8b --hardware h100-80g "${RUN[@]}" --zero-stage 2 || true  # exits 1: does not fit
echo "== the same with the optimizer on the host:"
tierzero plan --model llama3.1-8b --hardware h100-80g "${RUN[@]}" --zero-stage 2 --offload-optimizer cpu

# Illustrative on-demand prices per GPU-hour, one per card (plan --compare takes one price per run): edit them.
price() {
  case $1 in
    h100-80g) echo "${H100_HOUR:-2.50}" ;;
    h200-141g) echo "${H200_HOUR:-3.50}" ;;
    a100-40g) echo "${A100_HOUR:-1.30}" ;;
  esac
}
# For each model, rank count and card: the fastest option that fits with every state on the devices, and
# the fastest that offloads (or, where none fits, the one needing the least device memory, marked "no").
# Each --compare's 9 rows are in $OUT/*.csv.
echo "== fastest option that fits, without and with offload (memory per GPU; \$/Mtok at the card's price):"
printf "%-13s %4s  %-10s %-36s %-4s %10s %9s %9s %9s %7s\n" model GPUs card option fits "device GiB" \
  "host GiB" "step ms" tokens/s "\$/Mtok"
for case in llama3.1-8b:1:h100-80g llama3.1-8b:1:a100-40g llama3.1-8b:1:h200-141g llama3.1-8b:8:h100-80g \
            llama3.1-70b:8:h100-80g llama3.1-70b:8:h200-141g llama3.1-70b:16:h100-80g llama3.1-70b:16:h200-141g \
            llama3.1-70b:32:h100-80g; do
  IFS=: read -r model world hw <<< "$case"
  tierzero plan --compare --model "$model" --world "$world" --hardware "$hw" "${RUN[@]}" --steps 1000 \
    --price-gpu-hour "$(price "$hw")" --price-node-hour "${NODE_HOUR:-0}" --price-nvme-tb-hour "${NVME_TB_HOUR:-0.02}" \
    --csv "$OUT/$model-$world-$hw.csv" --json > "$OUT/$model-$world-$hw.json"
  jq -r --arg m "$model" --arg w "$world" '
    def best: (map(select(.fits)) | min_by(.step_ms)) // min_by(.bytes.device);
    (map(select(.option | test("host|NVMe") | not)) | best), (map(select(.option | test("host|NVMe"))) | best)
    | [$m, $w, .hardware, .option, (if .fits then "yes" else "no" end), .bytes.device / 1073741824,
       .bytes.host / 1073741824, .step_ms, .tokens_per_s, .cost_per_million_tokens] | @tsv' "$OUT/$model-$world-$hw.json" |
    awk -F '\t' '{ if ($5 == "yes") printf "%-13s %4d  %-10s %-36s %-4s %10.1f %9.1f %9.1f %9.0f %7.2f\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10;
                   else printf "%-13s %4d  %-10s %-36s %-4s %10.1f %9.1f %9s %9s %7s\n", $1, $2, $3, $4, $5, $6, $7, "-", "-", "-" }'
done
echo "CSV (every option): $OUT/*.csv"
