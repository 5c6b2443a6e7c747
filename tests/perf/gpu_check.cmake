# perf/gpu-check.sh's logic in CI, without a GPU (tests/perf/gpu_check_test.sh): its results file from
# stage outputs made by the real commands on the cpu device (fake mode), and the real stages with no GPU
# visible (every GPU stage skipped with its reason). Included from tests/CMakeLists.txt.
foreach(mode fake no-gpu)
  add_test(NAME perf_gpu_check_${mode}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_check_test.sh ${CMAKE_BINARY_DIR} ${mode})
  set_tests_properties(perf_gpu_check_${mode} PROPERTIES TIMEOUT 120 LABELS perf RUN_SERIAL TRUE
                       ENVIRONMENT "OMP_NUM_THREADS=1;ASAN_OPTIONS=${TZ_ASAN_OPTIONS}")
endforeach()
