#!/usr/bin/env bash
# A NaN in an --init-from folder is found while the ranks stream it, group by group, into the engine:
# every rank stops together before step 1, each naming the tensor and the element, and no rank waits for
# another in a collective (a rank that read good values would name the one that failed).
# usage: init_from_nan.sh MPIRUN_ARGS... -- TIERZERO ROOT
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
root=${*: -1}
PY=/usr/bin/python3
$PY -c "import numpy" 2>/dev/null || { echo "skip: /usr/bin/python3 has no numpy"; exit 77; }
d=$(mktemp -d "${TMPDIR:-/tmp}/init-from-nan.XXXXXX")
trap 'rm -rf "$d"' EXIT
$PY "$root/perf/scripts/make_llama_folder.py" --out "$d/m" --dtype F32 --tokens "$d/tok.bin" > /dev/null || exit 1
# Element 3 of block 1's down_proj becomes NaN, in place.
$PY - "$d/m/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    e = json.loads(f.read(n))["model.layers.1.mlp.down_proj.weight"]
    f.seek(8 + n + e["data_offsets"][0] + 3 * 4)
    f.write(struct.pack("<I", 0x7FC00000))
PY
"${mpirun_args[@]}" "$tierzero" train --init-from "$d/m" --data "$d/tok.bin" --zero-stage 3 --steps 2 --micro-batch 2 \
  --seq-len 32 --log-every 1
