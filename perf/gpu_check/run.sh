#!/usr/bin/env bash
# The GPU check, as the bundle runs it on a lent machine (scripts/gpu-bundle.sh packs this file as
# gpu-bundle/run.sh). It needs bash, coreutils and the dynamic loader; python3's standard library only
# for its reports; no compiler, jq, ctest, Open MPI or network.
#
#   gpu-bundle/run.sh [RESULTS_DIR]      the check (RESULTS_DIR: default $OUT, else ./gpu-check-results);
#                                        exit 0 once results.json is written, the verdicts are inside
#   gpu-bundle/run.sh --libs             only find and print NVIDIA's libraries (exit 0, or 2 as below)
#   gpu-bundle/run.sh --exec CMD ARG...  run CMD (bin/tierzero: relative to the bundle) with the libraries
#                                        found on the loader's path; CMD's exit status
#
# It first finds cuBLAS and cuBLASLt (from one folder) and NCCL: the toolkit's lib64, the system library
# path, then python's site-packages nvidia/*/lib; the first place whose versions are at least those the
# bundle was linked against (check/linked.env) wins. It prints each file, version and where it came from,
# and checks that every executable's libraries resolve. Anything missing or older: one line naming it
# and where it looked, exit 2. cuDNN 9 (libcudnn.so.9 and its sub-libraries, from one folder) and the NVRTC
# it compiles its attention with are looked for the same way and put on the loader's path when found;
# missing, they are a note (results.json's libraries.cudnn.note or .nvrtc.note): the attention then runs its
# own kernels.
#
# RESULTS_DIR then gets three files, rewritten (atomically) after every stage: smoke.json (written as soon
# as the smoke stages are done: the tierzero doctor, a 3-step training run on the cpu and the same on
# cuda with their losses compared, one kernel test), results.json (schema tierzero-gpu-check/2: every
# stage, figure, goal and the libraries used) and logs.tar.gz (every stage's output, at most 15 MiB).
# Each stage runs under `timeout` with its own limit inside the budget (540 s by default; the stages
# in order of what a lease most needs, torch.compile last). Without a GPU every GPU stage is skipped with the reason, "no GPU: ...".
#
# Environment:
#   TZ_GPU_CHECK_BUDGET_S     seconds for every stage together (default 540); a stage that would start
#                             with under 5 s left is skipped, with the reason recorded
#   TZ_GPU_CHECK_SKIP         stage names not to run (a rerun: the stages already ok), recorded as skipped
#   TZ_GPU_CHECK_ALLOW_OLDER  1: an NVIDIA library older than the bundle's is used, with a warning
#   TZ_GPU_CHECK_MICRO_BATCH, _GRAD_ACCUM, _STEPS   the gpt2-xl runs (default 8 x 1024 tokens, 4, 5)
#   TZ_GPU_CHECK_CUDA_HOME    the toolkit (default /usr/local/cuda)
#   TZ_GPU_CHECK_FAKE_DIR     test mode: a stage's command is replaced by one that sleeps <dir>/<stage>.sleep
#                             seconds (default 0) under the stage's timeout, prints <stage>.out and .err and
#                             exits <stage>.rc (default 0); <stage>.xml is its GoogleTest report, <stage>.jsonl
#                             its --metrics file. The doctor's
#                             GPUs count, not the driver's; the libraries are still found for real
set -u

B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHECK=$B/check
LDSO=/lib64/ld-linux-x86-64.so.2
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
CUDA_HOME=${TZ_GPU_CHECK_CUDA_HOME:-/usr/local/cuda}

say() { echo "run.sh: $*" >&2; }
refuse() { say "$*"; exit 2; }

# ---- NVIDIA's libraries ---------------------------------------------------------------------------
[[ -f "$CHECK/linked.env" ]] || refuse "$CHECK/linked.env is missing: this is not a whole bundle (make one with scripts/gpu-bundle.sh)"
# shellcheck source=/dev/null
. "$CHECK/linked.env" # TZ_LINKED_<KIND>_{SONAME,VERSION} for CUBLAS, CUBLASLT, NCCL
[[ -x "$B/bin/tz-lib-version" ]] || refuse "$B/bin/tz-lib-version is missing: this is not a whole bundle"

# version_ge A B: version A >= version B (dotted numbers).
version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]; }

