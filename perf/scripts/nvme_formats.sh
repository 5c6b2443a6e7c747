#!/usr/bin/env bash
# Compressed optimizer states on NVMe (issue 36): the NVMe traffic of a step and the step time, fp32 states
# against int8 moments with a bf16-sr master, in the training job itself (`tierzero train`, ZeRO stage 1 on one
# rank, the optimizer on NVMe under DIR, bf16, GPT-2 124M at micro-batch 1 x SEQ tokens: a fine-tune whose
# step is bound by the disk). Runs alternate by format, REPS rounds; from each run's --metrics, steps 2..STEPS
# (step 1's counters hold the store's initial writes): the median step and optimizer-phase times and the mean
# NVMe bytes read and written per step (the optimizer swapper's own counters). The disk's limit beside them:
# `tierzero bench io` (the store's path, checksums on) and fio (io_uring, O_DIRECT) on DIR, 1 MiB blocks,
# before the first and after the last round. Each run holds the shared lock (/tmp/tz-build.lock).
# THROTTLE=BYTES_PER_S caps the disk's rate each way for every run and limit (cgroup v1 blkio throttle, as root):
# the share of a drive a rank gets when several share it, where the disk and not the CPU sets the step.
# usage: perf/scripts/nvme_formats.sh [build-dir] [nvme-dir] [out-dir]
# env: REPS (3), STEPS (6), SEQ (32), MODEL (gpt2), THREADS (2), THROTTLE (unset: the disk as it is)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DIR=${2:-/var/tmp/tz-nvme-formats}
OUT=${3:-/var/tmp/tz-nvme-formats-out}
REPS=${REPS:-3}
STEPS=${STEPS:-6}
SEQ=${SEQ:-32}
MODEL=${MODEL:-gpt2}
THREADS=${THREADS:-2}
TZ=$BUILD/launch/tierzero
[ -x "$TZ" ] || { echo "no $TZ: build it first" >&2; exit 1; }
mkdir -p "$DIR" "$OUT"
export OMP_NUM_THREADS=$THREADS
isa=avx2
grep -q -w avx512f /proc/cpuinfo && isa=avx512
grep -q -w avx512_bf16 /proc/cpuinfo && isa="$isa with avx512_bf16"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cpus; isa: $isa"
echo "disk: $(df -h --output=source,fstype,size "$DIR" | tail -1)"
# Each run and limit through `in_cgroup`: in the throttled cgroup when THROTTLE is set.
in_cgroup() { "$@"; }
if [ -n "${THROTTLE:-}" ]; then
  dev=$(df --output=source "$DIR" | tail -1)
  disk=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -1)
  majmin=$(lsblk -dno MAJ:MIN "${disk:+/dev/$disk}${disk:-$dev}" | tr -d ' ')
  CG=/sys/fs/cgroup/blkio/tz-nvme-formats
  mkdir -p "$CG" || { echo "THROTTLE needs cgroup v1 blkio at /sys/fs/cgroup/blkio (as root)" >&2; exit 1; }
  echo "$majmin $THROTTLE" > "$CG/blkio.throttle.read_bps_device"
  echo "$majmin $THROTTLE" > "$CG/blkio.throttle.write_bps_device"
  echo "throttle: $majmin at $THROTTLE bytes/s each way (blkio cgroup $CG)"
  in_cgroup() { bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
fi
locked() { (flock 9 && in_cgroup "$@") 9> /tmp/tz-build.lock; }

limits() {
  locked "$TZ" bench io --path "$DIR" --size 2G --block-size 1M --queue-depth 8 | tail -3
  if command -v fio > /dev/null; then
    for rw in write read; do
      locked fio --name=limit --directory="$DIR" --ioengine=io_uring --direct=1 --bs=1M \
        --iodepth=8 --size=2G --rw=$rw --numjobs=1 --group_reporting --output-format=terse 2>/dev/null |
        awk -F';' -v rw=$rw '{ kb = (rw == "read") ? $7 : $48; printf "fio %s: %.2f GB/s\n", rw, kb * 1024 / 1e9 }'
    done
    rm -f "$DIR"/limit.*
  fi
}
echo "== the disk's limit, before"
limits

for rep in $(seq 1 "$REPS"); do
  for fmt in fp32/fp32 int8/bf16-sr; do
    states=${fmt%/*} master=${fmt#*/}
    metrics="$OUT/round$rep-$states-$master.jsonl"
    rm -f "$metrics"
    locked "$TZ" train --model "$MODEL" --dtype bf16 --micro-batch 1 \
      --seq-len "$SEQ" --steps "$STEPS" --log-every 0 --val-batches 1 --offload-optimizer nvme --nvme-path "$DIR" \
      --optimizer-states "$states" --master-weights "$master" --metrics "$metrics" > "$OUT/round$rep-$states.log" 2>&1 ||
      { echo "round $rep $fmt failed:"; tail -5 "$OUT/round$rep-$states.log"; exit 1; }
  done
done

echo "== the disk's limit, after"
limits

/usr/bin/python3 - "$OUT" "$REPS" <<'EOF'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def run(rep, fmt):
    recs = [json.loads(l) for l in open(f"{out}/round{rep}-{fmt}.jsonl")]
    steps = [r for r in recs if "ms" in r and r.get("step", 0) >= 2]
    step = statistics.median(r["ms"]["step"] for r in steps)
    opt = statistics.median(r["ms"]["optimizer"] for r in steps)
    rd = statistics.mean(r["offload"]["nvme"]["read_bytes"] for r in steps)
    wr = statistics.mean(r["offload"]["nvme"]["write_bytes"] for r in steps)
    return step, opt, rd, wr
print(f"{'round':>5} {'states':>14} {'step ms':>9} {'optimizer ms':>13} {'read MB/step':>13} {'written MB/step':>16}")
rows = {}
for rep in range(1, reps + 1):
    for fmt in ("fp32-fp32", "int8-bf16-sr"):
        s, o, r, w = run(rep, fmt)
        rows.setdefault(fmt, []).append((s, o, r, w))
        print(f"{rep:>5} {fmt:>14} {s:9.1f} {o:13.1f} {r / 1e6:13.1f} {w / 1e6:16.1f}")
f, q = rows["fp32-fp32"], rows["int8-bf16-sr"]
step_x = statistics.median(a[0] / b[0] for a, b in zip(f, q))
opt_x = statistics.median(a[1] / b[1] for a, b in zip(f, q))
traffic = statistics.median((b[2] + b[3]) / (a[2] + a[3]) for a, b in zip(f, q))
print(f"int8 + bf16-sr against fp32 (medians of the rounds' ratios): NVMe traffic {traffic:.3f}x (goal <= 0.40), "
      f"step {step_x:.2f}x faster, optimizer phase {opt_x:.2f}x faster (goal >= 2.0x)")
EOF
