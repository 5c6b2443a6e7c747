#!/usr/bin/env bash
# Runs `tierzero bench io` (checksums on, then off) and fio (io_uring, O_DIRECT, no fsync) interleaved, ROUNDS
# times, at 1 MiB qd 8, 1 MiB qd 32 and 128 KiB qd 32 on a SIZE shard in DIR; prints each run and the median
# GB/s of both with the ratio (goal: >= 0.90 of fio, read and write, checksums on), and the CPU each spends
# per GB moved. Every file is removed afterwards.
# DIR=ramloop: an ext4 file system on a loop device over a file in /dev/shm, made here and removed on exit
# (also on failure): memory speed with the file system's and the block layer's path, no disk noise.
# usage: perf/scripts/bench_io_vs_fio.sh [build-dir] [rounds] [dir|ramloop] [size]     (fio: apt-get install fio)
# env: TZ_IO_CONFIGS="1M 8;128K 32 4M" replaces the settings (block, queue depth, and optionally tierzero's
#      --buffer, its staging arena per direction: fio moves data through qd x block bytes that stay in cache);
#      TZ_IO_CHECKSUMS="on" runs tierzero with checksums on only.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
DIR=${3:-/tmp}
SIZE=${4:-4G}
IFS=';' read -r -a CONFIGS <<<"${TZ_IO_CONFIGS:-1M 8;1M 32;128K 32}"
read -r -a CHECKSUMS <<<"${TZ_IO_CHECKSUMS:-on off}"
command -v fio >/dev/null || { echo "fio not found: bash scripts/install-perf-deps.sh" >&2; exit 1; }
out=$(mktemp -d)
img="" loop="" mnt=""
cleanup() {
  rm -f "${fiofile:-}"
  if [ -n "$mnt" ]; then umount "$mnt" 2>/dev/null || true; rmdir "$mnt" 2>/dev/null || true; fi
  if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
  if [ -n "$img" ]; then rm -f "$img"; fi
  rm -rf "$out"
}
trap cleanup EXIT
if [ "$DIR" = ramloop ]; then
  bytes=$(numfmt --from=iec "$SIZE")
  fs_bytes=$((bytes * 3 / 2 + (1 << 30)))  # one shard (tierzero's or fio's file) at a time, plus ext4's own
  img=/dev/shm/tierzero-ramloop-$$.img
  # fallocate, and mkfs without discard: every page of the image exists before the first timed write.
  fallocate -l "$fs_bytes" "$img"
  loop=$(losetup -f --show "$img")
  mkfs.ext4 -q -E nodiscard "$loop"
  mnt=$(mktemp -d /var/tmp/tierzero-ramloop-XXXXXX)
  mount "$loop" "$mnt"
  # A first write into the image's pages ran at 0.5-2 GB/s (the VM's memory faulted in on first touch):
  # write the whole file system once, untimed.
  dd if=/dev/zero of="$mnt/warm" bs=1M oflag=direct status=none 2>/dev/null || true
  rm -f "$mnt/warm"
  echo "RAM-backed loop device: $img ($(numfmt --to=iec "$fs_bytes")) on $loop, ext4 mounted at $mnt"
  DIR=$mnt
fi
fiofile="$DIR/tierzero-fio-$$.dat"
# Busy CPU seconds of the whole machine (the loop device's copies run in kernel workers, outside the process).
busy_s() { awk '/^cpu /{printf "%.2f\n", ($2+$3+$4+$7+$8)/100}' /proc/stat; }
# Runs a command; prints its stdout, then "process user+sys s" and "machine busy s" on the last line.
timed() {
  local b0 b1
  b0=$(busy_s)
  /usr/bin/time -f "%U %S" -o "$out/time" "$@" >"$out/stdout"
  b1=$(busy_s)
  cat "$out/stdout"
  awk -v b0="$b0" -v b1="$b1" '{printf "%.2f %.2f\n", $1+$2, b1-b0}' "$out/time"
}
# fio's bandwidth in GB/s (1e9 bytes/s) for one sequential pass, and its CPU: "gbps proc_s busy_s".
fio_run() {  # fio_run write|read BS QD
  local r
  r=$(timed fio --name="$1" --ioengine=io_uring --direct=1 --rw="$1" --bs="$2" --iodepth="$3" --size="$SIZE" \
      --filename="$fiofile" --output-format=json)
  echo "$(head -n -1 <<<"$r" | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['$1']['bw_bytes'] / 1e9)") $(tail -1 <<<"$r")"
}
for r in $(seq "$ROUNDS"); do
  for c in "${CONFIGS[@]}"; do
    read -r bs qd buf <<<"$c"
    tz="{"
    for cs in "${CHECKSUMS[@]}"; do
      res=$(timed "$BUILD/launch/tierzero" bench io --path "$DIR" --size "$SIZE" --block-size "$bs" --queue-depth "$qd" \
            --checksums "$cs" ${buf:+--buffer "$buf"} --json)
      read -r proc busy <<<"$(tail -1 <<<"$res")"
      tz+="\"$cs\": $(head -n -1 <<<"$res"), \"${cs}_proc_cpu_s\": $proc, \"${cs}_busy_cpu_s\": $busy, "
    done
    tz="${tz%, }}"
    read -r fw fwp fwb <<<"$(fio_run write "$bs" "$qd")"
    read -r fr frp frb <<<"$(fio_run read "$bs" "$qd")"
    rm -f "$fiofile"
    echo "{\"round\": $r, \"bs\": \"$bs\", \"qd\": $qd, \"buffer\": \"${buf:-256M}\", \"size\": \"$SIZE\", \"tierzero\": $tz, \"fio_write_gbps\": $fw, \"fio_read_gbps\": $fr, \"fio_write_proc_cpu_s\": $fwp, \"fio_write_busy_cpu_s\": $fwb, \"fio_read_proc_cpu_s\": $frp, \"fio_read_busy_cpu_s\": $frb}" |
      tee -a "$out/runs.jsonl"
  done
