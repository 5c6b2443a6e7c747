#!/usr/bin/env bash
# Settings name real things (issue 37): a NUMA node this machine lacks, given by --numa-mem, by a numa:N tier
# that no byte of the plan lands on, by --offload-optimizer or by a DeepSpeed config, and an --nvme-path that
# does not exist, are each refused by `train` within 5 s before step 1 naming the flag; `plan` says so beside
# a plan that fits (text and JSON) instead of only "fits"; a DeepSpeed offload "device": 7 is answered with
# every accepted form, numa:N among them.
# usage: settings_exist.sh TIERZERO
set -u
. "$(dirname "$0")/launch_lib.sh"
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "settings_exist.sh: FAIL: $*"; exit 1; }
# A node id this machine does not have: one past its highest.
n=0
for node in /sys/devices/system/node/node[0-9]*; do
  [ -e "$node" ] && id=${node##*node} && [ "$id" -ge "$n" ] && n=$((id + 1))
done
[ "$n" -gt 0 ] || n=7
printf '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "numa:%d"}}}\n' "$n" > "$d/numa.json"
echo '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": 7}}}' > "$d/seven.json"
refuse() {  # refuse WHAT REGEX ARGS...: train exits 1 within 5 s, the message, no step
  local what=$1 regex=$2 t0 rc ms
  shift 2
  t0=$(date +%s%N)
  "$tierzero" train --steps 2 --log-every 1 "$@" > "$d/out.log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check_refusal "$what" "$regex" "$rc" "$ms" "$d/out.log"
  echo "settings_exist.sh: train $what: refused in $ms ms"
}
refuse "--numa-mem $n=1G" "the numa:$n tier \\(--numa-mem $n=SIZE\\): NUMA node $n has no memory" --numa-mem "$n=1G"
refuse "--offload-param numa:$n with no bytes on it" "the numa:$n tier \\(--offload-param numa:$n" \
  --zero-stage 3 --offload-param "numa:$n" --param-persistence-threshold 1e12
refuse "--offload-optimizer numa:$n" "NUMA node $n has no memory" --zero-stage 2 --offload-optimizer "numa:$n"
refuse "a config's offload device numa:$n" "NUMA node $n has no memory" --config "$d/numa.json"
refuse "--nvme-path that does not exist" "--nvme-path '$d/no/such' does not exist on this machine" --nvme-path "$d/no/such"
refuse "a config's offload device 7" 'device is 7; allowed: "none", "cpu", "nvme" or "numa:N"' --config "$d/seven.json"
"$tierzero" plan --zero-stage 2 --offload-optimizer "numa:$n" --nvme-path "$d/no/such" > "$d/plan.log" 2>&1 ||
  { cat "$d/plan.log"; fail "plan failed"; }
grep -q "note: not on this machine: the numa:$n tier" "$d/plan.log" || { cat "$d/plan.log"; fail "plan does not note node $n"; }
grep -q "note: not on this machine: --nvme-path '$d/no/such' does not exist" "$d/plan.log" || fail "plan does not note the path"
grep -q "^the plan fits every budget; it names things this machine lacks" "$d/plan.log" || fail "plan just says it fits"
"$tierzero" plan --zero-stage 2 --offload-optimizer "numa:$n" --json > "$d/plan.json" 2>&1 || fail "plan --json failed"
/usr/bin/python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['missing_on_this_machine']; sys.exit(0 if len(m) == 1 and 'numa:$n' in m[0] else 1)" \
  "$d/plan.json" || { cat "$d/plan.json"; fail "plan --json does not list node $n"; }
echo "settings_exist.sh: plan notes node $n and the missing path, in text and JSON"
