#!/usr/bin/env bash
# Tests the GPU bundle's check (perf/gpu_check/run.sh, as packed by scripts/gpu-bundle.sh) without a GPU:
#   fake:     every stage's output comes from a folder (TZ_GPU_CHECK_FAKE_DIR), made here by the bundle's own
#             executables on the cpu device with chosen figures written in, so each goal's verdict is known;
#             one stage fails, one times out, one skips itself
#   no-gpu:   the real stages on this machine: the doctor and the cpu smoke run, every GPU stage skipped
#             "no GPU", exit 0, three files back
#   refusals: a library missing from lib/, an NVIDIA library older than the bundle's, a bundle without its
#             linked versions: one line each, exit 2; --exec passes the exit status through
#   signal:   SIGTERM while a stage runs: smoke.json already written, the stage recorded as stopped, exit
#             143 at once, no stage process or working folder left
#
#   gpu_check_test.sh BUILD_DIR MODE    the bundle: BUILD_DIR/gpu-bundle.tar.xz (scripts/test.sh makes it
#                                       in a CUDA build), or an unpacked one named by TZ_GPU_BUNDLE_DIR
set -u

BUILD=$1
MODE=$2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_test.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/tmp"
export TMPDIR=$W/tmp # run.sh's working folder lands here, so the test sees that it is removed

fail() {
  echo "gpu_check_test ($MODE): FAILED: $*" >&2
  [[ -f "$W/r/results.json" ]] && jq -c '.stages' "$W/r/results.json" >&2
  exit 1
}
expect() { jq -e "$1" "$W/r/${2:-results.json}" >/dev/null || fail "expected in ${2:-results.json}: $1"; }

if [[ -n "${TZ_GPU_BUNDLE_DIR:-}" ]]; then
  cp -a "$TZ_GPU_BUNDLE_DIR" "$W/gpu-bundle" || fail "cannot copy $TZ_GPU_BUNDLE_DIR"
elif [[ -f "$BUILD/gpu-bundle.tar.xz" ]]; then
  tar -C "$W" -xJf "$BUILD/gpu-bundle.tar.xz" || fail "cannot unpack $BUILD/gpu-bundle.tar.xz"
else
  echo "no GPU bundle at $BUILD/gpu-bundle.tar.xz: scripts/test.sh makes it in a build with the CUDA backend (scripts/gpu-bundle.sh)"
  exit 77
fi
G=$W/gpu-bundle
X() { "$G/run.sh" --exec "$@" 2>/dev/null; } # a bundle executable, as run.sh runs it

# only_three_files: what comes back from the lent machine is exactly these.
only_three_files() {
  [[ "$(ls "$W/r" | sort | paste -sd' ' -)" == "logs.tar.gz results.json smoke.json" ]] ||
    fail "the results folder holds $(ls "$W/r" | paste -sd' ' -), not just logs.tar.gz results.json smoke.json"
  [[ -z "$(ls -A "$W/tmp")" ]] || fail "run.sh left its working folder behind: $(ls "$W/tmp")"
}

case "$MODE" in
fake)
  F=$W/fake
  mkdir -p "$F"
  # The machine: this one's doctor report with one H200 added (so the GPU stages run, from files).
  X bin/tierzero doctor --json | jq -c '.gpu.devices = [{name: "NVIDIA H200", memory_bytes: 150754820096, compute_capability: "9.0"}]' \
    >"$F/doctor.out" || fail "tierzero doctor --json"
  # set_figure KEY_PATH VALUE FILE: a figure the goals read, set to a known value (the key must exist in the
  # real output first: a renamed key fails here, not silently in the check).
  set_figure() {
    jq -e "$1 != null" "$3" >/dev/null || fail "$3 has no $1"
    jq -c "$1 = $2" "$3" >"$3.tmp" && mv "$3.tmp" "$3"
  }
  # The smoke: two real cpu runs' metrics through the real loss comparison, and a real GoogleTest report of
  # a kernel test (its tests skip here: no GPU).
  for k in a b; do
    X bin/tierzero train --model tiny --dtype fp32 --steps 3 --seq-len 64 --micro-batch 4 --val-batches 1 --log-every 0 \
      --metrics "$W/smoke_$k.jsonl" >/dev/null || fail "the smoke's cpu run"
  done
  python3 "$G/check/results.py" compare-losses --reference "$W/smoke_a.jsonl" --run "$W/smoke_b.jsonl" --rtol 1e-3 \
    >"$F/smoke_cuda.out" || fail "compare-losses of two identical runs"
  X bin/cuda_kernels_elementwise_test --gtest_output="xml:$F/smoke_kernel.xml" >/dev/null || fail "a kernel test without a GPU"
  kernel_skips=$(grep -c '<testcase' "$F/smoke_kernel.xml")
  cat >"$F/kernel_tests.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1" disabled="0" errors="0" time="0.3" name="AllTests">
  <testsuite name="Suite" tests="3" failures="1" disabled="0" skipped="1" errors="0" time="0.3">
    <testcase name="Passes" status="run" result="completed" time="0.1" classname="Suite" />
    <testcase name="Fails" status="run" result="completed" time="0.1" classname="Suite">
      <failure message="expected 1, got 2" type=""><![CDATA[a.cc:1 expected 1, got 2]]></failure>
    </testcase>
    <testcase name="Skips" status="run" result="skipped" time="0.1" classname="Suite"><skipped message="no"/></testcase>
  </testsuite>
