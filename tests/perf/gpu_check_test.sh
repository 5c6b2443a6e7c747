#!/usr/bin/env bash
# Tests perf/gpu-check.sh without a GPU, in two modes:
#   fake:   every stage's output comes from a folder (TZ_GPU_CHECK_FAKE_DIR), made here by the real
#           commands on the cpu device (bench gpu-* --device cpu at tiny sizes, a tiny training run and
#           bench mfu over its metrics) with chosen figures written into them, so the goals' verdicts are
#           known: matmul and copies pass, attention fails, MFU passes, the optimizer-on-CPU ratio fails,
#           and the parameter-offload run fails with its log tail recorded.
#   no-gpu: the real stages against this build with no GPU visible: every GPU stage skipped with its
#           reason, every goal unmeasured, exit 0.
#
#   gpu_check_test.sh BUILD_DIR fake|no-gpu
set -u

BUILD=$1
MODE=$2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TZ=$BUILD/launch/tierzero
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_test.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

fail() {
  echo "gpu_check_test ($MODE): FAILED: $*" >&2
  [[ -f "$W/result.json" ]] && jq . "$W/result.json" >&2
  exit 1
}

# expect JQ_FILTER: the filter must hold (jq -e) on the results file.
expect() { jq -e "$1" "$W/result.json" >/dev/null || fail "expected: $1"; }

if [[ "$MODE" == fake ]]; then
  F=$W/fake
  mkdir -p "$F"
  # The machine: this one's doctor report with one H200 added (so the GPU stages run, from files).
  "$TZ" doctor --json | jq '.gpu.devices = [{name: "NVIDIA H200", memory_bytes: 150754820096, compute_capability: "9.0"}]' \
    >"$F/doctor.out" || fail "tierzero doctor --json"
  # The benchmarks' real output on the cpu device (matmul in fp16, which oneDNN widens to fp32 on every CPU;
  # its bf16 kernels need AVX-512 BF16 or AMX), then the figures the goals read set to known values
  # (the key must exist in the real output first: a renamed key fails here, not silently in the script).
  # set KEY_PATH VALUE FILE
  set_figure() {
    jq -e "$1 != null" "$3" >/dev/null || fail "$3 has no $1"
    jq -c "$1 = $2" "$3" >"$3.tmp" && mv "$3.tmp" "$3"
  }
  "$TZ" bench gpu-matmul --device cpu --dtype fp16 --tokens 64 --n-embd 32 --vocab 96 --square 64 --warmup 1 --iters 2 --rounds 1 \
    --peak-tflops 1 --json >"$F/gpu_matmul.out" || fail "bench gpu-matmul --device cpu"
  set_figure .square_fraction_of_peak 0.75 "$F/gpu_matmul.out"
  "$TZ" bench gpu-attention --device cpu --shape 2,32,32,4 --warmup 1 --iters 2 --rounds 1 --peak-tflops 1 --json \
    >"$F/gpu_attention.out" || fail "bench gpu-attention --device cpu"
  set_figure '.rows[0].fraction_of_peak' 0.40 "$F/gpu_attention.out"
  "$TZ" bench gpu-copy --device cpu --bytes 1M --warmup 1 --iters 2 --rounds 1 --json >"$F/gpu_copy.out" ||
    fail "bench gpu-copy --device cpu"
  jq -e '.pinned_min_gb_per_s > 0 and .wrong == 0' "$F/gpu_copy.out" >/dev/null || fail "gpu-copy's figures"
  jq -c '.pinned_min_fraction_of_link = 0.85' "$F/gpu_copy.out" >"$F/gpu_copy.tmp" && mv "$F/gpu_copy.tmp" "$F/gpu_copy.out"
  # A real (tiny, cpu) training run's metrics through bench mfu.
  "$TZ" train --model tiny --steps 4 --micro-batch 2 --seq-len 32 --val-batches 1 --log-every 0 --metrics "$W/m.jsonl" \
    >"$F/step_no_offload.out" 2>&1 || fail "tierzero train --model tiny"
  "$TZ" bench mfu --metrics "$W/m.jsonl" --model tiny --seq-len 32 --skip 1 --peak-tflops 1 --json >"$W/mfu.json" ||
    fail "bench mfu"
  jq -e '.steps_used == 3 and .ms_per_step > 0 and .mfu > 0 and .tokens_per_step == 64 and (.losses | length) == 4' \
    "$W/mfu.json" >/dev/null ||
    fail "bench mfu's figures: $(cat "$W/mfu.json")"
  jq -c '.mfu = 0.45 | .ms_per_step = 800' "$W/mfu.json" >"$F/step_no_offload_mfu.out"
  cp "$F/step_no_offload.out" "$F/step_optimizer_cpu.out"
  jq -c '.mfu = 0.30 | .ms_per_step = 1200' "$W/mfu.json" >"$F/step_optimizer_cpu_mfu.out"
  echo '{"device_bytes_with_param_offload": 48188211200, "device_bytes_without": 52864860160, "device_mem_mib": 48186}' \
    >"$F/plan_param_offload.out"
  echo "tierzero train failed: out of device memory (a fake failure)" >"$F/step_param_offload.err"
  echo 1 >"$F/step_param_offload.rc"
  cat >"$F/ctest-cuda.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="fake" tests="3" failures="1" disabled="0" skipped="1" hostname="" time="1" timestamp="">
  <testcase name="cuda_a.Suite.Passes" classname="cuda_a.Suite.Passes" time="0.1" status="run"><system-out/></testcase>
  <testcase name="cuda_a.Suite.Fails" classname="cuda_a.Suite.Fails" time="0.1" status="fail"><failure message="Failed"/></testcase>
  <testcase name="cuda_a.Suite.Skips" classname="cuda_a.Suite.Skips" time="0.1" status="notrun"><skipped message="Skipped"/></testcase>
