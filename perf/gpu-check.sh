#!/usr/bin/env bash
# The one script a session runs when it is lent a GPU machine: builds the CUDA path, runs `tierzero
# doctor`, the GPU tests, the GPU benchmarks, three gpt2-xl training runs (MFU without offload, with the
# optimizer on the CPU, with parameters offloaded) and NCCL's bus bandwidth where >= 2 GPUs exist, each
# stage under its own `timeout` inside one time budget, and writes ONE JSON file with every figure, the
# goals and pass/fail per goal. Without a GPU every GPU stage is recorded as skipped with its reason.
#
#   bash perf/gpu-check.sh            # exits 0 once the results file is written; the verdicts are in it
#
# Environment:
#   OUT                       folder for the results (else perf/results/): gpu-check-<UTC time>.json and
#                             gpu-check-<UTC time>-logs/ (every stage's stdout and stderr)
#   TZ_GPU_CHECK_RESULT       the results file itself (overrides OUT)
#   TZ_GPU_CHECK_BUDGET_S     seconds for everything, the build included (default 480); a stage that
#                             would start with under 10 s left is skipped, with the reason recorded
#   TZ_GPU_CHECK_BUILD_DIR    use this existing build: no configure, no build
#   TZ_GPU_CHECK_JOBS         build jobs (default: every core)
#   TZ_GPU_CHECK_MICRO_BATCH  sequences per step in the training runs (default 8: 8 x 1024 tokens)
#   TZ_GPU_CHECK_GRAD_ACCUM   micro-steps per optimizer step (default 4: 32k tokens per step; the
#                             optimizer's cost, on the device or the CPU, is paid once per step)
#   TZ_GPU_CHECK_STEPS        steps per training run (default 6; the first 2 are not measured)
#   TZ_GPU_CHECK_SKIP         stage names not to run, e.g. "tests gpu_matmul" (a rerun that only needs
#                             the rest); recorded as skipped
#   TZ_GPU_CHECK_FAKE_DIR     test mode: each stage's command is replaced by <dir>/<stage>.out (its
#                             stdout), <stage>.err and <stage>.rc (its exit status, default 0); the tests'
#                             JUnit file is <dir>/ctest-cuda.xml. Nothing is built or run.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
START=$(date +%s)
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
BUDGET_S=${TZ_GPU_CHECK_BUDGET_S:-480}
RESERVE_S=5    # kept back for assembling the results
MIN_STAGE_S=10 # a stage is not started with less than this left
FAKE_DIR=${TZ_GPU_CHECK_FAKE_DIR:-}
MB=${TZ_GPU_CHECK_MICRO_BATCH:-8}
ACCUM=${TZ_GPU_CHECK_GRAD_ACCUM:-4}
STEPS=${TZ_GPU_CHECK_STEPS:-6}
SKIP_STEPS=2
JOBS=${TZ_GPU_CHECK_JOBS:-$(getconf _NPROCESSORS_ONLN)}

for tool in jq python3 timeout; do
  command -v "$tool" >/dev/null || { echo "gpu-check: $tool is needed (scripts/install-deps.sh installs it)" >&2; exit 2; }
done
[[ "$BUDGET_S" =~ ^[0-9]+$ && "$MB" =~ ^[1-9][0-9]*$ && "$ACCUM" =~ ^[1-9][0-9]*$ && "$STEPS" =~ ^[0-9]+$ ]] || {
  echo "gpu-check: TZ_GPU_CHECK_BUDGET_S, _MICRO_BATCH, _GRAD_ACCUM and _STEPS must be whole numbers" >&2; exit 2; }
((STEPS > SKIP_STEPS)) || { echo "gpu-check: TZ_GPU_CHECK_STEPS must be above $SKIP_STEPS (the unmeasured warm-up)" >&2; exit 2; }

if [[ -n "${TZ_GPU_CHECK_RESULT:-}" ]]; then
  RESULT=$TZ_GPU_CHECK_RESULT