# Folders to look in, each as "SOURCE<TAB>DIR", in order: the toolkit, the system library path, python's
# site-packages nvidia/*/lib (pip's NVIDIA packages, as PyTorch installs them).
candidate_dirs() {
  local d sp
  for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib"; do [[ -d "$d" ]] && printf 'toolkit\t%s\n' "$d"; done
  {
    command -v ldconfig >/dev/null && ldconfig -p 2>/dev/null | sed -n 's/.* => \(.*\)\/[^/]*$/\1/p'
    echo /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib
  } | awk '!seen[$0]++' | while read -r d; do [[ -d "$d" ]] && printf 'system\t%s\n' "$d"; done
  {
    for sp in /usr/lib/python3*/site-packages /usr/lib/python3/dist-packages /usr/local/lib/python3*/dist-packages \
      /usr/local/lib/python3*/site-packages "${HOME:-/root}"/.local/lib/python3*/site-packages \
      "$(dirname "$(command -v python3 2>/dev/null || echo /nonexistent/python3)")"/../lib/python3*/site-packages; do
      echo "$sp"
    done
    # And what python itself says (a virtual environment, conda): a report of where it looks, nothing more.
    python3 -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null
  } | awk '!seen[$0]++' | while read -r sp; do
    for d in "$sp"/nvidia/*/lib; do [[ -d "$d" ]] && printf 'site-packages\t%s\n' "$(cd "$d" && pwd)"; done
  done
}

# probe DIR FILE...: "kind<TAB>version<TAB>path" per file, asked of the library (tz-lib-version).
probe() {
  local dir=$1
  shift
  LD_LIBRARY_PATH="$dir${ORIG_LD_LIBRARY_PATH:+:$ORIG_LD_LIBRARY_PATH}" "$B/bin/tz-lib-version" "$@" 2>/dev/null
}

# find_lib LABEL KIND VERSION FILE [FILE...]: the first candidate folder holding every FILE, each at least
# VERSION (KIND names the first file's version; for cuBLAS the second, cuBLASLt, is checked too). Sets
# FOUND_DIR, FOUND_SOURCE and FOUND_VERSIONS ("file version" pairs); else refuses naming every place.
find_lib() {
  local label=$1 want=$2
  shift 2
  local files=("$@") source dir f line kind ver ok looked=() versions
  while IFS=$'\t' read -r source dir; do
    ok=1
    for f in "${files[@]}"; do [[ -e "$dir/$f" ]] || ok=0; done
    ((ok)) || continue
    versions=""
    for f in "${files[@]}"; do
      line=$(probe "$dir" "$dir/$f")
      kind=${line%%$'\t'*}
      ver=$(cut -f2 <<<"$line")
      if [[ "$kind" == error || -z "$line" ]]; then
        looked+=("$dir/$f ($source): cannot be loaded: ${ver:-no answer}")
        ok=0
        break
      fi
      local linked_var="TZ_LINKED_$(tr '[:lower:]' '[:upper:]' <<<"$kind")_VERSION"
      local linked=${!linked_var:-0}
      if ! version_ge "$ver" "$linked"; then
        if [[ "${TZ_GPU_CHECK_ALLOW_OLDER:-0}" == 1 ]]; then
          say "warning: $dir/$f is $kind $ver, older than the $linked the bundle was linked against (TZ_GPU_CHECK_ALLOW_OLDER=1)"
        else
          looked+=("$dir/$f ($source): $kind $ver, older than the bundle's $linked")
          ok=0
          break
        fi
      fi
      versions+="$f $kind $ver"$'\n'
    done
    if ((ok)); then
      FOUND_DIR=$dir FOUND_SOURCE=$source FOUND_VERSIONS=$versions
      return 0
    fi
  done < <(candidate_dirs)
  local where
  where=$(candidate_dirs | cut -f2 | paste -sd, - | sed 's/,/, /g')
  if ((${#looked[@]})); then
    refuse "$label: no usable ${files[*]} ($(printf '%s; ' "${looked[@]}" | sed 's/; $//')); looked in: ${where:-nothing}"
  fi
  refuse "$label (${files[*]}) not found; looked in: ${where:-nothing} (install the CUDA toolkit, or PyTorch's nvidia-* packages; TZ_GPU_CHECK_CUDA_HOME names another toolkit)"
}

LIBS_TSV="" # kind, version, path, source: one line per library, for the reports
find_lib cuBLAS "$TZ_LINKED_CUBLAS_VERSION" "$TZ_LINKED_CUBLAS_SONAME" "$TZ_LINKED_CUBLASLT_SONAME"
CUBLAS_DIR=$FOUND_DIR
while read -r f kind ver; do
  [[ -n "$f" ]] && LIBS_TSV+="$kind"$'\t'"$ver"$'\t'"$CUBLAS_DIR/$f"$'\t'"$FOUND_SOURCE"$'\n'
done <<<"$FOUND_VERSIONS"
find_lib NCCL "$TZ_LINKED_NCCL_VERSION" "$TZ_LINKED_NCCL_SONAME"
NCCL_DIR=$FOUND_DIR
LIBS_TSV+="nccl"$'\t'"$(awk '{ print $3 }' <<<"$FOUND_VERSIONS" | head -n 1)"$'\t'"$NCCL_DIR/$TZ_LINKED_NCCL_SONAME"$'\t'"$FOUND_SOURCE"$'\n'

# cuDNN 9: optional. tierzero loads libcudnn.so.9 only when the attention runs on cuDNN, and the attention
# keeps its own kernels without it, so its absence is a note, never a refusal. libcudnn.so.9 loads its
# sub-libraries (libcudnn_graph.so.9, libcudnn_engines_*.so.9, ...) through the loader's path, so all of
# them come from one folder: the first candidate holding libcudnn.so.9 and libcudnn_graph.so.9 whose
# version answers (pip's nvidia/cudnn/lib, as PyTorch installs it, among them).
CUDNN_DIR="" CUDNN_NOTE=""
while IFS=$'\t' read -r source dir; do
  [[ -e "$dir/libcudnn.so.9" && -e "$dir/libcudnn_graph.so.9" ]] || continue
  line=$(probe "$dir" "$dir/libcudnn.so.9")
  if [[ "$line" == cudnn$'\t'* ]]; then
    CUDNN_DIR=$dir CUDNN_NOTE=""
    LIBS_TSV+="$line"$'\t'"$source"$'\n'
    break
  fi
  CUDNN_NOTE+="${CUDNN_NOTE:+; }$dir/libcudnn.so.9 ($source) cannot be loaded: $(cut -f2 <<<"$line")"
done < <(candidate_dirs)
if [[ -z "$CUDNN_DIR" ]]; then
  CUDNN_NOTE="libcudnn.so.9 not found${CUDNN_NOTE:+ ($CUDNN_NOTE)}: the attention runs its own kernels"
  LIBS_TSV+="cudnn"$'\t'$'\t'$'\t'"$CUDNN_NOTE"$'\n'
fi
# NVRTC: cuDNN compiles its fused attention at run time with libnvrtc.so.<CUDA major> (13 for a cuDNN built
# for CUDA 13, 12 for one built for 12), opened through the loader's path: each major's first folder (cuDNN's
# own, then the candidates) goes on it. Neither found: a note, as for cuDNN.
NVRTC_DIRS=()
if [[ -n "$CUDNN_DIR" ]]; then
  for major in 13 12; do
    while IFS=$'\t' read -r source dir; do
      [[ -e "$dir/libnvrtc.so.$major" ]] || continue
      line=$(probe "$dir" "$dir/libnvrtc.so.$major")
      [[ "$line" == nvrtc$'\t'* ]] || continue
      NVRTC_DIRS+=("$dir")
      LIBS_TSV+="nvrtc$major"$'\t'"$(cut -f2 <<<"$line")"$'\t'"$dir/libnvrtc.so.$major"$'\t'"$source"$'\n'
      break
    done < <(printf 'cudnn\t%s\n' "$CUDNN_DIR"; candidate_dirs)
  done
  if ((${#NVRTC_DIRS[@]} == 0)); then
    CUDNN_NOTE="libnvrtc.so.13 and libnvrtc.so.12 not found: cuDNN cannot compile its attention, which then runs its own kernels"
    LIBS_TSV+="nvrtc"$'\t'$'\t'$'\t'"$CUDNN_NOTE"$'\n'
  fi
fi

# The driver: not needed to load anything (cudart opens it when a GPU is asked for), so its absence only
# means no GPU.
CUDA_LIB="" CUDA_LIB_NOTE="libcuda.so.1 not found (no NVIDIA driver)"
while IFS=$'\t' read -r source dir; do
  if [[ -e "$dir/libcuda.so.1" ]]; then
    line=$(probe "$dir" "$dir/libcuda.so.1")
    if [[ "$line" == cuda$'\t'* ]]; then
      CUDA_LIB=$dir/libcuda.so.1
      LIBS_TSV+="$line"$'\t'"$source"$'\n'
      break
    fi
    CUDA_LIB_NOTE="$dir/libcuda.so.1 cannot be loaded: $(cut -f2 <<<"$line")"
  fi
done < <(candidate_dirs | grep -v $'^site-packages\t')
[[ -z "$CUDA_LIB" ]] && LIBS_TSV+="cuda"$'\t'$'\t'$'\t'"$CUDA_LIB_NOTE"$'\n'

LIB_PATH=$B/lib:$CUBLAS_DIR
[[ "$NCCL_DIR" != "$CUBLAS_DIR" ]] && LIB_PATH+=:$NCCL_DIR
for d in "$CUDNN_DIR" "${NVRTC_DIRS[@]}"; do
  [[ -n "$d" && ":$LIB_PATH:" != *":$d:"* ]] && LIB_PATH+=:$d
done
[[ -n "$CUDA_LIB" ]] && LIB_PATH+=:$(dirname "$CUDA_LIB")
LIB_PATH+=${ORIG_LD_LIBRARY_PATH:+:$ORIG_LD_LIBRARY_PATH}


# Every executable's libraries resolve: NVIDIA's from the folders above, the C/C++ runtime from the
# machine, everything else from the bundle's lib/ (never a copy the machine happens to have).
RUNTIME='^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil|libresolv)\.so'
NVIDIA='^(libcuda|libcublas|libcublasLt|libnccl|libcudnn[a-z_]*|libnvrtc)\.so'
for exe in "$B"/bin/*; do
  name=${exe#"$B"/}
  while read -r lib arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    if [[ "$path" == not ]]; then
      [[ "$lib" =~ $NVIDIA ]] && refuse "$name needs $lib, which is in none of $LIB_PATH"
      refuse "$name needs $lib, which is not in the bundle's lib/ (an incomplete bundle: make it again with scripts/gpu-bundle.sh)"
    fi
    [[ "$lib" =~ $RUNTIME || "$lib" =~ $NVIDIA || "$path" == "$B/lib/"* ]] && continue
    refuse "$name needs $lib, which is not in the bundle's lib/ (the machine's $path would be used: an incomplete bundle, make it again with scripts/gpu-bundle.sh)"
  done < <(LD_TRACE_LOADED_OBJECTS=1 LD_LIBRARY_PATH=$LIB_PATH "$LDSO" "$exe" 2>&1) # as ldd: "=> not found" lines
done

# A refusal above is one line; what was found is printed only once everything resolves.
while IFS=$'\t' read -r kind ver path source; do
  [[ -n "$kind" && "$kind" != cuda && -n "$path" ]] && say "$kind $ver: $path ($source)"
done <<<"$LIBS_TSV"
[[ -n "$CUDNN_NOTE" ]] && say "cudnn: $CUDNN_NOTE"
if [[ -n "$CUDA_LIB" ]]; then say "driver: $CUDA_LIB"; else say "driver: $CUDA_LIB_NOTE: the GPU stages will be skipped"; fi

case "${1:-}" in
  --libs) exit 0 ;;
  --exec)
    shift
    [[ $# -ge 1 ]] || refuse "--exec needs a command"
    cmd=$1
    shift
    [[ "$cmd" == */* && "$cmd" != /* ]] && cmd=$B/$cmd
    LD_LIBRARY_PATH=$LIB_PATH exec "$cmd" "$@"
    ;;
  -h | --help)
    sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

# ---- the check ------------------------------------------------------------------------------------
command -v python3 >/dev/null || refuse "python3 is needed for the reports (its standard library only)"
RESULTS=${1:-${OUT:-./gpu-check-results}}
mkdir -p "$RESULTS" || refuse "cannot make the results folder $RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
BUDGET_S=${TZ_GPU_CHECK_BUDGET_S:-540}
MB=${TZ_GPU_CHECK_MICRO_BATCH:-8}
ACCUM=${TZ_GPU_CHECK_GRAD_ACCUM:-4}
STEPS=${TZ_GPU_CHECK_STEPS:-5}
SKIP_STEPS=2
FAKE_DIR=${TZ_GPU_CHECK_FAKE_DIR:-}
[[ "$BUDGET_S" =~ ^[0-9]+$ && "$MB" =~ ^[1-9][0-9]*$ && "$ACCUM" =~ ^[1-9][0-9]*$ && "$STEPS" =~ ^[0-9]+$ ]] ||
  refuse "TZ_GPU_CHECK_BUDGET_S, _MICRO_BATCH, _GRAD_ACCUM and _STEPS must be whole numbers"
((STEPS > SKIP_STEPS)) || refuse "TZ_GPU_CHECK_STEPS must be above $SKIP_STEPS (the unmeasured warm-up)"
[[ -z "$FAKE_DIR" || -d "$FAKE_DIR" ]] || refuse "TZ_GPU_CHECK_FAKE_DIR=$FAKE_DIR is not a folder"

# The working folder: everything but the three result files (the device tool brings back at most 8).
W=$(mktemp -d "${TMPDIR:-/tmp}/tz-gpu-check.XXXXXX") || refuse "cannot make a working folder under ${TMPDIR:-/tmp}"
mkdir -p "$W/logs" "$W/stages" "$W/figures" "$W/xml"
printf '%s' "$LIBS_TSV" >"$W/libraries.tsv"
START=$(date +%s)
N=0
NGPU=0
NO_GPU="no GPU: tierzero doctor did not run"
CHILD="" CURRENT="" CURRENT_GPU=0
elapsed() { echo $(($(date +%s) - START)); }
R() { python3 "$CHECK/results.py" "$@"; }
assemble() {
  R assemble --work "$W" --results "$RESULTS" --bundle "$B" --budget "$BUDGET_S" --elapsed "$(elapsed)" \
    --micro-batch "$MB" --grad-accum "$ACCUM" --steps "$STEPS" --skip "$SKIP_STEPS" --fake "$FAKE_DIR" \
    --gpus "$NGPU" --no-gpu "$NO_GPU" "$@" ||
    say "could not write the reports in $RESULTS"
}
on_signal() {
  say "stopped by SIG$1 after $(elapsed) s: the reports hold every stage that ended"
  [[ -n "$CHILD" ]] && kill -TERM "$CHILD" 2>/dev/null
  # The stage that was running, if one was (between stages every record is already written).
  [[ -n "$CURRENT" ]] && R stage --work "$W" --n $((N + 1)) --name "$CURRENT" --status stopped --seconds 0 \
    --limit 0 --needs-gpu "$CURRENT_GPU" --reason "the check was stopped by SIG$1" --command "" 2>/dev/null
  assemble
  rm -rf "$W"
  exit $((128 + $2))
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT
trap 'on_signal HUP 1' HUP

# record NAME STATUS RC SECONDS LIMIT NEEDS_GPU REASON COMMAND
record() {
  N=$((N + 1))
  R stage --work "$W" --n "$N" --name "$1" --status "$2" --rc "$3" --seconds "$4" --limit "$5" --needs-gpu "$6" \
    --reason "$7" --command "$8"
  assemble
}
skip() { # skip NAME NEEDS_GPU REASON
  echo "run.sh: $1: skipped: $3"
  record "$1" skipped "" 0 0 "$2" "$3" ""
}

LAST_SECONDS=0
# run_stage NAME MAX_SECONDS NEEDS_GPU [--env torch] COMMAND...: COMMAND under `timeout` with min(MAX, what
# is left), stdout and stderr to $W/logs/NAME.out/.err; ok (exit 0), skipped (exit 77: the reason is its
# last line on stderr), timeout, failed. A GPU stage without a GPU is not run. Returns 0 when ok.
run_stage() {
  local name=$1 max=$2 gpu=$3
  shift 3
  local env_path=$LIB_PATH
  if [[ "$1" == --env ]]; then env_path=$ORIG_LD_LIBRARY_PATH; shift 2; fi
  local left=$((BUDGET_S - $(elapsed)))
  if [[ " ${TZ_GPU_CHECK_SKIP:-} " == *" $name "* ]]; then skip "$name" "$gpu" "TZ_GPU_CHECK_SKIP names it"; return 1; fi
  if ((gpu && NGPU == 0)); then skip "$name" "$gpu" "$NO_GPU"; return 1; fi
  if ((left < 5)); then skip "$name" "$gpu" "time budget spent: $(elapsed) s of ${BUDGET_S} s used"; return 1; fi
  local limit=$((max < left ? max : left)) t0 rc command="$*"
  t0=$(date +%s.%N)
  CURRENT=$name CURRENT_GPU=$gpu
  echo "run.sh: $name (limit ${limit} s, $(elapsed) s used)"
  if [[ -n "$FAKE_DIR" ]]; then
    # Test mode: the stage's output from files, after <stage>.sleep seconds, under the same timeout.
    [[ -f "$FAKE_DIR/$name.xml" ]] && cp "$FAKE_DIR/$name.xml" "$W/xml/$name.xml"
    [[ -f "$FAKE_DIR/$name.jsonl" ]] && cp "$FAKE_DIR/$name.jsonl" "$W/logs/$name.jsonl"  # its --metrics
    set -- bash -c 'sleep "$(cat "$1.sleep" 2>/dev/null || echo 0)"; cat "$1.out" 2>/dev/null; cat "$1.err" >&2 2>/dev/null
      exit "$(cat "$1.rc" 2>/dev/null || echo 0)"' fake "$FAKE_DIR/$name"
  fi
  # In the background and waited for, so that a signal to the check is handled at once.
  LD_LIBRARY_PATH=$env_path timeout --kill-after=5 "$limit" "$@" >"$W/logs/$name.out" 2>"$W/logs/$name.err" &
  CHILD=$!
  wait "$CHILD"
  rc=$?
  CHILD=""
  local secs status reason=""
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  case $rc in
    0) status=ok ;;
    77) status=skipped reason=$(grep -v '^[[:space:]]*$' "$W/logs/$name.err" | tail -n 1 | cut -c1-500) ;;
    124 | 137) status=timeout reason="stopped after ${limit} s (stage limit ${max} s)" ;;
    *) status=failed reason="exit $rc: $(grep -v '^[[:space:]]*$' "$W/logs/$name.err" | tail -n 1 | cut -c1-500)" ;;
  esac
  LAST_SECONDS=$secs
  CURRENT=""
  record "$name" "$status" "$rc" "$secs" "$limit" "$gpu" "$reason" "$command"
  [[ "$status" != ok ]] && echo "run.sh: $name: $status${reason:+: $reason}"
  [[ "$status" == ok ]]
}
keep_json() { R keep-json --work "$W" --stage "$1" --key "${2:-$1}"; } # the stage's last JSON line is a figure

TZ=$B/bin/tierzero
# ---- smoke (60 s): a first verdict, in smoke.json before anything else runs ----------------------------
if run_stage doctor 10 0 "$TZ" doctor --json; then
  keep_json doctor
  read -r NGPU GPU_PROBLEM < <(R gpus --doctor "$W/figures/doctor.json")
  [[ "$NGPU" =~ ^[0-9]+$ ]] || NGPU=0
  NO_GPU="no GPU: ${GPU_PROBLEM:-the driver reports none}"
fi
[[ -z "$CUDA_LIB" && -z "$FAKE_DIR" ]] && NGPU=0 NO_GPU="no GPU: $CUDA_LIB_NOTE"
SMOKE_FLAGS=(train --model tiny --dtype fp32 --steps 3 --seq-len 64 --micro-batch 4 --val-batches 1 --log-every 1)
# The cpu run is the reference (and, without a GPU, shows the bundle trains from bin/).
run_stage smoke_cpu 15 0 "$TZ" "${SMOKE_FLAGS[@]}" --device cpu --metrics "$W/logs/smoke_cpu.jsonl"
# fp32 on both (no TF32, fp32 attention): 3 steps of the tiny GPT agree to 1e-3 of the loss (the GPU adds
# in other orders; tests/cuda/train_cuda_test.cc states the same tolerance for 20 steps).
run_stage smoke_cuda 25 1 bash -c '"$1" "${@:5}" --device cuda --attention-math fp32 --metrics "$2" &&
  python3 "$4/results.py" compare-losses --reference "$3" --run "$2" --rtol 1e-3' \
  smoke "$TZ" "$W/logs/smoke_cuda.jsonl" "$W/logs/smoke_cpu.jsonl" "$CHECK" "${SMOKE_FLAGS[@]}"
GTESTS=(bash "$CHECK/gtests.sh" "$B/bin" "$W/xml")
run_stage smoke_kernel 10 1 "${GTESTS[@]}" cuda_kernels_elementwise_test

# ---- by value: the kernel tests against the CPU backend, NCCL at one rank, the training contracts ------
mapfile -t KERNEL_TESTS < <(cd "$B/bin" && ls cuda_*_test 2>/dev/null |
  grep -v -e '^cuda_train_cuda_test$' -e '^cuda_nccl_mpi_test$' -e '^cuda_cudnn_attention_test$')
run_stage kernel_tests 30 1 "${GTESTS[@]}" "${KERNEL_TESTS[@]}"
# cuDNN's attention against the kernels and the cpu: a stage of its own (NVRTC compiles each plan).
run_stage cudnn_tests 90 1 "${GTESTS[@]}" cuda_cudnn_attention_test
run_stage nccl_tests 15 1 "${GTESTS[@]}" cuda_nccl_mpi_test
run_stage train_contracts 35 1 "${GTESTS[@]}" cuda_train_cuda_test

# ---- the same weights and tokens for tierzero and its peers ---------------------------------------------
# Token files in llm.c's format (uint16 for GPT-2's vocabulary, uint32 for Llama 3's), seeded; each model's
# initial weights written once by tierzero itself (one step at lr 0 changes no weight) as a Hugging Face
# folder in bf16, which every tierzero run and its peer then start from, so their losses compare.
TOKENS=$((MB * 1024 * ACCUM * STEPS + 1))
INPUTS_OK=0
run_stage inputs 10 0 bash -c 'python3 "$1/results.py" tokens --out "$2/tok-gpt2.bin" --vocab 50257 --count "$3" --seed 1 &&
  python3 "$1/results.py" tokens --out "$2/tok-llama.bin" --vocab 128256 --count "$3" --seed 2' inputs "$CHECK" "$W" "$TOKENS" &&
  INPUTS_OK=1
EXPORT=(--device cuda --dtype bf16 --seq-len 1024 --micro-batch 1 --steps 1 --lr 0 --val-batches 1 --log-every 1
  --save-hf-dtype bf16)
GPT2_MODEL=(--model gpt2-xl) LLAMA_MODEL=(--model llama3.2-1b) SAME_INIT_GPT2=0 SAME_INIT_LLAMA=0
if run_stage export_gpt2 30 1 "$TZ" train "${EXPORT[@]}" --model gpt2-xl --data "$W/tok-gpt2.bin" --save-hf "$W/init-gpt2"; then
  GPT2_MODEL=(--init-from "$W/init-gpt2") SAME_INIT_GPT2=1
fi
if run_stage export_llama 20 1 "$TZ" train "${EXPORT[@]}" --model llama3.2-1b --data "$W/tok-llama.bin" --save-hf "$W/init-llama"; then
  LLAMA_MODEL=(--init-from "$W/init-llama") SAME_INIT_LLAMA=1
fi
GPT2_DATA=() LLAMA_DATA=()
((INPUTS_OK)) && GPT2_DATA=(--data "$W/tok-gpt2.bin") LLAMA_DATA=(--data "$W/tok-llama.bin")

# ---- gpt2-xl training steps: MFU of what `tierzero train --device cuda` runs ----------------------------
TRAIN_FLAGS=(--device cuda "${GPT2_MODEL[@]}" "${GPT2_DATA[@]}" --dtype bf16 --seq-len 1024 --micro-batch "$MB"
  --grad-accum "$ACCUM" --val-batches 1 --log-every 1)
# step_run KEY LIMIT MODEL EXTRA_FLAGS...: trains, then reduces its metrics to MFU (bench mfu, 5 s).
step_run() {
  local key=$1 max=$2 model=$3
  shift 3
  local flags=("${TRAIN_FLAGS[@]}")
  [[ "$model" == llama3.2-1b ]] && flags=("${LLAMA_FLAGS[@]}")
  if run_stage "$key" "$max" 1 "$TZ" train "${flags[@]}" --steps "$STEPS" --metrics "$W/logs/$key.jsonl" "$@"; then
    R note --work "$W" --key "$key" --wall "$LAST_SECONDS" --steps "$STEPS" -- "$@"
    run_stage "${key}_mfu" 5 1 "$TZ" bench mfu --metrics "$W/logs/$key.jsonl" --model "$model" --seq-len 1024 \
      --skip "$SKIP_STEPS" --json && keep_json "${key}_mfu" "$key"
  else
    skip "${key}_mfu" 1 "$( ((NGPU)) && echo "$key did not succeed" || echo "$NO_GPU")"
  fi
}
# profile_run KEY LIMIT MODEL: 3 steps, the last 2 timed op by op (tierzero train --profile-ops), the table
# kept as a figure.
profile_run() {
  local key=$1 max=$2 model=$3 flags=("${TRAIN_FLAGS[@]}")
  [[ "$model" == llama3.2-1b ]] && flags=("${LLAMA_FLAGS[@]}")
  run_stage "$key" "$max" 1 "$TZ" train "${flags[@]}" --steps 3 --profile-ops 2 --profile-hardware h200-141g \
    --metrics "$W/logs/$key.jsonl" && R keep-profile --work "$W" --key "$key" --metrics "$W/logs/$key.jsonl"
}
step_run step_no_offload 30 gpt2-xl
# With the optimizer on the CPU: at a fine-tuning gradient norm, under the max norm (no clipping: every
# speculative CPU Adam update stands, as in a fine-tuning run), and from the fresh init, clipped at every
# step (the speculation stops after 4 steps: zero/speculation_policy.h).
step_run step_optimizer_cpu_noclip 30 gpt2-xl --offload-optimizer cpu --grad-clip 0
profile_run profile_gpt2 25 gpt2-xl

# ---- llama3.2-1b training steps: RMSNorm, RoPE, grouped-query attention and SwiGLU in real steps ------
LLAMA_FLAGS=(--device cuda "${LLAMA_MODEL[@]}" "${LLAMA_DATA[@]}" --dtype bf16 --seq-len 1024 --micro-batch 4
  --val-batches 1 --log-every 1)
step_run step_llama 25 llama3.2-1b
profile_run profile_llama 15 llama3.2-1b

# ---- the peers, from the same weights and tokens, in the environment run.sh was given ---------------------
PEER=(python3 "$CHECK/torch_gpt2_peer.py" --model gpt2-xl --device cuda --dtype bf16 --micro-batch "$MB" --seq-len 1024
  --grad-accum "$ACCUM" --steps "$STEPS" --skip "$SKIP_STEPS" --json)
((SAME_INIT_GPT2)) && PEER+=(--init-from "$W/init-gpt2" --data "$W/tok-gpt2.bin")
run_stage torch_eager 25 1 --env torch "${PEER[@]}" --compile 0 && keep_json torch_eager
if ((SAME_INIT_LLAMA)); then
  run_stage hf_llama 40 1 --env torch python3 "$CHECK/hf_llama_peer.py" --folder "$W/init-llama" --data "$W/tok-llama.bin" \
    --micro-batch 4 --seq-len 1024 --steps "$STEPS" --skip "$SKIP_STEPS" --json && keep_json hf_llama
else
  skip hf_llama 1 "$( ((NGPU)) && echo "export_llama did not succeed: no shared initial weights" || echo "$NO_GPU")"
fi

# ---- the GPU benchmarks -------------------------------------------------------------------------------
for b in gpu-matmul:15 gpu-attention:15 gpu-copy:10; do
  name=${b%%:*} key=${name//-/_} flags=()
  # The attention as bf16 training runs it (cuDNN; a shape it cannot run falls back, one line on stderr).
  [[ "$name" == gpu-attention ]] && flags=(--attention-math cudnn)
  run_stage "$key" "${b##*:}" 1 "$TZ" bench "$name" "${flags[@]}" --json && keep_json "$key"
done
# The project's own bf16 tensor-core kernels on the same shapes and activations, for comparison.
run_stage gpu_attention_kernels 15 1 "$TZ" bench gpu-attention --attention-math bf16 --activation-dtype bf16 --json &&
  keep_json gpu_attention_kernels

# ---- offload from the fresh init, and ZeRO-3 with parameters on the CPU too ------------------------------
step_run step_optimizer_cpu 30 gpt2-xl --offload-optimizer cpu
# A device budget between what ZeRO-3 needs with parameters offloaded and what it needs with only the
# optimizer offloaded: the run must offload its parameters to fit (tierzero plan's figures).
PLAN=("$TZ" plan --model gpt2-xl --dtype bf16 --seq-len 1024 --micro-batch "$MB" --grad-accum "$ACCUM" --world 1
  --hardware h200-141g --zero-stage 3 --offload-optimizer cpu --json)
MIB=""
if run_stage plan_param_offload 5 1 bash -c '"${@:3}" --offload-param cpu >"$1.with" && "${@:3}" >"$1.without" &&
  python3 "$2/results.py" plan-budget --with "$1.with" --without "$1.without"' plan "$W/logs/plan" "$CHECK" "${PLAN[@]}"; then
  keep_json plan_param_offload && MIB=$(R field --work "$W" --key plan_param_offload --field device_mem_mib)
fi
if [[ -n "$MIB" ]]; then
  step_run step_param_offload 40 gpt2-xl --zero-stage 3 --offload-optimizer cpu --offload-param cpu --grad-clip 0 \
    --device-mem "${MIB}M"
else
  skip step_param_offload 1 "$( ((NGPU)) && echo "tierzero plan gave no device budget (see plan_param_offload)" || echo "$NO_GPU")"
fi

# ---- torch.compile last: it takes what time is left (its compilation reported apart) ---------------------
run_stage torch_compiled 90 1 --env torch "${PEER[@]}" --compile 1 && keep_json torch_compiled

assemble --final
R summary --results "$RESULTS/results.json"
rm -rf "$W"
exit 0
