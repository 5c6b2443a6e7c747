#!/usr/bin/env bash
# tierzero train --profile-ops: the per-op table on rank 0 after the profiled steps, and its "profile"
# record in --metrics, each product under its model's name with a positive time, calls per step as the
# model makes them, and the ops' time within the steps' (on the cpu's wall clock, one stream).
# usage: profile_ops.sh TIERZERO
set -u
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "profile_ops.sh: FAIL: $*"; exit 1; }
"$tierzero" train --model tiny --steps 4 --profile-ops 2 --log-every 0 --val-batches 1 --metrics "$d/m.jsonl" \
  --profile-hardware cpu-node > "$d/out.log" 2>&1 || { cat "$d/out.log"; fail "train exited $?"; }
grep -q "^op profile: steps 2-3 (2 steps), ops timed by wall$" "$d/out.log" || { cat "$d/out.log"; fail "no table header"; }
grep -Eq "^peaks: cpu-node \(7.2 TFLOP/s fp32 dense" "$d/out.log" || fail "no peaks line"
grep -Eq "^qkv.fwd +2.0 +[0-9]+[.][0-9]{3} +[0-9.]+% +[0-9]+[.][0-9]{2} +- +[0-9.]+%$" "$d/out.log" ||
  { cat "$d/out.log"; fail "no qkv.fwd row (2 calls a step: one per block)"; }
/usr/bin/python3 - "$d/m.jsonl" <<'PY' || fail "the profile record"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
prof = [r["profile"] for r in recs if "profile" in r]
assert len(prof) == 1, f"{len(prof)} profile records"
p = prof[0]
assert (p["first_step"], p["last_step"], p["clock"]) == (2, 3, "wall"), p
ops = {o["op"]: o for o in p["ops"]}
for name in ["qkv.fwd", "attention", "attention.bwd", "layernorm", "gelu", "adamw", "softmax_xent"]:
    assert name in ops, f"{name} missing from {sorted(ops)}"
    assert ops[name]["ms_per_step"] > 0, ops[name]
assert ops["qkv.fwd"]["calls_per_step"] == 2 and ops["attention"]["calls_per_step"] == 2, ops["qkv.fwd"]
assert ops["qkv.fwd"]["tflops"] > 0 and 0 < ops["qkv.fwd"]["share_of_peak"] < 1, ops["qkv.fwd"]
step = p["ms_per_step"]["step"]
total = sum(o["ms_per_step"] for o in p["ops"])
assert 0 < total <= step, (total, step)
print(f"profile_ops.sh: {len(ops)} ops, {total:.3f} of {step:.3f} ms per step")
PY
echo "profile_ops.sh: ok"
