# What a run writes, tried as a careless or hostile user would (issue 17's outputs): device nodes made
# with mknod, FIFOs and inputs as targets of every writer; a full disk at the end of a run; a save-dir
# each node sees on its own disk; SIGHUP. Each asserts the exit status, a time bound and the message.
# Included from tests/CMakeLists.txt.
tz_add_exit_test(launch_outputs_never_replace_devices_fifos_or_inputs STATUS 0 MAX_SECONDS 60 TIMEOUT 120
                 SKIP_STATUS 77 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/output_targets.sh $<TARGET_FILE:tierzero>
                 REGEX "output_targets.sh: ckpt export --to a character device: refused"
                       "output_targets.sh: plan --compare --csv a FIFO: refused"
                       "output_targets.sh: [0-9]+ refusals; every device node, FIFO, input and checkpoint intact")
tz_add_exit_test(launch_outputs_on_a_full_disk STATUS 0 MAX_SECONDS 60 TIMEOUT 120 SKIP_STATUS 77 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/full_disk.sh $<TARGET_FILE:tierzero>
                 REGEX "full_disk.sh: a model that does not fit: exit 1 naming the file, errno 28 and the checkpoint"
                       "full_disk.sh: a checkpoint that does not fit: exit 1 naming the file and errno 28, no temporary"
                       "full_disk.sh: metrics that fit are kept")
tz_add_exit_test(launch_train_node_local_save_dir_np2 STATUS 1 MAX_SECONDS 30 TIMEOUT 90 SKIP_STATUS 77
                 LABELS "mpi;launch"
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/node_local_save_dir.sh ${TZ_MPIRUN_MPMD} -- $<TARGET_FILE:tierzero>
                 REGEX "is not the same folder on every rank: rank 1 on host [^ ]+ does not see rank 0's lock file"
                       "give a --save-dir on a file system every node shares"
                       "node_local_save_dir.sh: the job ended with 1 after ([0-9]{1,4}|1[0-9]{4}) ms"
                       "node_local_save_dir.sh: no checkpoint written")
# SIGHUP (a closed terminal) stops a run as SIGTERM does: the step finishes, the checkpoint is saved,
# exit 128 + 1 (resume with --resume latest).
tz_add_exit_test(launch_train_sighup_checkpoint_np2 STATUS 129 MAX_SECONDS 60 TIMEOUT 120 LABELS "mpi;launch"
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sigterm.sh --signal HUP --checkpoint ${TZ_MPIRUN2} --
                         $<TARGET_FILE:tierzero>
                 REGEX "sigterm.sh: SIGHUP to rank 1" "stopped by SIGHUP after step [0-9]+ \\(1 signal on rank 1\\): checkpoint .* saved .*: exit 129"
                       "resumed 3 steps equal the straight run bitwise")
# Checkpoint trees are owned (issue 37): every output flag of every command into every kind of file in a
# tree, refused within 5 s naming the tree, every tree byte for byte as it was; the run's own final
# checkpoint folder and outputs inside --save-dir or --save-hf refused before step 1.
tz_add_exit_test(launch_outputs_never_land_in_checkpoint_trees STATUS 0 MAX_SECONDS 90 TIMEOUT 180 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/checkpoint_trees.sh $<TARGET_FILE:tierzero>
                 REGEX "checkpoint_trees.sh: 168 outputs into checkpoint trees refused, each within 5 s naming the tree"
                       "checkpoint_trees.sh: every file of every tree as it was, nothing added"
                       "train --save-dir F --save-safetensors [^ ]*/F/step-00000004: refused before step 1")
# Writable targets tested on the target itself (issue 37): an empty read-only mount point or a bind-mounted
# file as the target is refused before any work, with nothing written beside it.
tz_add_exit_test(launch_outputs_onto_mount_points STATUS 0 MAX_SECONDS 30 TIMEOUT 90 SKIP_STATUS 77 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/output_mount_points.sh $<TARGET_FILE:tierzero>
                 REGEX "ckpt export --format hf --to an empty read-only mount point: refused in [0-9]+ ms, nothing written"
                       "train --save-hf an empty read-only mount point: refused"
                       "ckpt export --to a bind-mounted file: refused")
