#!/usr/bin/env bash
# Two ranks started with different flags (MPMD: `mpirun -np 1 tierzero train A : -np 1 tierzero train B`)
# for one setting the ranks must agree on: the job must end with 1 within seconds on every rank, naming the
# setting, never crash inside MPI or wait out the collective timeout (--comm-timeout 300), and leave its
# inputs as they were and no checkpoint behind. Run through expect_exit.sh, which checks the status, the
# time and the message; this script prints the job's own time and checks the inputs and the save-dir.
# usage: per_rank_flags.sh CASE MPIRUN_ARGS... -- TIERZERO   (MPIRUN_ARGS without -np)
# CASE: resume_one_rank, init_from_contents, init_from_bad_one_rank, data_middle_block, save_every,
#       save_dir_one_rank, save_safetensors_one_rank
set -u
case_name=$1
shift
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
common=(train --steps 3 --log-every 0 --comm-timeout 300)
inputs=()

# A tiny model's weights, and a copy that differs in the lowest byte of its last float (still finite).
make_weights() {
  "$tierzero" train --steps 1 --log-every 0 --save-safetensors "$d/a.safetensors" >/dev/null || exit 2
  cp "$d/a.safetensors" "$d/b.safetensors"
  local size
  size=$(stat -c %s "$d/b.safetensors")
  printf '\x01' | dd of="$d/b.safetensors" bs=1 seek=$((size - 4)) conv=notrunc status=none
  cmp -s "$d/a.safetensors" "$d/b.safetensors" && { echo "per_rank_flags.sh: the copy did not change"; exit 2; }
  inputs+=("$d/a.safetensors" "$d/b.safetensors")
}

# Two token files of 3,000,000 tokens (llm.c format) that differ in one token in the middle of the 33rd of
# the 64 blocks data_identity samples, far from the first and last MiB.
make_data() {
  python3 - "$d" <<'PY' || exit 2
import struct, sys
d = sys.argv[1]
n = 3_000_000
header = struct.pack("<256i", 20240520, 1, n, *([0] * 253))
tokens = bytearray(struct.pack("<%dH" % n, *[(i * 7919) % 251 for i in range(n)]))
size = len(header) + len(tokens)
B, K = 64 << 10, 64
q, r = divmod(size - B, K - 1)
at = 32 * q + 32 * r // (K - 1) + B // 2
at -= (at - len(header)) % 2  # a whole token
open(d + "/a.bin", "wb").write(header + tokens)
i = at - len(header)
tokens[i] = (tokens[i] + 1) % 251
open(d + "/b.bin", "wb").write(header + tokens)
PY
  inputs+=("$d/a.bin" "$d/b.bin")
}

case "$case_name" in
  resume_one_rank)
    rank0=(--save-dir "$d/ckpt" --resume latest) rank1=(--save-dir "$d/ckpt") ;;
  init_from_contents)
    make_weights
    rank0=(--init-from "$d/a.safetensors") rank1=(--init-from "$d/b.safetensors") ;;
  init_from_bad_one_rank)  # rank 1 fails reading its flags, before MPI starts; rank 0 waits for it
    make_weights
    rank0=(--init-from "$d/a.safetensors") rank1=(--init-from "$d/missing.safetensors") ;;
  data_middle_block)
    make_data
    rank0=(--data "$d/a.bin") rank1=(--data "$d/b.bin") ;;
  save_every)
    rank0=(--save-dir "$d/ckpt" --save-every 2) rank1=(--save-dir "$d/ckpt" --save-every 3) ;;
  save_dir_one_rank)
    rank0=(--save-dir "$d/ckpt") rank1=() ;;
  save_safetensors_one_rank)
    rank0=(--save-safetensors "$d/model.safetensors") rank1=() ;;
  *) echo "per_rank_flags.sh: unknown case '$case_name'"; exit 2 ;;
esac

sums_before=""
((${#inputs[@]})) && sums_before=$(sha256sum "${inputs[@]}")
start=$(date +%s%N)
"${mpirun_args[@]}" -np 1 "$tierzero" "${common[@]}" "${rank0[@]}" : -np 1 "$tierzero" "${common[@]}" "${rank1[@]}"
rc=$?
echo "per_rank_flags.sh: $case_name: the job ended with $rc after $(( ($(date +%s%N) - start) / 1000000 )) ms"
if ((${#inputs[@]})); then
  [ "$(sha256sum "${inputs[@]}")" = "$sums_before" ] || { echo "per_rank_flags.sh: an input changed"; exit 2; }
fi
if [ -n "$(find "$d" -name 'step-*' -print -quit)" ] || [ -e "$d/model.safetensors" ]; then
  echo "per_rank_flags.sh: the job wrote a checkpoint or a model"
  exit 2
fi
echo "per_rank_flags.sh: $case_name: inputs intact, nothing written"
exit $rc
