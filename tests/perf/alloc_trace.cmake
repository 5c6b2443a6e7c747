# The allocation hook of issue 33 (perf/alloc_trace/, perf/scripts/alloc_sites.py). Not in the poisoned
# build: AddressSanitizer interposes malloc itself. Included from tests/CMakeLists.txt.
if(NOT TZ_POISON_DEVICE_MEMORY)
  tz_add_exit_test(perf_alloc_trace STATUS 0 MAX_SECONDS 60 TIMEOUT 120 LABELS "perf;mpi"
                   COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/alloc_trace_test.sh ${TZ_MPIRUN2} --
                           $<TARGET_FILE:tierzero> $<TARGET_FILE:tz_alloc_trace> ${PROJECT_SOURCE_DIR}
                   REGEX "alloc_trace_test.sh: one rank: the plan class holds [0-9.]+ MiB, the run's allocated peak [0-9.]+ MiB"
                         "alloc_trace_test.sh: one rank: at the peak the plan class held [0-9.]+ MiB"
                         "alloc_trace_test.sh: two ranks: each rank's report names Open MPI's temporaries")
endif()
