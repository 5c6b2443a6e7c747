#!/usr/bin/env bash
# `tierzero report` (issue 32): on the quickstart job's metrics it renders every plot, each 900 x 480 and
# holding data (grey variance above 550, where a frame with its grid, axes and title but no data
# measures 441), and one page with the settings; a second report replaces the first; on a file resumed
# and cut mid-line, and on one still being written, it reports what is whole;
# careless inputs are refused with the file named, exit 1, within 5 s, nothing written.
# usage: report.sh MPIRUN_ARGS... -- TIERZERO SOURCE_DIR
set -u
mpi=()
while (($#)) && [ "$1" != -- ]; do mpi+=("$1"); shift; done
shift
tz=$1 src=$2
d=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$d"' EXIT
cd "$d" || exit 1
fail() { echo "report.sh: FAIL: $*"; exit 1; }
plots="loss loss_tokens throughput phases comm_hidden memory nvme slowest_rank"
# 1. The quickstart's job (scripts/quickstart.sh: 2 ranks, ZeRO stage 3, optimizer on the host, the same
# model and schedule) for 40 of its 1000 steps, validating every 10.
"${mpi[@]}" "$tz" train --zero-stage 3 --offload-optimizer cpu --model tiny --n-layer 4 --n-head 4 --n-embd 128 \
  --seq-len 128 --micro-batch 4 --steps 40 --lr 2e-3 --warmup 5 --lr-schedule cosine --min-lr 2e-4 \
  --val-every 10 --val-batches 2 --log-every 0 --metrics m.jsonl > train.log 2>&1 ||
  { cat train.log; fail "training"; }
t0=$(date +%s%N)
"$tz" report m.jsonl > report.log 2>&1 || { cat report.log; fail "report on the run's metrics"; }
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
((ms <= 30000)) || fail "the report took $ms ms"
grep -q "^wrote m-report/report.html and 8 plots from 40 training steps of m.jsonl$" report.log || { cat report.log; fail "its line"; }
files=()
for p in $plots; do files+=("m-report/$p.png"); done
/usr/bin/python3 "$src/tests/launch/png_check.py" 900 480 "${PNG_FLOOR:-550}" "${files[@]}" || fail "a plot is blank or the wrong size"
[ "$(grep -o 'data:image/png;base64,' m-report/report.html | wc -l)" = 8 ] || fail "the page does not hold the 8 plots"
grep -q '<th>zero_stage</th><td>3</td>' m-report/report.html || fail "the page does not show the settings"
echo "report.sh: the quickstart job's metrics (2 ranks): 8 plots, each 900x480 and not blank, and the page with its settings (${ms} ms)"
# A second report replaces the first, whole.
touch m-report/stale.png
"$tz" report m.jsonl > /dev/null 2>&1 || fail "a second report"
[ ! -e m-report/stale.png ] && [ -s m-report/report.html ] || fail "the second report did not replace the first"
ls -a | grep -q '\.tmp-' && fail "a temporary folder was left behind"

# 2. Resumed and cut mid-line: steps after the resume supersede those written before it.
{
  grep -v '"event":"end"' m.jsonl | awk '/"step":3[1-9],|"step":40,/ { exit } { print }'
  echo '{"event":"resume","run_id":"x","step":20,"world_size":2,"settings":{"zero_stage":3}}'
  grep '"loss":' m.jsonl | grep -E '"step":(2[1-9]|3[0-9]|40),' | grep -v val_loss
  printf '{"step":41,"loss":1.2,"lr'
} > resumed.jsonl
"$tz" report resumed.jsonl --out resumed > r.log 2>&1 || { cat r.log; fail "report on a resumed, cut file"; }
grep -q "from 40 training steps (resumed), its partial last line left out of resumed.jsonl" r.log || { cat r.log; fail "resumed: its line"; }
grep -q "resumed 1 time" resumed/report.html || fail "resumed: the page does not say so"
echo "report.sh: a resumed file cut mid-line: 40 steps, the partial line left out"

# 3. A file still being written: a writer appends the run's records one by one while reports are made.
: > growing.jsonl
( while IFS= read -r line; do printf '%s\n' "$line" >> growing.jsonl; sleep 0.01; done < m.jsonl ) &
writer=$!
sleep 0.2
made=0
while kill -0 "$writer" 2>/dev/null; do
  "$tz" report growing.jsonl --out growing > g.log 2>&1 || { cat g.log; fail "report on a file being written"; }
  made=$((made + 1))
done
((made >= 1)) || fail "no report made while the file was written"
echo "report.sh: a file being written: $made reports made while it grew"

# 4. Careless inputs: exit 1 within 5 s, the file named, no folder left.
mkfifo fifo
mkdir folder
: > empty.jsonl
echo 'hello, world' > text.txt
head -n 1 m.jsonl > start-only.jsonl
mkdir notmine && echo keep > notmine/notes.txt
refused() {
  local what=$1 regex=$2 t0 rc
  shift 2
  t0=$(date +%s%N)
  timeout 20 "$tz" report "$@" > out.log 2>&1
  rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" = 1 ] || { cat out.log; fail "$what: exit $rc, not 1"; }
  ((ms <= 5000)) || fail "$what: took $ms ms"
  grep -Eq -- "$regex" out.log || { cat out.log; fail "$what: no message matching $regex"; }
}
refused "a missing file" "missing.jsonl" missing.jsonl
refused "a folder" "folder" folder
refused "a FIFO" "fifo" fifo
refused "/dev/zero" "/dev/zero" /dev/zero --out zero-report
refused "an empty file" "empty.jsonl is empty" empty.jsonl
refused "a file that is not JSON" "text.txt holds no JSON records" text.txt
refused "a file without a step" "start-only.jsonl holds no training record" start-only.jsonl
refused "a folder that is not a report" "notmine.*not a tierzero report" m.jsonl --out notmine
refused "--out a FIFO" "--out 'fifo'.*FIFO" m.jsonl --out fifo
[ -p fifo ] || fail "the FIFO named by --out is no longer a FIFO"
[ "$(cat notmine/notes.txt)" = keep ] || fail "the folder that is not a report was changed"
for x in missing folder fifo empty text start-only; do [ ! -e "$x-report" ] || fail "$x: a report folder was left"; done
echo "report.sh: 9 careless inputs refused, each naming the file, exit 1 within 5 s"
