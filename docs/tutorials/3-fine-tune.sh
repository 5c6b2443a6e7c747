#!/usr/bin/env bash
# Tutorial 3 (docs/tutorials/3-fine-tune.md): fine-tuning a Hugging Face Llama-family model folder with the
# optimizer on the host (ZeRO-Offload), writing the tuned model as a Hugging Face folder, and reporting host
# memory and the optimizer's time per step, with a plot. MODEL_DIR: a model folder from Hugging Face (e.g.
# meta-llama/Llama-3.2-1B) and TOKENS (VAL_TOKENS optional): llm.c token files made with its tokenizer;
# without MODEL_DIR the script makes a small Llama-shaped folder with numpy (this machine has no network).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-out/tutorial-3}
STEPS=${STEPS:-20}
MODEL_DIR=${MODEL_DIR:-}
SHARD_SIZE=${SHARD_SIZE:-}  # the tuned folder's most bytes per safetensors file (default 5e9, as Hugging Face's)
TOKENS=${TOKENS:-}
VAL_TOKENS=${VAL_TOKENS:-}
mkdir -p "$OUT"
rm -f "$OUT/metrics.jsonl"  # a rerun is a new run: --metrics refuses another run's records
if [ -z "$MODEL_DIR" ]; then
  # A Llama 3-shaped folder at 17M parameters: GQA (8 query heads, 2 key-value heads), rope theta 500000,
  # BF16 weights in 2 shards with their index, a 256-token vocabulary for the byte-level tokens below.
  MODEL_DIR=$OUT/llama-like
  SHARD_SIZE=${SHARD_SIZE:-20e6}  # 34 MB of BF16 weights: two files, to show the shards and their index written
  /usr/bin/python3 "$HERE/../../perf/scripts/make_llama_folder.py" --out "$MODEL_DIR" --layers 6 --heads 8 \
    --kv-heads 2 --width 512 --head-dim 64 --ffn 1408 --vocab 256 --positions 1024 --theta 500000 \
    --dtype BF16 --shards 2
  # and a tokenizer.json for those tokens (byte-level BPE, no merges: id = the byte's value), which
  # --save-hf copies into the tuned folder as it copies a real model's tokenizer files.
  /usr/bin/python3 - "$MODEL_DIR/tokenizer.json" <<'PY'
import json, sys
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))  # GPT-2's bytes_to_unicode
cs = bs + [256 + n for n in range(256 - len(bs))]
char = dict(zip(bs + [b for b in range(256) if b not in bs], cs))
json.dump({"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
           "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
           "model": {"type": "BPE", "vocab": {chr(char[b]): b for b in range(256)}, "merges": []}},
          open(sys.argv[1], "w"), ensure_ascii=False)
PY
fi
if [ -z "$TOKENS" ]; then
  [ "$MODEL_DIR" = "$OUT/llama-like" ] || { echo "MODEL_DIR needs TOKENS: a token file made with its tokenizer" >&2; exit 1; }
  # Byte-level tokens of the built-in corpus, which fit the made folder's 256-token vocabulary.
  tierzero data prepare --output "$OUT/train.bin" --val-output "$OUT/val.bin" > /dev/null
  TOKENS=$OUT/train.bin
  VAL_TOKENS=$OUT/val.bin
fi
VAL=()
[ -z "$VAL_TOKENS" ] || VAL=(--val-data "$VAL_TOKENS" --val-every 10 --val-batches 4)
rm -rf "$OUT/tuned"
tierzero train --init-from "$MODEL_DIR" --data "$TOKENS" "${VAL[@]}" --dtype bf16 --seq-len 128 --micro-batch 4 \
  --lr 3e-4 --zero-stage 2 --offload-optimizer cpu --steps "$STEPS" --log-every 5 --metrics "$OUT/metrics.jsonl" \
  --save-hf "$OUT/tuned" --save-hf-dtype bf16 --save-hf-shard-size "${SHARD_SIZE:-5e9}"
ls -l "$OUT/tuned"
# Host memory (the host tier's bytes in use) and the optimizer's time, per step, from the metrics.
jq -r 'select(has("loss")) | [.step, .bytes.host / 1048576, .ms.optimizer, .ms.step, .loss] | @tsv' "$OUT/metrics.jsonl" \
  > "$OUT/per-step.tsv"
echo "step  host MiB  optimizer ms  step ms  loss"
awk '{printf "%4d %9.1f %13.1f %8.1f %6.3f\n", $1, $2, $3, $4, $5}' "$OUT/per-step.tsv"
awk 'NR > 1 {n++; o += $3; s += $4; h = $2} END {if (n) printf "mean of steps 2-%d: optimizer %.1f ms, step %.1f ms, host tier %.1f MiB\n", n + 1, o / n, s / n, h}' \
  "$OUT/per-step.tsv"
if command -v gnuplot > /dev/null; then
  gnuplot <<GP
set terminal pngcairo size 900,500
set output "$OUT/fine-tune.png"
set title "fine-tuning a Llama-shaped folder with the optimizer on the host: per step"
set xlabel "step"
set ylabel "ms (log scale)"
set logscale y
set y2label "host tier, MiB"
set y2range [0:*]
set y2tics
set ytics nomirror
set key outside bottom center horizontal maxrows 1
plot "$OUT/per-step.tsv" using 1:3 with linespoints title "optimizer (CPU Adam) ms", \
     "$OUT/per-step.tsv" using 1:4 with linespoints title "step ms", \
     "$OUT/per-step.tsv" using 1:2 axes x1y2 with lines title "host tier MiB"
GP
  echo "plot: $OUT/fine-tune.png"
else
  echo "gnuplot not installed: no plot (apt-get install gnuplot-nox)"
fi
