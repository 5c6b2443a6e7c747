#!/usr/bin/env bash
# Checkpoint trees are owned (issue 37): every output flag of every command, pointed at every kind of file
# in a checkpoint tree (the `latest` pointer, the lock, a manifest, a data file, a step folder, a new file in
# the tree or in a step folder, a path through a symlink into the tree or out of it, and trees marked by one
# marker alone), exits 1 within 5 s naming the tree and where to write instead, whether or not the command
# reads that tree; afterwards every file in every tree is byte for byte what it was and nothing was added.
# Then the run's own outputs: its final checkpoint folder and outputs inside --save-dir or --save-hf are
# refused before step 1.
# usage: checkpoint_trees.sh TIERZERO
set -u
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "checkpoint_trees.sh: FAIL: $*"; exit 1; }
"$tierzero" train --steps 2 --save-every 1 --log-every 0 --val-batches 1 --save-dir "$d/S" > "$d/setup.log" 2>&1 ||
  { cat "$d/setup.log"; fail "no checkpoint tree to test with"; }
"$tierzero" train --steps 1 --log-every 0 --val-batches 1 --save-dir "$d/other" > "$d/setup.log" 2>&1 ||
  { cat "$d/setup.log"; fail "no second checkpoint to export"; }
# Trees marked by one marker each: a lone checkpoint folder, step folders only, a lock only, a pointer only.
mkdir "$d/lone" "$d/bare" "$d/lock" "$d/ptr" "$d/elsewhere"
cp "$d/S/step-00000001/"* "$d/lone/"
cp -r "$d/S/step-00000001" "$d/bare/"
: > "$d/lock/.tierzero.lock"
echo step-00000001 > "$d/ptr/latest"
ln -s "$d/S/step-00000001" "$d/link-into"
ln -s "$d/elsewhere" "$d/S/link-out"
printf 'some text to tokenise\n%.0s' $(seq 50) > "$d/text.txt"
snapshot() { (cd "$d" && find S other lone bare lock ptr elsewhere -print0 | sort -z | xargs -0 sha256sum 2>/dev/null; \
              find S other lone bare lock ptr elsewhere | sort); }
before=$(snapshot)

# target|the tree's root the refusal must name
kinds=("$d/S/latest|$d/S" "$d/S/.tierzero.lock|$d/S" "$d/S/step-00000001/manifest.json|$d/S"
       "$d/S/step-00000001/rank-00000.bin|$d/S" "$d/S/step-00000002|$d/S" "$d/S/new.out|$d/S"
       "$d/S/step-00000001/new.out|$d/S" "$d/S/sub/new.out|$d/S" "$d/link-into/new.out|$d/S"
       "$d/S/link-out/new.out|$d/S" "$d/lone/new.out|$d/lone" "$d/bare/new.out|$d/bare"
       "$d/lock/new.out|$d/lock" "$d/ptr/new.out|$d/ptr")
# name|command, with @T@ for the target: each writer of every command
flags=("train --metrics|train --steps 1 --log-every 0 --metrics @T@"
       "train --save-safetensors|train --steps 1 --log-every 0 --save-safetensors @T@"
       "train --save-hf|train --steps 1 --log-every 0 --save-hf @T@"
       "train --save-dir|train --steps 1 --log-every 0 --save-dir @T@/ckpt"
       "train --metrics, resuming the tree|train --steps 3 --log-every 0 --resume $d/S/step-00000002 --metrics @T@"
       "ckpt export --to|ckpt export $d/other --to @T@"
       "ckpt export the tree --to|ckpt export $d/S --to @T@"
       "ckpt export --format hf --to|ckpt export $d/other --format hf --to @T@"
       "plan --compare --csv|plan --compare --csv @T@"
       "data prepare --output|data prepare --input $d/text.txt --output @T@"
       "data prepare --val-output|data prepare --input $d/text.txt --output $d/t.bin --val-output @T@"
       "bench calibrate --out|bench calibrate --model tiny --out @T@")
n=0
for k in "${kinds[@]}"; do
  target=${k%%|*} root=${k#*|}
  for f in "${flags[@]}"; do
    name=${f%%|*} cmd=${f#*|}
    read -r -a argv <<< "${cmd//@T@/$target}"
    t0=$(date +%s%N)
    timeout 60 "$tierzero" "${argv[@]}" > "$d/out.log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    what="$name ${target#"$d"/}"
    [ "$rc" = 1 ] || { cat "$d/out.log"; fail "$what: exit $rc, not 1"; }
    [ "$ms" -le 5000 ] || fail "$what: took $ms ms"
    # Refused as inside the tree, or (for a command that reads it) as inside the checkpoint it reads.
    grep -Fq "lies inside the checkpoint tree '$root'" "$d/out.log" || grep -q "which this command reads" "$d/out.log" ||
      { cat "$d/out.log"; fail "$what: the message does not name the tree $root"; }
    grep -Eq "^step +1/" "$d/out.log" && fail "$what: trained before refusing"
    n=$((n + 1))
  done
done
echo "checkpoint_trees.sh: $n outputs into checkpoint trees refused, each within 5 s naming the tree"
[ "$(snapshot)" = "$before" ] || { diff <(echo "$before") <(snapshot); fail "a file in a tree changed or was added"; }
echo "checkpoint_trees.sh: every file of every tree as it was, nothing added"

# The run's own outputs, refused before step 1: the final checkpoint folder, a file in the save-dir, an output
# inside --save-hf; with a fresh save-dir, which must stay empty of checkpoints.
own=("--save-safetensors $d/F/step-00000004|--save-safetensors '$d/F/step-00000004' lies inside --save-dir"
     "--metrics $d/F/step-00000004|--metrics '$d/F/step-00000004' lies inside --save-dir"
     "--metrics $d/F/metrics.jsonl|--metrics '$d/F/metrics.jsonl' lies inside --save-dir"
     "--save-hf $d/H --metrics $d/H/m.jsonl|--metrics '$d/H/m.jsonl' lies inside --save-hf"
     "--save-hf $d/F/hf|--save-hf '$d/F/hf' lies inside --save-dir")
for o in "${own[@]}"; do
  read -r -a extra <<< "${o%%|*}"
  t0=$(date +%s%N)
  "$tierzero" train --steps 4 --log-every 1 --save-dir "$d/F" "${extra[@]}" > "$d/out.log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" = 1 ] || { cat "$d/out.log"; fail "${o%%|*}: exit $rc, not 1"; }
  [ "$ms" -le 5000 ] || fail "${o%%|*}: took $ms ms"
  grep -Fq -- "${o#*|}" "$d/out.log" || { cat "$d/out.log"; fail "${o%%|*}: no message '${o#*|}'"; }
  grep -Eq "^step +1/" "$d/out.log" && fail "${o%%|*}: trained before refusing"
  [ -z "$(find "$d/F" -name 'step-*' 2>/dev/null)" ] || fail "${o%%|*}: a checkpoint was written"
  echo "checkpoint_trees.sh: train --save-dir F ${o%%|*}: refused before step 1 in $ms ms"
done
