#!/usr/bin/env bash
# Every command that writes a file, pointed by a careless or hostile user at a device node (made with
# mknod in this test's own folder, never the machine's), a FIFO, or one of its own inputs: each exits 1
# within seconds naming the flag and what is in the way, and the node, FIFO or input is as it was.
# usage: output_targets.sh TIERZERO   (the device-node cases skip, exit 77, where mknod is refused)
set -u
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "output_targets.sh: FAIL: $*"; exit 1; }
mkfifo "$d/fifo"
have_dev=1
mknod "$d/null" c 1 3 2>/dev/null || have_dev=0
printf 'some text to tokenise\n%.0s' $(seq 50) > "$d/text.txt"
"$tierzero" train --steps 2 --log-every 0 --val-batches 1 --save-dir "$d/ckpt" > /dev/null 2>&1 || fail "no checkpoint to read"
step="$d/ckpt/step-00000002"
sum_before=$(cd "$d" && find ckpt text.txt -type f ! -name .tierzero.lock | sort | xargs sha256sum)
n=0
# expect WHAT REGEX CMD...: exit 1, within 5 s, the message matching REGEX.
expect() {
  local what=$1 regex=$2 t0 rc
  shift 2
  t0=$(date +%s%N)
  "$@" > "$d/out.log" 2>&1
  rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" = 1 ] || { cat "$d/out.log"; fail "$what: exit $rc, not 1"; }
  [ "$ms" -le 5000 ] || fail "$what: took $ms ms"
  grep -Eq -- "$regex" "$d/out.log" || { cat "$d/out.log"; fail "$what: no message matching: $regex"; }
  n=$((n + 1))
  echo "output_targets.sh: $what: refused in $ms ms"
}
targets=("$d/fifo|a FIFO")
[ "$have_dev" = 1 ] && targets+=("$d/null|a character device")
for t in "${targets[@]}"; do
  path=${t%%|*} kind=${t#*|}
  expect "train --save-safetensors $kind" "--save-safetensors '$path' exists and is $kind, not a regular file" \
    "$tierzero" train --steps 1 --save-safetensors "$path"
  expect "train --metrics $kind" "--metrics '$path' exists and is $kind, not a regular file" \
    "$tierzero" train --steps 1 --metrics "$path"
  expect "ckpt export --to $kind" "--to '$path' exists and is $kind, not a regular file" \
    "$tierzero" ckpt export "$step" --to "$path"
  expect "plan --compare --csv $kind" "--csv '$path' exists and is $kind, not a regular file" \
    "$tierzero" plan --compare --csv "$path"
  expect "data prepare --output $kind" "--output '$path' exists and is $kind, not a regular file" \
    "$tierzero" data prepare --input "$d/text.txt" --output "$path"
done
expect "data prepare --output its input" "--output '$d/text.txt' is --input '$d/text.txt', which this command reads" \
  "$tierzero" data prepare --input "$d/text.txt" --output "$d/text.txt"
ln -s "$d/text.txt" "$d/text-link"
expect "data prepare --val-output a symlink to its input" "--val-output '$d/text-link' is --input '$d/text.txt' \\(it is a symlink to it\\)" \
  "$tierzero" data prepare --input "$d/text.txt" --output "$d/t.bin" --val-output "$d/text-link"
expect "ckpt export --to inside the checkpoint" "--to '$step/model.safetensors' is inside the checkpoint being exported" \
  "$tierzero" ckpt export "$step" --to "$step/model.safetensors"
expect "train --metrics inside the checkpoint resumed" "--metrics '$step/m.jsonl' lies inside --save-dir '$d/ckpt'" \
  "$tierzero" train --steps 3 --save-dir "$d/ckpt" --resume latest --metrics "$step/m.jsonl"
expect "train --save-safetensors over the checkpoint pointer" "--save-safetensors '$d/ckpt/latest' lies inside --save-dir '$d/ckpt'" \
  "$tierzero" train --steps 3 --save-dir "$d/ckpt" --resume latest --save-safetensors "$d/ckpt/latest"
expect "a fresh run into a save-dir with checkpoints" "holds checkpoints of an earlier run \\(step-00000002\\) and this run starts afresh" \
  "$tierzero" train --steps 3 --save-dir "$d/ckpt"
[ -p "$d/fifo" ] || fail "the FIFO was replaced"
if [ "$have_dev" = 1 ]; then
  [ "$(stat -c '%F %t:%T' "$d/null")" = "character special file 1:3" ] || fail "the device node was replaced"
fi
[ "$(cd "$d" && find ckpt text.txt -type f ! -name .tierzero.lock | sort | xargs sha256sum)" = "$sum_before" ] || fail "an input changed"
[ -z "$(find "$d" -name '*.tmp.*')" ] || fail "temporary files left: $(find "$d" -name '*.tmp.*')"
echo "output_targets.sh: $n refusals; every device node, FIFO, input and checkpoint intact"
[ "$have_dev" = 1 ] || { echo "output_targets.sh: SKIP: mknod refused here, the device-node cases did not run"; exit 77; }
