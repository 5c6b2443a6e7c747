#!/bin/sh
# Open MPI's stand-in for ssh between the simulated hosts (mpirun --mca plm_rsh_agent rsh_agent.sh):
# Open MPI calls it as `rsh_agent.sh HOST REMOTE COMMAND...`, the remote command being one shell line
# split into words, as ssh receives it; it runs that line on HOST through node_exec.sh.
host=$1
shift
exec "$(dirname "$0")/node_exec.sh" "$host" sh -c "$*"
