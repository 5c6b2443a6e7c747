#!/usr/bin/env bash
# docs/configuration.md must be exactly what `tierzero help --markdown` prints (the flag and DeepSpeed key
# tables in launch/): prints the difference and the command that regenerates the file when they differ.
# Usage: config_doc_is_generated.sh TIERZERO SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
out=$(mktemp "${TMPDIR:-/tmp}/tz_config_doc.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
"$bin" help --markdown > "$out" || { echo "FAIL: $bin help --markdown exited $?"; exit 1; }
if ! cmp -s "$out" "$src/docs/configuration.md"; then
  diff -u "$src/docs/configuration.md" "$out" | head -80
  echo "FAIL: docs/configuration.md differs from '$bin help --markdown' (diff above: - the file, + the binary)."
  echo "Regenerate it: scripts/gen-config-doc.sh $bin"
  exit 1
fi
echo "docs/configuration.md equals tierzero help --markdown ($(wc -l < "$out") lines)"