</testsuites>
EOF
  echo 1 >"$F/kernel_tests.rc"
  # The benchmarks' real output on the cpu device (matmul in fp16, which oneDNN widens to fp32 on every
  # CPU), then the figures set.
  X bin/tierzero bench gpu-matmul --device cpu --dtype fp16 --tokens 64 --n-embd 32 --vocab 96 --square 64 --warmup 1 \
    --iters 2 --rounds 1 --peak-tflops 1 --json >"$F/gpu_matmul.out" || fail "bench gpu-matmul --device cpu"
  set_figure .square_fraction_of_peak 0.75 "$F/gpu_matmul.out"
  X bin/tierzero bench gpu-attention --device cpu --shape 2,32,32,4 --shape 1,16,32,2 --warmup 1 --iters 2 --rounds 1 \
    --peak-tflops 1 --json >"$F/gpu_attention.out" || fail "bench gpu-attention --device cpu"
  set_figure '.rows[0].forward_fraction_of_peak' 0.55 "$F/gpu_attention.out"
  set_figure '.rows[0].backward_fraction_of_peak' 0.30 "$F/gpu_attention.out"
  set_figure '.rows[1].forward_fraction_of_peak' 0.60 "$F/gpu_attention.out"
  set_figure '.rows[1].backward_fraction_of_peak' 0.45 "$F/gpu_attention.out"
  echo 12 >"$F/gpu_copy.sleep" # past its 10 s limit: a timeout
  # A real (tiny, cpu) training run's metrics through the real bench mfu, and its table of ops.
  X bin/tierzero train --model tiny --steps 4 --micro-batch 2 --seq-len 32 --val-batches 1 --log-every 0 \
    --metrics "$W/m.jsonl" >"$F/step_no_offload.out" 2>&1 || fail "tierzero train --model tiny"
  cp "$W/m.jsonl" "$F/step_no_offload.jsonl"
  X bin/tierzero bench mfu --metrics "$W/m.jsonl" --model tiny --seq-len 32 --skip 1 --peak-tflops 1 --json \
    >"$W/mfu.json" || fail "bench mfu"
  jq -e '.steps_used == 3 and .ms_per_step > 0 and .mfu > 0 and .tokens_per_step == 64' "$W/mfu.json" >/dev/null ||
    fail "bench mfu's figures: $(cat "$W/mfu.json")"
  jq -c '.mfu = 0.55 | .ms_per_step = 800' "$W/mfu.json" >"$F/step_no_offload_mfu.out"
  cp "$F/step_no_offload.out" "$F/step_optimizer_cpu_noclip.out"
  jq -c '.mfu = 0.50 | .ms_per_step = 880' "$W/mfu.json" >"$F/step_optimizer_cpu_noclip_mfu.out"
  cp "$F/step_no_offload.out" "$F/step_optimizer_cpu.out"
  jq -c '.mfu = 0.30 | .ms_per_step = 1200' "$W/mfu.json" >"$F/step_optimizer_cpu_mfu.out"
  X bin/tierzero train --model tiny --steps 3 --micro-batch 2 --seq-len 32 --val-batches 1 --log-every 0 \
    --profile-ops 2 --metrics "$F/profile_gpt2.jsonl" >"$F/profile_gpt2.out" 2>&1 || fail "tierzero train --profile-ops"
  # Llama: tierzero's losses, and the Hugging Face peer's 5% off them (beyond the bf16 tolerance); the
  # PyTorch peer's 1% off tierzero's GPT-2 losses (within it).
  X bin/tierzero train --model llama-tiny --steps 4 --micro-batch 2 --seq-len 32 --val-batches 1 --log-every 0 \
    --metrics "$F/step_llama.jsonl" >"$F/step_llama.out" 2>&1 || fail "tierzero train --model llama-tiny"
  jq -c '.ms_per_step = 150' "$W/mfu.json" >"$F/step_llama_mfu.out"
  tz_losses=$(jq -s -c '[.[] | select(.loss != null) | .loss]' "$W/m.jsonl")
  llama_losses=$(jq -s -c '[.[] | select(.loss != null) | .loss]' "$F/step_llama.jsonl")
  jq -n -c --argjson l "$tz_losses" '{schema: "tierzero-torch-peer/1", ms_per_step: 1000, mfu: 0.36,
    init_from: "init-gpt2", losses: [$l[] * 1.01]}' >"$F/torch_eager.out"
  jq -n -c --argjson l "$llama_losses" '{schema: "tierzero-hf-peer/1", ms_per_step: 160, folder: "init-llama",
    losses: [$l[] * 1.05]}' >"$F/hf_llama.out"
  echo '{"device_bytes_with_param_offload": 48188211200, "device_bytes_without": 52864860160, "device_mem_mib": 48186}' \
    >"$F/plan_param_offload.out"
  echo "tierzero train failed: out of device memory (a fake failure)" >"$F/step_param_offload.err"
  echo 1 >"$F/step_param_offload.rc"
  echo "torch.compile is absent in torch 1.13: not compiled" >"$F/torch_compiled.err"
  echo 77 >"$F/torch_compiled.rc"

  t0=$(date +%s)
  TZ_GPU_CHECK_FAKE_DIR=$F "$G/run.sh" "$W/r" >"$W/out.txt" 2>&1 || { cat "$W/out.txt"; fail "run.sh exited $?"; }
  cat "$W/out.txt"
  (($(date +%s) - t0 < 90)) || fail "run.sh took $(($(date +%s) - t0)) s (bound 90)"
  only_three_files
  expect '.schema == "tierzero-gpu-check/3" and .gpus == 1 and (.test_mode | type) == "string" and .complete == true'
  # gpt2 MFU, vs eager, vs compiled, llama vs HF, attention fwd/bwd x 2 shapes, optimizer on CPU, parameters
  # too, losses vs eager, losses vs HF, matmul, copies.
  expect '[.goals[].pass] == [true, true, null, false, true, false, true, true, true, null, true, false, true, null]'
  expect '.goals[0].value == 0.55 and .goals[1].value == 0.8 and .goals[3].value == 0.9375 and .goals[8].value == 1.1'
  expect '.goals[4].value == 0.55 and .goals[5].value == 0.30 and .goals[12].value == 0.75'
  expect '(.goals[10].value - 0.01 | fabs) < 1e-9 and (.goals[11].value - 0.05 | fabs) < 1e-9'
  expect '.goals[13].reason == "not measured: gpu_copy timeout: stopped after 10 s (stage limit 10 s)"'
  expect '.goals[9].reason == "not measured: step_param_offload failed: exit 1: tierzero train failed: out of device memory (a fake failure)"'
  expect '.stages.gpu_copy.status == "timeout" and .stages.gpu_copy.rc == 124'
  expect '.peer.step_time_vs_torch_eager == 0.8 and .peer.table[1].run == "torch eager" and .peer.table[4].run == "hf llama"'
  expect '(.peer.table[1].losses | length) == 4 and ((.peer.table[1].tierzero_losses[0] * 1.01 - .peer.table[1].losses[0]) | fabs) < 1e-9'
  expect '.profiles.profile_gpt2.first_step == 2 and .profiles.profile_gpt2.last_step == 3 and (.profiles.profile_gpt2.ops | length) > 10'
  expect ".tests.total == $((kernel_skips + 3)) and .tests.passed == 1 and .tests.failed == 1 and .tests.skipped == $((kernel_skips + 1))"
  expect '.tests.failed_names == ["kernel_tests: Suite.Fails"] and .stages.kernel_tests.status == "failed"'
  expect '.stages.step_param_offload.status == "failed" and (.stages.step_param_offload.reason | test("^exit 1: .*a fake failure"))'
  expect '(.stages.step_param_offload.log_tail | test("fake failure")) and .stages.step_param_offload_mfu.status == "skipped"'
  expect '.stages.step_param_offload_mfu.reason == "step_param_offload did not succeed" and .figures.step_param_offload == null'
  expect '.stages.torch_compiled.status == "skipped" and .stages.torch_compiled.reason == "torch.compile is absent in torch 1.13: not compiled"'
  expect '.figures.step_optimizer_cpu.extra_flags == ["--offload-optimizer", "cpu"] and .figures.step_no_offload.extra_flags == []'
  expect '.figures.step_optimizer_cpu_noclip.extra_flags == ["--offload-optimizer", "cpu", "--grad-clip", "0"]'
  expect '(.figures.step_no_offload.wall_s | type) == "number" and (.figures.step_optimizer_cpu.outside_steps_s | type) == "number"'
  expect '.figures.plan_param_offload.device_mem_mib == 48186 and .figures.gpu_matmul.rows[0].wrong == 0'
  expect '.stages.step_param_offload.command | test("--device-mem 48186M")'
  expect '(.stages.step_no_offload.command | test("--init-from .*/init-gpt2 --data .*/tok-gpt2.bin")) and (.stages.torch_eager.command | test("--init-from"))'
  expect '.stages.inputs.status == "ok" and .stages.export_gpt2.status == "ok" and .stages.export_llama.status == "ok"'
  expect '.machine.gpu.devices[0].name == "NVIDIA H200" and .training_runs.grad_accum == 4'
  expect '.libraries.cublas.version != null and .libraries.nccl.path != null and .stage_order[0] == "doctor"'
  expect '([.stages[] | .needs_gpu] | any) and ([.stages[] | .status] | all(. == "ok" or . == "skipped" or . == "failed" or . == "timeout"))'
  expect '.verdict == "ok" and .loss_comparison.pass == true and .loss_comparison.max_relative_difference == 0' smoke.json
  expect '.stages | keys == ["doctor", "smoke_cpu", "smoke_cuda", "smoke_kernel"]' smoke.json
  tar -tzf "$W/r/logs.tar.gz" | grep -qx 'gpu-check-logs/logs/step_param_offload.err' || fail "logs.tar.gz lacks a stage's stderr"
  grep -q "FAIL  attention backward >= 40% of the bf16 dense peak (gpt2-xl B=8 T=1024 hs=64): 0.3" "$W/out.txt" ||
    fail "the summary lines"
  grep -Eq "^  hf llama +160.0 " "$W/out.txt" || fail "the summary's table of peers"
  ;;
