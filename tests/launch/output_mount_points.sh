#!/usr/bin/env bash
# Writable targets are tested on the target itself, before any work (issue 37): an empty read-only mount
# point given to `ckpt export --format hf --to` or `train --save-hf`, and a file bind-mounted over itself
# given to `ckpt export --to`, cannot be replaced by the rename that ends every write; each exits 1 within
# 5 s naming the mount point, trains nothing, and leaves nothing beside it. A folder on a read-only mount
# is refused before step 1 too. Mounts are made in a private mount namespace, seen by nothing else.
# usage: output_mount_points.sh TIERZERO      (exit 77, a skip, where a mount namespace cannot be made)
set -u
tierzero=$1
if [ -z "${TZ_MOUNT_NS:-}" ]; then
  TZ_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$@" 2>/dev/null ||
    { echo "output_mount_points.sh: SKIP: cannot make a private mount namespace here (unshare -m needs root)"; exit 77; }
fi
d=$(mktemp -d)
trap 'umount "$d/out/ro" "$d/out/file.safetensors" "$d/rodir" 2>/dev/null; rm -rf "$d"' EXIT
fail() { echo "output_mount_points.sh: FAIL: $*"; exit 1; }
mkdir -p "$d/out/ro" "$d/rodir"
mount -t tmpfs -o ro,size=1m tierzero-ro "$d/out/ro" ||
  { echo "output_mount_points.sh: SKIP: cannot mount a tmpfs here"; exit 77; }
mount -t tmpfs -o ro,size=1m tierzero-rodir "$d/rodir" || fail "cannot mount the second tmpfs"
: > "$d/out/file.safetensors"
mount --bind "$d/out/file.safetensors" "$d/out/file.safetensors" || fail "cannot bind-mount a file"
"$tierzero" train --steps 1 --log-every 0 --val-batches 1 --save-dir "$d/ckpt" > "$d/setup.log" 2>&1 ||
  { cat "$d/setup.log"; fail "no checkpoint to export"; }
listing() { ls -A "$d/out"; }
before=$(listing)
# expect WHAT REGEX ARGS...: exit 1 within 5 s, the message, no step trained, nothing new beside the target.
expect() {
  local what=$1 regex=$2 t0 rc ms
  shift 2
  t0=$(date +%s%N)
  "$tierzero" "$@" > "$d/out.log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" = 1 ] || { cat "$d/out.log"; fail "$what: exit $rc, not 1"; }
  [ "$ms" -le 5000 ] || fail "$what: took $ms ms"
  grep -Eq -- "$regex" "$d/out.log" || { cat "$d/out.log"; fail "$what: no message matching: $regex"; }
  grep -Eq "^step +1/" "$d/out.log" && fail "$what: trained before refusing"
  [ "$(listing)" = "$before" ] || fail "$what: left beside it: $(listing)"
  echo "output_mount_points.sh: $what: refused in $ms ms, nothing written beside it"
}
expect "ckpt export --format hf --to an empty read-only mount point" "--to '$d/out/ro' is a mount point" \
  ckpt export "$d/ckpt" --format hf --to "$d/out/ro"
expect "train --save-hf an empty read-only mount point" "--save-hf '$d/out/ro' is a mount point" \
  train --steps 2 --log-every 1 --save-hf "$d/out/ro"
expect "ckpt export --to a bind-mounted file" "--to '$d/out/file.safetensors' is a mount point" \
  ckpt export "$d/ckpt" --to "$d/out/file.safetensors"
expect "train --metrics in a read-only folder" "--metrics '$d/rodir/m.jsonl' cannot be written: .*Read-only file system" \
  train --steps 2 --log-every 1 --metrics "$d/rodir/m.jsonl"
