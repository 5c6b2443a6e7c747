#!/usr/bin/env bash
# Runs perf/scripts/torch_gpt2_peer.py (the PyTorch peer of the GPU training step) at tiny size on the CPU
# with Debian's torch, so its first real run is not on a GPU lease: every JSON key, falling finite losses,
# MFU against --peak-tflops, the 1.13 fallbacks, --compile 1 skipped with exit 77, and its FLOPs per token
# equal to tierzero bench mfu's for the same model and sequence length.
#
#   torch_peer_test.sh TIERZERO_BINARY
# Exits 77 (a ctest skip) when /usr/bin/python3 cannot import torch.
set -u

TZ=${1:?usage: torch_peer_test.sh TIERZERO_BINARY}
[[ "$TZ" == /* ]] || TZ=$PWD/$TZ  # the tierzero train below runs in the work folder
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
PEER=$ROOT/perf/scripts/torch_gpt2_peer.py
ARGS=(--model tiny --device cpu --micro-batch 2 --seq-len 64 --grad-accum 2 --steps 4 --skip 1 --threads 1 --json)
W=$(mktemp -d "${TMPDIR:-/tmp}/torch_peer_test.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

fail() {
  echo "torch_peer_test: FAILED: $*" >&2
  for f in "$W"/*.json "$W"/*.err; do [[ -s "$f" ]] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}
# expect FILE JQ_FILTER: the filter must hold (jq -e) on the JSON in FILE.
expect() { jq -e "$2" "$1" >/dev/null || fail "$(basename "$1"): expected $2"; }

if ! why=$("$PY" -c 'import torch' 2>&1); then
  echo "torch_peer_test: skipped: $PY cannot import torch (apt-get install python3-torch): ${why##*$'\n'}" >&2
  exit 77
fi

# ---- the run: every key, with its type ----------------------------------------------------------------
"$PY" "$PEER" "${ARGS[@]}" >"$W/run.out" 2>"$W/run.err" || fail "the tiny run exited $?"
(($(wc -l <"$W/run.out") == 1)) || fail "--json must print exactly one line, printed $(wc -l <"$W/run.out")"
cp "$W/run.out" "$W/run.json"
R=$W/run.json
for k in schema model device device_name torch_version dtype; do expect "$R" ".$k | type == \"string\""; done
for k in micro_batch seq_len grad_accum steps skip parameters parameters_no_wpe tokens_per_step ms_per_step \
  tokens_per_s flops_per_token tflops peak_memory_bytes seconds_total; do
  expect "$R" ".$k | type == \"number\""
done
for k in compiled fused_adamw sdpa; do expect "$R" ".$k | type == \"boolean\""; done
for k in fallbacks ms_per_step_all losses; do expect "$R" ".$k | type == \"array\""; done
expect "$R" 'has("cuda_version") and has("peak_tflops") and has("mfu") and (.flops_formula | type == "string")'
expect "$R" '.schema == "tierzero-torch-peer/1" and .model == "tiny" and .device == "cpu" and .dtype == "bf16"'
expect "$R" '[.micro_batch, .seq_len, .grad_accum, .steps, .skip] == [2, 64, 2, 4, 1] and .compiled == false'

# ---- the figures ---------------------------------------------------------------------------------------
# model/gpt_config.cc's tiny: 2 layers of 64, vocab 256 (already a multiple of 128), 64 positions.
expect "$R" '.parameters == 120576 and .parameters_no_wpe == .parameters - 64 * 64'
expect "$R" '.tokens_per_step == 2 * 64 * 2 and .flops_per_token == 6 * .parameters_no_wpe + 12 * 2 * 64 * 64'
expect "$R" '(.ms_per_step_all | length) == 4 and all(.ms_per_step_all[]; . > 0) and .ms_per_step > 0'
expect "$R" '.ms_per_step == (.ms_per_step_all[1:] | sort | .[1])'  # the median of the 3 measured
expect "$R" '((.tokens_per_s - .tokens_per_step / (.ms_per_step / 1000)) | fabs) < 1e-6 * .tokens_per_s'
expect "$R" '((.tflops - .tokens_per_s * .flops_per_token / 1e12) | fabs) < 1e-9 * .tflops'
expect "$R" '(.losses | length) == 4 and all(.losses[]; isinfinite | not) and all(.losses[]; isnan | not)'
expect "$R" '.losses[-1] < .losses[0] and .losses[0] > 4 and .losses[0] < 7'  # ~ln 256 at the start
expect "$R" '.peak_memory_bytes > 1048576 and .seconds_total > 0'
expect "$R" '.peak_tflops == null and .mfu == null'

# ---- what torch 1.13 lacks, recorded as fallbacks --------------------------------------------------------
if [[ "$(jq -r .torch_version "$R")" == 1.* ]]; then
  expect "$R" '.sdpa == false and .fused_adamw == false'
  expect "$R" 'any(.fallbacks[]; test("scaled_dot_product_attention")) and any(.fallbacks[]; test("fused AdamW"))'
fi
expect "$R" '(.fallbacks | length) == ([.sdpa, .fused_adamw] | map(select(. == false)) | length)
  + (if .dtype_run == .dtype then 0 else 1 end)'

# ---- MFU against a given peak ----------------------------------------------------------------------------
"$PY" "$PEER" "${ARGS[@]}" --peak-tflops 1 >"$W/peak.json" 2>"$W/peak.err" || fail "--peak-tflops 1 exited $?"
expect "$W/peak.json" '.peak_tflops == 1 and .mfu == .tflops / .peak_tflops and .mfu > 0'

# ---- torch.compile: run where it exists, a skip (77) with its reason where it does not --------------------
"$PY" "$PEER" "${ARGS[@]}" --compile 1 >"$W/compile.json" 2>"$W/compile.err"
rc=$?
if "$PY" -c 'import sys, torch; sys.exit(0 if hasattr(torch, "compile") else 1)'; then
  ((rc == 0 || rc == 1)) || fail "--compile 1 with torch.compile present exited $rc"
else
  ((rc == 77)) || fail "--compile 1 without torch.compile must exit 77, exited $rc"
  tail -n 1 "$W/compile.err" | grep -q 'torch\.compile' || fail "the last stderr line must name torch.compile"
  expect "$W/compile.json" '.compiled == false and any(.fallbacks[]; test("torch.compile"))'
fi

# ---- no GPU for --device cuda: a skip with its reason on the last line --------------------------------------
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  "$PY" "$PEER" --model tiny --device cuda --json >"$W/cuda.out" 2>"$W/cuda.err"
  rc=$?
  ((rc == 77)) || fail "--device cuda without a GPU must exit 77, exited $rc"
  tail -n 1 "$W/cuda.err" | grep -q 'no GPU' || fail "the last stderr line must say there is no GPU"
fi

# ---- the same FLOPs per token as tierzero bench mfu (perf/train_mfu.cc) -------------------------------------
(cd "$W" && "$TZ" train --model tiny --seq-len 64 --micro-batch 2 --steps 2 --metrics m.jsonl >train.log 2>&1) ||
  fail "tierzero train --model tiny exited $? ($(tail -n 1 "$W/train.log"))"
"$TZ" bench mfu --metrics "$W/m.jsonl" --model tiny --seq-len 64 --skip 0 --peak-tflops 1 --json \
  >"$W/mfu.json" 2>"$W/mfu.err" || fail "tierzero bench mfu exited $?"
tz_fpt=$(jq -e .flops_per_token "$W/mfu.json") || fail "bench mfu printed no flops_per_token"
expect "$R" ".flops_per_token == $tz_fpt"
expect "$R" ".flops_formula | startswith($(jq .flops_formula "$W/mfu.json"))"

# ---- from tierzero's own weights and tokens: the same losses ------------------------------------------------
# tierzero writes its initial weights (one step at lr 0 changes none) as a Hugging Face folder; both sides
# then train from it on the same token file's windows, in fp32 on the cpu: every step's loss within 1e-5.
"$PY" -c "import sys; sys.path.insert(0, '$ROOT/perf/scripts'); import numpy as np, peer_data
peer_data.write_tokens('$W/tok.bin', np.random.default_rng(5).integers(0, 256, 20000), 256)" || fail "write_tokens"
(cd "$W" && "$TZ" train --model tiny --steps 1 --lr 0 --seq-len 64 --data tok.bin --val-batches 1 --log-every 0 \
  --save-hf init >export.log 2>&1) || fail "tierzero --save-hf exited $? ($(tail -n 1 "$W/export.log"))"
(cd "$W" && "$TZ" train --init-from init --data tok.bin --steps 4 --micro-batch 2 --seq-len 64 --grad-accum 2 \
  --val-batches 1 --log-every 0 --metrics same.jsonl >same.log 2>&1) || fail "tierzero --init-from exited $?"
"$PY" "$PEER" --model tiny --device cpu --dtype fp32 --micro-batch 2 --seq-len 64 --grad-accum 2 --steps 4 --skip 1 \
  --threads 1 --init-from "$W/init" --data "$W/tok.bin" --json >"$W/same.json" 2>"$W/same.err" || fail "--init-from exited $?"
jq -s -c '[.[] | select(.loss != null) | .loss]' "$W/same.jsonl" >"$W/tz_losses.json"
expect "$W/same.json" ".init_from == \"$W/init\" and .data == \"$W/tok.bin\" and (.losses | length) == 4"
expect "$W/same.json" "[.losses, $(cat "$W/tz_losses.json")] | transpose | all(((.[0] - .[1]) | fabs) <= 1e-5 * .[1])"

echo "torch_peer_test: passed (torch $(jq -r .torch_version "$R"), $(jq -r '.ms_per_step | . * 10 | round / 10' "$R") ms/step," \
  "losses $(jq -c '[.losses[] | . * 1000 | round / 1000]' "$R"), flops/token $tz_fpt as tierzero's)"
