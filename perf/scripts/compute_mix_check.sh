#!/usr/bin/env bash
# The compute term against `bench step` on GPT-2 shapes other than the calibrated one (issue 33): for each
# shape, the forward + backward of one rank of THREADS threads (`tierzero bench step`, fp32, median of 5
# steps) beside the plan's compute term on HW (a `bench calibrate` file of the 6 x 384 model at 4 x 128),
# with its step_mix and without it (every model FLOP at the step rate, as before the mix). Each ratio is also
# given relative to the calibrated shape's own, which takes out the level of the file's rate (on a 2-vCPU VM
# a calibration's one-rank rate moved by 15% between runs) and leaves what the shape does.
# usage: perf/scripts/compute_mix_check.sh BUILD_DIR HW_JSON [THREADS]
set -euo pipefail
tz=$(cd "${1:?usage: compute_mix_check.sh BUILD_DIR HW_JSON [THREADS]}" && pwd)/launch/tierzero
hw=${2:?usage: compute_mix_check.sh BUILD_DIR HW_JSON [THREADS]}
threads=${3:-2}
[ -f "$hw" ] || { echo "compute_mix_check.sh: no hardware file '$hw'" >&2; exit 2; }
nomix=$(mktemp /var/tmp/tz-nomix.XXXXXX.json)
trap 'rm -f "$nomix"' EXIT
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("step_mix", None); json.dump(d, open(sys.argv[2], "w"))' "$hw" "$nomix"
echo "isa: $("$tz" bench step --n-layer 1 --n-embd 64 --n-head 1 --vocab 256 --seq-len 8 --micro-batch 1 --dtype fp32 --steps 1 --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["isa"])'), $threads threads"
printf "%-24s %10s %10s %7s %10s %7s\n" "shape (L C H T B)" "bench ms" "mix ms" ratio "flops ms" ratio
rows=()
for s in "6 384 6 128 4" "9 240 8 96 5" "7 272 8 80 6" "5 464 16 72 6" "4 544 17 112 4" "6 192 3 128 4" "8 256 4 64 8" "9 240 2 96 5"; do
  read -r L C H T B <<< "$s"
  shape=(--n-layer "$L" --n-embd "$C" --n-head "$H" --vocab 256 --seq-len "$T" --micro-batch "$B")
  measured=$(OMP_NUM_THREADS=$threads "$tz" bench step "${shape[@]}" --dtype fp32 --steps 5 --json |
             /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)["fp32"]; print(d["ms_forward"] + d["ms_backward"])')
  compute() { "$tz" plan --world 1 --threads-per-rank "$threads" "${shape[@]}" --zero-stage 0 --hardware "$1" | awk '/^  compute /{print $2}'; }
  row=$(awk -v s="$s" -v m="$measured" -v a="$(compute "$hw")" -v b="$(compute "$nomix")" \
        'BEGIN { printf "%-24s %10.1f %10.1f %7.2f %10.1f %7.2f", s, m, a, a / m, b, b / m }')
  echo "$row"
  rows+=("$row")
done
printf '%s\n' "${rows[@]}" | /usr/bin/python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
mix0, flat0 = float(rows[0][7]), float(rows[0][9])
for what, col, base in (("mix", 7, mix0), ("flops", 9, flat0)):
    e = [(float(r[col]) / base - 1) * 100 for r in rows[1:]]
    print("%-5s relative to the calibrated shape: %s; min %+.0f%%, max %+.0f%%, mean |error| %.1f%%" %
          (what, " ".join("%+.0f%%" % x for x in e), min(e), max(e), statistics.mean(abs(x) for x in e)))'
