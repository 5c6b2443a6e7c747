#!/usr/bin/env bash
# Tutorial 3 (docs/tutorials/3-fine-tune.md): fine-tuning a Hugging Face GPT-2 safetensors file with the
# optimizer on the host (ZeRO-Offload), reporting host memory and the optimizer's time per step, with a
# plot. MODEL_FILE: a GPT-2 model.safetensors from Hugging Face (gpt2, gpt2-medium, ...); without one,
# the script makes a GPT-2-shaped file with tierzero (this machine has no network).
set -euo pipefail
OUT=${OUT:-out/tutorial-3}
STEPS=${STEPS:-20}
mkdir -p "$OUT"
MODEL_FILE=${MODEL_FILE:-}
if [ -z "$MODEL_FILE" ]; then
  MODEL_FILE=$OUT/gpt2-like.safetensors
  tierzero train --model gpt2 --n-layer 4 --n-embd 256 --n-head 4 --steps 1 --log-every 0 --val-batches 1 \
    --save-safetensors "$MODEL_FILE" > /dev/null
fi
# The data: byte-level tokens of the built-in corpus (any llm.c token file with GPT-2's vocabulary works).
tierzero data prepare --output "$OUT/train.bin" --val-output "$OUT/val.bin" > /dev/null
tierzero train --init-from "$MODEL_FILE" --n-head 4 --data "$OUT/train.bin" --val-data "$OUT/val.bin" \
  --dtype bf16 --seq-len 128 --micro-batch 4 --lr 1e-4 --zero-stage 2 --offload-optimizer cpu \
  --steps "$STEPS" --log-every 5 --val-every 10 --val-batches 4 \
  --metrics "$OUT/metrics.jsonl" --save-safetensors "$OUT/tuned.safetensors"
# Host memory (the host tier's bytes in use) and the optimizer's time, per step, from the metrics.
grep -v val_loss "$OUT/metrics.jsonl" | jq -r '[.step, .bytes.host / 1048576, .ms.optimizer, .ms.step, .loss] | @tsv' \
  > "$OUT/per-step.tsv"
echo "step  host MiB  optimizer ms  step ms  loss"
awk '{printf "%4d %9.1f %13.1f %8.1f %6.3f\n", $1, $2, $3, $4, $5}' "$OUT/per-step.tsv" | tail -n 5
if command -v gnuplot > /dev/null; then
  gnuplot <<GP
set terminal pngcairo size 900,500
set output "$OUT/fine-tune.png"
set title "fine-tuning with the optimizer on the host: per step"
set xlabel "step"
set ylabel "ms"
set y2label "host tier, MiB"
set y2tics
set ytics nomirror
set key left bottom
plot "$OUT/per-step.tsv" using 1:3 with linespoints title "optimizer (CPU Adam) ms", \
     "$OUT/per-step.tsv" using 1:4 with linespoints title "step ms", \
     "$OUT/per-step.tsv" using 1:2 axes x1y2 with lines title "host tier MiB"
GP
  echo "plot: $OUT/fine-tune.png"
else
  echo "gnuplot not installed: no plot (apt-get install gnuplot-nox)"
fi
