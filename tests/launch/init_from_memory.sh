#!/usr/bin/env bash
# --init-from DIR within the issue's bound: each rank's peak RSS stays within the plan's bytes (device and
# host tiers: on the cpu device both are host memory) plus the largest group in fp32 plus 256 MiB. A Llama
# folder of 109M parameters in BF16 (417 MiB in fp32; its largest group 13 MiB), trained one step at 1 rank
# (stage 0) and at 2 ranks (stage 3); peak RSS measured by /usr/bin/time, each rank's plan from `tierzero
# plan --rank R --json`, the group sizes from the folder's own header (python3). On the cpu device the
# planned pages are touched only as the engine fills them, so a whole-model load freed group by group as
# it is consumed (as before) stays within this bound too: the loader's own peak is measured by an
# allocation hook in tests/model/weight_stream_test.cc.
# usage: init_from_memory.sh [--no-rss] MPIRUN_ARGS... -- TIERZERO ROOT   (--no-rss: AddressSanitizer
# builds, whose RSS is not the program's: skipped, exit 77)
set -u
if [ "${1:-}" = --no-rss ]; then echo "skip: peak RSS is not measured in an AddressSanitizer build"; exit 77; fi
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
root=${*: -1}
PY=/usr/bin/python3
$PY -c "import numpy" 2>/dev/null || { echo "skip: /usr/bin/python3 has no numpy"; exit 77; }
d=$(mktemp -d "${TMPDIR:-/tmp}/init-from-memory.XXXXXX")
trap 'rm -rf "$d"' EXIT
fail() { echo "init_from_memory.sh: $*"; exit 1; }
$PY "$root/perf/scripts/make_llama_folder.py" --out "$d/m" --layers 32 --width 512 --heads 8 --kv-heads 8 --ffn 2048 \
  --vocab 256 --dtype BF16 --tokens "$d/tok.bin" || fail "making the folder failed"
# fp32 bytes of the whole model and of its largest group (embedding + head, one block, the final norm).
read -r model group < <($PY - "$d/m" <<'PY'
import json, os, re, struct, sys
d = sys.argv[1]
idx = os.path.join(d, "model.safetensors.index.json")
files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
groups = {}
for f in files:
    raw = open(os.path.join(d, f), "rb")
    n = struct.unpack("<Q", raw.read(8))[0]
    for name, e in json.loads(raw.read(n)).items():
        if name == "__metadata__":
            continue
        m = re.match(r"model\.layers\.(\d+)\.", name)
        key = "block" + m.group(1) if m else ("norm" if name == "model.norm.weight" else "embedding")
        count = 1
        for s in e["shape"]:
            count *= s
        groups[key] = groups.get(key, 0) + 4 * count
print(sum(groups.values()), max(groups.values()))
PY
)
mib=$((1024 * 1024))
echo "init_from_memory.sh: model $((model / mib)) MiB in fp32, largest group $((group / mib)) MiB"
# Gradients reduced in buckets of 1M elements: Open MPI's reductions allocate temporaries of a bucket's
# size (on the root of a reduce-scatter), which the plan does not hold.
args=(--init-from "$d/m" --micro-batch 1 --seq-len 16 --reduce-bucket-size 1e6)
check() {  # check NAME WORLD STAGE: plan, train under /usr/bin/time per rank, compare
  local name=$1 world=$2 stage=$3 launch=()
  ((world > 1)) && launch=("${mpirun_args[@]}")
  "${launch[@]}" bash -c "exec /usr/bin/time -f %M -o '$d/rss.'\${OMPI_COMM_WORLD_RANK:-0} '$tierzero' train \
    ${args[*]} --data '$d/tok.bin' --zero-stage $stage --steps 1 --log-every 0 --val-batches 1" > "$d/train.log" 2>&1 ||
    { cat "$d/train.log"; fail "$name: training failed"; }
  for ((r = 0; r < world; r++)); do
    "$tierzero" plan "${args[@]}" --world "$world" --rank "$r" --zero-stage "$stage" --json > "$d/plan.json" ||
      fail "plan failed"
    planned=$($PY -c "import json,sys; b=json.load(open(sys.argv[1]))['ranks'][0]['bytes']; print(b['device']+b['host'])" "$d/plan.json")
    peak=$(( $(tail -n 1 "$d/rss.$r") * 1024 ))
    bound=$((planned + group + 256 * mib))
    echo "init_from_memory.sh: $name rank $r: peak RSS $((peak / mib)) MiB, plan $((planned / mib)) MiB, bound $((bound / mib)) MiB"
    ((peak <= bound)) || fail "$name rank $r: peak RSS $((peak / mib)) MiB is past the bound $((bound / mib)) MiB"
  done
}
check "1 rank stage 0" 1 0
check "2 ranks stage 3" 2 3
echo "init_from_memory.sh: every rank within plan + largest group + 256 MiB"
