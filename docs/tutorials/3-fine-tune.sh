#!/usr/bin/env bash
# Tutorial 3 (docs/tutorials/3-fine-tune.md): fine-tuning a Hugging Face Llama-family model folder with the
# optimizer on the host (ZeRO-Offload), writing the tuned model as a Hugging Face folder, and reporting host
# memory and the optimizer's time per step, with a plot; then the same run with compressed optimizer states
# (int8 Adam moments, a bf16 master rounded stochastically) beside it. MODEL_DIR: a model folder from Hugging Face (e.g.
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
# Each run's log goes to the screen and to a file, from which the last line's resident set growth is read.
tierzero train --init-from "$MODEL_DIR" --data "$TOKENS" "${VAL[@]}" --dtype bf16 --seq-len 128 --micro-batch 4 \
  --lr 3e-4 --zero-stage 2 --offload-optimizer cpu --steps "$STEPS" --log-every 5 --metrics "$OUT/metrics.jsonl" \
  --save-hf "$OUT/tuned" --save-hf-dtype bf16 --save-hf-shard-size "${SHARD_SIZE:-5e9}" 2>&1 | tee "$OUT/train.log"
ls -l "$OUT/tuned"
# The same run with int8 Adam moments and a bf16 master rounded stochastically (docs/optimizer.md#compressed-
# optimizer-states): a third of the optimizer's host memory, at the CPU update's cost in time.
rm -f "$OUT/metrics-int8.jsonl"
tierzero train --init-from "$MODEL_DIR" --data "$TOKENS" "${VAL[@]}" --dtype bf16 --seq-len 128 --micro-batch 4 \
  --lr 3e-4 --zero-stage 2 --offload-optimizer cpu --steps "$STEPS" --log-every 5 --metrics "$OUT/metrics-int8.jsonl" \
  --optimizer-states int8 --master-weights bf16-sr 2>&1 | tee "$OUT/train-int8.log"
# Host memory (the host tier's bytes in use) and the optimizer's time, per step, from the metrics.
for run in "" -int8; do
  jq -r 'select(has("loss")) | [.step, .bytes.host / 1048576, .ms.optimizer, .ms.step, .loss] | @tsv' \
    "$OUT/metrics$run.jsonl" > "$OUT/per-step$run.tsv"
done
echo "fp32 states:  step  host MiB  optimizer ms  step ms  loss"
awk '{printf "%4d %9.1f %13.1f %8.1f %6.3f\n", $1, $2, $3, $4, $5}' "$OUT/per-step.tsv"
# Per format: the host tier, the resident set's growth (the train log's last line), the mean optimizer and step
# times after the first step, the last validation loss; a table for the plot's right panel too.
rss_mib() { sed -n 's/.*resident set (VmHWM) grew \([0-9.]*\) \([KMG]i\?B\).*/\1 \2/p' "$1" | tail -1 |
  awk '{m = $1; if ($2 ~ /^G/) m *= 1024; if ($2 ~ /^K/) m /= 1024; printf "%.1f", m}'; }
val_loss() { jq -r 'select(has("val_loss")) | .val_loss' "$1" | tail -1; }
{
  printf "format\thost_tier_MiB\trss_growth_MiB\toptimizer_ms\tstep_ms\tval_loss\n"
  for run in "" -int8; do
    case $run in "") name="fp32" log=train.log ;; *) name="int8+bf16-sr" log=train-int8.log ;; esac
    awk -v name="$name" -v rss="$(rss_mib "$OUT/$log")" -v val="$(val_loss "$OUT/metrics$run.jsonl")" \
      'NR > 1 {n++; o += $3; s += $4} {h = $2}
       END {printf "%s\t%.1f\t%s\t%.1f\t%.1f\t%s\n", name, h, rss, n ? o / n : 0, n ? s / n : 0,
            val == "" ? "-" : sprintf("%.4f", val)}' \
      "$OUT/per-step$run.tsv"
  done
} > "$OUT/formats.tsv"
echo "mean of steps 2-$STEPS per format (optimizer states and master):"
column -t -s $'\t' "$OUT/formats.tsv"
# The right panel's bars: the two memory figures (rows) of each format (columns).
awk -F'\t' 'NR == 2 {h1 = $2; r1 = $3} NR == 3 {h2 = $2; r2 = $3}
  END {printf "\"host tier\"\t%s\t%s\n\"resident set growth\"\t%s\t%s\n", h1, h2, r1, r2}' "$OUT/formats.tsv" \
  > "$OUT/memory.tsv"
if command -v gnuplot > /dev/null; then
  gnuplot <<GP
set terminal pngcairo size 1000,500
set output "$OUT/fine-tune.png"
set multiplot layout 1,2 title "fine-tuning a Llama-shaped folder with the optimizer on the host: fp32 against int8 states"
set title "per step"
set xlabel "step"
set ylabel "ms (log scale)"
set logscale y
set key outside bottom center horizontal maxrows 2
plot "$OUT/per-step.tsv" using 1:3 with linespoints lc 1 title "optimizer, fp32", \
     "$OUT/per-step-int8.tsv" using 1:3 with linespoints lc 2 title "optimizer, int8 + bf16-sr", \
     "$OUT/per-step.tsv" using 1:4 with lines lc 1 dt 2 title "step, fp32", \
     "$OUT/per-step-int8.tsv" using 1:4 with lines lc 2 dt 2 title "step, int8 + bf16-sr"
unset logscale y
set title "host memory"
set xlabel ""
set ylabel "MiB"
set yrange [0:*]
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
plot "$OUT/memory.tsv" using 2:xtic(1) title "fp32" lc 1, "" using 3 title "int8 + bf16-sr" lc 2
unset multiplot
GP
  echo "plot: $OUT/fine-tune.png"
else
  echo "gnuplot not installed: no plot (apt-get install gnuplot-nox)"
fi
