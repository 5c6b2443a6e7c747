#!/usr/bin/env bash
# Resume is exact after a kill -9: at 2 ranks, ZeRO stage 3 with the optimizer states on NVMe, a run
# checkpointing every 10 steps is killed (SIGKILL to rank 1) during step 12; --resume latest continues
# from step 10 to 20, and its losses for steps 11-20 and its final weights equal, bit for bit, those of
# a run that went 20 steps straight, and the killed job's NVMe stores are removed by the resumed one.
# Exits 0 when all that holds; prints what differs otherwise.
# usage: ckpt_kill_resume.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# Steps of ~0.1 s, so that a kill lands inside step 12's window.
common=(train --zero-stage 3 --offload-optimizer nvme --nvme-path "$d" --param-persistence-threshold 0
        --n-layer 4 --n-embd 256 --seq-len 128 --micro-batch 4 --log-every 0 --val-batches 1)
"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps 20 --metrics "$d/straight.jsonl" \
  --save-safetensors "$d/straight.safetensors" > "$d/straight.log" 2>&1 || { cat "$d/straight.log"; exit 1; }

"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps 20 --save-dir "$d/ckpt" --save-every 10 \
  --metrics "$d/killed.jsonl" > "$d/killed.log" 2>&1 &
job=$!
for _ in $(seq 3000); do  # until step 11 is reported: step 12 is running
  [ "$(metrics_steps "$d/killed.jsonl")" -ge 11 ] && break
  sleep 0.01
done
pid=$(rank_pid "$job" 1)
[ -n "$pid" ] || { echo "ckpt_kill_resume.sh: rank 1 not found"; exit 1; }
kill -9 "$pid"
wait "$job" && { echo "ckpt_kill_resume.sh: the killed job exited 0"; exit 1; }
steps=$(metrics_steps "$d/killed.jsonl")
echo "ckpt_kill_resume.sh: rank 1 killed with $steps steps reported"
[ "$steps" -ge 11 ] && [ "$steps" -lt 20 ] || { echo "ckpt_kill_resume.sh: the kill missed steps 12-19"; exit 1; }
[ "$(cat "$d/ckpt/latest")" = step-00000010 ] || { echo "ckpt_kill_resume.sh: latest is not step-00000010"; exit 1; }

"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps 20 --save-dir "$d/ckpt" --resume latest \
  --metrics "$d/resumed.jsonl" --save-safetensors "$d/resumed.safetensors" > "$d/resumed.log" 2>&1 ||
  { cat "$d/resumed.log"; exit 1; }
grep "resuming from" "$d/resumed.log"
# The killed job's NVMe stores on the same path are recognised and removed, with a message.
grep "removed NVMe store" "$d/resumed.log" || { echo "ckpt_kill_resume.sh: the killed run's store was not removed"; exit 1; }
[ -z "$(find "$d" -maxdepth 1 -name 'tierzero-*')" ] || { echo "ckpt_kill_resume.sh: stores left behind"; exit 1; }
losses() { grep '"step":' "$1" | grep -v val_loss | grep -o '"loss":[^,]*' | tail -n 10; }
if ! diff <(losses "$d/straight.jsonl") <(losses "$d/resumed.jsonl"); then
  echo "ckpt_kill_resume.sh: the losses of steps 11-20 differ"; exit 1
fi
cmp "$d/straight.safetensors" "$d/resumed.safetensors" || { echo "ckpt_kill_resume.sh: the weights differ"; exit 1; }
echo "ckpt_kill_resume.sh: steps 11-20 and the final weights equal the straight run's bitwise"
