#!/usr/bin/env bash
# --prometheus-textfile (issue 32): a 2-rank run of 12 steps with --prometheus-every 5 leaves PATH as
# written after the last step; `promtool check metrics` passes it (Prometheus' own linter: names, units,
# HELP and TYPE lines); and its values equal those of step 12's --metrics record: the step, the tokens, the
# loss, the learning rate, rank 1's backward time and host bytes, the plan's device peak. No temporary
# file is left beside it. Exits 77 (a skip) without promtool.
# usage: prometheus_textfile.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
command -v promtool > /dev/null || { echo "prometheus_textfile.sh: SKIP: no promtool (Debian's prometheus package)"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "prometheus_textfile.sh: FAIL: $*"; exit 1; }
"${mpirun_args[@]}" "$tierzero" train --steps 12 --log-every 0 --val-batches 1 --prometheus-textfile "$d/tierzero.prom" \
  --prometheus-every 5 --metrics "$d/m.jsonl" > "$d/out.log" 2>&1 || { cat "$d/out.log"; fail "the run failed"; }
promtool check metrics < "$d/tierzero.prom" || { cat "$d/tierzero.prom"; fail "promtool check metrics"; }
echo "prometheus_textfile.sh: promtool check metrics: passed"
[ "$(ls -A "$d" | grep -vc -e '^tierzero.prom$' -e '^m.jsonl$' -e '^out.log$')" = 0 ] || fail "left beside it: $(ls -A "$d")"
/usr/bin/python3 - "$d/tierzero.prom" "$d/m.jsonl" <<'PY' || fail "the values"
import json, re, sys
samples = {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'(\w+)\{([^}]*)\} (\S+)\n', line)
    assert m, line
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
    run = labels.pop("run_id")
    samples[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
recs = [json.loads(l) for l in open(sys.argv[2])]
start = recs[0]
rec = [r for r in recs if "loss" in r][-1]
assert run == start["run_id"], (run, start["run_id"])
bw = rec["ranks"]["ms"]["backward"]  # of 2 ranks, rank 1's is the max or the min
bw1 = bw["max"] if bw["slowest_rank"] == 1 else bw["min"]
want = {
    ("tierzero_step", ()): rec["step"],
    ("tierzero_tokens_total", ()): rec["tokens"],
    ("tierzero_loss", ()): rec["loss"],
    ("tierzero_learning_rate", ()): rec["lr"],
    ("tierzero_step_duration_seconds", ()): rec["ms"]["step"] / 1000,
    ("tierzero_phase_duration_seconds", (("phase", "backward"), ("rank", "1"))): bw1 / 1000,
    ("tierzero_memory_bytes", (("rank", "1"), ("tier", "host"))): rec["ranks"]["bytes"]["host"][1],
    ("tierzero_plan_peak_bytes", (("tier", "device"),)): start["plan_peak_bytes"]["device"],
}
for k, v in want.items():
    assert k in samples, "%s missing" % (k,)
    assert abs(samples[k] - v) <= 1e-9 * max(1.0, abs(v)), (k, samples[k], v)
assert rec["step"] == 12 and samples[("tierzero_straggler_rank", ())] == -1
print("prometheus_textfile.sh: step %d's values equal the metrics record's (%d checked)" % (rec["step"], len(want)))
PY
