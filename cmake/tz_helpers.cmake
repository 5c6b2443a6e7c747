# tz_add_library / tz_add_test: the one way targets and tests are declared.
function(tz_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()

# A GoogleTest executable for several ranks: one executable, one ctest entry per world size in NPS
# (<name>_np<N>), each under mpirun with a TIMEOUT and RUN_SERIAL, one OpenMP thread per rank.
# The sources must provide main() through tests/common/mpi_test_main.cc (linked here).
function(tz_add_mpi_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;NPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/common/mpi_test_main.cc)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest MPI::MPI_CXX)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  foreach(np ${ARG_NPS})
    add_test(NAME ${name}_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe --allow-run-as-root
                     --mca btl self,vader -x OMP_NUM_THREADS=1 -x TZ_SOURCE_DIR=${PROJECT_SOURCE_DIR}
                     $<TARGET_FILE:${name}>)
    set_tests_properties(${name}_np${np} PROPERTIES TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL TRUE
                         LABELS "mpi;${ARG_LABELS}" ENVIRONMENT "OMP_NUM_THREADS=1")
  endforeach()
endfunction()

# A GoogleTest executable run by ctest in one process (multi-rank tests use tz_add_mpi_test).
function(tz_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  # One OpenMP thread per test process: ctest -j2 on 2 cores must not oversubscribe (spinning
  # OpenMP teams slow down 10x when they share cores).
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
                       ENVIRONMENT "OMP_NUM_THREADS=1;TZ_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()
