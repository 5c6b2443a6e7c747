set -e
cd /work/main
tz=build/launch/tierzero
m=(--n-layer 6 --n-embd 384 --n-head 6 --vocab 256 --seq-len 128 --micro-batch 4)
OMP_NUM_THREADS=2 $tz bench calibrate "${m[@]}" --out /var/tmp/fmtcheck/hw.json > /var/tmp/fmtcheck/cal.log 2>&1
for f in "fp32 fp32" "bf16 fp32" "int8 bf16-sr"; do
  set -- $f
  rm -f /var/tmp/fmtcheck/m.jsonl
  OMP_NUM_THREADS=2 $tz train "${m[@]}" --zero-stage 1 --offload-optimizer cpu --optimizer-states $1 --master-weights $2 --steps 12 --log-every 0 --val-batches 1 --metrics /var/tmp/fmtcheck/m.jsonl > /var/tmp/fmtcheck/run.log 2>&1
  meas=$(grep '"loss"' /var/tmp/fmtcheck/m.jsonl | tail -n 9 | /usr/bin/python3 -c '
import json,sys,statistics
rows=[json.loads(l) for l in sys.stdin]
print("%.1f" % statistics.median(r["ms"]["optimizer"] for r in rows))' 2>/dev/null || echo "?")
  pred=$(OMP_NUM_THREADS=2 $tz plan --world 1 --threads-per-rank 2 "${m[@]}" --zero-stage 1 --offload-optimizer cpu --optimizer-states $1 --master-weights $2 --hardware /var/tmp/fmtcheck/hw.json | awk '/^  optimizer /{print $2}')
  echo "$1/$2: plan optimizer $pred ms, measured $meas ms"
done
