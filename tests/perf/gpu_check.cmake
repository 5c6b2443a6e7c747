# The GPU bundle's check (perf/gpu_check/run.sh) in CI, without a GPU (tests/perf/gpu_check_test.sh): its
# reports from stage outputs made by the bundle's own executables on the cpu device (fake), the real stages
# with no GPU (no-gpu), its refusals of an incomplete bundle or an older library (refusals), and SIGTERM
# mid-stage (signal). They use the bundle scripts/test.sh makes in a CUDA build (BUILD/gpu-bundle.tar.xz)
# and skip, naming it, where there is none (the poisoned build). Included from tests/CMakeLists.txt.
foreach(mode fake no-gpu refusals signal)
  add_test(NAME perf_gpu_check_${mode}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_check_test.sh ${CMAKE_BINARY_DIR} ${mode})
  set_tests_properties(perf_gpu_check_${mode} PROPERTIES TIMEOUT 120 LABELS perf RUN_SERIAL TRUE SKIP_RETURN_CODE 77
                       ENVIRONMENT "OMP_NUM_THREADS=1;ASAN_OPTIONS=${TZ_ASAN_OPTIONS}")
endforeach()
