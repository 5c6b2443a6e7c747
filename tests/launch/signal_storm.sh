#!/usr/bin/env bash
# Signals, again (issue 37): 2 to 5 of SIGTERM, SIGINT and SIGHUP at random (seeded) spacings, from none to
# 300 ms, to one rank of a training run with the optimizer on NVMe, --metrics and --save-safetensors, over
# many runs (three in four with --save-dir and a random --save-every, so signals land in steps, saves,
# validation and exports). Each run must end in one clean stop: one line saying after which step, how many
# signals, what was saved and the status; the status is that line's, non-zero once a rank had a second
# signal (0 only after one signal with the last step's checkpoint saved, as a requeue wants), else 128 + the
# signal it names, one of those sent; the checkpoint it names verifies and `latest` names it (or the line says why
# there is none); no .tmp file, .tmp-step folder or NVMe store is left; the job ends within 15 s of the
# first signal.
# usage: signal_storm.sh RUNS SEED MPIRUN_ARGS... -- TIERZERO   (no MPIRUN_ARGS: one rank, no mpirun)
set -u
source "$(dirname "$0")/launch_lib.sh"
runs=$1 seed=$2
shift 2
split_launch_args "$@"
RANDOM=$seed
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "signal_storm.sh: FAIL: run $r: $*"; [ -f "$w/log" ] && tail -n 20 "$w/log"; exit 1; }
names=(TERM INT HUP)
spacings=(0 0 0.001 0.003 0.01 0.03 0.08 0.15 0.3)
rank=$(( ${#mpirun_args[@]} > 0 ? 1 : 0 ))
total=0
for r in $(seq "$runs"); do
  w=$d/run$r
  mkdir -p "$w/nvme"
  extra=()
  if (( RANDOM % 4 )); then extra=(--save-dir "$w/ckpt" --save-every $((1 + RANDOM % 3))); fi
  cmd=("$tierzero" train --steps 100000 --log-every 1 --val-every 0 --val-batches 2 --zero-stage 2
       --offload-optimizer nvme --nvme-path "$w/nvme" --metrics "$w/m.jsonl" --save-safetensors "$w/model.safetensors"
       "${extra[@]}")
  if ((rank)); then "${mpirun_args[@]}" "${cmd[@]}" > "$w/log" 2>&1 & else "${cmd[@]}" > "$w/log" 2>&1 & fi
  job=$!
  for _ in $(seq 300); do  # until training has begun (the handlers are installed before step 1)
    [ "$(metrics_steps "$w/m.jsonl")" -ge 1 ] && break
    sleep 0.05
  done
  pid=$job
  ((rank)) && pid=$(rank_pid "$job" 1)
  [ -n "$pid" ] && [ "$(metrics_steps "$w/m.jsonl")" -ge 1 ] || { kill "$job"; fail "training never began"; }
  sleep "0.$((RANDOM % 200))"
  k=$((2 + RANDOM % 4)) at=$((RANDOM % 3)) sent=""
  t0=$(date +%s%N)
  for i in $(seq "$k"); do  # consecutive signals differ, so the kernel never merges two pending ones
    s=$(( (at + i) % 3 ))
    kill -"${names[$s]}" "$pid" 2>/dev/null && sent="$sent ${names[$s]}"
    sleep "${spacings[$((RANDOM % ${#spacings[@]}))]}"
  done
  wait "$job"
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  line=$(grep -E "^stopped by SIG[A-Z]+ after step [0-9]+" "$w/log")
  echo "signal_storm.sh: run $r: sent$sent to rank $rank${extra[*]:+ (with --save-dir)}: $line"
  [ "$(echo "$line" | grep -c .)" = 1 ] || fail "not exactly one 'stopped by' line"
  [[ "$line" =~ \(([0-9]+)\ signals?\ on\ rank\ ([0-9]+)\).*exit\ ([0-9]+) ]] || fail "the line does not give the signals and status"
  n=${BASH_REMATCH[1]} said=${BASH_REMATCH[3]}
  [ "$said" = "$rc" ] || fail "the line says exit $said, the job exited $rc"
  [ "$ms" -le 15000 ] || fail "the job took $ms ms after the first signal"
  [ "$rc" != 0 ] || fail "$n signal(s) and exit 0"
  # The signal named is one that was sent (signals sent together may be taken by two threads at once, so
  # which of them is recorded first is the kernel's choice), and the status is 128 + it.
  named=$(echo "$line" | sed -E 's/^stopped by SIG([A-Z]+) .*/\1/')
  [[ " $sent " == *" $named "* ]] || fail "the line names SIG$named, which was not sent"
  [ "$rc" = $((128 + $(kill -l "$named"))) ] || fail "exit $rc is not 128 + SIG$named"
  step=$(echo "$line" | sed -E 's/^stopped by SIG[A-Z]+ after step ([0-9]+).*/\1/')
  if [ ${#extra[@]} -gt 0 ]; then
    echo "$line" | grep -q "checkpoint $w/ckpt/$(printf 'step-%08d' "$step") saved" || fail "no checkpoint of step $step"
    [ "$(cat "$w/ckpt/latest")" = "$(printf 'step-%08d' "$step")" ] || fail "latest is $(cat "$w/ckpt/latest")"
    "$tierzero" ckpt inspect "$w/ckpt" > "$w/inspect.log" 2>&1 && grep -q "every checksum verified" "$w/inspect.log" ||
      { cat "$w/inspect.log"; fail "the checkpoint does not verify"; }
  else
    echo "$line" | grep -q "no checkpoint: the run has no --save-dir" || fail "the line does not say why no checkpoint"
  fi
  left=$(find "$w" -name '*.tmp*' -o -name '.tmp-*' -o -path "$w/nvme/*")
  [ -z "$left" ] || fail "left behind: $left"
  [ -f "$w/m.jsonl" ] || fail "the metrics file was not kept"
  total=$((total + n))
done
echo "signal_storm.sh: $runs runs, $total signals handled: each one clean stop, exit 128 + its first signal, nothing left behind"
