#!/usr/bin/env bash
# The real sweep across two simulated hosts on this machine: the two network namespaces of
# tests/launch/cluster/ (a veth pair between them, TCP), mpirun on node0 reaching node1 through the rsh
# agent, then perf/scaling/sweep.sh with that launcher (2 and 4 ranks, half on each host). As root.
# usage: perf/scaling/two_hosts.sh OUT_DIR [sweep.sh arguments...]   (OUT_DIR not under /tmp: each host has its own)
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:?usage: two_hosts.sh OUT_DIR [sweep.sh args]}"); shift
. "$here/../../tests/launch/cluster/cluster_lib.sh"
TZC_TIERZERO=$(realpath "${TIERZERO:-$here/../../build/launch/tierzero}")
tzc_need_root
tzc_need_cmds mpirun ip nsenter unshare timeout
TZC_WORK_DIR=${TZC_WORK_DIR:-/var/tmp} tzc_begin scaling_two_hosts 1800
tzc_netns_up
export LAUNCH="$TZC_NODE node0 mpirun -np %N --host %H --bind-to none --mca plm_rsh_agent $TZC_HERE/rsh_agent.sh --mca btl tcp,vader,self --mca btl_tcp_if_include tz0 --mca oob_tcp_if_include tz0 -x OMP_WAIT_POLICY -x OMP_NUM_THREADS"
TIERZERO=$TZC_TIERZERO bash "$here/sweep.sh" --out "$out" "$@"
