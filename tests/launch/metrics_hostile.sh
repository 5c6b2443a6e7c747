#!/usr/bin/env bash
# --metrics and --prometheus-textfile given hostile targets (issue 32): a FIFO, /dev/zero, a symlink to
# the run's own --config, a folder on a read-only mount, a file that is no tierzero metrics file, and
# another run's metrics. Each is refused with exit 1 within 5 s, naming the flag and the path, before
# step 1, and the target is as it was (the FIFO a FIFO, the config and the other run's records byte for
# byte). Mounts are made in a private mount namespace, seen by nothing else.
# usage: metrics_hostile.sh TIERZERO      (exit 77, a skip, where a mount namespace cannot be made)
set -u
. "$(dirname "$0")/launch_lib.sh"
tierzero=$1
if [ -z "${TZ_MOUNT_NS:-}" ]; then
  TZ_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$@" 2>/dev/null ||
    { echo "metrics_hostile.sh: SKIP: cannot make a private mount namespace here (unshare -m needs root)"; exit 77; }
fi
d=$(mktemp -d)
trap 'umount "$d/rodir" 2>/dev/null; rm -rf "$d"' EXIT
fail() { echo "metrics_hostile.sh: FAIL: $*"; exit 1; }
mkdir -p "$d/rodir"
mount -t tmpfs -o ro,size=1m tierzero-rodir "$d/rodir" ||
  { echo "metrics_hostile.sh: SKIP: cannot mount a tmpfs here"; exit 77; }
mkfifo "$d/fifo"
echo '{"train_micro_batch_size_per_gpu": 4}' > "$d/ds.json"
ln -s "$d/ds.json" "$d/link.jsonl"
printf 'time,loss\n1,5.3\n' > "$d/notes.csv"
"$tierzero" train --steps 2 --log-every 0 --val-batches 1 --metrics "$d/other.jsonl" > "$d/other.log" 2>&1 ||
  { cat "$d/other.log"; fail "the other run failed"; }
other_run=$(head -1 "$d/other.jsonl" | grep -o '"run_id":"[0-9a-f]*"' | cut -d'"' -f4)
[ -n "$other_run" ] || fail "the other run's start record has no run id"
sums() { md5sum "$d/ds.json" "$d/notes.csv" "$d/other.jsonl"; }
before=$(sums)
n=0
# expect WHAT REGEX ARGS...: exit 1 within 5 s, the message, no step trained, every target as it was.
expect() {
  local what=$1 regex=$2 t0 rc ms
  shift 2
  t0=$(date +%s%N)
  timeout 30 "$tierzero" train --steps 2 --log-every 1 --val-batches 1 "$@" > "$d/out.log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check_refusal "$what" "$regex" "$rc" "$ms" "$d/out.log"
  [ -p "$d/fifo" ] || fail "$what: the FIFO is no longer a FIFO"
  [ "$(sums)" = "$before" ] || fail "$what: a file changed"
  n=$((n + 1))
  echo "metrics_hostile.sh: $what: refused in $ms ms"
}
for flag in --metrics --prometheus-textfile; do
  expect "$flag a FIFO" "$flag '$d/fifo' exists and is a FIFO" $flag "$d/fifo"
  expect "$flag /dev/zero" "$flag '/dev/zero' exists and is a character device" $flag /dev/zero
  expect "$flag a symlink to --config" "$flag '$d/link.jsonl' .*--config" --config "$d/ds.json" $flag "$d/link.jsonl"
  expect "$flag in a read-only folder" "$flag '$d/rodir/m' cannot be written: .*Read-only file system" \
    $flag "$d/rodir/m"
done
expect "--metrics a file that is no metrics file" "--metrics '$d/notes.csv' holds 16 bytes that are not a tierzero metrics file.*give another --metrics, or move the file away" \
  --metrics "$d/notes.csv"
expect "--metrics another run's file" "--metrics '$d/other.jsonl' holds the records of run $other_run and this run starts afresh.*give another --metrics, or move the file away" \
  --metrics "$d/other.jsonl"
mkdir "$d/ckpt"
expect "--metrics another run's file, --resume latest without a checkpoint" "--metrics '$d/other.jsonl' holds the records of run $other_run" \
  --save-dir "$d/ckpt" --resume latest --metrics "$d/other.jsonl"
echo "metrics_hostile.sh: $n refusals; the FIFO, the config and the other run's records intact"
