#!/usr/bin/env bash
# Rehearses the GPU bundle on a bare root, as a lent GPU machine will have it: a minimal root of this
# distribution (debootstrap --variant=minbase --include=python3, from the mirror apt is configured with;
# built once and kept under /var/cache/tierzero) with none of the project's packages, the bundle unpacked
# in it, run.sh run through chroot with an empty environment. Variants:
#   a  /usr/local/cuda bind-mounted read-only: the toolkit's cuBLAS, cuBLASLt and NCCL are found there
#   b  no /usr/local/cuda; those files under site-packages nvidia/cu13/lib and nvidia/nccl/lib, as PyTorch's
#      pip packages put them
#   c  as b without NCCL: run.sh refuses in one line naming it, exit 2
#   d  as a with lib/libdnnl.so.2 taken out of the bundle: refused in one line naming that library, exit 2
# In a and b every library resolves but libcuda (there is no driver), a 5-step cpu-device training run
# trains from bin/, and the check ends with every GPU stage skipped "no GPU" and exit 0. Each variant runs
# in a private mount namespace over a copy-on-write view of the cached root, which it never changes; no
# mount or folder is left behind.
#
#   bash scripts/gpu-bundle-rehearse.sh [--variant a|b|c|d|all] [BUNDLE]   default out/gpu-bundle.tar.xz, all
#   TZ_REHEARSE_VARIANTS="a b"                                              a subset (--variant wins)
# Exit: 0 every variant passed (a PASS line each), 1 one failed (FAIL: ...), 77 it cannot run here (SKIP:
# why: not root, no debootstrap or chroot, mounts refused, no mirror for the first root).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SKIP=77

