# Sourced by the launch tests.
# split_launch_args MPIRUN_ARGS... -- TIERZERO: sets the array mpirun_args and tierzero.
split_launch_args() {
  mpirun_args=()
  while (($#)) && [ "$1" != "--" ]; do mpirun_args+=("$1"); shift; done
  shift
  tierzero=$1
}

# rank_pid JOB RANK prints the pid of the tierzero process of that rank
# among the descendants of JOB (the test's own mpirun), so that tests running beside other jobs on the
# machine never signal a process that is not theirs. Prints nothing when there is none (yet).
rank_pid() {
  local job=$1 rank=$2 p q
  for p in $(pgrep -x tierzero); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" || continue
    q=$p
    while [ -n "$q" ] && [ "$q" -gt 1 ]; do
      if [ "$q" = "$job" ]; then echo "$p"; return 0; fi
      q=$(awk '{print $4}' "/proc/$q/stat" 2>/dev/null)
    done
  done
}

# metrics_text FILE: the whole records written so far to a --metrics FILE, which rank 0 appends to as it
# makes them (a last line not yet ended is left out); nothing when there is no FILE yet. metrics_lines FILE
# counts them; metrics_steps FILE counts the training steps among them (the records with a "loss": not the
# start, resume and end records, nor the validations).
metrics_text() {
  [ -f "$1" ] || return 0
  awk '/\}$/' "$1"
}
metrics_lines() { metrics_text "$1" | wc -l; }
metrics_steps() { metrics_text "$1" | grep -c '"loss":'; }
# check_refusal WHAT REGEX RC MS LOG: a `tierzero train` that should have refused before training: exit
# status RC must be 1, MS (its milliseconds) at most 5000, LOG must match REGEX and show no step trained.
# Fails through the caller's fail().
check_refusal() {
  local what=$1 regex=$2 rc=$3 ms=$4 log=$5
  [ "$rc" = 1 ] || { cat "$log"; fail "$what: exit $rc, not 1"; }
  [ "$ms" -le 5000 ] || fail "$what: took $ms ms"
  grep -Eq -- "$regex" "$log" || { cat "$log"; fail "$what: no message matching: $regex"; }
  ! grep -Eq "^step +1/" "$log" || fail "$what: trained before refusing"
}
