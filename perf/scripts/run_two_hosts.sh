#!/usr/bin/env bash
# Runs one `tierzero train` across the two simulated hosts of tests/launch/cluster (network namespaces
# node0 and node1 joined by a veth pair, mpirun on node0 reaching node1 through the rsh agent), one rank
# per host over TCP, for perf/scripts/validate_plan.sh's held-out two-host configuration. The run's
# output goes to LOG; --metrics and other paths in ARGS must be outside /tmp (each host has its own).
# usage: run_two_hosts.sh LOG THREADS TIERZERO ARGS...   (exit 77 with the reason when it cannot run here)
set -u
. "$(dirname "$0")/../../tests/launch/cluster/cluster_lib.sh"
log=$1 threads=$2
TZC_TIERZERO=$(realpath "$3")
shift 3
tzc_need_root
tzc_need_cmds mpirun ip nsenter unshare timeout
tzc_begin validate_two_hosts 300
tzc_netns_up
export OMP_NUM_THREADS=$threads
launch=(mpirun -np 2 --host node0:1,node1:1 --bind-to none
        --mca plm_rsh_agent "$TZC_HERE/rsh_agent.sh" --mca btl tcp,vader,self
        --mca btl_tcp_if_include tz0 --mca oob_tcp_if_include tz0 -x OMP_NUM_THREADS -x OMP_WAIT_POLICY)
tzc_run 240 "$TZC_NODE" node0 "${launch[@]}" "$TZC_TIERZERO" "$@" >"$log" 2>&1
