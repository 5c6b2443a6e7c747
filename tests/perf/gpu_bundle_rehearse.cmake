# The GPU bundle on a bare Debian root (scripts/gpu-bundle-rehearse.sh): the toolkit bind-mounted, NVIDIA's
# libraries under site-packages only, NCCL absent, libdnnl left out. It takes the bundle scripts/test.sh
# makes in a CUDA build and skips, with the reason, where there is none (the poisoned build) or where
# debootstrap, chroot or private mounts are refused. The root is built once (40 to 160 s, with the mirror)
# and kept under /var/cache/tierzero; a run on it takes 12 to 25 s. Included from tests/CMakeLists.txt.
tz_add_exit_test(perf_gpu_bundle_rehearse STATUS 0 SKIP_STATUS 77 MAX_SECONDS 600 TIMEOUT 900 LABELS perf
                 COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/gpu-bundle-rehearse.sh ${CMAKE_BINARY_DIR}/gpu-bundle.tar.xz
                 REGEX "PASS: variant a \\(/usr/local/cuda read-only"
                       "PASS: variant b \\(NVIDIA's libraries under site-packages"
                       "PASS: variant c \\(NCCL absent: one line naming it, exit 2\\)"
                       "PASS: variant d \\(libdnnl.so.2 left out of the bundle"
                       "refused: run.sh: NCCL \\(libnccl.so.2\\) not found"
                       "refused: run.sh: bin/[a-z_]+ needs libdnnl.so.2"
                       "trained 5 steps on the cpu device from bin/"
                 ABSENT "FAIL:")
set_tests_properties(perf_gpu_bundle_rehearse PROPERTIES RUN_SERIAL TRUE)
