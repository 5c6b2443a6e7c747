# fp16 runs whose every step overflowed end with 1 before writing a model or a checkpoint
# (tests/launch/fp16_all_skipped.sh), with a static loss scale and a dynamic one whose floor overflows
# too. Included from tests/CMakeLists.txt.
foreach(mode static dynamic)
  tz_add_exit_test(launch_train_fp16_every_step_skipped_${mode} STATUS 1 MAX_SECONDS 30 TIMEOUT 90 LABELS launch
                   COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fp16_all_skipped.sh ${mode} $<TARGET_FILE:tierzero>
                   REGEX "step 1 skipped on every rank" "step 3 skipped on every rank"
                         "every step of this run \\(1 to 3\\) was skipped: the fp16 gradients overflowed at every loss scale tried"
                         "the final checkpoint and .*/model.safetensors were not written"
                         "fp16_all_skipped.sh: ${mode}: exit 1, the earlier model kept, no checkpoint written"
                   ABSENT "saved ")
endforeach()