done
/usr/bin/python3 - "$out/runs.jsonl" "$SIZE" "$DIR" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
gb = runs[0]["tierzero"][next(k for k in ("on", "off") if k in runs[0]["tierzero"])]["size"] / 1e9
print(f"\nmedians over {max(r['round'] for r in runs)} interleaved rounds, {sys.argv[2]} shard in {sys.argv[3]}, "
      "no fsync (GB/s = 1e9 B/s):")
print(f"{'bs':>5} {'qd':>3} {'buffer':>6} {'sums':>4} | {'write tz':>8} {'fio':>6} {'ratio':>6} | {'read tz':>8} {'fio':>6} {'ratio':>6} | wrong")
for bs, qd, buf in dict.fromkeys((r["bs"], r["qd"], r.get("buffer", "256M")) for r in runs):
    rs = [r for r in runs if r["bs"] == bs and r["qd"] == qd and r.get("buffer", "256M") == buf]
    med = lambda f: statistics.median(f(r) for r in rs)
    fw, fr = med(lambda r: r["fio_write_gbps"]), med(lambda r: r["fio_read_gbps"])
    for cs in ("on", "off"):
        if cs not in rs[0]["tierzero"]: continue
        tw, tr = med(lambda r: r["tierzero"][cs]["write_gbps"]), med(lambda r: r["tierzero"][cs]["read_gbps"])
        wrong = sum(r["tierzero"][cs]["wrong"] for r in rs)
        print(f"{bs:>5} {qd:>3} {buf:>6} {cs:>4} | {tw:8.3f} {fw:6.3f} {tw/fw:6.3f} | {tr:8.3f} {fr:6.3f} {tr/fr:6.3f} | {wrong}")
print("goal: ratio >= 0.90 for read and write, checksums on")
print(f"\nCPU seconds per GB moved, medians (process: user+sys by /usr/bin/time, tierzero's set-up included;"
      "\nmachine: busy time of all cores from /proc/stat, the loop device's kernel workers included):")
print(f"{'bs':>5} {'qd':>3} {'buffer':>6} | {'tz on proc':>10} {'machine':>8} | {'tz off proc':>11} {'machine':>8} | {'fio proc':>8} {'machine':>8}")
for bs, qd, buf in dict.fromkeys((r["bs"], r["qd"], r.get("buffer", "256M")) for r in runs):
    rs = [r for r in runs if r["bs"] == bs and r["qd"] == qd and r.get("buffer", "256M") == buf]
    med = lambda f: statistics.median(f(r) for r in rs)
    cells = []
    for cs in ("on", "off"):
        if cs in rs[0]["tierzero"]:
            cells += [med(lambda r: r["tierzero"][f"{cs}_proc_cpu_s"]) / (2 * gb),
                      med(lambda r: r["tierzero"][f"{cs}_busy_cpu_s"]) / (2 * gb)]
        else:
            cells += [float("nan")] * 2
    cells += [med(lambda r: r["fio_write_proc_cpu_s"] + r["fio_read_proc_cpu_s"]) / (2 * gb),
              med(lambda r: r["fio_write_busy_cpu_s"] + r["fio_read_busy_cpu_s"]) / (2 * gb)]
    print(f"{bs:>5} {qd:>3} {buf:>6} | {cells[0]:10.3f} {cells[1]:8.3f} | {cells[2]:11.3f} {cells[3]:8.3f} | {cells[4]:8.3f} {cells[5]:8.3f}")
PY
