#!/usr/bin/env bash
# A checkpoint written before issue 19 (tests/fixtures/checkpoint-cf20a6c: tierzero cf20a6c, a 1-block GPT-2
# after 2 steps; its manifest has none of the Llama family's fields) still inspects and resumes: steps 3
# and 4 and the validation after them give the losses that binary's own uninterrupted run gave, exactly
# (expected.json).
# usage: old_checkpoint.sh TIERZERO ROOT
set -u
tierzero=$1
fixture=$2/tests/fixtures/checkpoint-cf20a6c
d=$(mktemp -d "${TMPDIR:-/tmp}/old-checkpoint.XXXXXX")
trap 'rm -rf "$d"' EXIT
fail() { echo "old_checkpoint.sh: $*"; exit 1; }
mkdir "$d/ckpt"  # a checkpoint tree of its own: the metrics go beside it, never into it
cp -r "$fixture/step-00000002" "$d/ckpt/"
"$tierzero" ckpt inspect "$d/ckpt/step-00000002" > "$d/inspect.log" || { cat "$d/inspect.log"; fail "inspect failed"; }
cat "$d/inspect.log"
grep -q "layout: written before tensors of 4096+ elements started on 256-element blocks" "$d/inspect.log" ||
  fail "inspect did not say the checkpoint's layout predates the block alignment"
flags=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['flags'])" "$fixture/expected.json")
# shellcheck disable=SC2086
"$tierzero" train $flags --steps 4 --resume "$d/ckpt/step-00000002" --metrics "$d/m.jsonl" > "$d/train.log" 2>&1 ||
  { cat "$d/train.log"; fail "resuming failed"; }
# Its layout predates the block alignment of tensors of 4096 elements or more (model/param_layout.h): the
# reader takes its tensors from where the manifest puts them.
grep -q "written under an earlier alignment of the parameter layout" "$d/train.log" ||
  { cat "$d/train.log"; fail "the resume did not say it read the tensors from the manifest's offsets"; }
/usr/bin/python3 - "$d/m.jsonl" "$fixture/expected.json" <<'PY' || exit 1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
exp = json.load(open(sys.argv[2]))
got = {str(r["step"]): r["loss"] for r in rows if "loss" in r}
val = [r["val_loss"] for r in rows if "val_loss" in r]
want = {k: exp["losses"][k] for k in ("3", "4")}
print("old_checkpoint.sh: resumed at step 3: losses %s, expected %s; val loss %s, expected %s" %
      (got, want, val, exp["val_loss_after_step_4"]))
sys.exit(0 if got == want and val == [exp["val_loss_after_step_4"]] else 1)
PY
echo "old_checkpoint.sh: the checkpoint of cf20a6c resumes with that binary's losses, bit for bit"