elif [[ -n "${OUT:-}" ]]; then
  RESULT=$OUT/gpu-check-$STAMP.json
else
  RESULT=$ROOT/perf/results/gpu-check-$STAMP.json
fi
LOGS=${RESULT%.json}-logs
mkdir -p "$(dirname "$RESULT")" "$LOGS/stages" "$LOGS/data" || exit 2
STAGES=$LOGS/stages  # one JSON record per stage, numbered in run order
DATA=$LOGS/data      # one JSON object per figure-producing stage
N=0
LAST_SECONDS=0 # how long the last stage run took

elapsed() { echo $(($(date +%s) - START)); }

# record NAME STATUS RC SECONDS LIMIT REASON COMMAND
record() {
  N=$((N + 1))
  local tail=""
  if [[ "$2" == failed || "$2" == timeout ]] && [[ -f "$LOGS/$1.err" ]]; then
    tail=$( (tail -n 15 "$LOGS/$1.out" 2>/dev/null; tail -n 15 "$LOGS/$1.err") | tail -c 3000)
  fi
  jq -n --arg name "$1" --arg status "$2" --argjson rc "${3:-null}" --argjson seconds "$4" --argjson limit "$5" \
    --arg reason "$6" --arg command "$7" --arg tail "$tail" \
    '{name: $name, status: $status, rc: $rc, seconds: $seconds, timeout_s: $limit, reason: $reason, command: $command}
     + (if $tail == "" then {} else {log_tail: $tail} end)' >"$STAGES/$(printf %02d $N)-$1.json"
}

# skip NAME REASON [COMMAND]: a stage that does not run, and why.
skip() { record "$1" skipped null 0 0 "$2" "${3:-}"; echo "gpu-check: $1: skipped: $2"; }

# The last line of a file, trimmed to 500 characters ("" when none).
last_line() { grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1 | cut -c1-500; }

# run_stage NAME MAX_SECONDS COMMAND...: runs COMMAND under `timeout` with min(MAX_SECONDS, what is left of
# the budget), stdout to $LOGS/NAME.out and stderr to $LOGS/NAME.err, and records how it ended: ok (exit
# 0), skipped (exit 77: it cannot run here; the reason is its last line on stderr), timeout, failed.
# Returns 0 only when the stage ran and succeeded.
run_stage() {
  local name=$1 max=$2
  shift 2
  local left=$((BUDGET_S - $(elapsed) - RESERVE_S))
  if [[ " ${TZ_GPU_CHECK_SKIP:-} " == *" $name "* ]]; then
    skip "$name" "TZ_GPU_CHECK_SKIP names it" "$*"
    return 1
  fi
  if ((left < MIN_STAGE_S)); then
    skip "$name" "time budget spent: $(elapsed) s of ${BUDGET_S} s used" "$*"
    return 1
  fi
  local limit=$((max < left ? max : left))
  local t0 rc
  t0=$(date +%s.%N)
  echo "gpu-check: $name (limit ${limit} s, $(elapsed) s used)"
  if [[ -n "$FAKE_DIR" ]]; then
    cat "$FAKE_DIR/$name.out" >"$LOGS/$name.out" 2>/dev/null || : >"$LOGS/$name.out"
    cat "$FAKE_DIR/$name.err" >"$LOGS/$name.err" 2>/dev/null || : >"$LOGS/$name.err"
    rc=$(cat "$FAKE_DIR/$name.rc" 2>/dev/null || echo 0)
  else
    timeout --kill-after=10 "$limit" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err"
    rc=$?
  fi
  local secs status reason=""
  secs=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$t0" "$(date +%s.%N)")
  case $rc in
    0) status=ok ;;
    77) status=skipped reason=$(last_line "$LOGS/$name.err") ;;
    124 | 137) status=timeout reason="stopped after ${limit} s (stage limit ${max} s)" ;;
    *) status=failed reason="exit $rc: $(last_line "$LOGS/$name.err")" ;;
  esac
  record "$name" "$status" "$rc" "$secs" "$limit" "$reason" "$*"
  LAST_SECONDS=$secs
  [[ "$status" != ok ]] && echo "gpu-check: $name: $status${reason:+: $reason}"
  [[ "$status" == ok ]]
}

