#!/usr/bin/env bash
# Builds the GPU bundle here, for a lent GPU machine that has none of this project's Debian packages:
# the tierzero binary and the GPU tests' executables, with every shared library they load but the C/C++
# runtime (glibc, libstdc++, libgcc_s, libm) and NVIDIA's (libcuda, cuBLAS, cuBLASLt, NCCL: 0.8 GB, and
# cuDNN 9, 1 GB, which no executable links: all found on the machine by run.sh), the check (run.sh, its
# reports, the PyTorch peer) and a manifest.
#
#   bash scripts/gpu-bundle.sh [FILE]     writes FILE (default out/gpu-bundle.tar.xz), at most 48 MiB:
#                                         one folder, gpu-bundle/ (bin/, lib/, check/, manifest.json, run.sh)
#   bash scripts/gpu-bundle.sh --dir DIR  the same folder as DIR/gpu-bundle, unpacked (no archive)
#
# BUILD_DIR (default build/): a Release build with CUDA on for sm_90, configured here when it has no cache
# (scripts/build.sh, TZ_CUDA=ON) and brought up to date; one configured otherwise is refused, naming what
# differs. CI passes its own CUDA build folder, so nothing is built twice.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
[[ "$BUILD_DIR" == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
MAX_BYTES=$((48 * 1024 * 1024))

fail() { echo "gpu-bundle: $*" >&2; exit 1; }

DIR_MODE="" FILE=$ROOT/out/gpu-bundle.tar.xz
case "${1:-}" in
  --dir) [[ -n "${2:-}" ]] || fail "--dir needs a folder"; DIR_MODE=$2 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) FILE=$1 ;;
esac
for tool in patchelf ldd jq ctest cmake xz tar; do
  command -v "$tool" >/dev/null || fail "$tool is needed (bash scripts/install-deps.sh installs it)"
done

# ---- the build -------------------------------------------------------------------------------------
cache=$BUILD_DIR/CMakeCache.txt
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -n 1; }
if [[ ! -f "$cache" ]]; then
  TZ_CUDA=ON CMAKE_CUDA_ARCHITECTURES=90 BUILD_DIR=$BUILD_DIR bash "$ROOT/scripts/build.sh"
else
  [[ "$(cache_value CMAKE_BUILD_TYPE)" == Release ]] || fail "$BUILD_DIR is a $(cache_value CMAKE_BUILD_TYPE) build, not Release: give BUILD_DIR another folder"
  [[ "$(cache_value TZ_CUDA)" != OFF ]] || fail "$BUILD_DIR was configured with TZ_CUDA=OFF: give BUILD_DIR another folder"
  [[ "$(cache_value TZ_POISON_DEVICE_MEMORY)" != ON ]] || fail "$BUILD_DIR is the poisoned build: give BUILD_DIR another folder"
  [[ " $(cache_value CMAKE_CUDA_ARCHITECTURES | tr ';' ' ') " == *" 90 "* ]] ||
    fail "$BUILD_DIR builds CUDA for '$(cache_value CMAKE_CUDA_ARCHITECTURES)', not sm_90 (H100/H200)"
  cmake --build "$BUILD_DIR" -j "$(nproc)"
fi
[[ -x "$BUILD_DIR/tests/cuda_train_cuda_test" ]] ||
  fail "$BUILD_DIR has no CUDA tests: it was built without the CUDA backend (is /usr/local/cuda/bin/nvcc there?)"

# The executables: tierzero, the version probe, and every test executable labelled cuda.
exes=("$BUILD_DIR/launch/tierzero" "$BUILD_DIR/perf/tz-lib-version")
while read -r e; do exes+=("$e"); done < <(ctest --test-dir "$BUILD_DIR" -L cuda --show-only=json-v1 |
  jq -r '.tests[].command[]?' | grep "^$BUILD_DIR/tests/" | sort -u)
