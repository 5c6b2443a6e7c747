#!/usr/bin/env bash
# Launch path 2 of 4 (docs/launching.md, "Tested launch paths"): mpirun across two hosts. The hosts are
# simulated (cluster_lib.sh: network namespaces node0 and node1 joined by a veth pair); mpirun starts on
# node0 and reaches node1 through an rsh agent that enters node1's namespaces instead of ssh
# (rsh_agent.sh). Two ranks per host train 5 steps of the tiny GPT at ZeRO stage 3 with the optimizer
# states and the parameter shards offloaded to an NVMe store (in the work folder), over TCP between
# the hosts. Asserts that mpirun placed 2 ranks on each host, that the training traffic crossed the
# veth, and that the losses equal, within 1e-5 relative, those of one process with the same global batch.
# usage: mpirun_two_hosts.sh MPIEXEC -- TIERZERO   (MPIEXEC: the mpirun executable alone)
# Exits 0 with a PASS line, 1 on failure, 77 (a skip) when it cannot run here.
set -u
. "$(dirname "$0")/cluster_lib.sh"
(($# == 3)) && [ "$2" = "--" ] || { echo "usage: $0 MPIEXEC -- TIERZERO" >&2; exit 2; }
mpiexec=$1
TZC_TIERZERO=$(realpath "$3")
tzc_need_root
tzc_need_cmds "$mpiexec" ip nsenter unshare timeout
tzc_begin mpirun_two_hosts 90
tzc_netns_up

W=$TZC_WORK
mkdir -p "$W/nvme"
offload=(--offload-optimizer nvme --offload-param nvme --nvme-path "$W/nvme")
# --host node0:2,node1:2: 2 slots per host. tz0 is each host's veth end: Open MPI's out-of-band channel
# and its TCP transport between the hosts use it alone; ranks on one host talk over shared memory.
launch=("$mpiexec" -np 4 --host node0:2,node1:2 --bind-to none --display-map
        --mca plm_rsh_agent "$TZC_HERE/rsh_agent.sh" --mca btl tcp,vader,self
        --mca btl_tcp_if_include tz0 --mca oob_tcp_if_include tz0
        -x OMP_NUM_THREADS -x OMP_WAIT_POLICY ${ASAN_OPTIONS:+-x ASAN_OPTIONS})
tzc_log "mpirun -np 4 --host node0:2,node1:2 from node0: micro-batch 1, ZeRO-3, optimizer and parameters on NVMe"
rx0=$(tzc_rx_bytes node1)
tzc_run 60 "$TZC_NODE" node0 "${launch[@]}" "$TZC_TIERZERO" "${TZC_TRAIN_FLAGS[@]}" --micro-batch 1 "${offload[@]}" \
  --metrics "$W/run.jsonl" >"$W/run.log" 2>&1 || tzc_fail_log "$W/run.log" "mpirun across the two hosts exited with $?"
rx=$(($(tzc_rx_bytes node1) - rx0))
for n in node0 node1; do
  grep -Eq "Data for node: ${n}[[:space:]].*Num procs: 2" "$W/run.log" ||
    tzc_fail_log "$W/run.log" "mpirun did not place 2 ranks on $n"
done
grep -q '4 ranks, ZeRO stage 3' "$W/run.log" || tzc_fail_log "$W/run.log" "the run did not start 4 ranks at stage 3"
tzc_show "$W/run.log"
# Each step gathers every block's parameters and reduce-scatters the gradients across the hosts: about
# 0.5 MB per step here. Start-up alone (Open MPI's wire-up) moves well under 100 kB.
((rx > 1000000)) || tzc_fail "only $rx bytes crossed the veth to node1: the ranks did not talk across the hosts"
tzc_log "2 ranks on node0 and 2 on node1; $rx bytes crossed the veth to node1"
tzc_expect_losses "mpirun -np 4 across 2 simulated hosts (TCP)" "$W/run.jsonl" \
  "${TZC_TRAIN_FLAGS[@]}" --micro-batch 4 "${offload[@]}"
