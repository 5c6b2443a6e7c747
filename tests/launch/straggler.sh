#!/usr/bin/env bash
# A planted straggler is named (issue 32): at 2 ranks, --straggler-test-delay-ms 1:150 makes rank 1 sleep
# 150 ms in the data phase of every step; by step 10 the progress line names "straggler: rank 1 on HOST"
# (HOST: this machine's name) and the --metrics records name {"rank": 1, "host": HOST}, and the slowest
# rank of the data phase is rank 1 in every record. ctest checks the exit status and the time bound.
# usage: straggler.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "straggler.sh: FAIL: $*"; exit 1; }
host=$(hostname)
"${mpirun_args[@]}" "$tierzero" train --steps 10 --log-every 1 --val-batches 1 --straggler-test-delay-ms 1:150 \
  --metrics "$d/m.jsonl" > "$d/out.log" 2>&1 || { cat "$d/out.log"; fail "the run failed"; }
line=$(grep -E "^step +[0-9]+/10 .*\| straggler: rank 1 on $host [0-9.]+x the median rank's work$" "$d/out.log" | head -1)
[ -n "$line" ] || { cat "$d/out.log"; fail "no progress line names rank 1 on $host"; }
echo "straggler.sh: $line"
/usr/bin/python3 - "$d/m.jsonl" "$host" <<'PY' || fail "the records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in recs if "loss" in r]
assert all(r["ranks"]["ms"]["data"]["slowest_rank"] == 1 for r in steps), "rank 1 is not the slowest in data"
named = [r for r in steps if r["straggler"]]
assert named, "no record names a straggler"
first = named[0]
assert first["step"] <= 10 and first["straggler"]["rank"] == 1 and first["straggler"]["host"] == sys.argv[2], first["straggler"]
assert steps[-1]["straggler"] and steps[-1]["straggler"]["rank"] == 1, steps[-1]["straggler"]
print("straggler.sh: named from step %d: %s" % (first["step"], json.dumps(first["straggler"])))
PY
