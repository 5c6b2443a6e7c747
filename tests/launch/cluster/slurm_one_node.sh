#!/usr/bin/env bash
# Launch path 3 of 4 (docs/launching.md, "Tested launch paths"): a real Slurm on one node. munged,
# slurmctld and slurmd from Debian's packages run on a simulated host (cluster_lib.sh: node0, its own
# network namespace, so that nothing clashes with the machine's own ports or daemons), and the test
# starts, as a user would:
#   1. `srun -n 2 --mpi=pmix tierzero train ...`: micro-batch 2, the optimizer states on NVMe;
#   2. `sbatch launch/slurm/train.sbatch`, the template as shipped, made tiny through its environment
#      settings: 2 tasks x micro-batch 2 x 2 accumulation steps (GLOBAL_BATCH=8), ZeRO-3 with the
#      optimizer states on the host tier (OFFLOAD_OPTIMIZER=cpu, in its generated config); the job must
#      end COMPLETED with exit code 0 and write the model.
# Each trains 5 steps of the tiny GPT; their losses must equal, within 1e-5 relative, those of one
# process with the same global batch (for the job: its own generated config, with the micro-batch
# doubled).
# usage: slurm_one_node.sh TIERZERO
# Exits 0 with a PASS line per launch, 1 on failure, 77 (a skip) when it cannot run here.
set -u
. "$(dirname "$0")/cluster_lib.sh"
(($# == 1)) || { echo "usage: $0 TIERZERO" >&2; exit 2; }
TZC_TIERZERO=$(realpath "$1")
repo=$(cd "$TZC_HERE/../../.." && pwd)
tzc_need_root
tzc_need_cmds ip nsenter unshare runuser timeout
tzc_need_slurm
tzc_begin slurm_one_node 120
tzc_netns_up
tzc_slurm_up node0
W=$TZC_WORK

# -- 1. srun -n 2 --mpi=pmix --
mkdir -p "$W/nvme"
offload=(--offload-optimizer nvme --nvme-path "$W/nvme")
tzc_log "srun -n 2 --mpi=pmix: micro-batch 2, ZeRO-3, optimizer on NVMe"
tzc_run 60 "$TZC_NODE" node0 srun --mpi=pmix -n 2 --cpus-per-task=1 --kill-on-bad-exit=1 \
  "$TZC_TIERZERO" "${TZC_TRAIN_FLAGS[@]}" --micro-batch 2 "${offload[@]}" --metrics "$W/srun.jsonl" \
  >"$W/srun.log" 2>&1 || tzc_fail_log "$W/srun.log" "srun -n 2 exited with $?"
grep -q '2 ranks, ZeRO stage 3' "$W/srun.log" || tzc_fail_log "$W/srun.log" "srun did not start 2 ranks at stage 3"
tzc_show "$W/srun.log"
tzc_expect_losses "srun -n 2 --mpi=pmix on one Slurm node" "$W/srun.jsonl" \
  "${TZC_TRAIN_FLAGS[@]}" --micro-batch 4 "${offload[@]}"

# -- 2. sbatch of the template (submitted from the repository root, as its header says) --
sb=(TIERZERO="$TZC_TIERZERO" MODEL_FLAGS="--model tiny" SEQ_LEN=32 MICRO_BATCH=2 GLOBAL_BATCH=8
    STEPS="$TZC_STEPS" DTYPE=fp32 LR=1e-3 MIN_LR=1e-4 WARMUP=1 OFFLOAD_OPTIMIZER=cpu LOG_EVERY=1
    COMM_TIMEOUT=60 OUT_DIR="$W/sbatch" EXTRA_FLAGS="--param-persistence-threshold 0 --val-batches 1")
tzc_log "sbatch launch/slurm/train.sbatch: 1 node x 2 tasks x 1 CPU; ${sb[*]:1}"
jid=$(cd "$repo" && env "${sb[@]}" "$TZC_NODE" node0 sbatch --parsable --nodes=1 --ntasks-per-node=2 \
        --cpus-per-task=1 --time=5 --output="$W/sbatch-%j.out" launch/slurm/train.sbatch 2>&1) &&
  [[ "$jid" =~ ^[0-9]+$ ]] || tzc_fail "sbatch refused the job: $jid"
# Poll until the job leaves the queue (sbatch --wait polls every ~10 s).
for i in $(seq 300); do
  "$TZC_NODE" node0 squeue -h -j "$jid" 2>/dev/null | grep -q . || break
  ((i == 300)) && tzc_fail "job $jid still in the queue after 60 s"
  sleep 0.2
done
state=$("$TZC_NODE" node0 scontrol show job "$jid" | grep -o -E 'JobState=[A-Z_]+|ExitCode=[0-9:]+' | paste -sd' ')
out=$W/sbatch-$jid.out
[ "$state" = "JobState=COMPLETED ExitCode=0:0" ] || tzc_fail_log "$out" "job $jid ended with $state"
grep -q 'global batch 8 = 2 x 2 accumulation x 2 ranks' "$out" || tzc_fail_log "$out" "the job did not run 2 ranks x 2 x 2"
grep -q '2 ranks, ZeRO stage 3' "$out" || tzc_fail_log "$out" "the job did not train 2 ranks at stage 3"
# OFFLOAD_OPTIMIZER=cpu reached the generated config, and the optimizer states are on the host tier.
grep -Eq 'host [0-9.]+ [KMG]iB of unlimited \(states [1-9]' "$out" ||
  tzc_fail_log "$out" "the job's optimizer states are not on the host tier (OFFLOAD_OPTIMIZER=cpu)"
[ -s "$W/sbatch/model.safetensors" ] || tzc_fail_log "$out" "the job wrote no $W/sbatch/model.safetensors"
tzc_log "job $jid: $state; $out:"
tzc_show "$out"
# The reference reads the job's own config; the template's fixed flags are repeated here.
tzc_expect_losses "sbatch launch/slurm/train.sbatch (2 tasks, srun --mpi=pmix inside)" "$W/sbatch/metrics.jsonl" \
  train --config "$W/sbatch/zero3.json" --micro-batch 4 --model tiny --dtype fp32 --data default --seq-len 32 \
  --steps "$TZC_STEPS" --warmup 1 --lr-schedule cosine --min-lr 1e-4 --param-persistence-threshold 0 --val-batches 1
