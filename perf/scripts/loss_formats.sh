#!/usr/bin/env bash
# The loss that compressed optimizer states give (issue 36): the quickstart's job (scripts/quickstart.sh: ZeRO
# stage 3, the optimizer on the host tier, the 4-block GPT on the built-in corpus, 2 ranks) for STEPS steps, for
# each learning rate x seed x format (m and v / master: fp32/fp32, int8/bf16-sr, bf16/fp32). Prints every run's
# final validation loss and a table per learning rate and format: the seeds' losses, their mean, the delta to
# fp32 states (each seed against fp32 at the same seed and learning rate, and the mean), and pass or fail
# against the goals (int8/bf16-sr within 0.02 nats of fp32, bf16/fp32 within 0.01; no NaN).
# Each run holds the shared lock (/tmp/tz-build.lock) while it runs: timing benchmarks on the machine run alone.
# A run whose metrics already end in a final validation is not run again (delete OUT to start over).
# usage: perf/scripts/loss_formats.sh [build-dir] [out-dir]
# env: STEPS (2000), SEEDS ("1337 1 2"), LRS (the peak learning rates: "2e-3 1e-3 4e-3", the quickstart's, half
#      and double; --min-lr is a tenth of each, as the quickstart's 2e-4 is of its 2e-3), FORMATS
#      ("fp32/fp32 int8/bf16-sr bf16/fp32"), NP (2 ranks), VAL_BATCHES (23: the whole validation split, the
#      corpus' last 10%, at 2 ranks x 4 x 128 tokens; the quickstart validates on its default 8).
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
OUT=${2:-/var/tmp/tz-loss-formats}
STEPS=${STEPS:-2000}
read -r -a SEEDS <<<"${SEEDS:-1337 1 2}"
read -r -a LRS <<<"${LRS:-2e-3 1e-3 4e-3}"
read -r -a FORMATS <<<"${FORMATS:-fp32/fp32 int8/bf16-sr bf16/fp32}"
NP=${NP:-2}
VAL_BATCHES=${VAL_BATCHES:-23}
TZ=$BUILD/launch/tierzero
[ -x "$TZ" ] || { echo "no $TZ: build it first" >&2; exit 1; }
mkdir -p "$OUT"
ROOT_FLAG=()
if [ "$(id -u)" -eq 0 ]; then
  ROOT_FLAG=(--allow-run-as-root)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
for lr in "${LRS[@]}"; do
  min_lr=$(/usr/bin/python3 -c "print(f'{float(\"$lr\") / 10:g}')")
  for seed in "${SEEDS[@]}"; do
    for fmt in "${FORMATS[@]}"; do
      states=${fmt%/*} master=${fmt#*/}
      name="lr$lr-seed$seed-$states-$master"
      metrics="$OUT/$name.jsonl"
      if [ -f "$metrics" ] && jq -s -e "any(.[]; .step == $STEPS and has(\"val_loss\"))" "$metrics" > /dev/null 2>&1; then
        echo "$name: done before"
        continue
      fi
      rm -f "$metrics"
      start=$(date +%s)
      # The quickstart's flags but --steps, --lr, --min-lr, --seed and the formats; --val-every 250 as it has,
      # so a validation ends the run at step STEPS. One OpenMP thread a rank, as the quickstart on 2 cores.
      status=0
      flock /tmp/tz-build.lock mpirun -np "$NP" --oversubscribe --bind-to none "${ROOT_FLAG[@]}" -x OMP_NUM_THREADS=1 \
        "$TZ" train --zero-stage 3 --offload-optimizer cpu --model tiny --n-layer 4 --n-head 4 --n-embd 128 \
        --seq-len 128 --micro-batch 4 --steps "$STEPS" --lr "$lr" --warmup 50 --lr-schedule cosine --min-lr "$min_lr" \
        --log-every 500 --val-every 250 --val-batches "$VAL_BATCHES" --seed "$seed" \
        --optimizer-states "$states" --master-weights "$master" --metrics "$metrics" \
        > "$OUT/$name.log" 2>&1 || status=$?
      echo "$name: exit $status, $(( $(date +%s) - start )) s"
    done
  done
