#!/usr/bin/env bash
# A --save-dir that each node sees on its own disk: rank 1 runs in a private mount namespace with a
# tmpfs over the save-dir's parent (as a node-local /scratch would be), so it cannot see the lock file
# rank 0 writes there. The job must end with 1 within seconds naming the host, and write no checkpoint
# (the other nodes' files would otherwise be lost). Run through expect_exit.sh (status, time, message).
# usage: node_local_save_dir.sh MPIRUN_ARGS... -- TIERZERO   (MPIRUN_ARGS without -np; exit 77 without
#        unshare -m, which needs root)
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
unshare -m --propagation private true 2>/dev/null ||
  { echo "node_local_save_dir.sh: SKIP: unshare -m is refused here (needs root)"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir "$d/scratch"
common=(train --steps 3 --log-every 0 --comm-timeout 300 --save-dir "$d/scratch/ckpt")
start=$(date +%s%N)
"${mpirun_args[@]}" -np 1 "$tierzero" "${common[@]}" : \
  -np 1 unshare -m --propagation private sh -c 'mount -t tmpfs node-local "$0" && exec "$@"' "$d/scratch" \
  "$tierzero" "${common[@]}"
rc=$?
echo "node_local_save_dir.sh: the job ended with $rc after $(( ($(date +%s%N) - start) / 1000000 )) ms"
[ -z "$(find "$d" -name 'step-*' -print -quit)" ] || { echo "node_local_save_dir.sh: a checkpoint was written"; exit 2; }
echo "node_local_save_dir.sh: no checkpoint written"
exit $rc
