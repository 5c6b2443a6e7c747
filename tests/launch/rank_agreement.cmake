# Two ranks started with different flags for a setting they must agree on (tests/launch/per_rank_flags.sh,
# MPMD under mpirun): each job ends with 1 within seconds, on every rank, naming the setting and both
# values, the job itself within 20 s (preparing the files takes a few more), with no MPI crash, its inputs
# intact and nothing written. Included from tests/CMakeLists.txt.
set(TZ_MPIRUN_MPMD ${MPIEXEC_EXECUTABLE} --oversubscribe --allow-run-as-root --bind-to none --mca btl self,vader
    -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive -x ASAN_OPTIONS=${TZ_ASAN_OPTIONS})
set(TZ_PER_RANK bash ${CMAKE_CURRENT_LIST_DIR}/per_rank_flags.sh)
set(TZ_NO_MPI_CRASH "MPI_ERR|Signal: |Segmentation|has not completed|step +1/")
# case|regex naming the setting (rank 0's value, then rank 1's)
foreach(case IN ITEMS
        "resume_one_rank|different settings: --resume is latest on rank 0 but not given on rank 1"
        "init_from_contents|different settings: the contents of --init-from is [0-9]+ bytes read, xxh3 [0-9a-f]{16} on rank 0 but [0-9]+ bytes read, xxh3 [0-9a-f]{16} on rank 1"
        "data_middle_block|different settings: --data is 6001024 bytes, sampled xxh3 [0-9a-f]{16} on rank 0 but 6001024 bytes, sampled xxh3 [0-9a-f]{16} on rank 1"
        "save_every|different settings: --save-every, --keep-last is 2, 0 on rank 0 but 3, 0 on rank 1"
        "save_dir_one_rank|different settings: --save-dir is .*/ckpt on rank 0 but not given on rank 1"
        "save_safetensors_one_rank|different settings: which outputs are given .* is --save-safetensors given, --metrics not given, --save-hf not given on rank 0 but --save-safetensors not given, --metrics not given, --save-hf not given on rank 1"
        "init_from_bad_one_rank|cannot open safetensors file '.*/missing.safetensors'")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 cname)
  list(GET parts 1 cregex)
  tz_add_exit_test(launch_train_ranks_differ_${cname}_np2 STATUS 1 MAX_SECONDS 40 TIMEOUT 90 LABELS "mpi;launch"
                   COMMAND ${TZ_PER_RANK} ${cname} ${TZ_MPIRUN_MPMD} -- $<TARGET_FILE:tierzero>
                   REGEX "${cregex}" "per_rank_flags.sh: ${cname}: the job ended with 1 after ([0-9]{1,4}|1[0-9]{4}) ms"
                         "inputs intact, nothing written"
                   ABSENT "${TZ_NO_MPI_CRASH}")
endforeach()
