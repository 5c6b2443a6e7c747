#!/usr/bin/env bash
# --bind-cores auto at 2 ranks on this machine: each rank's process is confined to its own share of the
# cores, as the kernel reports it (/proc/PID/status Cpus_allowed_list), not only as the log line says.
# usage: bind_cores.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
cores=$(getconf _NPROCESSORS_ONLN)  # not nproc: it obeys OMP_NUM_THREADS
"${mpirun_args[@]}" "$tierzero" train --bind-cores auto --steps 100000 --log-every 0 --comm-timeout 20 &
job=$!
for _ in $(seq 100); do
  p0=$(rank_pid "$job" 0) p1=$(rank_pid "$job" 1)
  [ -n "$p0" ] && [ -n "$p1" ] && break
  sleep 0.1
done
sleep 1
a0=$(awk '/^Cpus_allowed_list/ {print $2}' "/proc/$p0/status") a1=$(awk '/^Cpus_allowed_list/ {print $2}' "/proc/$p1/status")
kill "$job" 2>/dev/null; kill -9 "$p0" "$p1" 2>/dev/null; wait "$job" 2>/dev/null
echo "bind_cores.sh: $cores cores; rank 0 allowed $a0, rank 1 allowed $a1"
half=$((cores / 2))
want0=$([ "$half" -gt 1 ] && echo "0-$((half - 1))" || echo 0)
# With 3+ cores per rank the main thread's set excludes the I/O core; the process's first thread is the main one.
[ "$a0" != "$a1" ] || { echo "bind_cores.sh: both ranks on the same cores"; exit 1; }
case "$a0" in 0|0-*) ;; *) echo "bind_cores.sh: rank 0 not on the first cores"; exit 1 ;; esac
echo "bind_cores.sh: each rank on its own cores"