no-gpu)
  t0=$(date +%s)
  CUDA_VISIBLE_DEVICES="" "$G/run.sh" "$W/r" >"$W/out.txt" 2>&1 || { cat "$W/out.txt"; fail "run.sh exited $?"; }
  cat "$W/out.txt"
  (($(date +%s) - t0 < 60)) || fail "run.sh took $(($(date +%s) - t0)) s (bound 60)"
  only_three_files
  expect '.gpus == 0 and .test_mode == false and .complete == true and .stages.doctor.status == "ok"'
  expect '.stages.smoke_cpu.status == "ok" and (.no_gpu_reason | test("^no GPU: "))'
  expect '[.stages[] | select(.needs_gpu) | .status == "skipped" and (.reason | test("^no GPU: "))] | all'
  expect '[.stages[] | select(.needs_gpu)] | length == 27'
  expect '([.goals[] | .pass] | all(. == null)) and (.goals | length) == 14 and ([.goals[] | .reason | test("^not measured: ")] | all)'
  expect '.libraries.cublas.path != null and .libraries.cublasLt.path != null and .libraries.nccl.path != null'
  expect '.machine.gpu.devices == [] and .tests == null'
  expect '.verdict == "no GPU" and .stages.smoke_cpu.status == "ok"' smoke.json
  ;;