((${#exes[@]} > 4)) || fail "ctest in $BUILD_DIR lists no test labelled cuda"

# ---- the folder --------------------------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
G=$TMP/gpu-bundle
mkdir -p "$G/bin" "$G/lib" "$G/check"
for e in "${exes[@]}"; do cp "$e" "$G/bin/"; done

# Libraries: what ldd resolves for every executable, but the C/C++ runtime (the machine's own, which is
# newer: a binary built against glibc 2.36 runs on later ones) and NVIDIA's (run.sh finds those).
RUNTIME='^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil|libresolv)\.so'
NVIDIA='^(libcuda|libcublas|libcublasLt|libnccl|libcudnn[a-z_]*)\.so'
declare -A nvidia_paths=()
for e in "${exes[@]}"; do
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    [[ "$path" == "not" ]] && fail "$(basename "$e") needs $name, which this machine does not have"
    [[ "$name" =~ $RUNTIME ]] && continue
    if [[ "$name" =~ $NVIDIA ]]; then nvidia_paths[$name]=$path; continue; fi
    [[ -e "$G/lib/$name" ]] || cp -L "$path" "$G/lib/$name"
  done < <(ldd "$e")
done
# cuBLASLt is loaded at the first cuda device (core/cuda/cublaslt_api.h), not linked: take it, and cuBLAS
# beside it (run.sh looks for the pair, as the toolkit ships them), from the folder the build found it in.
cublas_dir=$(dirname "$(cache_value CUDA_cublasLt_LIBRARY)")
for so in libcublas.so.13 libcublasLt.so.13; do
  [[ -e "$cublas_dir/$so" ]] || fail "$so is not in $cublas_dir, where the build found cuBLASLt"
  nvidia_paths[$so]=$cublas_dir/$so
done
for so in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  [[ -n "${nvidia_paths[$so]:-}" ]] || fail "no executable links $so: the build is not what this script expects"
done
# cuDNN is loaded at the first attention asked to run on it (core/cuda/cudnn_api.h), never linked: an
# executable that links it would need it on every machine.
for so in "${!nvidia_paths[@]}"; do
  [[ "$so" == libcudnn* ]] && fail "an executable links $so: cuDNN must stay loaded at run time (core/cuda/cudnn_api.h)"
done
# The cuDNN headers the attention was compiled against (run.sh reports the library it finds).
cudnn_h=$(cache_value TZ_CUDNN_INCLUDE)/cudnn_version.h
[[ -f "$cudnn_h" ]] || fail "$cudnn_h is missing: the build found no cuDNN headers"
cudnn_headers=$(awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{ v = v (v == "" ? "" : ".") $3 } END { print v }' "$cudnn_h")
# Run paths: the executables find lib/, each library its neighbours. NVIDIA's come from LD_LIBRARY_PATH.
for f in "$G"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$G"/lib/*; do chmod u+w "$f" && patchelf --set-rpath '$ORIGIN' "$f"; done

# Every dependency of every executable resolves inside the bundle through the run paths alone, with
# nothing but NVIDIA's three libraries on the loader's path (their folders here hold more: cudart too).
nvidia_dirs=$TMP/nvidia
mkdir -p "$nvidia_dirs"
for so in "${!nvidia_paths[@]}"; do ln -s "${nvidia_paths[$so]}" "$nvidia_dirs/$so"; done
for f in "$G"/bin/* "$G"/lib/*; do
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    [[ "$name" =~ $RUNTIME || "$name" =~ $NVIDIA ]] && continue
    [[ "$(readlink -f "$path")" == "$(readlink -f "$G/lib")/"* ]] || fail "$(basename "$f") finds $name at $path, outside the bundle"
  done < <(LD_LIBRARY_PATH=$nvidia_dirs ldd "$f")
done

# The versions linked against: asked of the libraries ldd found here.
declare -A linked=()
while IFS=$'\t' read -r kind ver path; do
  [[ "$kind" == error ]] && fail "cannot read the version of $path: $ver"
  linked[$kind]=$ver
done < <(LD_LIBRARY_PATH=$nvidia_dirs "$G/bin/tz-lib-version" "${nvidia_paths[libcublas.so.13]}" \
  "${nvidia_paths[libcublasLt.so.13]}" "${nvidia_paths[libnccl.so.2]}")
cudart=$(LD_LIBRARY_PATH=$G/lib "$G/bin/tz-lib-version" "$G/lib/libcudart.so.13" | cut -f2)
cat >"$G/check/linked.env" <<EOF
# What the bundle's executables were linked against (scripts/gpu-bundle.sh); run.sh refuses older ones.
TZ_LINKED_CUBLAS_SONAME=libcublas.so.13
TZ_LINKED_CUBLAS_VERSION=${linked[cublas]}
TZ_LINKED_CUBLASLT_SONAME=libcublasLt.so.13
TZ_LINKED_CUBLASLT_VERSION=${linked[cublasLt]}
TZ_LINKED_NCCL_SONAME=libnccl.so.2
TZ_LINKED_NCCL_VERSION=${linked[nccl]}
EOF

# The check.
install -m 755 "$ROOT/perf/gpu_check/run.sh" "$G/run.sh"
install -m 644 "$ROOT/perf/gpu_check/results.py" "$ROOT/perf/gpu_check/gtests.sh" \
  "$ROOT/perf/scripts/torch_gpt2_peer.py" "$ROOT/perf/scripts/hf_llama_peer.py" "$ROOT/perf/scripts/peer_data.py" \
  "$G/check/"

# The manifest: what is inside and what it was built from.
commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
dirty=$( [[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]] && echo true || echo false)
(cd "$G" && find . -type f ! -name manifest.json | sed 's|^\./||' | sort | while read -r f; do
  printf '%s\t%s\n' "$f" "$(stat -c %s "$f")"
done) | jq -R 'split("\t") | {path: .[0], bytes: (.[1] | tonumber)}' | jq -s \
  --arg commit "$commit" --argjson dirty "$dirty" --arg built "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --arg host "$(uname -n)" --arg os "$(. /etc/os-release && echo "$PRETTY_NAME")" \
  --arg arch "$(cache_value CMAKE_CUDA_ARCHITECTURES)" --arg cublas "${linked[cublas]}" \
  --arg cublaslt "${linked[cublasLt]}" --arg nccl "${linked[nccl]}" --arg cudart "$cudart" \
  --arg cudnn_headers "$cudnn_headers" '{
    schema: "tierzero-gpu-bundle/1", commit: $commit, uncommitted_changes: $dirty, built: $built,
    built_on: {host: $host, os: $os}, build_type: "Release", cuda_architectures: $arch,
    linked: {cublas: {soname: "libcublas.so.13", version: $cublas}, cublasLt: {soname: "libcublasLt.so.13", version: $cublaslt},
             nccl: {soname: "libnccl.so.2", version: $nccl}, cudart: {soname: "libcudart.so.13", version: $cudart, bundled: true}},
    loaded_at_run_time: {cudnn: {soname: "libcudnn.so.9", headers: $cudnn_headers, required: false}},
    not_bundled: ["glibc (libc, libm, libpthread, libdl, librt)", "libstdc++", "libgcc_s",
                  "libcuda (the driver)", "cuBLAS", "cuBLASLt", "NCCL", "cuDNN"],
    entry_point: "run.sh [RESULTS_DIR]", files: .}' >"$G/manifest.json"

if [[ -n "$DIR_MODE" ]]; then
  mkdir -p "$DIR_MODE"
  rm -rf "${DIR_MODE:?}/gpu-bundle"
  mv "$G" "$DIR_MODE/gpu-bundle"
  echo "gpu-bundle: $DIR_MODE/gpu-bundle ($(du -sh "$DIR_MODE/gpu-bundle" | cut -f1) unpacked, ${#exes[@]} executables)"
  exit 0
fi
mkdir -p "$(dirname "$FILE")"
part=$FILE.part.$$ # beside FILE, so the rename is atomic; an older FILE stays until then
trap 'rm -rf "$TMP" "$part"' EXIT
tar -C "$TMP" -cf - gpu-bundle | xz -T0 -6 >"$part"
bytes=$(stat -c %s "$part")
((bytes <= MAX_BYTES)) || fail "the bundle is $((bytes / 1048576)) MiB, over the 48 MiB the device tool can carry"
mv "$part" "$FILE"
echo "gpu-bundle: $FILE: $bytes bytes ($((bytes / 1048576)) MiB; ${#exes[@]} executables, $(ls "$G/lib" | wc -l) libraries)"
