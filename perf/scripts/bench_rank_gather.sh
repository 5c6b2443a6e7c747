#!/usr/bin/env bash
# The cost of issue 32's per-step all-gather of every rank's figures (9 doubles a rank): short trainings
# at 2 and 4 ranks (the tiny model, --steps STEPS, one OpenMP thread a rank), each run's median
# ranks.gather_ms (rank 0's time in the gather: the call and the wait) and median ms.step over steps 3 on,
# and their ratio, beside the one-double all-reduces every step already makes (the loss, the gradient
# norm: comm.all_reduce.busy_ms per call) as the floor of any collective on the machine; prints the CPU
# and its ISA first (tierzero doctor --json).
# usage: perf/scripts/bench_rank_gather.sh [build-dir] [steps] [rounds]
set -euo pipefail
BUILD=${1:-build}
STEPS=${2:-60}
ROUNDS=${3:-3}
T=$BUILD/launch/tierzero
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$T" doctor --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
c = json.load(sys.stdin)["cpu"]
print("cpu %s, %d logical cores, isa %s" % (c["model"], c["logical_cores"], " ".join(c["isa"])))'
for np in 2 4; do
  for r in $(seq "$ROUNDS"); do
    mpirun -np "$np" --oversubscribe --allow-run-as-root --bind-to none --mca btl self,vader -x OMP_NUM_THREADS=1 \
      -x OMP_WAIT_POLICY=passive "$T" train --steps "$STEPS" --log-every 0 --val-batches 1 \
      --metrics "$out/np$np-$r.jsonl" > "$out/np$np-$r.log" 2>&1 || { cat "$out/np$np-$r.log"; exit 1; }
  done
done
/usr/bin/python3 - "$out" "$ROUNDS" "$STEPS" <<'PY'
import json, statistics, sys
d, rounds, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for np in (2, 4):
    g, s, a = [], [], []
    for r in range(1, rounds + 1):
        recs = [json.loads(l) for l in open(f"{d}/np{np}-{r}.jsonl") if '"loss"' in l]
        recs = [x for x in recs if x["step"] >= 3]
        g.append(statistics.median(x["ranks"]["gather_ms"] for x in recs))
        s.append(statistics.median(x["ms"]["step"] for x in recs))
        a.append(statistics.median(x["comm"]["all_reduce"]["busy_ms"] / x["comm"]["all_reduce"]["calls"] for x in recs))
    gm, sm, am = statistics.median(g), statistics.median(s), statistics.median(a)
    print(f"{np} ranks: gather {gm * 1000:.0f} us per step (rounds: {' '.join('%.0f' % (x * 1000) for x in g)}), "
          f"step {sm:.2f} ms (rounds: {' '.join('%.2f' % x for x in s)}): {100 * gm / sm:.2f}% of the step; "
          f"a one-double all-reduce of the step {am * 1000:.0f} us "
          f"(medians over steps 3-{steps} of {rounds} runs, tiny model)")
PY
