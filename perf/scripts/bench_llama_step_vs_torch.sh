#!/usr/bin/env bash
# A Llama-family training step in tierzero and in plain PyTorch 1.13, interleaved ROUNDS times: `tierzero
# bench step --model MODEL --dtype fp32` (the training path: plan, engine, model, AdamW) and
# perf/scripts/torch_llama_step.py (the same model, batch and thread count), micro-batch 4, seq-len 64,
# 2 threads; prints each run and the median ratio (goal: tierzero <= 0.3 of PyTorch's time in fp32).
# usage: perf/scripts/bench_llama_step_vs_torch.sh [build-dir] [rounds] [model]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
MODEL=${3:-qwen2.5-0.5b}
HERE=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS=2
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Cooperlake}  # PyTorch's best setting on these CPUs
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$ROUNDS"); do
  "$BUILD/launch/tierzero" bench step --model "$MODEL" --dtype fp32 --micro-batch 4 --seq-len 64 --steps 3 \
    --warmup-steps 1 --json | tee -a "$out/tz.jsonl"
  /usr/bin/python3 "$HERE/torch_llama_step.py" --model "$MODEL" --threads 2 --steps 3 --warmup-steps 1 |
    tee -a "$out/torch.jsonl"
done
/usr/bin/python3 - "$out" "$MODEL" <<'PY'
import json, statistics, sys
d, model = sys.argv[1], sys.argv[2]
tz = [json.loads(l) for l in open(d + "/tz.jsonl")]
pt = [json.loads(l) for l in open(d + "/torch.jsonl")]
med = lambda rows, k: statistics.median(r[k] for r in rows)
f32 = [r["fp32"] for r in tz]
print(f"medians over {len(tz)} interleaved rounds ({model}, micro-batch 4 x seq 64, 2 threads, isa {tz[0].get('isa', '?')}):")
for name, rows in (("tierzero fp32", f32), ("pytorch fp32", pt)):
    print(f"  {name}: {med(rows, 'ms_per_step'):.0f} ms/step (forward {med(rows, 'ms_forward'):.0f}, backward "
          f"{med(rows, 'ms_backward'):.0f}, adamw {med(rows, 'ms_optimizer'):.0f})")
print(f"  tierzero rounds: {' '.join('%.0f' % r['ms_per_step'] for r in f32)}; pytorch rounds: "
      f"{' '.join('%.0f' % r['ms_per_step'] for r in pt)}")
print(f"  GFLOP/s tierzero {med(f32, 'gflops'):.0f}; matmul limit in the same runs: {med(f32, 'matmul_gflops_mlp_shape'):.0f} "
      f"at the MLP shape, {med(f32, 'matmul_gflops_2048'):.0f} at 2048^3")
ratio = med(f32, "ms_per_step") / med(pt, "ms_per_step")
print(f"  ratio to pytorch fp32: {ratio:.3f} (goal <= 0.30); tierzero learns: {all(r['learns'] for r in f32)}")
PY
