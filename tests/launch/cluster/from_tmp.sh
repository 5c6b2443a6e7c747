#!/usr/bin/env bash
# The cluster tests run from any checkout, /tmp included (each simulated host has a /tmp of its own, and
# node_exec.sh binds back what the run needs from the machine's): copies tests/launch/cluster/ and the
# tierzero binary (its libraries are found through its RUNPATH, outside the build) into a fresh
# `mktemp -d /tmp/tz-cluster-from-tmp.XXXXXX`, runs mpirun_two_hosts.sh from that copy, in it, with the
# copied binary and the work folder there too, and removes the copy afterwards.
# usage: from_tmp.sh MPIEXEC -- TIERZERO   (as mpirun_two_hosts.sh)
# Exits 0 with a PASS line, 1 on failure, 77 (a skip) when the scenario cannot run here.
set -u
(($# == 3)) && [ "$2" = "--" ] || { echo "usage: $0 MPIEXEC -- TIERZERO" >&2; exit 2; }
mpiexec=$1
here=$(cd "$(dirname "$0")" && pwd)
copy=$(mktemp -d /tmp/tz-cluster-from-tmp.XXXXXX) || { echo "FAIL: cannot create a folder under /tmp"; exit 1; }
child="" shown=""
# shellcheck disable=SC2317 # called by the traps
cleanup() {
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
  [ -z "$shown" ] && [ -f "$copy/scenario.log" ] && cat "$copy/scenario.log"  # stopped mid-run: what it said
  rm -rf "$copy"
}
trap cleanup EXIT
trap 'echo "FAIL: stopped by a signal"; exit 1' TERM INT HUP
mkdir -p "$copy/tests/launch" "$copy/bin" && cp -r "$here" "$copy/tests/launch/cluster" &&
  cp "$3" "$copy/bin/tierzero" || { echo "FAIL: cannot copy the scenario and the binary into $copy"; exit 1; }
echo "copied tests/launch/cluster/ and $3 into $copy"
# In the background and waited for, so that a signal is handled at once (the scenario tears down on TERM).
(cd "$copy" && TZC_WORK_DIR=$copy exec bash tests/launch/cluster/mpirun_two_hosts.sh "$mpiexec" -- "$copy/bin/tierzero") \
  >"$copy/scenario.log" 2>&1 &
child=$!
wait "$child"
rc=$?
child=""
cat "$copy/scenario.log"
shown=1
((rc == 77)) && exit 77
((rc == 0)) || { echo "FAIL: mpirun_two_hosts.sh from $copy exited with $rc"; exit 1; }
grep -q "work folder $copy/cluster-work/" "$copy/scenario.log" ||
  { echo "FAIL: the scenario's work folder is not under $copy"; exit 1; }
echo "PASS: mpirun -np 4 across 2 simulated hosts from a copy under /tmp ($copy: scripts, binary and work folder)"
