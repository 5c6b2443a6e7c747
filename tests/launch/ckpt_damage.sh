#!/usr/bin/env bash
# A checkpoint damaged as a careless or hostile user would damage it, read back through the binary:
# `ckpt inspect` of a step folder whose manifest lies (overlapping sections, a section past its file, a
# gap or a double cover in a group, a count of 2^62, a negative or fractional number, a file name with
# '../' or given twice, a 65 MiB manifest); `train --resume latest` with a damaged newest checkpoint
# (truncated, flipped byte, missing file, invalid manifest, a state format no run writes) or a 5 KiB
# `latest`; `ckpt inspect` of the folder with `latest` a FIFO or a symlink to /dev/zero, and train
# refusing those. The command's output is printed and its exit status returned (ctest's expect_exit.sh
# checks status, time and message); before that, this script checks that every checkpoint file (the step
# folders and `latest`) is byte-identical afterwards, and exits 99 when not.
# usage: ckpt_damage.sh setup WORK TIERZERO    (makes WORK/pristine: step-00000001, step-00000002)
#        ckpt_damage.sh CASE WORK TIERZERO     (a copy of WORK/pristine, damaged as CASE says)
set -u
what=$1 work=$2 tierzero=$3
model=(--n-layer 2 --n-embd 64 --n-head 4 --seq-len 32 --micro-batch 2 --log-every 0 --val-batches 1)
train=(train --steps 2 "${model[@]}")
fail() { echo "ckpt_damage.sh: $*"; exit 99; }

if [ "$what" = setup ]; then
  rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"
  "$tierzero" "${train[@]}" --save-dir "$work/pristine" --save-every 1 > "$work/setup.log" 2>&1 ||
    { cat "$work/setup.log"; fail "training the pristine checkpoint failed"; }
  [ "$(cat "$work/pristine/latest")" = step-00000002 ] && [ -f "$work/pristine/step-00000001/manifest.json" ] ||
    fail "the pristine run did not leave step-00000001 and step-00000002"
  echo "ckpt_damage.sh: pristine checkpoints step-00000001 and step-00000002 in $work/pristine"
  exit 0
fi

[ -d "$work/pristine" ] || fail "no $work/pristine: run the setup first"
d=$(mktemp -d "$work/$what.XXXXXX") || fail "mktemp"
trap 'rm -rf "$d"' EXIT
cp -a "$work/pristine" "$d/ckpt"
c=$d/ckpt s1=$d/ckpt/step-00000001 s2=$d/ckpt/step-00000002
# Edits step-00000002's manifest with a Python statement on `m` (Python keeps 64-bit integers exact).
edit() {
  python3 -c 'import json, sys; p = sys.argv[1]; m = json.load(open(p)); exec(sys.argv[2]); open(p, "w").write(json.dumps(m))' \
    "$s2/manifest.json" "$1" || fail "cannot edit the manifest"
}
second_file='m["files"].append(dict(m["files"][0], name="rank-00001.bin")); m["writer"]["world"] = 2'
inspect=(ckpt inspect "$s2")
resume=(train --steps 4 "${model[@]}" --save-dir "$c" --resume latest)
case "$what" in
  overlapping_sections) edit 'm["files"][0]["sections"][1]["offset"] = 0'; cmd=("${inspect[@]}") ;;
  section_past_end) edit 'f = m["files"][0]; f["sections"][-1]["offset"] = f["bytes"] - 12'; cmd=("${inspect[@]}") ;;
  gap_in_group) # the embedding's first 4 elements left out, 4 of final_norm held twice: the sizes add up
    edit 'f = m["files"][0]; s = f["sections"]; s[0]["begin"] += 4; s[0]["count"] -= 4
s.append(dict(group=len(m["groups"]) - 1, begin=0, count=4, offset=f["bytes"] - 48))
for x in s[1:-1]: x["offset"] -= 48'
    cmd=("${inspect[@]}") ;;
  group_covered_twice) edit "$second_file"; cmd=("${inspect[@]}") ;;
  count_2_62) edit 'm["groups"][0]["count"] = 2**62'; cmd=("${inspect[@]}") ;;
  negative_number) edit 'm["files"][0]["sections"][0]["offset"] = -12'; cmd=("${inspect[@]}") ;;
  float_number) edit 'm["files"][0]["sections"][0]["count"] = 6.5'; cmd=("${inspect[@]}") ;;
  dotdot_name) edit 'm["files"][0]["name"] = "../step-00000001/rank-00000.bin"'; cmd=("${inspect[@]}") ;;
  same_file_twice) edit "$second_file; m[\"files\"][1][\"name\"] = \"rank-00000.bin\""; cmd=("${inspect[@]}") ;;
  unknown_key) edit 'm["zz_extra"] = 1'; cmd=("${inspect[@]}") ;;
  unknown_nested_key) edit 'm["files"][0]["sections"][2]["zz_extra"] = 1'; cmd=("${inspect[@]}") ;;
  unknown_key_62mb) # a 62 MB manifest whose last key, holding all of it, is unknown: refused as fast as it is read
    edit 'm["zz_extra"] = list(range(7000000))'; cmd=("${inspect[@]}") ;;
  resume_unknown_key) edit 'm["model"]["zz_extra"] = 1'; cmd=("${resume[@]}") ;;
  resume_unknown_state_format) edit 'm["writer"]["optimizer_states"] = "int4"'; cmd=("${resume[@]}") ;;
  resume_unknown_master_format) edit 'm["writer"]["master_weights"] = "bf16-rne"'; cmd=("${resume[@]}") ;;
  manifest_65mib) python3 -c 'import sys; open(sys.argv[1], "a").write(" " * (65 << 20))' "$s2/manifest.json"
                  cmd=("${inspect[@]}") ;;
  latest_5kib) printf 'step-00000002\n%5120s' '' > "$c/latest"; cmd=("${resume[@]}") ;;
  latest_fifo) rm "$c/latest" && mkfifo "$c/latest"; cmd=(ckpt inspect "$c") ;;
  latest_dev_zero) ln -sf /dev/zero "$c/latest"; cmd=(ckpt inspect "$c") ;;
  resume_latest_fifo) rm "$c/latest" && mkfifo "$c/latest"; cmd=("${resume[@]}") ;;
  resume_latest_dev_zero) ln -sf /dev/zero "$c/latest"; cmd=("${resume[@]}") ;;
  resume_truncated) truncate -s 4096 "$s2/rank-00000.bin"; cmd=("${resume[@]}") ;;
  resume_flipped_byte) printf '\x55' | dd of="$s2/rank-00000.bin" bs=1 seek=4096 conv=notrunc status=none
                       cmd=("${resume[@]}") ;;
  resume_missing_file) rm "$s2/rank-00000.bin"; cmd=("${resume[@]}") ;;
  resume_invalid_manifest) edit 'm["files"][0]["sections"][1]["offset"] = 0'; cmd=("${resume[@]}") ;;
  *) fail "unknown case '$what'" ;;
esac

# Every entry of the step folders and `latest`: path, type, size, link target, and the bytes' checksum
# for regular files (a FIFO is never opened).
snapshot() {
  find "$c/latest" "$c"/step-* -printf '%p %y %s %l\n' | sort
  find "$c/latest" "$c"/step-* -type f -print0 | sort -z | xargs -0 sha256sum
}
before=$(snapshot)
"$tierzero" "${cmd[@]}"
rc=$?
[ "$before" = "$(snapshot)" ] || { diff <(echo "$before") <(snapshot); fail "the checkpoint files changed"; }
echo "ckpt_damage.sh: the checkpoint files are unchanged"
exit "$rc"
