#!/usr/bin/env bash
# Launch path 1 of 4 (docs/launching.md, "Tested launch paths"): `mpirun -np 4` on one host. Four ranks
# train 5 steps of the tiny GPT at ZeRO stage 3 with the optimizer states offloaded to the host tier;
# their losses must equal, within 1e-5 relative, those of one process training the same global batch.
# usage: mpirun_one_host.sh MPIEXEC... -- TIERZERO   (MPIEXEC takes -np N after it)
# Exits 0 with a PASS line, 1 on failure, 77 (a skip) when it cannot run here.
set -u
. "$(dirname "$0")/cluster_lib.sh"
mpiexec=()
while (($#)) && [ "$1" != "--" ]; do mpiexec+=("$1"); shift; done
(($# == 2 && ${#mpiexec[@]} > 0)) || { echo "usage: $0 MPIEXEC... -- TIERZERO" >&2; exit 2; }
TZC_TIERZERO=$2
tzc_need_cmds "${mpiexec[0]}" timeout
tzc_begin mpirun_one_host 60

W=$TZC_WORK
offload=(--offload-optimizer cpu)
tzc_log "mpirun -np 4 on this host: 4 ranks x micro-batch 1, ZeRO-3, --offload-optimizer cpu"
tzc_run 45 "${mpiexec[@]}" -np 4 "$TZC_TIERZERO" "${TZC_TRAIN_FLAGS[@]}" --micro-batch 1 "${offload[@]}" \
  --metrics "$W/run.jsonl" >"$W/run.log" 2>&1 || tzc_fail_log "$W/run.log" "mpirun -np 4 exited with $?"
grep -q '4 ranks, ZeRO stage 3' "$W/run.log" || tzc_fail_log "$W/run.log" "the run did not start 4 ranks at stage 3"
tzc_show "$W/run.log"
tzc_expect_losses "mpirun -np 4 on one host" "$W/run.jsonl" "${TZC_TRAIN_FLAGS[@]}" --micro-batch 4 "${offload[@]}"
