#!/usr/bin/env bash
# SIGTERM to one rank mid-run (as Slurm's preemption or scancel --signal=TERM delivers it): every rank
# finishes the step, validates, writes --save-safetensors, removes its NVMe store and exits with
# 128 + 15. Run through expect_exit.sh (status, time, output); this script checks what is left on disk.
# usage: sigterm.sh [--signal INT] MPIRUN_ARGS... -- TIERZERO   (SIGINT: exit 128 + 2)
set -u
sig=TERM
if [ "${1:-}" = --signal ]; then sig=$2; shift 2; fi
mpirun_args=()
while (($#)) && [ "$1" != "--" ]; do mpirun_args+=("$1"); shift; done
shift
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"${mpirun_args[@]}" "$tierzero" train --zero-stage 3 --offload-optimizer nvme --offload-param nvme \
  --param-persistence-threshold 0 --nvme-path "$d" --steps 100000 --log-every 0 \
  --val-every 0 --val-batches 1 --metrics "$d/metrics.jsonl" --save-safetensors "$d/model.safetensors" &
job=$!
for _ in $(seq 200); do  # until a few steps are done
  [ -f "$d/metrics.jsonl" ] && [ "$(wc -l < "$d/metrics.jsonl")" -ge 3 ] && break
  sleep 0.1
done
pid=$(grep -l "OMPI_COMM_WORLD_RANK=1" /proc/[0-9]*/environ 2>/dev/null | sed 's#/proc/\([0-9]*\)/environ#\1#' |
      while read -r p; do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = tierzero ] && echo "$p"; done | head -n 1)
[ -n "$pid" ] || { echo "sigterm.sh: rank 1 not found"; kill "$job"; exit 1; }
echo "sigterm.sh: SIG$sig to rank 1 (pid $pid) after $(wc -l < "$d/metrics.jsonl") steps"
kill -"$sig" "$pid"
wait "$job"
rc=$?
[ -s "$d/model.safetensors" ] || { echo "sigterm.sh: the model was not saved"; exit 1; }
left=$(find "$d" -mindepth 1 -maxdepth 1 -name 'tierzero-*' | wc -l)
[ "$left" -eq 0 ] || { echo "sigterm.sh: $left NVMe store folder(s) left behind"; exit 1; }
echo "sigterm.sh: model saved, no store left behind"
exit $rc
