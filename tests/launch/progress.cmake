# Progress lines for long work that is not a step (issue 32): each long operation draws one with bytes,
# rate and time left; a terminal only. Included from tests/CMakeLists.txt.
tz_add_exit_test(launch_progress_lines STATUS 0 SKIP_STATUS 77 MAX_SECONDS 90 TIMEOUT 180 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/progress_lines.sh $<TARGET_FILE:tierzero>
                 REGEX "progress_lines.sh: data prepare: [0-9]+ lines, the last at 100%"
                       "progress_lines.sh: save, verify, restore, export \\(file and folder\\), --init-from and --save-hf each drew a line to 100%"
                       "progress_lines.sh: a terminal draws and wipes the line; a pipe, Slurm and TZ_PROGRESS=0 draw nothing")
