# tz_add_library / tz_add_test: the one way targets and tests are declared.
function(tz_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()

# A GoogleTest executable. NP > 0 runs it under mpirun with that many ranks (RUN_SERIAL).
function(tz_add_test name)
  cmake_parse_arguments(ARG "" "NP;TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(ARG_NP)
    add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP}
             --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1 $<TARGET_FILE:${name}>)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  else()
    add_test(NAME ${name} COMMAND ${name})
  endif()
  # One OpenMP thread per test process: ctest -j2 on 2 cores must not oversubscribe (spinning
  # OpenMP teams slow down 10x when they share cores).
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
                       ENVIRONMENT "OMP_NUM_THREADS=1;TZ_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()
