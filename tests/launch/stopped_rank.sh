#!/usr/bin/env bash
# A rank that stops answering mid-step (SIGSTOP) while the other has stage-3 prefetches and reductions
# in flight: the job must end with one timeout error naming the stuck collective, about one
# --comm-timeout after the stop (not once per collective in flight), and no side errors. Run through
# expect_exit.sh, which checks the status, the time and the output.
# usage: stopped_rank.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
"${mpirun_args[@]}" "$tierzero" train --zero-stage 3 --param-persistence-threshold 0 --prefetch-bucket-size 1e6 \
  --reduce-bucket-size 3e4 --steps 100000 --log-every 0 --val-every 0 --comm-timeout 3 &
job=$!
# Wait for rank 1 to be training (its process exists and the job has run a moment), then stop it.
for _ in $(seq 100); do
  pid=$(rank_pid "$job" 1)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { echo "stopped_rank.sh: rank 1 never started"; kill "$job"; exit 1; }
sleep 2
echo "stopped_rank.sh: stopping rank 1 (pid $pid) at $(date +%s.%N)"
kill -STOP "$pid"
wait "$job"
rc=$?
kill -KILL "$pid" 2>/dev/null
exit $rc