refusals)
  # refused NAME PATTERN CMD...: exit 2 and exactly one stderr line, matching PATTERN.
  refused() {
    local name=$1 pattern=$2 rc
    shift 2
    "$@" >"$W/o" 2>"$W/e"
    rc=$?
    ((rc == 2)) || { cat "$W/e"; fail "$name: exit $rc, not 2"; }
    (($(wc -l <"$W/e") == 1)) || { cat "$W/e"; fail "$name: $(wc -l <"$W/e") lines on stderr, not one"; }
    grep -qE "$pattern" "$W/e" || fail "$name: '$(cat "$W/e")' does not match '$pattern'"
    echo "ok: $name: $(cat "$W/e")"
  }
  cp -a "$G" "$W/g2" && rm "$W/g2/lib/libdnnl.so.2"
  refused "a library left out" "^run.sh: bin/[a-z_]+ needs libdnnl\.so\.2, which is not in the bundle's lib/" "$W/g2/run.sh" --libs
  refused "a library left out, the check" "needs libdnnl\.so\.2" "$W/g2/run.sh" "$W/r2"
  [[ ! -e "$W/r2" ]] || fail "a refused check made its results folder"
  rm -rf "$W/g2" && cp -a "$G" "$W/g2"
  sed -i 's/^TZ_LINKED_CUBLAS_VERSION=.*/TZ_LINKED_CUBLAS_VERSION=99.0.0/' "$W/g2/check/linked.env"
  refused "an older cuBLAS" "^run.sh: cuBLAS: no usable libcublas\.so\.13 libcublasLt\.so\.13 \(.*cublas [0-9.]+, older than the bundle's 99\.0\.0.*\); looked in: " \
    "$W/g2/run.sh" --libs
  TZ_GPU_CHECK_ALLOW_OLDER=1 "$W/g2/run.sh" --libs 2>"$W/e" || fail "TZ_GPU_CHECK_ALLOW_OLDER=1 still refuses: $(cat "$W/e")"
  grep -q "warning: .*older than the 99.0.0 the bundle was linked against (TZ_GPU_CHECK_ALLOW_OLDER=1)" "$W/e" ||
    fail "TZ_GPU_CHECK_ALLOW_OLDER=1 gives no warning"
  rm "$W/g2/check/linked.env"
  refused "no linked versions" "linked\.env is missing: this is not a whole bundle" "$W/g2/run.sh" --libs
  "$G/run.sh" --exec /bin/sh -c 'case "$LD_LIBRARY_PATH" in "$0"/lib:*) exit 7 ;; esac; exit 1' "$G" 2>/dev/null
  rc=$?
  ((rc == 7)) || fail "--exec: exit $rc (the command's 7 expected, with the bundle's lib/ first on the loader's path)"
  "$G/run.sh" --libs 2>"$W/e" || fail "run.sh --libs: $(cat "$W/e")"
  grep -qE "^run.sh: cublas [0-9.]+: /.*libcublas\.so\.13 \((toolkit|system|site-packages)\)$" "$W/e" || fail "--libs: $(cat "$W/e")"
  grep -qE "^run.sh: nccl [0-9.]+: /.*libnccl\.so\.2 " "$W/e" || fail "--libs: no NCCL line: $(cat "$W/e")"
  ;;
