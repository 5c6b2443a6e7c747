#!/usr/bin/env bash
# Per-step time split (forward, backward, optimizer, time waiting on collectives) of one training run
# per ZeRO stage at N ranks, from the --metrics JSONL; medians over the steps after the first.
# usage: perf/scripts/stage_split.sh [build-dir] [ranks] [steps] [extra train flags...]
set -euo pipefail
BUILD=${1:-build}
NP=${2:-2}
STEPS=${3:-6}
shift $(( $# < 3 ? $# : 3 ))
EXTRA=("$@")
if [ ${#EXTRA[@]} -eq 0 ]; then EXTRA=(--model gpt2 --micro-batch 2 --seq-len 64); fi
ROOT_FLAG=""
if [ "$(id -u)" -eq 0 ]; then ROOT_FLAG="--allow-run-as-root"; fi
THREADS=$(( $(nproc) / NP )); if [ "$THREADS" -lt 1 ]; then THREADS=1; fi
out=$(mktemp -d)
for stage in 0 1 2 3; do
  mpirun -np "$NP" --oversubscribe --bind-to none $ROOT_FLAG -x OMP_NUM_THREADS="$THREADS" "$BUILD/launch/tierzero" train \
    --zero-stage "$stage" --steps "$STEPS" --log-every 0 --val-batches 1 --metrics "$out/stage$stage.jsonl" \
    "${EXTRA[@]}" > "$out/stage$stage.log"
  grep -m1 "^model" "$out/stage$stage.log"
done
/usr/bin/python3 - "$out" "$NP" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
print(f"{n} ranks; medians over steps 2..; ms per step (comm wait = time blocked in collectives, inside the phases)")
print("stage | step ms | forward | backward | optimizer | comm wait | wait share | elements sent per rank per step")
for s in range(4):
    recs = [json.loads(l) for l in open(f"{d}/stage{s}.jsonl")]
    recs = [r for r in recs if "loss" in r][1:]
    med = lambda k: statistics.median(r["ms"][k] for r in recs)
    sent = statistics.median(sum(v["elements_sent"] for v in r["comm"].values()) for r in recs)
    print(f"{s:5d} | {med('step'):7.0f} | {med('forward'):7.0f} | {med('backward'):8.0f} | {med('optimizer'):9.0f} | "
          f"{med('comm_wait'):9.0f} | {med('comm_wait')/med('step'):9.1%} | {sent:,.0f}")
PY
