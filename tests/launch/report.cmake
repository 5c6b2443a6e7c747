# `tierzero report` (issue 32). Included from tests/CMakeLists.txt.
tz_add_exit_test(launch_report STATUS 0 MAX_SECONDS 150 TIMEOUT 300 LABELS "launch;mpi"
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/report.sh ${TZ_MPIRUN2} -- $<TARGET_FILE:tierzero> ${PROJECT_SOURCE_DIR}
                 REGEX "report.sh: the quickstart job's metrics \\(2 ranks\\): 8 plots, each 900x480 and not blank, and the page with its settings"
                       "report.sh: a resumed file cut mid-line: 40 steps, the partial line left out"
                       "report.sh: a file being written: [1-9][0-9]* reports made while it grew"
                       "report.sh: 9 careless inputs refused, each naming the file, exit 1 within 5 s")
