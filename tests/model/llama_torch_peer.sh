#!/usr/bin/env bash
# A Llama-family folder written by numpy alone (perf/scripts/make_llama_folder.py) trains in tierzero
# (--init-from DIR) to the losses a plain PyTorch 1.13 Llama gets from the same folder and tokens
# (perf/scripts/torch_llama_peer.py), step for step within 1e-5: grouped-query Llama in three F32 shards,
# and a tied multi-query Qwen2 with q/k/v biases in BF16. Exits 77 (skip) where /usr/bin/python3 has no
# torch or numpy.
#   llama_torch_peer.sh TIERZERO ROOT
set -euo pipefail
TIERZERO=$1
ROOT=$2
PY=/usr/bin/python3
$PY -c "import torch, numpy" 2>/dev/null || { echo "skip: /usr/bin/python3 has no torch or numpy (apt-get install python3-torch)"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/llama-peer.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STEPS=6
for variant in "llama_gqa_f32_3_shards|--arch LlamaForCausalLM --kv-heads 2 --shards 3 --dtype F32" \
               "qwen2_tied_mqa_bf16|--arch Qwen2ForCausalLM --kv-heads 1 --tied --dtype BF16 --seed 2"; do
  name=${variant%%|*}
  read -r -a args <<<"${variant#*|}"
  $PY "$ROOT/perf/scripts/make_llama_folder.py" --out "$WORK/$name" "${args[@]}" --tokens "$WORK/$name.bin"
  "$TIERZERO" train --init-from "$WORK/$name" --data "$WORK/$name.bin" --steps $STEPS --micro-batch 2 --seq-len 32 \
    --lr 1e-3 --metrics "$WORK/$name.jsonl" >"$WORK/$name.log"
  $PY "$ROOT/perf/scripts/torch_llama_peer.py" --folder "$WORK/$name" --data "$WORK/$name.bin" --steps $STEPS \
    --micro-batch 2 --seq-len 32 --lr 1e-3 >"$WORK/$name.torch.json"
  $PY - "$name" "$WORK/$name.jsonl" "$WORK/$name.torch.json" $STEPS <<'PY'
import json, sys
name, metrics, peer, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ours = [r["loss"] for r in map(json.loads, open(metrics)) if "loss" in r and "step" in r]
theirs = json.load(open(peer))["losses"]
assert len(ours) == steps and len(theirs) == steps, (name, len(ours), len(theirs))
worst = max(abs(a - b) for a, b in zip(ours, theirs))
print("%s: tierzero %s" % (name, " ".join("%.7f" % x for x in ours)))
print("%s: pytorch  %s" % (name, " ".join("%.7f" % x for x in theirs)))
print("%s: largest difference %.2e over %d steps (limit 1e-5)" % (name, worst, steps))
sys.exit(0 if worst <= 1e-5 else 1)
PY
done
