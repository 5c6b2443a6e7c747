#!/usr/bin/env bash
# Errors for people (issue 32): refusals of every kind the suite already makes (a DeepSpeed config, a
# Hugging Face config.json field, flags, a Hugging Face folder, checkpoints, outputs, data) each exit 1
# within 10 s with a first line "tierzero: error: WHAT..." and no developer text: no "check failed", no
# source position, no C++ predicate. --debug and TZ_DEBUG=1 add the line that names where it was raised.
# usage: error_text.sh TIERZERO SOURCE_DIR
set -u
tz=$1 src=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1
fail() { echo "error_text.sh: FAIL: $*"; exit 1; }
debug_text='check failed|[A-Za-z0-9_]\.(cc|h|cu|cpp):[0-9]+|\[[^]]*(&&|\|\||==|!=|->|::|[A-Za-z_]\()[^]]*\]|tierzero: debug:'
n=0
# refused WHAT REGEX CMD...: exit 1 (or $want) within 10 s; the first stderr line is "tierzero: error: " and matches
# REGEX; no line holds developer text.
refused() {
  local what=$1 regex=$2 t0 rc
  shift 2
  t0=$(date +%s%N)
  "$@" > out.log 2> err.log < /dev/null
  rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" = "${want:-1}" ] || { cat out.log err.log; fail "$what: exit $rc, not ${want:-1}"; }
  [ "$ms" -le 10000 ] || fail "$what: took $ms ms"
  head -n 1 err.log | grep -Eq -- "^tierzero: error: .*$regex" ||
    { cat err.log; fail "$what: the first line is not 'tierzero: error: ...$regex'"; }
  ! grep -Eq -- "$debug_text" out.log err.log || { cat err.log; fail "$what: developer text: $(grep -Eh -m1 -- "$debug_text" out.log err.log)"; }
  echo "error_text.sh: $what: $(head -n 1 err.log | cut -c1-160)"
  n=$((n + 1))
}
mkdir hf && printf '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_attention_heads": "4", "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 64}\n' > hf/config.json
printf '{"train_batch_size": "lots"}\n' > ds.json
printf '{"zero_optimization": {"stage": 3,}\n' > broken.json
mkfifo fifo
mkdir hf2 && sed 's/"num_attention_heads": "4"/"num_attention_heads": 4/' hf/config.json > hf2/config.json
"$tz" train --steps 2 --log-every 0 --val-batches 1 --save-dir ck > /dev/null 2>&1 || fail "no checkpoint to damage"
ck=ck/step-00000002
cp -r "$ck" trunc && f=$(ls trunc/rank-*.bin | head -n 1) && truncate -s 100 "$f"

refused "a Hugging Face config.json field of the wrong type" '"num_attention_heads" must be a whole number' "$tz" train --init-from hf --steps 1
refused "a DeepSpeed config value of the wrong type" 'train_batch_size' "$tz" train --config ds.json --steps 1
refused "a DeepSpeed config that is not JSON" 'broken.json' "$tz" train --config broken.json --steps 1
refused "an unknown flag" "unrecognised option '--stepz'.*tierzero train --help" "$tz" train --stepz 3
refused "a flag that is not a number" "--lr" "$tz" train --lr fast --steps 1
refused "a NaN learning rate" "--lr" "$tz" train --lr nan --steps 1
refused "a Hugging Face folder without weights" "hf2" "$tz" train --init-from hf2 --steps 1
refused "a truncated checkpoint" "trunc" "$tz" ckpt inspect trunc
refused "a folder that is not a checkpoint" "neither a checkpoint" "$tz" ckpt inspect hf
refused "a model written to a FIFO" "fifo" "$tz" train --steps 1 --save-safetensors fifo
refused "metrics in a folder that does not exist" "nodir/m.jsonl" "$tz" train --steps 1 --metrics nodir/m.jsonl
refused "metrics inside a file" "ds.json/m.jsonl" "$tz" train --steps 1 --metrics ds.json/m.jsonl
refused "token data from /dev/zero" "/dev/zero" "$tz" train --steps 1 --data /dev/zero
refused "plan with a world of zero" "--world" "$tz" plan --world 0
want=2 refused "an unknown command (a usage error: exit 2)" "unknown command 'trane'" "$tz" trane
echo "error_text.sh: $n refusals, each 'tierzero: error: ...' and free of developer text"

# --debug and TZ_DEBUG=1: the same first line, then where it was raised.
for how in flag env; do
  if [ $how = flag ]; then "$tz" train --lr nan --steps 1 --debug > /dev/null 2> err.log; rc=$?
  else TZ_DEBUG=1 "$tz" train --lr nan --steps 1 > /dev/null 2> err.log; rc=$?; fi
  [ "$rc" = 1 ] || fail "debug ($how): exit $rc"
  head -n 1 err.log | grep -q "^tierzero: error: " || { cat err.log; fail "debug ($how): no error line"; }
  grep -Eq '^tierzero: debug: .* at .*[a-z_]\.(cc|h):[0-9]+$' err.log || { cat err.log; fail "debug ($how): no debug line with a source position"; }
done
echo "error_text.sh: --debug and TZ_DEBUG=1 add the line naming the check and its source position"
