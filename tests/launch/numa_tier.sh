#!/usr/bin/env bash
# The numa:N tier through the binary at 2 ranks, ZeRO stage 3 (llama-tiny, bf16): optimizer states and
# parameter shards on node 0 by the flags (--offload-optimizer numa:0 --offload-param numa:0 --numa-mem),
# and by a DeepSpeed config's offload "device": "numa:0", give the step losses of --offload-optimizer cpu
# bit for bit (as printed, 4 decimals, and in --metrics: every digit); the kernel finds the pages on
# node 0; a short --numa-mem is refused naming the node's flag, a malformed one naming the piece.
# Exits 77 (a skip) where the kernel has no NUMA support.
# usage: numa_tier.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
[ -d /sys/devices/system/node/node0 ] || { echo "numa_tier.sh: no NUMA node 0 in /sys (kernel without NUMA)"; exit 77; }
d=$(mktemp -d "${TMPDIR:-/tmp}/numa-tier.XXXXXX")
trap 'rm -rf "$d"' EXIT
args=(train --model llama-tiny --steps 4 --micro-batch 2 --seq-len 32 --lr 3e-3 --log-every 1 --val-batches 1
      --dtype bf16 --zero-stage 3 --param-persistence-threshold 0)
run() {  # run NAME FLAGS...: trains, keeps the log and the metrics' losses
  local name=$1
  shift
  "${mpirun_args[@]}" "$tierzero" "${args[@]}" --metrics "$d/$name.jsonl" "$@" > "$d/$name.log" 2>&1 ||
    { cat "$d/$name.log"; echo "numa_tier.sh: the $name run failed"; exit 1; }
  /usr/bin/python3 -c "import json,sys; [print(repr(json.loads(l).get('loss'))) for l in open(sys.argv[1]) if '\"loss\"' in l]" \
    "$d/$name.jsonl" > "$d/$name.losses"
}
run cpu --offload-optimizer cpu --offload-param cpu
run flags --offload-optimizer numa:0 --offload-param numa:0 --numa-mem 0=64M
cat > "$d/ds.json" <<'JSON'
{"train_micro_batch_size_per_gpu": 2,
 "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0,
                       "offload_optimizer": {"device": "numa:0"}, "offload_param": {"device": "numa:0"}}}
JSON
run config --config "$d/ds.json"
[ "$(wc -l < "$d/cpu.losses")" -ge 4 ] || { cat "$d/cpu.jsonl"; echo "numa_tier.sh: fewer than 4 losses"; exit 1; }
for name in flags config; do
  cmp -s "$d/cpu.losses" "$d/$name.losses" ||
    { paste "$d/cpu.losses" "$d/$name.losses"; echo "numa_tier.sh: the $name run's losses differ from cpu's"; exit 1; }
  grep -q "fp32 master *numa:0" "$d/$name.log" || { cat "$d/$name.log"; echo "numa_tier.sh: $name: no states on numa:0"; exit 1; }
  line=$(grep "rank 0's numa:0:" "$d/$name.log")
  echo "$name: $line"
  [[ "$line" =~ ([0-9]+)\ of\ ([0-9]+)\ pages\ checked\ on\ node\ 0 ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
    { echo "numa_tier.sh: $name: not every page checked is on node 0"; exit 1; }
done
echo "numa_tier.sh: numa:0 by flags and by DeepSpeed config gave cpu's $(wc -l < "$d/cpu.losses") losses bit for bit"
# A short budget and a malformed one: refused with status 1, naming the flag.
"${mpirun_args[@]}" "$tierzero" "${args[@]}" --offload-optimizer numa:0 --numa-mem 0=4K > "$d/short.log" 2>&1
echo "short budget: status $?"
grep -o "out of numa:0 memory budget[^;]*; raise the budget (--numa-mem 0=SIZE)" "$d/short.log" | head -1
"$tierzero" "${args[@]}" --offload-optimizer numa:0 --numa-mem 0=lots > "$d/bad.log" 2>&1
echo "malformed budget: status $?"
grep -o "numa-mem '0=lots': 'lots' for node 0 is not a byte size" "$d/bad.log" | head -1
"$tierzero" "${args[@]}" --offload-optimizer numa:x > "$d/badname.log" 2>&1
echo "malformed node: status $?"
grep -o "a NUMA node is a whole number" "$d/badname.log" | head -1
