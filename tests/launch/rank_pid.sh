# shellcheck shell=bash
# rank_pid JOB RANK: the pid of rank RANK of the mpirun whose pid is JOB (its tierzero child with
# OMPI_COMM_WORLD_RANK=RANK), or nothing. Sourced by the launch tests that signal one rank. Only that
# mpirun's own children are looked at, never another job's ranks on the same machine (another test run,
# another user's training), which a search of all of /proc would find and signal.
rank_pid() {
  local p
  for p in $(pgrep -P "$1" -x tierzero); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return; }
  done
}
