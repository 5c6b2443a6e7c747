#!/usr/bin/env bash
# Runs `tierzero bench step` (fp32 and bf16) and the PyTorch peer interleaved, ROUNDS times, on the
# gpt2 preset at micro-batch 4, seq-len 64, 2 threads; prints each run and the median ratios.
# usage: perf/scripts/bench_step_vs_torch.sh [build-dir] [rounds]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS=2
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Cooperlake}  # PyTorch's best setting on these CPUs
out=$(mktemp -d)
for r in $(seq "$ROUNDS"); do
  "$BUILD/launch/tierzero" bench step --model gpt2 --micro-batch 4 --seq-len 64 --steps 3 --warmup-steps 1 \
    --json | tee -a "$out/tz.jsonl"
  /usr/bin/python3 "$HERE/torch_gpt2_step.py" --threads 2 --steps 3 --warmup-steps 1 | tee -a "$out/torch.jsonl"
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
d = sys.argv[1]
tz = [json.loads(l) for l in open(d + "/tz.jsonl")]
pt = [json.loads(l) for l in open(d + "/torch.jsonl")]
f32 = statistics.median(r["fp32"]["ms_per_step"] for r in tz)
b16 = statistics.median(r["bf16"]["ms_per_step"] for r in tz)
ptm = statistics.median(r["ms_per_step"] for r in pt)
mm32 = statistics.median(max(r["fp32"]["matmul_gflops_mlp_shape"], r["fp32"]["matmul_gflops_2048"]) for r in tz)
mm16 = statistics.median(max(r["bf16"]["matmul_gflops_mlp_shape"], r["bf16"]["matmul_gflops_2048"]) for r in tz)
print(f"medians over {len(tz)} interleaved rounds:")
print(f"  tierzero fp32 {f32:.0f} ms/step, bf16 {b16:.0f} ms/step; pytorch fp32 {ptm:.0f} ms/step")
print(f"  ratio to pytorch fp32: tierzero fp32 {f32/ptm:.3f} (goal <= 0.40), tierzero bf16 {b16/ptm:.3f} (goal <= 0.15)")
print(f"  matmul limit measured in the same runs: fp32 {mm32:.0f} GFLOP/s, bf16 {mm16:.0f} GFLOP/s")
PY
