#!/usr/bin/env bash
# `tierzero bench calibrate --network` across the two simulated hosts (cluster_lib.sh: network namespaces
# node0 and node1 joined by a veth pair, TCP between them): a one-process calibration of the tiny GPT first,
# then the collectives measured with one rank on each host, added to that file as its network rates.
# Asserts that the file keeps its compute rate, gains a "network" of 2 nodes with rates and a latency, that
# the measurement crossed the veth, and that `tierzero plan` across 2 nodes reads it (its communication line
# at the network's all-reduce rate).
# usage: calibrate_network.sh MPIEXEC -- TIERZERO   (exit 0 with a PASS line, 1 on failure, 77 when it cannot run here)
set -u
. "$(dirname "$0")/cluster_lib.sh"
(($# == 3)) && [ "$2" = "--" ] || { echo "usage: $0 MPIEXEC -- TIERZERO" >&2; exit 2; }
mpiexec=$1
TZC_TIERZERO=$(realpath "$3")
tzc_need_root
tzc_need_cmds "$mpiexec" ip nsenter unshare timeout
tzc_begin calibrate_network 120
tzc_netns_up

W=$TZC_WORK
export OMP_NUM_THREADS=1
"$TZC_TIERZERO" bench calibrate --model tiny --out "$W/hw.json" >"$W/one.log" 2>&1 ||
  tzc_fail_log "$W/one.log" "the one-process calibration exited with $?"
before=$(tr -d ' \n' < "$W/hw.json" | grep -o '"step_tflops":{[^}]*}')
launch=("$mpiexec" -np 2 --host node0:1,node1:1 --bind-to none
        --mca plm_rsh_agent "$TZC_HERE/rsh_agent.sh" --mca btl tcp,vader,self
        --mca btl_tcp_if_include tz0 --mca oob_tcp_if_include tz0 -x OMP_NUM_THREADS ${ASAN_OPTIONS:+-x ASAN_OPTIONS})
rx0=$(tzc_rx_bytes node1)
tzc_run 90 "$TZC_NODE" node0 "${launch[@]}" "$TZC_TIERZERO" bench calibrate --network --out "$W/hw.json" >"$W/net.log" 2>&1 ||
  tzc_fail_log "$W/net.log" "bench calibrate --network across the two hosts exited with $?"
rx=$(($(tzc_rx_bytes node1) - rx0))
cat "$W/net.log"
((rx > 100000000)) || tzc_fail "only $rx bytes crossed the veth to node1: the collectives did not run across the hosts"
file=$(tr -d ' \n' < "$W/hw.json")
[ "$(grep -o '"step_tflops":{[^}]*}' <<<"$file")" = "$before" ] || tzc_fail "--network changed the file's step_tflops"
net=$(grep -o '"network":{[^}]*}' <<<"$file") || tzc_fail "the file has no network rates: $file"
/usr/bin/python3 - "$W/hw.json" <<'PY' || tzc_fail "the network rates are not what the log printed: $net"
import json, sys
n = json.load(open(sys.argv[1]))["network"]
assert n["nodes"] == 2 and n["latency_us"] > 0, n
assert all(n[k] > 0.001 for k in ("reduce_scatter_gbs", "all_gather_gbs", "all_reduce_gbs")), n
assert abs(json.load(open(sys.argv[1]))["inter_gbs"] - n["all_reduce_gbs"]) < 1e-12
PY
# The transport's temporaries between the hosts: in the file as the log printed them, and in the plan's line
# for a run across 2 nodes (on one node of 2 ranks, the one-process calibration has none: not measured).
grew=$(grep -o 'communication temporaries [0-9.]* MiB per rank' "$W/net.log" | awk '{print $3}')
[ -n "$grew" ] || tzc_fail "the log does not print the communication temporaries between the hosts"
/usr/bin/python3 - "$W/hw.json" "$grew" <<'PY' || tzc_fail "the file's communication temporaries between nodes are not the log's $grew MiB"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
assert m["comm_between_nodes_bytes"] >= 0 and m["comm_piece_bytes"] > 0, m
assert abs(m["comm_between_nodes_bytes"] / 2**20 - float(sys.argv[2])) < 0.006, m
PY
line() {  # the plan's communication temporaries line at --ranks-per-node $1
  "$TZC_TIERZERO" plan --model tiny --world 2 --ranks-per-node "$1" --hardware "$W/hw.json" 2>&1 | grep '(communication temporaries:'
}
line 1 | grep -q 'between nodes (bench calibrate --network, one rank per node)' ||
  { line 1; tzc_fail "plan across 2 nodes does not hold the temporaries measured between them"; }
line 2 | grep -q 'not measured' || { line 2; tzc_fail "plan on one node of 2 ranks used the temporaries between nodes"; }
plan=$("$TZC_TIERZERO" plan --model tiny --world 2 --ranks-per-node 1 --hardware "$W/hw.json" 2>&1) ||
  { echo "$plan"; tzc_fail "plan across 2 nodes with the file exited with an error"; }
grep -q 'predicted step (local, 2 nodes)' <<<"$plan" || { echo "$plan"; tzc_fail "plan did not time 2 nodes"; }
tzc_log "$rx bytes crossed the veth to node1; $net"
echo "PASS: bench calibrate --network across 2 simulated hosts (TCP) added their network rates and communication temporaries to the file, which plan reads across 2 nodes"
