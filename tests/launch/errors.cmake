# Errors for people (issue 32): the form of every kind of refusal, and --debug. Every other failing
# tz_add_exit_test is held to the same rule by tests/common/expect_exit.sh. Included from tests/CMakeLists.txt.
tz_add_exit_test(launch_errors_for_people STATUS 0 MAX_SECONDS 60 TIMEOUT 120 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/error_text.sh $<TARGET_FILE:tierzero> ${PROJECT_SOURCE_DIR}
                 REGEX "error_text.sh: [0-9]+ refusals, each 'tierzero: error: ...' and free of developer text"
                       "error_text.sh: --debug and TZ_DEBUG=1 add the line naming the check and its source position")
