#!/usr/bin/env bash
# A rank that dies (SIGKILL, as the OOM killer or a node failure ends it) mid-run: the job must end,
# non-zero, well within the collective timeout, with the launcher naming the dead rank. Run through
# expect_exit.sh, which checks the status, the time and the message.
# usage: killed_rank.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"${mpirun_args[@]}" "$tierzero" train --zero-stage 3 --steps 100000 --log-every 0 --comm-timeout 20 \
  --metrics "$d/metrics.jsonl" &
job=$!
for _ in $(seq 300); do
  [ "$(metrics_steps "$d/metrics.jsonl")" -ge 3 ] && break
  sleep 0.1
done
pid=$(rank_pid "$job" 1)
[ -n "$pid" ] || { echo "killed_rank.sh: rank 1 not found"; kill "$job"; exit 1; }
start=$(date +%s%N)
kill -9 "$pid"
wait "$job"
rc=$?
echo "killed_rank.sh: SIGKILL to rank 1 after $(metrics_steps "$d/metrics.jsonl") steps; the job ended with $rc after $(( ($(date +%s%N) - start) / 1000000 )) ms"
exit $rc
