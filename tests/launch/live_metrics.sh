#!/usr/bin/env bash
# --metrics FILE while a 2-rank run writes it, after a kill -9, and after the resume (issue 32):
#  1. FILE is read while the run is still writing it: a start record, then steps 1, 2, ... in order;
#  2. rank 0 (the writer) is killed with SIGKILL: FILE holds whole records only, in order, and no end,
#     and no rank was named a straggler in this normal run (12 steps or more: 8 or more judged);
#  3. --resume latest appends a resume record (the checkpoint's step, the same run id, 2 ranks) and the
#     steps after it, then an end record; nothing before it is changed, and no straggler is named;
#  4. a new 2-rank run refuses FILE (another run's records: rank 0 refuses, rank 1 learns of it, exit 1),
#     and so does a resume of another run; FILE unchanged.
# Each tierzero run's exit status is checked here; ctest bounds the whole (expect_exit.sh).
# usage: live_metrics.sh MPIRUN_ARGS... -- TIERZERO
set -u
source "$(dirname "$0")/launch_lib.sh"
split_launch_args "$@"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "live_metrics.sh: FAIL: $*"; exit 1; }
# Steps of ~20-50 ms, so that a kill lands mid-run.
common=(train --n-layer 4 --n-embd 128 --seq-len 128 --micro-batch 2 --log-every 0 --val-batches 1
        --save-dir "$d/ckpt" --save-every 3 --metrics "$d/m.jsonl")
# check FILE PYTHON [live]: every line of FILE a whole JSON object, then the Python statements on `recs`.
# With "live", FILE was copied while the run wrote it: a copy racing the newest write(2) may end inside that
# line (a regular file's reader is not held off by a writer), which then lacks its newline and is dropped,
# as readers do; every line before it must be whole.
check() {
  /usr/bin/python3 - "$1" "${4:-}" <<PY || fail "$2"
import json, sys
text = open(sys.argv[1]).read()
if sys.argv[2] == "live" and not text.endswith("\n"):
    text = text[:text.rfind("\n") + 1]
assert text.endswith("\n"), "the last line is not whole"
recs = [json.loads(l) for l in text.splitlines()]
$3
PY
}

"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps 100000 > "$d/killed.log" 2>&1 &
job=$!
for _ in $(seq 600); do
  [ "$(metrics_steps "$d/m.jsonl")" -ge 12 ] && break
  sleep 0.05
done
# 1. Read while the run writes (the job is still running: checked after the read).
cp "$d/m.jsonl" "$d/live.jsonl"
kill -0 "$job" 2>/dev/null || { cat "$d/killed.log"; fail "the run ended before it was read"; }
check "$d/live.jsonl" "the file read during the run" '
assert recs[0]["event"] == "start" and recs[0]["world_size"] == 2 and len(recs[0]["hosts"]) == 2, recs[0]
steps = [r["step"] for r in recs if "loss" in r]
assert len(steps) >= 12 and steps == list(range(1, len(steps) + 1)), steps
assert all(len(r["ranks"]["bytes"]["device"]) == 2 for r in recs if "loss" in r)
print("live_metrics.sh: read during the run: start record, steps 1-%d in order" % steps[-1])' live
# 2. kill -9 of the writer.
pid=$(rank_pid "$job" 0)
[ -n "$pid" ] || { kill "$job"; fail "rank 0 not found"; }
kill -9 "$pid"
wait "$job" && fail "the killed job exited 0"
check "$d/m.jsonl" "the file after kill -9" '
steps = [r["step"] for r in recs if "loss" in r]
assert recs[0]["event"] == "start" and steps == list(range(1, len(steps) + 1)), steps
assert not any(r.get("event") == "end" for r in recs), "an end record after a kill -9"
named = [r["step"] for r in recs if r.get("straggler")]
assert not named, "a straggler named in a normal run at steps %s" % named
print("live_metrics.sh: after kill -9: %d whole records, steps 1-%d in order, no end record, no straggler" % (len(recs), steps[-1]))'
killed_steps=$(metrics_steps "$d/m.jsonl")
latest=$(cat "$d/ckpt/latest")
at=$((10#${latest#step-}))
cp "$d/m.jsonl" "$d/before-resume.jsonl"
# 3. The resume appends.
"${mpirun_args[@]}" "$tierzero" "${common[@]}" --steps $((killed_steps + 4)) --resume latest > "$d/resumed.log" 2>&1 ||
  { cat "$d/resumed.log"; fail "the resumed run failed"; }
cmp -n "$(stat -c %s "$d/before-resume.jsonl")" "$d/before-resume.jsonl" "$d/m.jsonl" ||
  fail "the records before the resume changed"
check "$d/m.jsonl" "the file after the resume" "
start = recs[0]
marks = [i for i, r in enumerate(recs) if r.get('event') == 'resume']
assert len(marks) == 1, marks
res = recs[marks[0]]
assert res['step'] == $at and res['run_id'] == start['run_id'] and res['world_size'] == 2, res
after = [r['step'] for r in recs[marks[0]:] if 'loss' in r]
assert after == list(range($at + 1, $killed_steps + 5)), after
assert recs[-1] == {'event': 'end', 'step': $killed_steps + 4, 'signal': 0}, recs[-1]
named = [r['step'] for r in recs[marks[0]:] if r.get('straggler')]
assert not named, 'a straggler named in a normal run at steps %s' % named
print('live_metrics.sh: after the resume: resume record at step $at, run %s, steps $((at + 1))-$((killed_steps + 4)) in order, end record, no straggler' % res['run_id'])"
# 4. Another run may not append.
sum=$(md5sum < "$d/m.jsonl")
# At 2 ranks: rank 0 refuses, and rank 1 learns of it and stops too (exit 1, not a hang).
t0=$(date +%s)
"${mpirun_args[@]}" "$tierzero" train --steps 1 --log-every 0 --metrics "$d/m.jsonl" > "$d/fresh.log" 2>&1
rc=$?
[ "$rc" = 1 ] || { cat "$d/fresh.log"; fail "a new 2-rank run given another run's file exited $rc, not 1"; }
[ $(($(date +%s) - t0)) -le 20 ] || fail "the 2-rank refusal took $(($(date +%s) - t0)) s"
grep -q "rank 1 .*rank 0 failed to check the run's outputs" "$d/fresh.log" || { cat "$d/fresh.log"; fail "rank 1 did not name rank 0's refusal"; }
grep -q -- "--metrics '$d/m.jsonl' holds the records of run [0-9a-f]\{16\} and this run starts afresh" "$d/fresh.log" ||
  { cat "$d/fresh.log"; fail "the refusal does not name the file and the run"; }
"$tierzero" train --steps 2 --log-every 0 --val-batches 1 --save-dir "$d/ckpt2" > /dev/null 2>&1 || fail "the second run failed"
"$tierzero" train --steps 3 --log-every 0 --val-batches 1 --save-dir "$d/ckpt2" --resume latest --metrics "$d/m.jsonl" \
  > "$d/other.log" 2>&1 && fail "a resume of another run appended to this run's file"
grep -q -- "--metrics '$d/m.jsonl' holds the records of run [0-9a-f]\{16\}, and this run resumes run [0-9a-f]\{16\}" "$d/other.log" ||
  { cat "$d/other.log"; fail "the refusal of another run's resume does not name both runs"; }
[ "$(md5sum < "$d/m.jsonl")" = "$sum" ] || fail "a refused run changed the file"
echo "live_metrics.sh: a new run and another run's resume refused, the file unchanged"
