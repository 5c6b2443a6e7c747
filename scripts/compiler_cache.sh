# Sourced by scripts/build.sh and scripts/test.sh: the compiler cache for every CMake configure.
# With ccache installed (scripts/install-deps.sh installs it) and TZ_CCACHE not 0, TZ_CACHE_FLAGS holds
# the launcher flags for C, C++ and CUDA, and CCACHE_BASEDIR is the checkout, so paths inside it are
# hashed relative to it: a clone into a new folder (as CI makes for every run) hits the objects an
# earlier clone compiled. The cache is ccache's own folder (CCACHE_DIR, default ~/.cache/ccache).
TZ_CACHE_FLAGS=()
if [ "${TZ_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd -P)}
  TZ_CACHE_FLAGS=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