skip() { echo "SKIP: $*"; exit "$SKIP"; }
fail() { echo "FAIL: $*"; exit 1; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

# ---- inside a variant's mount namespace (the script re-runs itself there) -----------------------------
if [[ "${1:-}" == --inside ]]; then
  variant=$2 base=$3 bundle=$4 work=$5
  V=$work/view
  mkdir -p "$work/upper" "$work/overlay-work" "$V" || exit 1
  if ! mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/overlay-work" "$V" 2>/dev/null; then
    cp -a "$base/." "$V/" || { echo "cannot copy the root into $V"; exit 1; }
  fi
  mount -t proc proc "$V/proc" && mount --rbind /dev "$V/dev" && mount --rbind /sys "$V/sys" &&
    mount -t tmpfs -o size=2g tmpfs "$V/tmp" || { echo "cannot mount /proc, /dev, /sys or /tmp in the view"; exit 1; }
  mkdir -p "$V/opt" && tar -C "$V/opt" -xJf "$bundle" || { echo "cannot unpack $bundle"; exit 1; }
  [[ "$variant" == d ]] && rm -f "$V/opt/gpu-bundle/lib/libdnnl.so.2"
  cuda=$(readlink -f /usr/local/cuda)
  case "$variant" in
    a | d)
      # The toolkit at its own path, read-only, and the /usr/local/cuda link to it.
      mkdir -p "$V$cuda" && mount --bind "$cuda" "$V$cuda" && mount -o remount,bind,ro "$V$cuda" ||
        { echo "cannot bind $cuda into the view"; exit 1; }
      [[ "$cuda" != /usr/local/cuda ]] && ln -sfn "$cuda" "$V/usr/local/cuda"
      ;;
    b | c)
      sp=$(chroot "$V" /usr/bin/env -i /usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])') ||
        { echo "python3 in the root cannot name its site-packages"; exit 1; }
      files=("cu13 libcublas.so.13" "cu13 libcublasLt.so.13" "cu13 libcudart.so.13")
      [[ "$variant" == b ]] && files+=("nccl libnccl.so.2")
      for pair in "${files[@]}"; do
        read -r pkg so <<<"$pair"
        d=$V$sp/nvidia/$pkg/lib
        mkdir -p "$d" && : >"$d/$so" && mount --bind "$(readlink -f "$cuda/lib64/$so")" "$d/$so" ||
          { echo "cannot place $so under $sp/nvidia/$pkg/lib"; exit 1; }
      done
      ;;
  esac
  # Commands in the root: no environment but a PATH, as a fresh login on the lent machine.
  in_root() { chroot "$V" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp "$@"; }
  G=/opt/gpu-bundle
  case "$variant" in
    c | d)
      in_root "$G/run.sh" /tmp/results >"$work/out" 2>"$work/err"
      rc=$?
      [[ "$variant" == c ]] && want='NCCL' || want='libdnnl\.so\.2'
      ((rc == 2)) || { cat "$work/out" "$work/err"; echo "run.sh exited $rc, not 2"; exit 1; }
      (($(wc -l <"$work/err") == 1)) || { cat "$work/err"; echo "run.sh printed $(wc -l <"$work/err") lines on stderr, not one"; exit 1; }
      grep -q "$want" "$work/err" || { cat "$work/err"; echo "run.sh's refusal does not name $want"; exit 1; }
      [[ -e "$V/tmp/results" ]] && { echo "a refused check made its results folder"; exit 1; }
      echo "refused: $(cat "$work/err")"
      exit 0
      ;;
  esac
  # a, b: the libraries, then training from bin/, then the whole check.
  in_root "$G/run.sh" --libs >"$work/libs.out" 2>"$work/libs.err" || { cat "$work/libs.err"; echo "run.sh --libs exited $?"; exit 1; }
  cat "$work/libs.err"
  [[ "$variant" == a ]] && src=toolkit || src=site-packages
  for lib in cublas cublasLt nccl; do
    grep -qE "^run.sh: $lib [0-9.]+: .* \($src\)$" "$work/libs.err" || { echo "$lib was not found in the $src"; exit 1; }
  done
  in_root /bin/sh -c 'ls /usr/lib/x86_64-linux-gnu/libcuda.so* /lib/x86_64-linux-gnu/libcuda.so* 2>/dev/null' | grep -q . &&
    { echo "the root has a libcuda: this rehearsal needs a machine without a driver"; exit 1; }
  # Every executable's every library, through the loader, with the path run.sh sets: only libcuda may be
  # missing, and no executable links it (cudart opens it when a GPU is asked for).
  in_root "$G/run.sh" --exec /bin/sh -c 'for f in '"$G"'/bin/*; do echo "== $f"; LD_TRACE_LOADED_OBJECTS=1 /lib64/ld-linux-x86-64.so.2 "$f"; done' \
    >"$work/ldso" 2>"$work/ldso.err" || { cat "$work/ldso" "$work/ldso.err"; echo "the loader could not list the executables' libraries"; exit 1; }
  if grep -q "not found" "$work/ldso"; then grep -E "^==|not found" "$work/ldso"; echo "a library does not resolve"; exit 1; fi
  grep -q "libcuda\.so" "$work/ldso" && { echo "an executable links libcuda directly"; exit 1; }
  # The C/C++ runtime comes from the root, NVIDIA's three from where run.sh found them; the rest from lib/.
  outside=$(awk -v g="$G/lib/" '$2 == "=>" && $1 !~ /^(libc|libm|libmvec|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil|libresolv)\.so/ &&
    $1 !~ /^(libcublas|libcublasLt|libnccl)\.so/ && index($3, g) != 1 { print $1, $3 }' "$work/ldso" | sort -u)
  [[ -z "$outside" ]] || { echo "$outside"; echo "libraries resolved outside the bundle, the runtime and NVIDIA's"; exit 1; }
  echo "every library of $(grep -c '^==' "$work/ldso") executables resolves (libcuda is not needed to load)"
  in_root "$G/run.sh" --exec bin/tierzero train --device cpu --model tiny --steps 5 --seq-len 32 --micro-batch 2 \
    --val-batches 1 --log-every 1 --metrics /tmp/m.jsonl >"$work/train" 2>&1 || { cat "$work/train"; echo "training from bin/ failed"; exit 1; }
  jq -se '[.[] | select(.loss != null) | .loss | isinfinite or isnan | not] | length == 5 and all' "$V/tmp/m.jsonl" >/dev/null ||
    { cat "$V/tmp/m.jsonl"; echo "the training run did not give 5 finite losses"; exit 1; }
  echo "trained 5 steps on the cpu device from bin/: losses $(jq -sc '[.[] | select(.loss != null) | .loss * 1000 | round / 1000]' "$V/tmp/m.jsonl")"
  t0=$(date +%s)
  in_root timeout 300 "$G/run.sh" /tmp/results >"$work/check" 2>&1 || { cat "$work/check"; echo "run.sh exited $?"; exit 1; }
  r=$V/tmp/results
  [[ "$(ls "$r" | sort | paste -sd' ' -)" == "logs.tar.gz results.json smoke.json" ]] || { ls "$r"; echo "the results folder is not the three files"; exit 1; }
  jq -e '[.stages[] | select(.needs_gpu) | .status == "skipped" and (.reason | startswith("no GPU"))] | (length > 0 and all)' "$r/results.json" >/dev/null ||
    { jq -c '.stages' "$r/results.json"; echo "a GPU stage was not skipped for want of a GPU"; exit 1; }
  jq -e '[.stages[] | .status] | all(. == "ok" or . == "skipped")' "$r/results.json" >/dev/null ||
    { jq -c '.stages' "$r/results.json"; echo "a stage failed or timed out"; exit 1; }
  jq -e --arg src "$src" '.libraries.cublas.source == $src and .libraries.nccl.source == $src and .libraries.cuda.path == null and .gpus == 0' \
    "$r/results.json" >/dev/null || { jq -c '.libraries' "$r/results.json"; echo "results.json's libraries"; exit 1; }
  jq -e '.verdict == "no GPU"' "$r/smoke.json" >/dev/null || { cat "$r/smoke.json"; echo "smoke.json's verdict"; exit 1; }
  echo "the check: exit 0 in $(($(date +%s) - t0)) s, $(jq '[.stages[] | select(.needs_gpu)] | length' "$r/results.json") GPU stages skipped \"no GPU\", the rest ok"
  exit 0
fi

# ---- outside: the cached root, then each variant ------------------------------------------------------
VARIANTS=${TZ_REHEARSE_VARIANTS:-a b c d}
while [[ "${1:-}" == --variant ]]; do
  case "${2:-}" in
    a | b | c | d) VARIANTS=$2 ;;
    all) VARIANTS="a b c d" ;;
    *) fail "--variant takes a, b, c, d or all, not '${2:-}'" ;;
  esac
  shift 2
