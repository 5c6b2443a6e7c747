#!/usr/bin/env bash
# --save-hf at 2 ranks writes one group at a time from the ranks' shards: ZeRO stage 3 with the
# parameters on the host tier and stage 0 write the same folder, file for file and byte for byte
# (llama-tiny, untied head, two steps, shards of at most 20 KB).
# usage: save_hf_ranks.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
d=$(mktemp -d "${TMPDIR:-/tmp}/save-hf-ranks.XXXXXX")
trap 'rm -rf "$d"' EXIT
args=(train --model llama-tiny --steps 2 --micro-batch 2 --seq-len 32 --lr 3e-3 --log-every 0 --val-batches 1
      --save-hf-shard-size 20000)
"${mpirun_args[@]}" "$tierzero" "${args[@]}" --zero-stage 3 --offload-param cpu --save-hf "$d/stage3" > "$d/s3.log" 2>&1 ||
  { cat "$d/s3.log"; echo "save_hf_ranks.sh: stage 3 failed"; exit 1; }
"${mpirun_args[@]}" "$tierzero" "${args[@]}" --zero-stage 0 --save-hf "$d/stage0" > "$d/s0.log" 2>&1 ||
  { cat "$d/s0.log"; echo "save_hf_ranks.sh: stage 0 failed"; exit 1; }
diff -r "$d/stage3" "$d/stage0" > /dev/null || { echo "save_hf_ranks.sh: the folders differ"; diff -r "$d/stage3" "$d/stage0"; exit 1; }
n=$(ls "$d/stage3" | grep -c safetensors$)
[ "$n" -ge 3 ] || { echo "save_hf_ranks.sh: only $n weight files"; exit 1; }
echo "save_hf_ranks.sh: stage 3 (parameters offloaded) and stage 0 at 2 ranks wrote the same $n weight files, byte for byte"