# keep_json NAME [KEY]: the last JSON object the stage printed becomes $DATA/KEY.json.
keep_json() {
  local line
  line=$(grep '^{' "$LOGS/$1.out" 2>/dev/null | tail -n 1)
  [[ -n "$line" ]] && jq -c . <<<"$line" >"$DATA/${2:-$1}.json" 2>/dev/null
}

# ---- build ----------------------------------------------------------------------------------------
NO_BUILD=""  # why tierzero is missing, when it is
if [[ -n "$FAKE_DIR" ]]; then
  BUILD=${TZ_GPU_CHECK_BUILD_DIR:-$ROOT/build-gpu}
  skip build "test mode (TZ_GPU_CHECK_FAKE_DIR): nothing is built or run"
elif [[ -n "${TZ_GPU_CHECK_BUILD_DIR:-}" ]]; then
  BUILD=$(cd "$TZ_GPU_CHECK_BUILD_DIR" 2>/dev/null && pwd) || BUILD=$TZ_GPU_CHECK_BUILD_DIR
  skip build "TZ_GPU_CHECK_BUILD_DIR=$BUILD: using that build as it is"
else
  BUILD=$ROOT/build-gpu
  if run_stage configure 120 cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZ_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90; then
    # Only what the stages run: tierzero and the executables of the tests labelled cuda. Before the build
    # ctest lists no command for a missing executable, so the targets come from the tests' names too
    # (<target>.<Suite>.<Name>, <target>_np<N>[_t2].<Suite>.<Name>: cmake/tz_helpers.cmake).
    targets=$(ctest --test-dir "$BUILD" -L cuda --show-only=json-v1 2>/dev/null |
      jq -r '.tests[]? | (.name | split(".")[0] | sub("_np[0-9]+(_t2)?$"; "")), (.command[]? | split("/")[-1])' |
      sort -u)
    known=$(ninja -C "$BUILD" -t targets all 2>/dev/null | cut -d: -f1)
    test_targets=()
    for t in $targets; do grep -qxF -- "$t" <<<"$known" && test_targets+=("$t"); done
    # tierzero first, on its own: a test that does not compile must not cost the benchmarks their binary.
    run_stage build 330 cmake --build "$BUILD" -j "$JOBS" --target tierzero || NO_BUILD="the build did not finish"
    # Then every test executable that compiles (-k 0: keep going past one that does not; the tests stage
    # counts a missing executable as a failed test).
    if ((${#test_targets[@]})); then
      run_stage build_tests 240 cmake --build "$BUILD" -j "$JOBS" --target "${test_targets[@]}" -- -k 0
    else
      skip build_tests "no test is labelled cuda in this build"
    fi
  else
    NO_BUILD="cmake's configure did not finish"
  fi
fi
TZ=$BUILD/launch/tierzero
if [[ -z "$FAKE_DIR" && -z "$NO_BUILD" && ! -x "$TZ" ]]; then NO_BUILD="$TZ is missing"; fi

# needs_build NAME: records NAME as skipped (and returns 1) when there is no tierzero to run.
needs_build() {
  [[ -z "$NO_BUILD" ]] && return 0
  skip "$1" "no build: $NO_BUILD"
  return 1
}

# ---- the machine -----------------------------------------------------------------------------------
NGPU=0 GPU_PROBLEM="tierzero doctor did not run"
if needs_build doctor && run_stage doctor 30 "$TZ" doctor --json; then
  if jq -e . "$LOGS/doctor.out" >"$DATA/doctor.json" 2>/dev/null; then
    NGPU=$(jq '.gpu.devices | length' "$DATA/doctor.json")
    GPU_PROBLEM=$(jq -r '.gpu.problem // ""' "$DATA/doctor.json")
    [[ -z "$GPU_PROBLEM" ]] && GPU_PROBLEM="the driver reports no GPU"
  fi
fi
NO_GPU="no GPU: $GPU_PROBLEM"

# ---- the GPU tests ---------------------------------------------------------------------------------
if needs_build tests; then
  if [[ -n "$FAKE_DIR" ]]; then cp "$FAKE_DIR/ctest-cuda.xml" "$LOGS/ctest-cuda.xml" 2>/dev/null; fi
  # Every test labelled cuda (they skip without a GPU); one at a time per GPU would waste the cores.
  run_stage tests 150 ctest --test-dir "$BUILD" -L cuda --timeout 60 -j 4 --output-on-failure \
    --output-junit "$LOGS/ctest-cuda.xml"
fi
python3 - "$LOGS/ctest-cuda.xml" >"$DATA/tests.json" <<'EOF'
# The JUnit file ctest wrote, summarised: counts and the names of the tests that failed or were skipped.
import json, sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError) as e:
    print(json.dumps({"ran": False, "reason": "no JUnit file: " + str(e)}))
    sys.exit(0)
cases = root.iter("testcase")
failed, skipped, passed = [], [], 0
for c in cases:
    name = c.get("name", "?")
    status = c.get("status", "")
    skip = c.find("skipped")
    if c.find("failure") is not None or c.find("error") is not None or status == "fail":
        failed.append(name)
    elif skip is not None and "Unable to find executable" in (skip.get("message") or ""):
        failed.append(name + " (not built)")  # ctest reports it as not run; it is a build failure
    elif skip is not None or status in ("notrun", "disabled"):
        skipped.append(name)
    else:
        passed += 1
total = passed + len(failed) + len(skipped)
print(json.dumps({"ran": True, "total": total, "passed": passed, "failed": len(failed), "skipped": len(skipped),
                  "failed_names": failed, "skipped_names": skipped[:50]}))
EOF

# ---- the GPU benchmarks ----------------------------------------------------------------------------
for b in gpu-matmul:120 gpu-attention:60 gpu-copy:60; do
  name=${b%%:*} key=${name//-/_}
  if needs_build "$key"; then
    run_stage "$key" "${b##*:}" "$TZ" bench "$name" --json
    keep_json "$key"
  fi
done

# ---- gpt2-xl training steps: MFU of what `tierzero train --device cuda` runs -----------------------
TRAIN_FLAGS=(--device cuda --model gpt2-xl --dtype bf16 --seq-len 1024 --micro-batch "$MB" --grad-accum "$ACCUM"
  --steps "$STEPS" --val-batches 1 --log-every 1)
PLAN_FLAGS=(--model gpt2-xl --dtype bf16 --seq-len 1024 --micro-batch "$MB" --grad-accum "$ACCUM" --world 1
  --hardware h200-141g)

# step_run KEY EXTRA_FLAGS...: trains, then reduces its metrics file to MFU (bench mfu). The limit covers
# the trainer's start: it initialises gpt2-xl's 1.56B parameters on one host thread (~30-60 ns each).
step_run() {
  local key=$1
  shift
  local wall
  if run_stage "$key" 180 "$TZ" train "${TRAIN_FLAGS[@]}" --metrics "$LOGS/$key.jsonl" "$@"; then
    wall=$LAST_SECONDS
    run_stage "${key}_mfu" 20 "$TZ" bench mfu --metrics "$LOGS/$key.jsonl" --model gpt2-xl --seq-len 1024 \
      --skip "$SKIP_STEPS" --json && keep_json "${key}_mfu" "$key"
  fi
  # The run's flags, its wall time, and the part of it before and after the steps (start-up: parameter
  # initialisation and upload; the closing validation).
  [[ -f "$DATA/$key.json" ]] && jq --argjson flags "$(printf '%s\n' "$@" | jq -R . | jq -sc 'map(select(. != ""))')" \
    --argjson wall "$wall" --argjson steps "$STEPS" \
    '. + {extra_flags: $flags, wall_s: $wall, outside_steps_s: ($wall - $steps * .ms_per_step / 1000)}' \
    "$DATA/$key.json" >"$DATA/$key.tmp" && mv "$DATA/$key.tmp" "$DATA/$key.json"
}

STEP_KEYS=(step_no_offload step_optimizer_cpu step_param_offload)
if [[ -n "$NO_BUILD" ]]; then
  for k in "${STEP_KEYS[@]}" plan_param_offload; do skip "$k" "no build: $NO_BUILD"; done
elif ((NGPU == 0)); then
  for k in "${STEP_KEYS[@]}" plan_param_offload; do skip "$k" "$NO_GPU"; done
else
  step_run step_no_offload
  step_run step_optimizer_cpu --offload-optimizer cpu
  # A device budget between what ZeRO-3 needs with parameters offloaded and what it needs with only the
  # optimizer offloaded: the run must offload its parameters to fit (tierzero plan's figures).
  export TZ PLAN_FLAGS_TEXT="${PLAN_FLAGS[*]}"
  if run_stage plan_param_offload 30 bash -c '
      set -eo pipefail
      p() { "$TZ" plan $PLAN_FLAGS_TEXT --zero-stage 3 --offload-optimizer cpu "$@" --json | jq -e ".ranks[0].bytes.device"; }
      a=$(p --offload-param cpu); b=$(p)
      jq -nc --argjson a "$a" --argjson b "$b" "{device_bytes_with_param_offload: \$a, device_bytes_without: \$b,
        device_mem_mib: ((\$a + \$b) / 2 / 1048576 | floor)}"'; then
    keep_json plan_param_offload
    mib=$(jq -r '.device_mem_mib // empty' "$DATA/plan_param_offload.json" 2>/dev/null)
  else
    mib=""
  fi
  if [[ -n "$mib" ]]; then
    step_run step_param_offload --zero-stage 3 --offload-optimizer cpu --offload-param cpu --device-mem "${mib}M"
  else
    skip step_param_offload "tierzero plan gave no device budget (see plan_param_offload)"
  fi
fi

# ---- NCCL bus bandwidth ----------------------------------------------------------------------------
if ((NGPU >= 2)); then
  if needs_build nccl; then
    if "$TZ" bench comm --help 2>/dev/null | grep -q -- "--device"; then
      run_stage nccl 90 mpirun -np "$NGPU" --allow-run-as-root --oversubscribe --bind-to none \
        "$TZ" bench comm --device cuda --max-bytes 256M --json
      keep_json nccl
    else
      skip nccl "tierzero bench comm has no --device cuda (NCCL) mode in this build"
    fi
  fi
elif ((NGPU == 1)); then
  skip nccl "1 GPU"
else
  skip nccl "$NO_GPU"
fi

# ---- the results file ------------------------------------------------------------------------------
jq -s 'map({(.name): del(.name)}) | add // {}' "$STAGES"/*.json >"$LOGS/stages.json"
for f in "$DATA"/*.json; do
  [[ -e "$f" ]] && jq -c --arg k "$(basename "$f" .json)" '{($k): .}' "$f"
done | jq -s 'add // {}' >"$LOGS/figures.json"

jq -n --slurpfile stages "$LOGS/stages.json" --slurpfile figures "$LOGS/figures.json" \
  --arg date "$STAMP" --arg host "$(uname -n)" --arg commit "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
  --arg dirty "$(git -C "$ROOT" status --porcelain 2>/dev/null | head -c 1)" --arg build "$BUILD" \
  --argjson budget "$BUDGET_S" --argjson elapsed "$(elapsed)" --argjson ngpu "$NGPU" --arg logs "$LOGS" \
  --argjson mb "$MB" --argjson accum "$ACCUM" --argjson steps "$STEPS" --argjson skip "$SKIP_STEPS" --arg fake "$FAKE_DIR" '
  $stages[0] as $s | $figures[0] as $f |
  # why a figure is missing: the stage that should have produced it, and how it ended
  def why($stage): if $s[$stage] == null then "not measured: stage \($stage) did not run"
                   else "not measured: \($stage) \($s[$stage].status)" + (if ($s[$stage].reason // "") != "" then ": \($s[$stage].reason)" else "" end) end;
  def goal($name; $measure; $value; $cmp; $target; $stage):
    {goal: $name, measure: $measure, value: $value, comparison: $cmp, target: $target,
     pass: (if $value == null then null elif $cmp == ">=" then $value >= $target else $value <= $target end)}
    + (if $value == null then {reason: why($stage)} else {} end);
  ($f.step_no_offload.ms_per_step // null) as $t0 | ($f.step_optimizer_cpu.ms_per_step // null) as $t1 |
  {
    schema: "tierzero-gpu-check/1",
    date: $date, host: $host, commit: $commit, uncommitted_changes: ($dirty != ""), build_dir: $build,
    test_mode: (if $fake == "" then false else $fake end),
    budget_s: $budget, elapsed_s: $elapsed, logs: $logs, gpus: $ngpu,
    machine: ($f.doctor // null),
    training_runs: {model: "gpt2-xl", dtype: "bf16", seq_len: 1024, micro_batch: $mb, grad_accum: $accum, steps: $steps,
                    steps_not_measured: $skip},
    goals: [
      goal("matmul >= 70% of the bf16 dense peak"; "gpu_matmul.square_fraction_of_peak (8192^3, bf16 in, fp32 accumulate)";
           $f.gpu_matmul.square_fraction_of_peak; ">="; 0.70; "gpu_matmul"),
      goal("attention >= 50% of the bf16 dense peak"; "gpu_attention.rows[0].fraction_of_peak (gpt2-xl B=8 T=1024, forward + backward)";
           $f.gpu_attention.rows[0].fraction_of_peak; ">="; 0.50; "gpu_attention"),
      goal("pinned copies >= 80% of the link"; "gpu_copy.pinned_min_fraction_of_link (the slower of h2d and d2h)";
           $f.gpu_copy.pinned_min_fraction_of_link; ">="; 0.80; "gpu_copy"),
      goal("gpt2-xl step >= 40% MFU without offload"; "step_no_offload.mfu";
           $f.step_no_offload.mfu; ">="; 0.40; (if $s.step_no_offload_mfu == null then "step_no_offload" else "step_no_offload_mfu" end)),
      goal("optimizer-on-CPU step <= 1.3x the step without offload"; "step_optimizer_cpu.ms_per_step / step_no_offload.ms_per_step";
           (if $t0 != null and $t1 != null and $t0 > 0 then $t1 / $t0 else null end); "<="; 1.3;
           (if $t1 == null then "step_optimizer_cpu" else "step_no_offload" end))
    ],
    tests: ($f.tests // null),
    figures: ($f | del(.doctor, .tests)),
    stages: $s
  }' >"$RESULT.tmp" && mv "$RESULT.tmp" "$RESULT" || { echo "gpu-check: could not assemble $RESULT" >&2; exit 1; }

echo "gpu-check: wrote $RESULT ($(elapsed) s; logs in $LOGS)"
jq -r '.goals[] | "  \(if .pass == true then "PASS" elif .pass == false then "FAIL" else "n/a " end)  \(.goal)" +
  (if .value != null then ": \(.value * 1000 | round / 1000)" else ": \(.reason)" end)' "$RESULT"
jq -r '.tests | if . == null or .ran == false then "  tests: not run" else
  "  tests: \(.passed) passed, \(.failed) failed, \(.skipped) skipped of \(.total)" end' "$RESULT"
exit 0