done
BUNDLE=${1:-$ROOT/out/gpu-bundle.tar.xz}
[[ -f "$BUNDLE" ]] || skip "no bundle at $BUNDLE: make it with scripts/gpu-bundle.sh"
BUNDLE=$(readlink -f "$BUNDLE")
[[ "$(id -u)" == 0 ]] || skip "needs root (debootstrap, chroot and mounts); running as $(id -un)"
for c in debootstrap chroot unshare mount flock jq xz tar; do
  command -v "$c" >/dev/null || skip "missing $c (on Debian 12, bash scripts/install-deps.sh installs what this needs)"
done
[[ -d "$(readlink -f /usr/local/cuda)/lib64" ]] || skip "no CUDA toolkit at /usr/local/cuda to take NVIDIA's libraries from"
unshare --mount --propagation private --pid --kill-child true 2>/dev/null ||
  skip "private mount and PID namespaces are refused here (unshare --mount --pid)"

. /etc/os-release
SUITE=${VERSION_CODENAME:-bookworm}
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[[ -n "$MIRROR" ]] || MIRROR=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
CACHE=/var/cache/tierzero
BASE=$CACHE/rehearse-root-$SUITE
mkdir -p "$CACHE" || skip "cannot make $CACHE"
# One builder at a time; a run that finds the root ready reuses it.
exec 9>"$CACHE/rehearse.lock"
flock -w 900 9 || fail "another rehearsal held $CACHE/rehearse.lock for 15 minutes"
# A run holds the lock to its end, so a run folder found now is one left by a run killed outright
# (SIGKILL: ctest's timeout kills the whole tree); its namespace, mounts included, died with it.
rm -rf "$CACHE"/rehearse.??????
t0=$(date +%s)
if [[ -f "$BASE/.tierzero-complete" ]]; then
  log "the bare root: reusing $BASE (debootstrap --variant=minbase --include=python3 $SUITE, $(cat "$BASE/.tierzero-complete"))"