signal)
  F=$W/fake
  mkdir -p "$F"
  echo '{"gpu": {"devices": [{"name": "NVIDIA H200"}], "problem": ""}}' >"$F/doctor.out"
  echo '{"pass": true}' >"$F/smoke_cuda.out"
  echo 60 >"$F/kernel_tests.sleep"
  TZ_GPU_CHECK_FAKE_DIR=$F "$G/run.sh" "$W/r" >"$W/out.txt" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    [[ -f "$W/r/smoke.json" ]] && jq -e '.verdict == "ok"' "$W/r/smoke.json" >/dev/null 2>&1 && break
    sleep 0.1
  done
  expect '.verdict == "ok"' smoke.json
  expect '.stages.kernel_tests == null'
  sleep 0.5 # kernel_tests is running
  t0=$(date +%s.%N)
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  cat "$W/out.txt"
  ((rc == 143)) || fail "SIGTERM: exit $rc, not 143"
  awk -v s="$secs" 'BEGIN { exit !(s < 5) }' || fail "SIGTERM: run.sh took $secs s to stop (bound 5)"
  only_three_files
  expect '.stages.kernel_tests.status == "stopped" and .stages.kernel_tests.reason == "the check was stopped by SIGTERM" and .stages.kernel_tests.needs_gpu'
  expect '[.stages[] | select(.status == "stopped")] | length == 1'
  expect '.complete == false and .stages.nccl_tests == null'
  pgrep -f "$F/kernel_tests" >/dev/null && fail "the stopped stage's process is still running"
  ;;
*) fail "mode must be fake, no-gpu, refusals or signal" ;;
esac
echo "gpu_check_test ($MODE): ok"
