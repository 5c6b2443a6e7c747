# Numbers and structures read are bounded (issue 17): every numeric flag with hostile values, absurd plan
# shapes, a deeply nested config, DeepSpeed's zero sizes in a real run. Included from tests/CMakeLists.txt.
set(TZ_BIN $<TARGET_FILE:tierzero>)

# Every numeric flag of `train --help` x {-1, 0, 1e10, 1e300, nan, inf, 2^64}, each run within 2 s (the
# script's bound). The whole, about 300 runs, within 300 s: a binary with the CUDA backend linked takes
# about 0.45 s to start on a 2-core VM whose page faults are costly (cuBLASLt's initialisers touch about
# 200 MB; measured 2026-12-03, 134 s for the whole), against 0.01 s without CUDA.
tz_add_exit_test(launch_numeric_flags_bounded STATUS 0 MAX_SECONDS 300 TIMEOUT 420 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/numeric_flags.sh ${TZ_BIN}
                 REGEX "numeric_flags: [0-9]+ numeric flags, [0-9]+ runs, 0 failure")

# `plan` with absurd shapes refuses at once, naming the flag, instead of allocating or wrapping.
# Each case: name|plan arguments|the message expected.
foreach(c
    "n_layer_1e9|--n-layer 1000000000|--n-layer must be in \\[0, 4096\\]"
    "n_embd_2p40|--n-embd 1099511627776|option '--n-embd' is invalid"
    "n_embd_2p20|--n-embd 1048576 --n-head 1|--n-embd must be in \\[0, 65536\\]"
    "vocab_huge|--vocab 2000000000|--vocab must be in \\[0, 16777216\\]"
    "seq_len_huge|--seq-len 2000000000|--seq-len must be in \\[1, 1048576\\]"
    "micro_batch_huge|--micro-batch 2000000000|--micro-batch must be in \\[1, 1048576\\]"
    "world_2p31|--world 2147483648|option '--world' is invalid"
    "world_2p30|--world 1073741824|--world must be in \\[1, 1048576\\]"
    "activations_product|--micro-batch 1048576 --seq-len 1048576|the activations of --micro-batch 1048576 x --seq-len 1048576"
    "run_tokens|--compare --steps 2147483647 --micro-batch 1048576 --grad-accum 1048576 --world 1048576|beyond 2\\^63 tokens")
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 cname)
  list(GET parts 1 args)
  list(GET parts 2 regex)
  separate_arguments(args UNIX_COMMAND "${args}")
  tz_add_exit_test(launch_plan_refuses_${cname} STATUS 1 MAX_SECONDS 1 TIMEOUT 30 LABELS launch
                   COMMAND ${TZ_BIN} plan ${args} REGEX "${regex}")
endforeach()

# The largest model the bounds allow is planned in a fraction of a second (0.21 s in the Release build on
# a 2-core Xeon VM; 3 s allowed: the poisoned ASan build runs it about 5 times slower, and a loaded CI
# machine took 1.57 s there), its byte counts exact (2.1e14 parameters: 4 x 768.01 TiB of fp32 states),
# none wrapped.
tz_add_exit_test(launch_plan_largest_model STATUS 0 MAX_SECONDS 3 TIMEOUT 30 LABELS launch
                 COMMAND ${TZ_BIN} plan --n-layer 4096 --n-embd 65536 --n-head 64
                 REGEX "adam v +device +768.01 TiB" "total +device +3076.07 TiB of unlimited")

# A 100000-deep `[[[[...` config is refused at once, naming the depth, within 64 MiB more than an empty
# config's run takes (nlohmann's parser alone took gigabytes): tests/launch/deep_config.sh.
tz_add_exit_test(launch_deep_config_refused STATUS 0 MAX_SECONDS 10 TIMEOUT 60 LABELS launch
                 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/deep_config.sh ${TZ_BIN}
                 REGEX "deep_config: refused in [0-9.]+ s")

# DeepSpeed's zero sizes in a real run: buckets of 0 (each flat group on its own), no prefetch, clipping off.
tz_add_exit_test(launch_train_zero_sizes STATUS 0 MAX_SECONDS 30 TIMEOUT 60 LABELS launch
                 COMMAND ${TZ_BIN} train --steps 2 --zero-stage 3 --reduce-bucket-size 0 --allgather-bucket-size 0
                         --prefetch-bucket-size 0 --max-live-parameters 0 --param-persistence-threshold 0
                         --grad-clip 0 --log-every 1 --val-batches 1
                 REGEX "step +2")
