#!/usr/bin/env bash
# ckpt inspect's time and memory are bounded by the data it checks (issue 37): a 62 MB manifest whose last
# key, holding all of it, is unknown is refused naming the key in at most 4 s and 160 MB of peak resident
# memory (it took 9 s and 330 MB to say "every checksum verified" before); measured with /usr/bin/time.
# usage: manifest_unknown_key.sh TIERZERO     (exit 77, a skip, without /usr/bin/time)
set -u
tierzero=$1
[ -x /usr/bin/time ] || { echo "manifest_unknown_key.sh: SKIP: no /usr/bin/time to measure with"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "manifest_unknown_key.sh: FAIL: $*"; exit 1; }
"$tierzero" train --steps 1 --log-every 0 --val-batches 1 --save-dir "$d/ckpt" > "$d/setup.log" 2>&1 ||
  { cat "$d/setup.log"; fail "no checkpoint"; }
m=$d/ckpt/step-00000001/manifest.json
python3 -c 'import json, sys; p = sys.argv[1]; m = json.load(open(p)); m["zz_extra"] = list(range(7000000)); open(p, "w").write(json.dumps(m))' "$m"
size=$(stat -c %s "$m")
/usr/bin/time -f 'time %e s, peak %M KiB' -o "$d/time.txt" "$tierzero" ckpt inspect "$d/ckpt" > "$d/out.log" 2>&1
rc=$?
cat "$d/out.log" "$d/time.txt"
[ "$rc" = 1 ] || fail "exit $rc, not 1"
grep -q "'zz_extra' is not a key a tierzero checkpoint manifest has" "$d/out.log" || fail "the key is not named"
grep -q "verified" "$d/out.log" && fail "it says something was verified"
read -r _ secs _ _ kib _ < <(tail -n 1 "$d/time.txt")
awk -v s="$secs" 'BEGIN { exit !(s <= 4) }' || fail "took $secs s"
[ "$kib" -le $((160 * 1024)) ] || fail "peak resident memory $kib KiB"
echo "manifest_unknown_key.sh: a $size-byte manifest with an unknown key refused in $secs s, peak $kib KiB"
