#!/usr/bin/env bash
# A checkpoint loads on another world size, stage and offload without conversion: written by 4 ranks at
# ZeRO stage 3 with optimizer and parameters on NVMe (micro-batch 2), it is resumed at 4 ranks as
# written, at 2 ranks at stage 1 (micro-batch 4) and at 1 rank at stage 0 (micro-batch 8): the same
# global batch of 8 sequences, so the next 5 losses must match the 4-rank continuation within 1e-5
# relative (only the order of the sums over ranks differs). Exits 0 when they do. TZ_RESHARD_FLAGS adds
# flags to every run (compressed states: int8 moments and a bf16-sr master, on NVMe, then on the device).
# usage: ckpt_reshard.sh MPIEXEC -- TIERZERO   (MPIEXEC takes -np N after it; as root, the environment
# must allow mpirun as root)
set -u
mpiexec=()
while (($#)) && [ "$1" != "--" ]; do mpiexec+=("$1"); shift; done
shift
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
run() { local log=$1; shift; "$@" > "$d/$log.log" 2>&1 || { cat "$d/$log.log"; exit 1; }; }
# TZ_RESHARD_FLAGS: flags every run adds (the states' formats: the same at every world size).
read -r -a extra <<<"${TZ_RESHARD_FLAGS:-}"
common=(--log-every 0 --val-batches 1 --lr 1e-3 "${extra[@]}")
run write "${mpiexec[@]}" -np 4 "$tierzero" train "${common[@]}" --steps 10 --zero-stage 3 --micro-batch 2 \
  --offload-optimizer nvme --offload-param nvme --nvme-path "$d" --param-persistence-threshold 0 --save-dir "$d/ckpt"
ck="$d/ckpt/step-00000010"
run np4 "${mpiexec[@]}" -np 4 "$tierzero" train "${common[@]}" --steps 15 --zero-stage 3 --micro-batch 2 \
  --offload-optimizer nvme --offload-param nvme --nvme-path "$d" --param-persistence-threshold 0 \
  --resume "$ck" --metrics "$d/np4.jsonl"
run np2 "${mpiexec[@]}" -np 2 "$tierzero" train "${common[@]}" --steps 15 --zero-stage 1 --micro-batch 4 \
  --resume "$ck" --metrics "$d/np2.jsonl"
run np1 "$tierzero" train "${common[@]}" --steps 15 --zero-stage 0 --micro-batch 8 --resume "$ck" --metrics "$d/np1.jsonl"
grep -h "resuming from" "$d"/np*.log
grep -h "(optimizer states" "$d"/write.log "$d"/np*.log  # compressed states: each run's plan line
losses() { grep '"step":' "$1" | grep -v val_loss | grep -o '"loss":[^,]*' | cut -d: -f2; }
for n in 2 1; do
  paste <(losses "$d/np4.jsonl") <(losses "$d/np$n.jsonl") | awk -v n="$n" '
    { rel = ($1 - $2) / $1; if (rel < 0) rel = -rel; printf "step %d: 4 ranks %s, %d rank(s) %s, rel %.2e\n", NR + 10, $1, n, $2, rel
      if (rel > 1e-5) bad = 1; rows++ }
    END { if (rows != 5) { print "expected 5 losses, got " rows; exit 1 } exit bad }' ||
    { echo "ckpt_reshard.sh: the losses at $n rank(s) differ from the 4-rank run's beyond 1e-5"; exit 1; }
done
echo "ckpt_reshard.sh: a 4-rank stage-3 NVMe checkpoint resumes at 2 ranks stage 1 and 1 rank stage 0 with the same losses"
