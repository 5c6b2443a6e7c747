#!/usr/bin/env bash
# libtz_alloc_trace.so and perf/scripts/alloc_sites.py (issue 33): preloaded into tierzero, the hook sees
# every planned buffer (tracking every size, the "plan" class, the stacks through a device allocator,
# holds at least the run's allocated peak of device + host and at most 5% more, at its own peak and at the
# process's: every planned buffer is live when the process holds most), and at 2 ranks each rank
# writes its own report in which Open MPI's temporaries are named as communication temporaries.
# usage: alloc_trace_test.sh MPIRUN_ARGS... -- TIERZERO LIBTZ_ALLOC_TRACE SOURCE_DIR
set -u
. "$(dirname "$0")/../launch/launch_lib.sh"
mpi=()
while (($#)) && [ "$1" != -- ]; do mpi+=("$1"); shift; done
shift
tz=$1 lib=$2 src=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "alloc_trace_test.sh: FAIL: $*"; exit 1; }
TZ_ALLOC_TRACE_MIN=0 TZ_ALLOC_TRACE="$d/one.txt" LD_PRELOAD="$lib" "$tz" train --steps 3 --log-every 0 --val-batches 1 \
  > "$d/one.log" 2>&1 || { cat "$d/one.log"; fail "one rank under the hook"; }
[ -s "$d/one.txt" ] || fail "no report written"
/usr/bin/python3 "$src/perf/scripts/alloc_sites.py" "$d/one.txt" > "$d/one.sites" || fail "alloc_sites.py"
cat "$d/one.sites"
# The allocated peaks of device and host, in MiB, from the run's own line (its budgets' count).
allocated=$(grep -o "planned vs allocated peak per rank: .*" "$d/one.log" | /usr/bin/python3 -c '
import re, sys
u = {"B": 2**-20, "KiB": 2**-10, "MiB": 1, "GiB": 1024}
m = re.search(r"device [0-9.]+ \S+ / ([0-9.]+) (\S+) host [0-9.]+ \S+ / ([0-9.]+) (\S+)", sys.stdin.read())
print(float(m.group(1)) * u[m.group(2)] + float(m.group(3)) * u[m.group(4)])')
plan=$(awk '$1 == "class" && $2 == "plan" { print $3 }' "$d/one.sites")
[ -n "$plan" ] || fail "no plan class in the report"
awk -v p="$plan" -v a="$allocated" 'BEGIN { exit !(p >= a * 0.995 && p <= a * 1.05) }' ||
  fail "the plan class holds $plan MiB, the run allocated $allocated MiB of device and host"
echo "alloc_trace_test.sh: one rank: the plan class holds $plan MiB, the run's allocated peak $allocated MiB"
# At the process's peak every planned buffer is live: what the plan class held then is the same figure.
at_peak=$(awk '$1 == "at_peak" && $2 == "plan" { print $3 }' "$d/one.sites")
[ -n "$at_peak" ] || fail "no plan class at the peak in the report"
awk -v p="$at_peak" -v a="$allocated" 'BEGIN { exit !(p >= a * 0.995 && p <= a * 1.05) }' ||
  fail "at the peak the plan class held $at_peak MiB, the run allocated $allocated MiB of device and host"
echo "alloc_trace_test.sh: one rank: at the peak the plan class held $at_peak MiB"
"${mpi[@]}" -x LD_PRELOAD="$lib" -x TZ_ALLOC_TRACE="$d/two.%r.txt" "$tz" train --zero-stage 3 --steps 3 --log-every 0 \
  --val-batches 1 --param-persistence-threshold 0 > "$d/two.log" 2>&1 || { cat "$d/two.log"; fail "two ranks under the hook"; }
for r in 0 1; do
  [ -s "$d/two.$r.txt" ] || fail "rank $r wrote no report"
  /usr/bin/python3 "$src/perf/scripts/alloc_sites.py" "$d/two.$r.txt" > "$d/two.$r.sites" || fail "alloc_sites.py, rank $r"
  grep -Eq "^    class communication temporaries +[0-9.]+ MiB" "$d/two.$r.sites" ||
    { cat "$d/two.$r.sites"; fail "rank $r: no communication temporaries named"; }
done
echo "alloc_trace_test.sh: two ranks: each rank's report names Open MPI's temporaries"
