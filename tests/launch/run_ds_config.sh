#!/usr/bin/env bash
# Runs a command that trains from a DeepSpeed config (the arguments after --), prints its output, and checks
# what only the whole output shows: every "config:" line (what --config resolved or accepted with no effect)
# is printed once for the job, not once per rank; no path given with --absent-path exists afterwards (the
# config's /local_nvme, which --nvme-path replaces); and the NVMe store folder is left empty.
#
#   run_ds_config.sh [--absent-path P]... -- command args...
#
# Every argument @TMPDIR@ of the command becomes one fresh folder, removed at the end.
set -u

absent=()
while (($#)); do
  case "$1" in
    --absent-path) absent+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "$0: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "usage: $0 [--absent-path P]... -- command args..." >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tz_ds_config.XXXXXX") || exit 1
out=$(mktemp "${TMPDIR:-/tmp}/tz_ds_config_out.XXXXXX") || exit 1
trap 'rm -rf "$tmp" "$out"' EXIT
args=()
for a in "$@"; do args+=("${a//@TMPDIR@/$tmp}"); done

"${args[@]}" >"$out" 2>&1
rc=$?
cat "$out"
((rc == 0)) || exit "$rc"

fail=0
dups=$(grep '^config: ' "$out" | sort | uniq -d)
if [[ -n "$dups" ]]; then
  echo "run_ds_config: these config lines were printed more than once:" >&2
  echo "$dups" >&2
  fail=1
fi
for p in "${absent[@]+"${absent[@]}"}"; do
  if [[ -e "$p" ]]; then
    echo "run_ds_config: $p exists after the run" >&2
    fail=1
  fi
done
if [[ -n "$(ls -A "$tmp")" ]]; then
  echo "run_ds_config: the store folder is not empty after the run: $(ls -A "$tmp")" >&2
  fail=1
fi
((fail == 0)) && echo "run_ds_config: ok"
exit "$fail"
