#!/usr/bin/env bash
# Launch path 4 of 4 (docs/launching.md, "Tested launch paths"): a real Slurm across two nodes. munged
# and slurmctld run on simulated host node0, a slurmd on each of node0 and node1 (cluster_lib.sh:
# network namespaces joined by a veth pair), and `srun -N 2 -n 2 --mpi=pmix` starts one rank per node:
# 5 steps of the tiny GPT at ZeRO stage 3 with the optimizer states on the host tier, the ranks talking
# over TCP across the veth. Asserts that the training traffic crossed the veth and that the losses
# equal, within 1e-5 relative, those of one process with the same global batch.
# Known issue: srun with PMIx across these namespaces crashes in MPI_Init in about 1 run in 100
# (../shared/recipes/launch-ci/). A run that fails before its first step is retried once, saying so; a
# run that fails after it is not.
# usage: slurm_two_nodes.sh TIERZERO
# Exits 0 with a PASS line, 1 on failure, 77 (a skip) when it cannot run here.
set -u
. "$(dirname "$0")/cluster_lib.sh"
(($# == 1)) || { echo "usage: $0 TIERZERO" >&2; exit 2; }
TZC_TIERZERO=$(realpath "$1")
tzc_need_root
tzc_need_cmds ip nsenter unshare runuser timeout
tzc_need_slurm
tzc_begin slurm_two_nodes 120
tzc_netns_up
tzc_slurm_up node0 node1
W=$TZC_WORK

offload=(--offload-optimizer cpu)
srun_once() {  # srun_once TRY : one srun across the two nodes, its output in $W/srun-TRY.log
  rm -f "$W/srun.jsonl"  # a retry is a new run: --metrics refuses another run's records
  tzc_log "srun -N 2 -n 2 --mpi=pmix from node0 (try $1): micro-batch 2, ZeRO-3, --offload-optimizer cpu"
  tzc_run 40 "$TZC_NODE" node0 srun --mpi=pmix -N 2 -n 2 --ntasks-per-node=1 --cpus-per-task=1 \
    --kill-on-bad-exit=1 --label "$TZC_TIERZERO" "${TZC_TRAIN_FLAGS[@]}" --micro-batch 2 "${offload[@]}" \
    --metrics "$W/srun.jsonl" >"$W/srun-$1.log" 2>&1
}
rx0=$(tzc_rx_bytes node1)
retried=""
if srun_once 1; then
  log=$W/srun-1.log
else
  rc=$?
  tail -n 25 "$W/srun-1.log" | sed 's/^/    /'
  grep -Eq 'step +1/' "$W/srun-1.log" && tzc_fail "srun -N 2 -n 2 exited with $rc after training started"
  echo "NOTE: srun -N 2 -n 2 failed with $rc before the first step. srun with PMIx across these" \
       "simulated hosts crashes in MPI_Init in about 1 run in 100 (a known issue of this set-up," \
       "../shared/recipes/launch-ci/); retrying once."
  srun_once 2 || tzc_fail_log "$W/srun-2.log" "srun -N 2 -n 2 failed again, with $?"
  log=$W/srun-2.log
  retried=" (passed on the retry)"
fi
rx=$(($(tzc_rx_bytes node1) - rx0))
grep -q '2 ranks, ZeRO stage 3' "$log" || tzc_fail_log "$log" "srun did not start 2 ranks at stage 3"
tzc_show "$log"
# Each step gathers every block's parameters and reduce-scatters the gradients between the nodes: about
# 0.5 MB per step. Slurm's own messages and the ranks' wire-up move well under 1 MB.
((rx > 1000000)) || tzc_fail "only $rx bytes crossed the veth to node1: the ranks did not talk across the nodes"
tzc_log "$rx bytes crossed the veth to node1"
tzc_expect_losses "srun -N 2 -n 2 --mpi=pmix across 2 simulated Slurm nodes (TCP)$retried" "$W/srun.jsonl" \
  "${TZC_TRAIN_FLAGS[@]}" --micro-batch 4 "${offload[@]}"