else
  rm -rf "$BASE.part"
  log "the bare root: debootstrap --variant=minbase --include=python3 $SUITE $BASE $MIRROR"
  if ! debootstrap --variant=minbase --include=python3 "$SUITE" "$BASE.part" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
    tail -n 5 "$CACHE/debootstrap.log"
    rm -rf "$BASE.part"
    skip "debootstrap of $SUITE from $MIRROR failed (no network to the mirror?): $CACHE/debootstrap.log"
  fi
  date -u +%Y-%m-%dT%H:%M:%SZ >"$BASE.part/.tierzero-complete"
  rm -rf "$BASE" && mv "$BASE.part" "$BASE"
  log "the bare root: built in $(($(date +%s) - t0)) s"
fi
[[ ! -e "$BASE/usr/local/cuda" && ! -e "$BASE/usr/lib/x86_64-linux-gnu/libdnnl.so.2" ]] ||
  fail "$BASE is not bare (a toolkit or oneDNN in it): remove it and run again"

RUN=$(mktemp -d "$CACHE/rehearse.XXXXXX") || fail "cannot make a folder under $CACHE"
trap 'rm -rf "$RUN"' EXIT
# Stopped (ctest's TIMEOUT, ^C): the variant's namespace goes with its unshare (--kill-child kills its
# PID 1, and with it every process of the namespace and its mounts), then the folder.
child=""
stop() {
  [[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null && wait "$child"
  rm -rf "$RUN"
  echo "FAIL: stopped by SIG$1 during variant ${v:-?}"
  exit $((128 + $(kill -l "$1")))
}
trap 'stop INT' INT
trap 'stop TERM' TERM
mounts_before=$(findmnt -rn -o TARGET | grep -c "^$CACHE" || true)
status=0
for v in $VARIANTS; do
  t1=$(date +%s)
  mkdir -p "$RUN/$v"
  # In the background so that a signal reaches stop() at once rather than after the variant.
  unshare --mount --propagation private --pid --kill-child \
    bash "${BASH_SOURCE[0]}" --inside "$v" "$BASE" "$BUNDLE" "$RUN/$v" >"$RUN/$v.log" 2>&1 &
  child=$!
  wait "$child"
  rc=$? child=""
  sed 's/^/    /' "$RUN/$v.log"
  case $v in
    a) what="/usr/local/cuda read-only: every library resolves but libcuda, 5 cpu steps from bin/, every GPU stage skipped, exit 0" ;;
    b) what="NVIDIA's libraries under site-packages nvidia/*/lib only: the same" ;;
    c) what="NCCL absent: one line naming it, exit 2" ;;
    d) what="libdnnl.so.2 left out of the bundle: one line naming it, exit 2" ;;
    *) what="unknown variant" rc=1 ;;
  esac
  if ((rc == 0)); then
    echo "PASS: variant $v ($what) in $(($(date +%s) - t1)) s"
  else
    echo "FAIL: variant $v ($what): $(tail -n 1 "$RUN/$v.log")"
    status=1
  fi
done
rm -rf "$RUN"
left=$(findmnt -rn -o TARGET | grep -c "^$CACHE" || true)
((left == mounts_before)) || { findmnt -rn -o TARGET | grep "^$CACHE"; fail "mounts were left behind under $CACHE"; }
exit $status
