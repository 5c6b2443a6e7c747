#!/usr/bin/env bash
# --save-hf and `ckpt export --format hf` end to end, checked by an independent reader (python3 + numpy,
# and plain PyTorch 1.13 through perf/scripts/torch_llama_peer.py):
#  1. a numpy-written Llama folder (BF16, two shards, a tokenizer) read and written back with no change
#     to the weights (one step at --lr 0) gives the same tensors bit for bit, in shards of at most
#     --save-hf-shard-size bytes with their index, __metadata__ {"format": "pt"}, config.json's
#     torch_dtype, and the tokenizer and generation files copied;
#  2. `tierzero ckpt export CKPT --format hf --copy-from IN` writes the same folder from the checkpoint;
#  3. a folder written after three steps loads in PyTorch as the model tierzero loads: the next step's
#     loss agrees within 1e-5;
#  4. a non-empty --save-hf folder is refused before step 1 and left as it was.
# Exits 77 (skip) where /usr/bin/python3 has no numpy or torch.
#   save_hf.sh TIERZERO ROOT
set -euo pipefail
TIERZERO=$1
ROOT=$2
PY=/usr/bin/python3
$PY -c "import torch, numpy" 2>/dev/null || { echo "skip: /usr/bin/python3 has no torch or numpy (apt-get install python3-torch)"; exit 77; }
d=$(mktemp -d "${TMPDIR:-/tmp}/save-hf.XXXXXX")
trap 'rm -rf "$d"' EXIT
fail() { echo "save_hf.sh: $*"; exit 1; }
run() { "$TIERZERO" "$@" >"$d/last.log" 2>&1 || { cat "$d/last.log"; fail "tierzero $* failed"; }; }
common=(--data "$d/tokens.bin" --micro-batch 2 --seq-len 32 --log-every 0 --val-batches 1)

$PY "$ROOT/perf/scripts/make_llama_folder.py" --out "$d/in" --kv-heads 2 --shards 2 --dtype BF16 --tokens "$d/tokens.bin"
echo '{"version": "1.0", "added_tokens": [], "model": {"type": "BPE"}}' > "$d/in/tokenizer.json"
echo '{"bos_token_id": 1, "eos_token_id": 2}' > "$d/in/generation_config.json"

# Folder A equals folder B tensor for tensor (names, dtypes, shapes, bytes); A is a well-formed folder.
same_folder() {
  $PY - "$1" "$2" "$3" "$4" <<'PY'
import json, os, struct, sys
out, ref, dtype, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def tensors(d, check):
    idx = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    t, total = {}, 0
    for f in files:
        raw = open(os.path.join(d, f), "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        head = json.loads(raw[8:8 + n])
        meta = head.pop("__metadata__", None)
        size = 0
        for name, e in head.items():
            b, end = e["data_offsets"]
            t[name] = (e["dtype"], e["shape"], raw[8 + n + b:8 + n + end])
            size += end - b
        if check:
            assert meta == {"format": "pt"}, (f, meta)
            assert size <= limit or len(head) == 1, (f, size, limit)
            if os.path.exists(idx):
                assert all(json.load(open(idx))["weight_map"][k] == f for k in head), f
        total += size
    if check and os.path.exists(idx):
        assert json.load(open(idx))["metadata"]["total_size"] == total
    return t, len(files)
a, files = tensors(out, True)
b, _ = tensors(ref, False)
assert sorted(a) == sorted(b), (sorted(set(a) ^ set(b)))
bad = [k for k in a if a[k] != b[k]]
assert not bad, bad[:5]
cfg = json.load(open(os.path.join(out, "config.json")))
assert cfg["torch_dtype"] == dtype, cfg.get("torch_dtype")
for f in ("tokenizer.json", "generation_config.json"):
    assert open(os.path.join(out, f), "rb").read() == open(os.path.join(ref, f), "rb").read(), f
print("%d tensors in %d files equal bit for bit, torch_dtype %s, tokenizer files copied" % (len(a), files, dtype))
PY
}

# 1. No change to the weights: the same bits back.
run train --init-from "$d/in" "${common[@]}" --steps 1 --lr 0 --save-dir "$d/ckpt" --save-hf "$d/out" \
  --save-hf-dtype bf16 --save-hf-shard-size 40000
grep -q "saved Hugging Face folder $d/out (" "$d/last.log" || { cat "$d/last.log"; fail "no 'saved Hugging Face folder' line"; }
echo "save_hf.sh: --save-hf read and written back with no change: $(same_folder "$d/out" "$d/in" bfloat16 40000)"

# 2. The same from the checkpoint.
run ckpt export "$d/ckpt" --format hf --to "$d/exported" --dtype bf16 --shard-size 40000 --copy-from "$d/in"
echo "save_hf.sh: ckpt export --format hf: $(same_folder "$d/exported" "$d/in" bfloat16 40000)"

# 3. Trained, written in fp32, read by PyTorch: the next step's loss as tierzero's.
run train --init-from "$d/in" "${common[@]}" --steps 3 --lr 1e-3 --save-hf "$d/trained"
run train --init-from "$d/trained" "${common[@]}" --steps 1 --lr 0 --metrics "$d/next.jsonl"
$PY "$ROOT/perf/scripts/torch_llama_peer.py" --folder "$d/trained" --data "$d/tokens.bin" --steps 1 \
  --micro-batch 2 --seq-len 32 --lr 0 > "$d/peer.json"
$PY - "$d/next.jsonl" "$d/peer.json" <<'PY'
import json, sys
ours = [r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r and "step" in r][0]
theirs = json.load(open(sys.argv[2]))["losses"][0]
print("save_hf.sh: the trained folder in PyTorch: loss %.7f, in tierzero %.7f, difference %.2e (limit 1e-5)" %
      (theirs, ours, abs(ours - theirs)))
sys.exit(0 if abs(ours - theirs) <= 1e-5 else 1)
PY

# 4. A non-empty folder: refused before step 1, untouched.
mkdir "$d/busy" && echo mine > "$d/busy/notes.txt"
start=$(date +%s)
if "$TIERZERO" train --init-from "$d/in" "${common[@]}" --steps 1 --save-hf "$d/busy" > "$d/busy.log" 2>&1; then
  fail "a non-empty --save-hf folder was accepted"
fi
grep -q -- "--save-hf '$d/busy' is not empty" "$d/busy.log" || { cat "$d/busy.log"; fail "no refusal naming the folder"; }
! grep -q "step *1/" "$d/busy.log" || fail "training started before the refusal"
[ "$(ls -A "$d/busy")" = notes.txt ] && [ "$(cat "$d/busy/notes.txt")" = mine ] || fail "the folder was changed"
echo "save_hf.sh: a non-empty --save-hf folder is refused before step 1 in $(( $(date +%s) - start )) s and left as it was"
