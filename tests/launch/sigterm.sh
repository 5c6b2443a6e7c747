#!/usr/bin/env bash
# SIGTERM to one rank mid-run (as Slurm's preemption or scancel --signal=TERM delivers it): every rank
# finishes the step, validates, writes --save-safetensors, removes its NVMe store and exits with
# 128 + 15. Run through expect_exit.sh (status, time, output); this script checks what is left on disk.
# With --checkpoint the run also has --save-dir: it must save a checkpoint of the step it stopped after
# and still exit 128 + 15, and a run resumed from it 3 more steps must equal, bit for bit (losses and weights), a run
# that went those steps straight.
# usage: sigterm.sh [--signal INT] [--checkpoint] MPIRUN_ARGS... -- TIERZERO   (SIGINT: exit 128 + 2)
set -u
source "$(dirname "$0")/launch_lib.sh"
sig=TERM ckpt=0
if [ "${1:-}" = --signal ]; then sig=$2; shift 2; fi
if [ "${1:-}" = --checkpoint ]; then ckpt=1; shift; fi
split_launch_args "$@"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
common=(train --zero-stage 3 --offload-optimizer nvme --offload-param nvme --param-persistence-threshold 0
        --nvme-path "$d" --log-every 0 --val-every 0 --val-batches 1)
extra=()
[ "$ckpt" = 1 ] && extra=(--save-dir "$d/ckpt")
"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps 100000 --metrics "$d/metrics.jsonl" \
  --save-safetensors "$d/model.safetensors" "${extra[@]}" &
job=$!
for _ in $(seq 200); do  # until a few steps are done
  [ "$(metrics_steps "$d/metrics.jsonl")" -ge 3 ] && break
  sleep 0.1
done
pid=$(rank_pid "$job" 1)
[ -n "$pid" ] || { echo "sigterm.sh: rank 1 not found"; kill "$job"; exit 1; }
echo "sigterm.sh: SIG$sig to rank 1 (pid $pid) after $(metrics_steps "$d/metrics.jsonl") steps"
kill -"$sig" "$pid"
wait "$job"
rc=$?
[ -s "$d/model.safetensors" ] || { echo "sigterm.sh: the model was not saved"; exit 1; }
left=$(find "$d" -mindepth 1 -maxdepth 1 -name 'tierzero-*' | wc -l)
[ "$left" -eq 0 ] || { echo "sigterm.sh: $left NVMe store folder(s) left behind"; exit 1; }
echo "sigterm.sh: model saved, no store left behind"
# The metrics end with the end record of the step it stopped after, naming the signal (issue 32).
want_end="{\"event\":\"end\",\"signal\":$(kill -l "$sig"),\"step\":$(metrics_steps "$d/metrics.jsonl")}"
[ "$(tail -n 1 "$d/metrics.jsonl")" = "$want_end" ] ||
  { echo "sigterm.sh: the last metrics line is '$(tail -n 1 "$d/metrics.jsonl")', not '$want_end'"; exit 1; }
[ "$ckpt" = 1 ] || exit $rc
steps=$(metrics_steps "$d/metrics.jsonl")
[ "$(cat "$d/ckpt/latest")" = "$(printf 'step-%08d' "$steps")" ] ||
  { echo "sigterm.sh: latest is '$(cat "$d/ckpt/latest")', not the checkpoint of step $steps"; exit 1; }
"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps $((steps + 3)) --save-dir "$d/ckpt" --resume latest \
  --metrics "$d/resumed.jsonl" --save-safetensors "$d/resumed.safetensors" > "$d/resumed.log" 2>&1 ||
  { cat "$d/resumed.log"; exit 1; }
"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps $((steps + 3)) --metrics "$d/straight.jsonl" \
  --save-safetensors "$d/straight.safetensors" > "$d/straight.log" 2>&1 || { cat "$d/straight.log"; exit 1; }
losses() { grep '"step":' "$1" | grep -v val_loss | grep -o '"loss":[^,]*' | tail -n 3; }
diff <(losses "$d/straight.jsonl") <(losses "$d/resumed.jsonl") || { echo "sigterm.sh: resumed losses differ"; exit 1; }
cmp "$d/straight.safetensors" "$d/resumed.safetensors" || { echo "sigterm.sh: resumed weights differ"; exit 1; }
echo "sigterm.sh: checkpoint of step $steps saved; resumed 3 steps equal the straight run bitwise"
exit $rc
