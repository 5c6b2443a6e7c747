# perf/scripts/torch_gpt2_peer.py (the PyTorch peer of the GPU training step) at tiny size on the CPU with
# Debian's torch (tests/perf/torch_peer_test.sh); a skip where /usr/bin/python3 has no torch. Included from
# tests/CMakeLists.txt.
add_test(NAME perf_torch_peer_tiny_cpu
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/torch_peer_test.sh $<TARGET_FILE:tierzero>)
set_tests_properties(perf_torch_peer_tiny_cpu PROPERTIES TIMEOUT 120 LABELS perf RUN_SERIAL TRUE SKIP_RETURN_CODE 77
                     ENVIRONMENT "OMP_NUM_THREADS=1;ASAN_OPTIONS=${TZ_ASAN_OPTIONS}")
