#!/usr/bin/env bash
# A stage of the GPU check (run.sh): GoogleTest executables of the bundle's bin/ in turn, each with its
# XML report, one failing not stopping the others; exit 1 when any failed. The loader's path is the one
# run.sh set.
#   gtests.sh BIN_DIR XML_DIR EXE...
bin=$1 xml=$2
shift 2
rc=0
for t in "$@"; do
  echo "== $t"
  "$bin/$t" --gtest_color=no --gtest_output="xml:$xml/$t.xml" || rc=1
done
exit $rc
