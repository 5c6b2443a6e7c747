# See a run while it runs (issue 32): --metrics read while a 2-rank run writes it, after kill -9 and after
# the resume; hostile --metrics and --prometheus-textfile targets; a planted straggler named by rank and
# host; the Prometheus textfile checked by promtool and against the metrics record. Each asserts the exit
# status and a time bound. Included from tests/CMakeLists.txt.
tz_add_exit_test(launch_live_metrics_kill_resume_np2 STATUS 0 MAX_SECONDS 90 TIMEOUT 180 LABELS "mpi;launch"
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/live_metrics.sh ${TZ_MPIRUN2} -- $<TARGET_FILE:tierzero>
                 REGEX "live_metrics.sh: read during the run: start record, steps 1-[0-9]+ in order"
                       "live_metrics.sh: after kill -9: [0-9]+ whole records, steps 1-[0-9]+ in order, no end record, no straggler"
                       "live_metrics.sh: after the resume: resume record at step [0-9]+, run [0-9a-f]{16}, .* end record, no straggler"
                       "live_metrics.sh: a new run and another run's resume refused, the file unchanged")
tz_add_exit_test(launch_metrics_hostile_targets STATUS 0 SKIP_STATUS 77 MAX_SECONDS 60 TIMEOUT 120 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/metrics_hostile.sh $<TARGET_FILE:tierzero>
                 REGEX "metrics_hostile.sh: 11 refusals; the FIFO, the config and the other run's records intact")
tz_add_exit_test(launch_straggler_named_np2 STATUS 0 MAX_SECONDS 40 TIMEOUT 90 LABELS "mpi;launch"
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/straggler.sh ${TZ_MPIRUN2} -- $<TARGET_FILE:tierzero>
                 REGEX "straggler.sh: step +[0-9]+/10 .*straggler: rank 1 on [^ ]+ [0-9.]+x the median rank's work"
                       "straggler.sh: named from step ([1-9]|10): ")
tz_add_exit_test(launch_prometheus_textfile_np2 STATUS 0 SKIP_STATUS 77 MAX_SECONDS 40 TIMEOUT 90 LABELS "mpi;launch"
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/prometheus_textfile.sh ${TZ_MPIRUN2} -- $<TARGET_FILE:tierzero>
                 REGEX "prometheus_textfile.sh: promtool check metrics: passed"
                       "prometheus_textfile.sh: step 12's values equal the metrics record's")
# The new flags' bad values, refused before anything runs.
tz_add_exit_test(launch_train_straggler_delay_refuses_bad_values STATUS 1 MAX_SECONDS 10 TIMEOUT 30 LABELS launch
                 COMMAND $<TARGET_FILE:tierzero> train --steps 1 --straggler-test-delay-ms 3x
                 REGEX "--straggler-test-delay-ms '3x' is not RANK:MS")
tz_add_exit_test(launch_train_straggler_delay_refuses_a_rank_outside_the_job STATUS 1 MAX_SECONDS 10 TIMEOUT 30 LABELS launch
                 COMMAND $<TARGET_FILE:tierzero> train --steps 1 --straggler-test-delay-ms 3:10
                 REGEX "--straggler-test-delay-ms names rank 3, and the job has 1 rank")
tz_add_exit_test(launch_train_prometheus_every_refuses_zero STATUS 1 MAX_SECONDS 10 TIMEOUT 30 LABELS launch
                 COMMAND $<TARGET_FILE:tierzero> train --steps 1 --prometheus-every 0 --straggler-threshold 1
                 REGEX "--prometheus-every must be in \\[1, 2147483647\\] steps, got 0")
tz_add_exit_test(launch_train_straggler_threshold_refuses_below_one STATUS 1 MAX_SECONDS 10 TIMEOUT 30 LABELS launch
                 COMMAND $<TARGET_FILE:tierzero> train --steps 1 --straggler-threshold 0.5
                 REGEX "--straggler-threshold must be in \\[1, 1000000\\]")
