# tz_add_library / tz_add_test / tz_add_mpi_test: the one way targets and tests are declared.
function(tz_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()

# The GoogleTest tests the sources declare, as "Suite.Name" (TEST, TEST_F) or "Suite.Name/*" for a
# parameterised TEST_P (its instances are "Prefix/Suite.Name/param"). Every test becomes a ctest entry
# of its own, so a GTEST_SKIP shows as skipped in ctest and never hides inside a passing executable.
function(tz_gtest_names out)
  set(lines)
  foreach(src IN LISTS ARGN)
    file(STRINGS ${src} found REGEX "^(TYPED_)?TEST(_F|_P)?\\(")
    list(APPEND lines ${found})
  endforeach()
  set(names)
  foreach(line IN LISTS lines)
    # A typed test runs once per type, as Suite/<type name>.Name: one entry runs every type.
    if(line MATCHES "^TYPED_TEST\\(([A-Za-z0-9_]+), *([A-Za-z0-9_]+)\\)")
      list(APPEND names "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}/typed")
      continue()
    endif()
    if(line MATCHES "^TEST(_F|_P)?\\(([A-Za-z0-9_]+), *([A-Za-z0-9_]+)\\)")
      if(CMAKE_MATCH_1 STREQUAL "_P")
        list(APPEND names "${CMAKE_MATCH_2}.${CMAKE_MATCH_3}/*")
      else()
        list(APPEND names "${CMAKE_MATCH_2}.${CMAKE_MATCH_3}")
      endif()
    endif()
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "${ARGN} declare no TEST, TEST_F or TEST_P on a line of its own")
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

# One ctest entry per test name: <prefix>.<Suite>.<Name>, running `COMMAND... --gtest_filter=...`.
# Skipped tests report as skipped; a filter that selects no test fails (a renamed test must not pass
# silently).
function(tz_add_gtest_entries prefix)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "COMMAND;NAMES;LABELS;ENVIRONMENT" ${ARGN})
  foreach(n IN LISTS ARG_NAMES)
    if(n MATCHES "/\\*$")
      string(REGEX REPLACE "/\\*$" "" base "${n}")
      set(filter "*/${base}/*")
    elseif(n MATCHES "^([A-Za-z0-9_]+)\\.([A-Za-z0-9_]+)/typed$")
      set(base "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
      set(filter "${CMAKE_MATCH_1}/*.${CMAKE_MATCH_2}")
    else()
      set(base "${n}")
      set(filter "${n}")
    endif()
    add_test(NAME ${prefix}.${base} COMMAND ${ARG_COMMAND} --gtest_color=no --gtest_filter=${filter})
    set_tests_properties(${prefix}.${base} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
                         SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\] [A-Za-z]"
                         FAIL_REGULAR_EXPRESSION "\\[==========\\] 0 tests from"
                         ENVIRONMENT "${ARG_ENVIRONMENT}")
    if(ARG_RUN_SERIAL)
      set_tests_properties(${prefix}.${base} PROPERTIES RUN_SERIAL TRUE)
    endif()
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
  tz_gtest_names(names ${ARG_SOURCES})
  # One OpenMP thread per test process: ctest -j2 on 2 cores must not oversubscribe (spinning
  # OpenMP teams slow down 10x when they share cores).
  tz_add_gtest_entries(${name} COMMAND $<TARGET_FILE:${name}> NAMES ${names} TIMEOUT ${ARG_TIMEOUT}
                       LABELS ${ARG_LABELS}
                       ENVIRONMENT "OMP_NUM_THREADS=1;TZ_SOURCE_DIR=${PROJECT_SOURCE_DIR};ASAN_OPTIONS=${TZ_ASAN_OPTIONS}")
endfunction()

# mpirun as the tests use it: as root, oversubscribed on 2 cores, shared memory between ranks.
function(tz_mpirun out np threads)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe --allow-run-as-root --bind-to none
      --mca btl self,vader -x OMP_NUM_THREADS=${threads} -x OMP_WAIT_POLICY=passive
      -x TZ_SOURCE_DIR=${PROJECT_SOURCE_DIR} -x ASAN_OPTIONS=${TZ_ASAN_OPTIONS} PARENT_SCOPE)
endfunction()

# A GoogleTest executable for several ranks: one ctest entry per test and world size in NPS
# (<name>_np<N>.<Suite>.<Name>), each under mpirun with a TIMEOUT and RUN_SERIAL, one OpenMP thread per
# rank. THREADS2_NPS / THREADS2_TESTS: the same tests again with 2 OpenMP threads per rank
# (<name>_np<N>_t2...), as users run them. The sources must provide main() through
# tests/common/mpi_test_main.cc (linked here).
function(tz_add_mpi_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;NPS;LABELS;THREADS2_NPS;THREADS2_TESTS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/common/mpi_test_main.cc)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest MPI::MPI_CXX)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  tz_gtest_names(names ${ARG_SOURCES})
  foreach(np IN LISTS ARG_NPS)
    tz_mpirun(run ${np} 1)
    tz_add_gtest_entries(${name}_np${np} COMMAND ${run} $<TARGET_FILE:${name}> NAMES ${names} TIMEOUT ${ARG_TIMEOUT}
                         LABELS mpi ${ARG_LABELS} ENVIRONMENT "OMP_NUM_THREADS=1" RUN_SERIAL)
  endforeach()
  foreach(np IN LISTS ARG_THREADS2_NPS)
    tz_mpirun(run ${np} 2)
    tz_add_gtest_entries(${name}_np${np}_t2 COMMAND ${run} $<TARGET_FILE:${name}> NAMES ${ARG_THREADS2_TESTS}
                         TIMEOUT ${ARG_TIMEOUT} LABELS mpi ${ARG_LABELS} ENVIRONMENT "OMP_NUM_THREADS=2" RUN_SERIAL)
  endforeach()
endfunction()

# A command that ends a job (a failure, a timeout), run through tests/common/expect_exit.sh: ctest passes
# it only when the exit status, the elapsed-time bound and the output patterns all hold (and, for a
# failure, its output holds no developer text unless ALLOW_DEBUG_TEXT: expect_exit.sh). SKIP_STATUS K:
# a command that exits K cannot run on this machine (it prints why), and ctest shows the test skipped.
function(tz_add_exit_test name)
  cmake_parse_arguments(ARG "ALLOW_DEBUG_TEXT" "STATUS;MAX_SECONDS;TIMEOUT;SKIP_STATUS" "COMMAND;REGEX;ABSENT;LABELS" ${ARGN})
  set(checks)
  if(ARG_ALLOW_DEBUG_TEXT)
    list(APPEND checks --allow-debug-text)
  endif()
  if(ARG_SKIP_STATUS)
    list(APPEND checks --skip-status ${ARG_SKIP_STATUS})
  endif()
  foreach(r IN LISTS ARG_REGEX)
    list(APPEND checks --regex "${r}")
  endforeach()
  foreach(r IN LISTS ARG_ABSENT)
    list(APPEND checks --absent-regex "${r}")
  endforeach()
  add_test(NAME ${name} COMMAND bash ${PROJECT_SOURCE_DIR}/tests/common/expect_exit.sh --status ${ARG_STATUS}
                                --max-seconds ${ARG_MAX_SECONDS} ${checks} -- ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL TRUE LABELS "${ARG_LABELS}"
                       ENVIRONMENT "OMP_NUM_THREADS=1;ASAN_OPTIONS=${TZ_ASAN_OPTIONS}")
  if(ARG_SKIP_STATUS)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${ARG_SKIP_STATUS})
  endif()
endfunction()