done
/usr/bin/python3 - "$OUT" "$STEPS" "${LRS[*]}" "${SEEDS[*]}" "${FORMATS[*]}" <<'PY'
import json, math, statistics, sys
out, steps = sys.argv[1], int(sys.argv[2])
lrs, seeds, formats = sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
goal = {"int8/bf16-sr": 0.02, "bf16/fp32": 0.01}
def run(lr, seed, fmt):
    """The final validation loss (None if the run did not reach it) and whether any loss was not finite."""
    states, master = fmt.split("/")
    final, nonfinite = None, False
    try:
        lines = open(f"{out}/lr{lr}-seed{seed}-{states}-{master}.jsonl").read().splitlines()
    except FileNotFoundError:
        return None, False
    for line in lines:
        r = json.loads(line)  # Python reads NaN and Infinity, should a run write them
        for key in ("loss", "val_loss"):
            if key in r and (r[key] is None or not math.isfinite(r[key])):
                nonfinite = True
        if r.get("step") == steps and "val_loss" in r:
            final = r["val_loss"]
    return final, nonfinite
print(f"final validation loss after {steps} steps (nats); delta: the format's minus fp32/fp32's at the same seed")
print("lr      format        " + "  ".join(f"seed {s:>5}" for s in seeds) + "     mean   " +
      "  ".join(f"d seed {s:>5}" for s in seeds) + "   d mean  NaN  goal")
verdicts = []
for lr in lrs:
    base = {s: run(lr, s, "fp32/fp32")[0] for s in seeds}
    for fmt in formats:
        res = {s: run(lr, s, fmt) for s in seeds}
        vals = [res[s][0] for s in seeds]
        nan = any(res[s][1] for s in seeds)
        cells = "  ".join(f"{v:10.4f}" if v is not None else f"{'-':>10}" for v in vals)
        have = [v for v in vals if v is not None]
        mean = statistics.mean(have) if have else None
        deltas = [res[s][0] - base[s] if res[s][0] is not None and base[s] is not None else None for s in seeds]
        line = f"{lr:<7} {fmt:<13} {cells}  " + (f"{mean:8.4f}" if mean is not None else f"{'-':>8}")
        if fmt != "fp32/fp32":
            d_have = [d for d in deltas if d is not None]
            d_mean = statistics.mean(d_have) if d_have else None
            line += "  " + "  ".join(f"{d:+12.4f}" if d is not None else f"{'-':>12}" for d in deltas)
            line += "  " + (f"{d_mean:+7.4f}" if d_mean is not None else f"{'-':>7}")
        else:
            line += "  " + " " * (14 * len(seeds) - 2) + "  " + " " * 7
        line += f"  {'yes' if nan else 'no':>3}"
        if fmt in goal:
            complete = len(d_have) == len(seeds)
            # The goal per seed: every seed's own delta within the bound (not only the mean).
            if nan:
                verdict = "FAIL (NaN)"
            elif not complete:
                verdict = f"incomplete ({len(d_have)} of {len(seeds)} seeds)"
            else:
                each = all(abs(d) <= goal[fmt] for d in d_have)
                verdict = (f"every seed {'pass' if each else 'FAIL'}, "
                           f"mean {'pass' if abs(d_mean) <= goal[fmt] else 'FAIL'} (|d| <= {goal[fmt]})")
            line += f"  {verdict}"
            verdicts.append((lr, fmt, verdict, d_mean))
        print(line)
print()
for lr, fmt, verdict, d_mean in verdicts:
    print(f"lr {lr} {fmt}: {verdict}" + (f", mean delta {d_mean:+.4f}" if d_mean is not None else ""))
PY
