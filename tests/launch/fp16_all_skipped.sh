#!/usr/bin/env bash
# An fp16 run whose every step overflows (a loss scale no fp16 gradient survives, static or dynamic with a
# floor as high) must end with 1 naming the cause, without writing --save-safetensors or a checkpoint, and
# leave an earlier model file as it was. Run through expect_exit.sh, which checks the status, the time and
# the message.
# usage: fp16_all_skipped.sh static|dynamic TIERZERO
set -u
mode=$1 tierzero=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
case "$mode" in
  static) scale=(--loss-scale 1e38) ;;
  dynamic) scale=(--initial-scale-power 127 --min-loss-scale 1e38 --loss-scale-window 1000000) ;;
  *) echo "fp16_all_skipped.sh: unknown mode '$mode'"; exit 2 ;;
esac
echo "an earlier model" > "$d/model.safetensors"
"$tierzero" train --dtype fp16 --steps 3 --log-every 1 "${scale[@]}" --save-dir "$d/ckpt" \
  --save-safetensors "$d/model.safetensors"
rc=$?
[ "$(cat "$d/model.safetensors")" = "an earlier model" ] || { echo "fp16_all_skipped.sh: the model file changed"; exit 2; }
[ -z "$(find "$d/ckpt" -name 'step-*' -print -quit 2>/dev/null)" ] || { echo "fp16_all_skipped.sh: a checkpoint was written"; exit 2; }
echo "fp16_all_skipped.sh: $mode: exit $rc, the earlier model kept, no checkpoint written"
exit $rc
