#!/usr/bin/env bash
# Runs `tierzero bench io` (checksums on) and fio (io_uring, O_DIRECT, no fsync) interleaved, ROUNDS times,
# at 1 MiB qd 8, 1 MiB qd 32 and 128 KiB qd 32 on a SIZE shard in DIR; prints each run and the median
# GB/s of both with the ratio (goal: >= 0.90 of fio, read and write). Every file is removed afterwards.
# usage: perf/scripts/bench_io_vs_fio.sh [build-dir] [rounds] [dir] [size]     (fio: apt-get install fio)
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
DIR=${3:-/tmp}
SIZE=${4:-4G}
CONFIGS=("1M 8" "1M 32" "128K 32")
command -v fio >/dev/null || { echo "fio not found: bash scripts/install-perf-deps.sh" >&2; exit 1; }
out=$(mktemp -d)
fiofile="$DIR/tierzero-fio-$$.dat"
trap 'rm -f "$fiofile"; rm -rf "$out"' EXIT
# fio's bandwidth in GB/s (1e9 bytes/s) for one sequential pass; same flags as the issue's reference runs.
fio_gbps() {  # fio_gbps write|read BS QD
  fio --name="$1" --ioengine=io_uring --direct=1 --rw="$1" --bs="$2" --iodepth="$3" --size="$SIZE" \
      --filename="$fiofile" --output-format=json |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['$1']['bw_bytes'] / 1e9)"
}
for r in $(seq "$ROUNDS"); do
  for c in "${CONFIGS[@]}"; do
    read -r bs qd <<<"$c"
    tz=$("$BUILD/launch/tierzero" bench io --path "$DIR" --size "$SIZE" --block-size "$bs" --queue-depth "$qd" \
         --checksums on --json)
    fw=$(fio_gbps write "$bs" "$qd")
    fr=$(fio_gbps read "$bs" "$qd")
    rm -f "$fiofile"
    echo "{\"round\": $r, \"bs\": \"$bs\", \"qd\": $qd, \"tierzero\": $tz, \"fio_write_gbps\": $fw, \"fio_read_gbps\": $fr}" |
      tee -a "$out/runs.jsonl"
  done
done
/usr/bin/python3 - "$out/runs.jsonl" "$SIZE" "$DIR" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print(f"\nmedians over {max(r['round'] for r in runs)} interleaved rounds, {sys.argv[2]} shard in {sys.argv[3]}, "
      "checksums on, no fsync (GB/s = 1e9 B/s):")
print(f"{'bs':>5} {'qd':>3} | {'write tz':>8} {'fio':>6} {'ratio':>6} | {'read tz':>8} {'fio':>6} {'ratio':>6} | wrong")
for bs, qd in dict.fromkeys((r["bs"], r["qd"]) for r in runs):
    rs = [r for r in runs if r["bs"] == bs and r["qd"] == qd]
    med = lambda f: statistics.median(f(r) for r in rs)
    tw, fw = med(lambda r: r["tierzero"]["write_gbps"]), med(lambda r: r["fio_write_gbps"])
    tr, fr = med(lambda r: r["tierzero"]["read_gbps"]), med(lambda r: r["fio_read_gbps"])
    wrong = sum(r["tierzero"]["wrong"] for r in rs)
    print(f"{bs:>5} {qd:>3} | {tw:8.3f} {fw:6.3f} {tw/fw:6.3f} | {tr:8.3f} {fr:6.3f} {tr/fr:6.3f} | {wrong}")
print("goal: ratio >= 0.90 for read and write")
PY
