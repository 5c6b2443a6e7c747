#!/usr/bin/env bash
# A/B of perf/scripts/bench_io_vs_fio.sh on a RAM-backed loop device: ROUNDS rounds, each running every
# build in turn for one round (each run makes its own loop device); output per run in OUT/<build>-roundR.txt,
# medians with bench-io-ab-medians.py OUT. A build is a folder with launch/tierzero (a copy, so that
# rebuilding the tree does not change it mid-run). Run from the repository root, as root, under the lock.
# usage: bench-io-ab.sh ROUNDS OUT BUILD...   env: TZ_IO_CONFIGS as for bench_io_vs_fio.sh
set -euo pipefail
ROUNDS=$1 OUT=$2
shift 2
mkdir -p "$OUT"
for r in $(seq "$ROUNDS"); do
  for b in "$@"; do
    perf/scripts/bench_io_vs_fio.sh "$b" 1 ramloop 4G >"$OUT/$(basename "$b")-round$r.txt" 2>&1 ||
      echo "FAILED $b round $r" >>"$OUT/failed"
  done
done
