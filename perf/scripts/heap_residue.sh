#!/usr/bin/env bash
# What a one-rank training run holds beyond its planned buffers (the libraries line's subject): the growth
# of its peak resident set (VmHWM, as `train` prints it) less what `tierzero plan` lists without a hardware
# file (so no measured line), and the median step time of its last 9 of 12 steps.
# usage: perf/scripts/heap_residue.sh TIERZERO THREADS MODEL_FLAGS...     (a work folder under /var/tmp)
# Compare heaps by preloading one into a binary that links none (LD_PRELOAD=.../libtcmalloc_minimal.so.4).
set -euo pipefail
tz=$1 threads=$2; shift 2
work=$(mktemp -d /var/tmp/tz-heap.XXXXXX)
trap 'rm -rf "$work"' EXIT
planned=$("$tz" plan --world 1 --rank 0 "$@" --json |
          /usr/bin/python3 -c "import json,sys; b=json.load(sys.stdin)['ranks'][0]['bytes']; print(b['device']+b['host'])")
OMP_NUM_THREADS=$threads "$tz" train "$@" --steps 12 --log-every 0 --val-batches 1 --metrics "$work/m.jsonl" \
  > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
grew=$(grep -o "resident set (VmHWM) grew [0-9.]* [KMG]*i*B" "$work/run.log" | awk '{print $5, $6}')
/usr/bin/python3 - "$planned" "$grew" "$work/m.jsonl" "$threads" "$*" <<'PY'
import json, statistics, sys
planned, grew, metrics, threads, flags = sys.argv[1:]
v, unit = grew.split()
grew_mib = float(v) * {"GiB": 1024, "MiB": 1, "KiB": 1 / 1024}[unit]
steps = [json.loads(l)["ms"]["step"] for l in open(metrics) if '"loss"' in l][-9:]
print(f"{flags} | threads {threads} | planned {int(planned) / 2**20:.1f} MiB | grew {grew_mib:.2f} MiB | "
      f"beyond the plan {grew_mib - int(planned) / 2**20:.2f} MiB | step {statistics.median(steps):.1f} ms")
PY
