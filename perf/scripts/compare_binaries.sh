#!/usr/bin/env bash
# Two tierzero binaries, interleaved round by round on the same machine: the gpt2 step (bench step,
# fp32 and bf16, micro-batch 4, seq-len 64, 2 threads) and the quickstart job's step (2 ranks, ZeRO-3,
# optimizer on the host tier, 4-block GPT; the mean step time of a 300-step run without validation,
# from its metrics). Prints each run and, per measure, the medians and the median of the per-round
# ratios NEW / OLD.
# usage: perf/scripts/compare_binaries.sh OLD_TIERZERO NEW_TIERZERO [rounds]
set -euo pipefail
OLD=$1
NEW=$2
ROUNDS=${3:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ROOT_FLAG=""
if [ "$(id -u)" -eq 0 ]; then ROOT_FLAG="--allow-run-as-root"; fi
quickstart() {  # $1 binary, $2 metrics file
  mpirun -np 2 --oversubscribe --bind-to none $ROOT_FLAG -x OMP_NUM_THREADS=1 \
    "$1" train --zero-stage 3 --offload-optimizer cpu --model tiny --n-layer 4 --n-head 4 --n-embd 128 \
    --seq-len 128 --micro-batch 4 --steps 300 --lr 2e-3 --warmup 50 --lr-schedule cosine --min-lr 2e-4 \
    --log-every 0 --val-every 0 --val-batches 1 --metrics "$2" > /dev/null
}
for r in $(seq "$ROUNDS"); do
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    OMP_NUM_THREADS=2 "$bin" bench step --model gpt2 --micro-batch 4 --seq-len 64 --steps 3 --warmup-steps 1 \
      --json | tail -n 1 >> "$out/step-$which.jsonl"
    quickstart "$bin" "$out/qs-$which-$r.jsonl"
    echo "round $r $which: done"
  done
done
/usr/bin/python3 - "$out" "$ROUNDS" <<'PY'
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def steps(which):
    return [json.loads(l) for l in open(f"{d}/step-{which}.jsonl")]
def qs(which, r):
    recs = [json.loads(l) for l in open(f"{d}/qs-{which}-{r}.jsonl")]
    ms = [x["ms"]["step"] for x in recs if "ms" in x][50:]  # past warm-up
    return statistics.mean(ms)
old, new = steps("old"), steps("new")
for dt in ("fp32", "bf16"):
    o = [x[dt]["ms_per_step"] for x in old]; n = [x[dt]["ms_per_step"] for x in new]
    ratio = statistics.median(b / a for a, b in zip(o, n))
    print(f"gpt2 {dt} step: old {statistics.median(o):.0f} ms, new {statistics.median(n):.0f} ms, "
          f"median per-round ratio new/old {ratio:.3f}  (old {[round(x) for x in o]}, new {[round(x) for x in n]})")
o = [qs("old", r) for r in range(1, rounds + 1)]; n = [qs("new", r) for r in range(1, rounds + 1)]
ratio = statistics.median(b / a for a, b in zip(o, n))
print(f"quickstart step (2 ranks, ZeRO-3, optimizer on the host, mean of steps 51-300): old {statistics.median(o):.2f} ms, "
      f"new {statistics.median(n):.2f} ms, median per-round ratio new/old {ratio:.3f}  "
      f"(old {[round(x, 2) for x in o]}, new {[round(x, 2) for x in n]})")
PY