</testsuite>
EOF
  TZ_GPU_CHECK_FAKE_DIR=$F TZ_GPU_CHECK_RESULT=$W/result.json bash "$ROOT/perf/gpu-check.sh" >"$W/out.txt" 2>&1 ||
    { cat "$W/out.txt"; fail "gpu-check.sh exited $?"; }
  cat "$W/out.txt"
  expect '.schema == "tierzero-gpu-check/1" and .gpus == 1 and (.test_mode | type) == "string"'
  expect '[.goals[].pass] == [true, false, true, true, false]'
  expect '.goals[0].value == 0.75 and .goals[1].value == 0.40 and .goals[2].value == 0.85 and .goals[3].value == 0.45'
  expect '.goals[4].value == 1.5 and .goals[4].comparison == "<=" and .goals[4].target == 1.3'
  expect '.tests == {ran: true, total: 3, passed: 1, failed: 1, skipped: 1, failed_names: ["cuda_a.Suite.Fails"], skipped_names: ["cuda_a.Suite.Skips"]}'
  expect '.stages.build.status == "skipped" and .stages.doctor.status == "ok" and .stages.gpu_matmul.status == "ok"'
  expect '.stages.step_param_offload.status == "failed" and (.stages.step_param_offload.reason | test("exit 1: .*a fake failure"))'
  expect '.stages.step_param_offload.log_tail | test("fake failure")'
  expect '.stages.step_param_offload_mfu == null and .figures.step_param_offload == null'
  expect '.stages.nccl.status == "skipped" and .stages.nccl.reason == "1 GPU"'
  expect '.figures.step_optimizer_cpu.extra_flags == ["--offload-optimizer", "cpu"] and .figures.step_no_offload.extra_flags == []'
  expect '(.figures.step_no_offload.wall_s | type) == "number" and (.figures.step_optimizer_cpu.outside_steps_s | type) == "number"'
  expect '.figures.plan_param_offload.device_mem_mib == 48186 and .figures.gpu_matmul.rows[0].wrong == 0'
  expect '.machine.gpu.devices[0].name == "NVIDIA H200" and .training_runs.grad_accum == 4'
  expect '[.stages[] | .status] | all(. == "ok" or . == "skipped" or . == "failed")'
  grep -q "FAIL  attention >= 50% of the bf16 dense peak: 0.4" "$W/out.txt" || fail "the summary lines"
elif [[ "$MODE" == no-gpu ]]; then
  # No GPU visible, whatever the machine has: the driver lists none and the cuda device cannot be made.
  CUDA_VISIBLE_DEVICES="" TZ_GPU_CHECK_BUILD_DIR=$BUILD TZ_GPU_CHECK_RESULT=$W/result.json TZ_GPU_CHECK_BUDGET_S=120 \
    bash "$ROOT/perf/gpu-check.sh" >"$W/out.txt" 2>&1 || { cat "$W/out.txt"; fail "gpu-check.sh exited $?"; }
  cat "$W/out.txt"
  expect '.gpus == 0 and .test_mode == false and .stages.build.status == "skipped" and .stages.doctor.status == "ok"'
  expect '[.goals[] | .pass] == [null, null, null, null, null]'
  expect '[.goals[] | .reason | test("^not measured: ")] | all'
  expect '.goals[0].reason | test("gpu_matmul skipped: .*cannot be made")'
  for s in gpu_matmul gpu_attention gpu_copy; do
    expect ".stages.$s.status == \"skipped\" and .stages.$s.rc == 77 and (.stages.$s.reason | test(\"cannot be made\"))"
  done
  for s in step_no_offload step_optimizer_cpu step_param_offload plan_param_offload nccl; do
    expect ".stages.$s.status == \"skipped\" and (.stages.$s.reason | test(\"^no GPU: \"))"
  done
  expect '.tests != null and (.stages.tests.status == "ok" or .stages.tests.status == "skipped" or .stages.tests.status == "failed")'
  expect '.tests.ran == false or .tests.failed == 0'
  expect '.machine.gpu.devices == []'
else
  fail "mode must be fake or no-gpu"
fi
echo "gpu_check_test ($MODE): ok"
