#!/usr/bin/env bash
# A DeepSpeed config of 100000 nested arrays: `tierzero plan --config` refuses it naming the depth, with
# exit 1, and its peak memory (/usr/bin/time's maximum resident set) stays within 64 MiB of the same
# command's with a one-level config. Prints "deep_config: refused in S s" when all of that holds.
#
#   deep_config.sh TIERZERO
set -u
tierzero=${1:?usage: $0 TIERZERO}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tz_deep_config.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
head -c 100000 /dev/zero | tr '\0' '[' >"$tmp/deep.json"
echo '[]' >"$tmp/flat.json"

# Max RSS in KiB of `tierzero plan --config FILE`; its output goes to $tmp/out, its status to $tmp/rc.
rss() {
  /usr/bin/time -f '%M' -o "$tmp/rss" "$tierzero" plan --config "$1" >"$tmp/out" 2>&1
  echo $? >"$tmp/rc"
  tail -n 1 "$tmp/rss"  # after "Command exited with non-zero status N"
}
flat=$(rss "$tmp/flat.json")
start=$EPOCHREALTIME
deep=$(rss "$tmp/deep.json")
seconds=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
cat "$tmp/out"
rc=$(cat "$tmp/rc")
((rc == 1)) || { echo "FAIL: exit status $rc, expected 1"; exit 1; }
grep -q "deep.json nests arrays and objects deeper than 64 levels (line 1)" "$tmp/out" ||
  { echo "FAIL: the message does not name the depth"; exit 1; }
((deep - flat <= 65536)) || { echo "FAIL: peak memory $deep KiB, $flat KiB with a flat config"; exit 1; }
echo "deep_config: refused in $seconds s, peak memory $deep KiB ($flat KiB with a flat config)"
