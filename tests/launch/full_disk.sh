#!/usr/bin/env bash
# A full disk at the end of a run (a 1 MiB tmpfs, mounted in a private mount namespace so that nothing
# outside this test sees it): the job exits 1 naming the file, the errno and, when the final checkpoint
# was committed, the checkpoint that holds the weights; that checkpoint verifies, and nothing half
# written is left on the full disk. Run through expect_exit.sh (status, time); this script checks the
# messages and what is left, and prints one line per check.
# usage: full_disk.sh TIERZERO      (exit 77, a skip, where a tmpfs cannot be mounted)
set -u
tierzero=$1
if [ -z "${TZ_FULL_DISK_NS:-}" ]; then
  TZ_FULL_DISK_NS=1 exec unshare -m --propagation private bash "$0" "$@" 2>/dev/null ||
    { echo "full_disk.sh: SKIP: cannot make a private mount namespace here (unshare -m needs root)"; exit 77; }
fi
d=$(mktemp -d)
trap 'umount "$d/full" 2>/dev/null; rm -rf "$d"' EXIT
mkdir "$d/full"
mount -t tmpfs -o size=1m tierzero-full "$d/full" ||
  { echo "full_disk.sh: SKIP: cannot mount a 1 MiB tmpfs here"; exit 77; }
fail() { echo "full_disk.sh: FAIL: $*"; exit 1; }
common=(train --steps 2 --n-layer 4 --n-embd 128 --log-every 0 --val-batches 1)  # 0.8M parameters: 3.3 MB as fp32

# 1. The model (3.3 MB) does not fit; the checkpoint of the last step, on a disk with room, holds it.
"$tierzero" "${common[@]}" --save-dir "$d/ckpt" --save-safetensors "$d/full/model.safetensors" > "$d/1.log" 2>&1
rc=$?
cat "$d/1.log"
[ "$rc" = 1 ] || fail "a model that does not fit exited $rc, not 1"
grep -q "writing safetensors file '$d/full/model.safetensors' (as '.*') failed: No space left on device (errno 28)" "$d/1.log" ||
  fail "the message does not name the file and the errno"
grep -q "the trained weights are safe in checkpoint $d/ckpt/step-00000002 (tierzero ckpt export" "$d/1.log" ||
  fail "the message does not name the checkpoint that holds the weights"
"$tierzero" ckpt inspect "$d/ckpt/step-00000002" | grep -q "every checksum verified" || fail "the checkpoint does not verify"
[ -z "$(ls -A "$d/full")" ] || fail "left on the full disk: $(ls -A "$d/full")"
echo "full_disk.sh: a model that does not fit: exit 1 naming the file, errno 28 and the checkpoint, which verifies"

# 2. The checkpoint itself does not fit: exit 1 naming its file and the errno; no temporary folder left.
"$tierzero" "${common[@]}" --save-dir "$d/full/ckpt" > "$d/2.log" 2>&1
rc=$?
cat "$d/2.log"
[ "$rc" = 1 ] || fail "a checkpoint that does not fit exited $rc, not 1"
grep -q "checkpoint data file '$d/full/ckpt/.tmp-step-00000002/rank-00000.bin' .* failed: No space left on device (errno 28)" "$d/2.log" ||
  fail "the message does not name the checkpoint file and the errno"
[ "$(ls -A "$d/full/ckpt")" = .tierzero.lock ] || fail "left in the save-dir: $(ls -A "$d/full/ckpt")"
echo "full_disk.sh: a checkpoint that does not fit: exit 1 naming the file and errno 28, no temporary folder left"

# 3. The metrics file on the full disk, beside a model elsewhere: the records fit, so the run succeeds.
"$tierzero" "${common[@]}" --metrics "$d/full/metrics.jsonl" --save-safetensors "$d/model.safetensors" > "$d/3.log" 2>&1 ||
  { cat "$d/3.log"; fail "a run whose metrics fit failed"; }
[ "$(grep -c '"step":' "$d/full/metrics.jsonl")" -ge 2 ] || fail "the metrics were not kept"
echo "full_disk.sh: metrics that fit are kept"
