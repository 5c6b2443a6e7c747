#!/usr/bin/env bash
# tierzero ckpt inspect / export on a 24-layer model of 76 MB (a 228 MB checkpoint): inspect verifies
# every checksum; the export equals, byte for byte, the --save-safetensors file the same run wrote from
# its weights, reloads with --init-from, and its peak RSS stays within 16 MiB of the binary's own
# baseline (tierzero --help) although the model is 76 MB: one tensor in memory at a time. A flipped byte
# in the checkpoint makes both commands fail naming the file.
# usage: ckpt_export.sh [--no-rss] TIERZERO   (--no-rss: AddressSanitizer builds, whose RSS is not the program's)
set -u
rss=1
if [ "${1:-}" = --no-rss ]; then rss=0; shift; fi
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "ckpt_export.sh: $*"; exit 1; }
"$tierzero" train --steps 3 --n-layer 24 --n-embd 256 --log-every 0 --val-batches 1 --save-dir "$d/ckpt" \
  --save-safetensors "$d/trained.safetensors" > "$d/train.log" 2>&1 || { cat "$d/train.log"; fail "training failed"; }
"$tierzero" ckpt inspect "$d/ckpt" || fail "inspect failed"
/usr/bin/time -f "%M" -o "$d/export.rss" "$tierzero" ckpt export "$d/ckpt" --to "$d/exported.safetensors" ||
  fail "export failed"
cmp "$d/trained.safetensors" "$d/exported.safetensors" || fail "the export differs from the trained weights"
model=$(stat -c %s "$d/exported.safetensors")
echo "ckpt_export.sh: the export equals the trained model's file ($model bytes) byte for byte"
if [ "$rss" = 1 ]; then
  /usr/bin/time -f "%M" -o "$d/help.rss" "$tierzero" --help > /dev/null
  base=$(tail -n 1 "$d/help.rss") peak=$(tail -n 1 "$d/export.rss")
  echo "ckpt_export.sh: export peak RSS $peak KiB, baseline $base KiB, model $((model / 1024)) KiB"
  [ "$peak" -le $((base + 16384)) ] || fail "export peak RSS $peak KiB exceeds the baseline $base KiB + 16 MiB"
else
  echo "ckpt_export.sh: peak RSS not checked (AddressSanitizer build)"
fi
"$tierzero" train --steps 1 --init-from "$d/exported.safetensors" --n-head 4 --log-every 1 --val-batches 1 \
  > "$d/reload.log" 2>&1 || { cat "$d/reload.log"; fail "--init-from the export failed"; }
echo "ckpt_export.sh: --init-from the export trains"
step=$(ls -d "$d"/ckpt/step-*)
"$tierzero" ckpt export "$d/ckpt" --to "$step/manifest.json" > "$d/self.log" 2>&1 && fail "export over the checkpoint's manifest was accepted"
grep -q "is inside the checkpoint being exported .*, which this command reads" "$d/self.log" || { cat "$d/self.log"; fail "no message"; }
"$tierzero" ckpt inspect "$d/ckpt" > /dev/null || fail "the checkpoint was damaged by a refused export"
echo "ckpt_export.sh: an export into the checkpoint itself is refused and the checkpoint is intact"
f=$(ls "$d"/ckpt/step-*/rank-00000.bin)
printf '\x55' | dd of="$f" bs=1 seek=4096 conv=notrunc status=none
"$tierzero" ckpt inspect "$d/ckpt" > "$d/bad.log" 2>&1 && fail "inspect accepted a damaged checkpoint"
grep -q "rank-00000.bin' fails its checksum" "$d/bad.log" || { cat "$d/bad.log"; fail "inspect did not name the file"; }
"$tierzero" ckpt export "$d/ckpt" --to "$d/bad.safetensors" > "$d/bad2.log" 2>&1 && fail "export accepted a damaged checkpoint"
[ ! -e "$d/bad.safetensors" ] || fail "a failed export left a file behind"
echo "ckpt_export.sh: a damaged checkpoint is refused by inspect and export, naming the file"
