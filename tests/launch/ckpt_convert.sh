#!/usr/bin/env bash
# A resume in other optimizer-state formats through the binary (issue 36): a checkpoint written by 2 ranks
# at stage 2 with int8 moments and a bf16-sr master resumes at 1 rank in fp32, rank 0 printing the one
# conversion line; the checkpoint it saves records fp32 and resumes without converting, and at 2 ranks
# back into int8 + bf16-sr with the line printed once. Exits 0 when all of that holds.
# usage: ckpt_convert.sh MPIEXEC -- TIERZERO   (MPIEXEC takes -np N after it; as root, the environment
# must allow mpirun as root)
set -u
mpiexec=()
while (($#)) && [ "$1" != "--" ]; do mpiexec+=("$1"); shift; done
shift
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "ckpt_convert.sh: $*"; exit 1; }
run() { local log=$1; shift; "$@" > "$d/$log.log" 2>&1 || { cat "$d/$log.log"; fail "$log failed"; }; }
common=(--model tiny --log-every 0 --val-batches 1 --offload-optimizer cpu --save-dir "$d/ckpt" --save-every 2)
compressed=(--optimizer-states int8 --master-weights bf16-sr)
# The number of lines of log $1 holding the text $2.
count() { grep -cF -- "$2" "$d/$1.log"; }
formats() {
  python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["writer"]; print(w["optimizer_states"], w["master_weights"])' \
    "$d/ckpt/$1/manifest.json"
}

run write "${mpiexec[@]}" -np 2 "$tierzero" train "${common[@]}" "${compressed[@]}" --steps 2 --zero-stage 2
[ "$(formats step-00000002)" = "int8 bf16-sr" ] || fail "the first checkpoint records $(formats step-00000002)"
run to_fp32 "$tierzero" train "${common[@]}" --steps 4 --zero-stage 1 --resume latest
line="resume: converting checkpoint $d/ckpt/step-00000002's optimizer states int8 -> fp32 and master weights bf16-sr -> fp32 (once, at load)"
grep -F -- "$line" "$d/to_fp32.log"
[ "$(count to_fp32 "$line")" = 1 ] || fail "the 1-rank resume did not print the conversion line once"
grep -F "written by 2 ranks at ZeRO stage 2" "$d/to_fp32.log" || fail "the resume did not say the checkpoint's 2 ranks"
[ "$(formats step-00000004)" = "fp32 fp32" ] || fail "the converted run's checkpoint records $(formats step-00000004)"
echo "ckpt_convert.sh: step-00000004 records fp32 fp32"
run again "$tierzero" train "${common[@]}" --steps 6 --zero-stage 1 --resume latest
[ "$(count again "converting")" = 0 ] || fail "the converted checkpoint was converted again in its own formats"
run back "${mpiexec[@]}" -np 2 "$tierzero" train "${common[@]}" "${compressed[@]}" --steps 8 --zero-stage 3 --resume latest
[ "$(count back "optimizer states fp32 -> int8 and master weights fp32 -> bf16-sr (once, at load)")" = 1 ] ||
  fail "the 2-rank resume into int8 + bf16-sr did not print its line once"
[ "$(formats step-00000008)" = "int8 bf16-sr" ] || fail "the last checkpoint records $(formats step-00000008)"
echo "ckpt_convert.sh: int8 + bf16-sr at 2 ranks -> fp32 at 1 rank -> int8 + bf16-sr at 2 ranks, each converted once"
